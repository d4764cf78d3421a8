"""What a validation DAG's tasks call besides its operators (``parity.airflow.operators``)
and its record step (``parity.airflow.gate``):

* ``params_for`` is the ad-hoc trigger form: the DAG's ``Param``s, each a JSON schema.
* ``fail_running_match`` marks the run failed when the match task failed while its run was
  still running (the job was killed before it could say so).

Imported by the DAG files only (through ``parity.airflow.factory``), never by the CLI.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from airflow.sdk import Param

from matcher.spec import Spec
from matcher.store import Store
from matcher.store.repository import one_line
from matcher.store.run_ids import pipeline_run_id


def params_for(spec: Spec) -> dict[str, Any]:
    """The trigger form: ``None`` (or an empty field) keeps the spec's value."""
    assert spec.candidate is not None
    chosen = spec.input.slice if spec.input is not None else None
    shown = {"dependence": _section(spec, "dependence"), "equality": _section(spec, "equality")}
    return {
        "candidate_application": Param(
            spec.candidate.application,
            type=["null", "string"],
            title="Candidate application",
            description=(
                "The candidate's .py or .jar (relative to the repository). Only the spec's own "
                "unless the deployment allows others (PARITY_ADHOC_APPLICATION_ROOTS)."
            ),
        ),
        "candidate_args": Param(
            list(spec.candidate.args),
            type=["null", "array"],
            items={"type": "string"},
            title="Candidate arguments",
            description="One per line; {input}, {output} and {run_dir} are filled in.",
        ),
        "candidate_version": Param(
            spec.candidate.version,
            type=["null", "string"],
            title="Candidate version",
            description="The label the verdict is stored under (parity gate --candidate).",
        ),
        "window_start": Param(
            None,
            type=["null", "string"],
            format="date-time",
            title="Slice window start",
            description="Replay rows from this instant (UTC unless a zone is given); with "
            "window_end. Empty: the spec's window, else the run's data interval.",
        ),
        "window_end": Param(
            None,
            type=["null", "string"],
            format="date-time",
            title="Slice window end",
            description="Replay rows before this instant (exclusive).",
        ),
        "sample": Param(
            chosen.sample if chosen is not None else None,
            type=["null", "number"],
            exclusiveMinimum=0,
            maximum=1,
            title="Key sample fraction",
            description="Keep this fraction of keys (a stable hash of the key columns).",
        ),
        "dependence": Param(
            None,
            type=["null", "object"],
            title="Dependence override",
            description=f"Empty: the spec's, {shown['dependence']}.",
        ),
        "equality": Param(
            None,
            type=["null", "object"],
            title="Equality override",
            description=f"Empty: the spec's, {shown['equality']}.",
        ),
    }


def fail_running_match(context: Any) -> None:
    """The ``match`` task's ``on_failure_callback``: when the task failed for good (killed,
    timed out, its process lost) while its run is still ``running``, mark the run failed now
    rather than when its lease expires. A run the job ended itself, completed or failed, is
    left as it is. The run id is the plan's, ``dag_id/dag_run_id``."""
    run = context["dag_run"]
    exception = context.get("exception")
    cause = f": {one_line(exception)}" if isinstance(exception, BaseException) else ""
    with Store.open() as store:
        store.fail_if_running(
            pipeline_run_id(run.dag_id, run.run_id), f"the match task failed{cause}"
        )


def _section(spec: Spec, name: str) -> str:
    value = getattr(spec, name).model_dump(exclude_defaults=True, mode="json")
    return json.dumps(value, sort_keys=True)


def spark_task_args(spec: Spec, *, at_least: dt.timedelta | None = None) -> dict[str, Any]:
    """What every task that runs Spark jobs gets: a slot of the spec's pool (so that a
    machine or cluster runs only as many Spark jobs as the pool has slots, whatever the
    number of runs) and the spec's ``execution_timeout`` (no shorter than ``at_least``)."""
    timeout = spec.airflow.execution_timeout()
    if at_least is not None:
        timeout = max(timeout, at_least)
    return {"pool": spec.airflow.pool, "execution_timeout": timeout}


def enforce_gate(passed: bool, reason: str, on_closed: str) -> None:
    """The ``gate`` task's end: nothing when the gate is open. Closed, the task fails
    (``gate.on_closed: fail``: the DAG run fails) or is skipped (``warn``: the DAG run
    succeeds; a skipped gate is told apart from a failed job at a glance)."""
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    print(f"parity: gate {'open' if passed else 'closed'}: {reason}")
    if passed:
        return
    if on_closed == "warn":
        raise AirflowSkipException(f"gate closed (gate.on_closed: warn): {reason}")
    raise AirflowFailException(f"gate closed: {reason}")
