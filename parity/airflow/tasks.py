"""What a validation DAG's tasks call besides its operators (``parity.airflow.operators``)
and its record step (``parity.airflow.gate``):

* ``params_for`` is the ad-hoc trigger form: the DAG's ``Param``s, each a JSON schema.
* ``fail_running_match`` marks the run failed when the match task failed while its run was
  still running (the job was killed before it could say so).
* ``enforce_gate`` ends the ``gate`` task: one line, and ``GateClosed`` when it is closed.
* ``configure_store`` is every task's ``pre_execute`` hook: the results database from an
  Airflow Connection when one is configured.

Imported by the DAG files only (through ``parity.airflow.factory``), never by the CLI.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from airflow.sdk import Param

from matcher.printable import printable
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
                "The candidate's .py, .jar or .zip: a path relative to the repository, or a "
                "URL (s3a://, https://, ...). Only the spec's own unless the deployment allows "
                "others (PARITY_ADHOC_APPLICATION_ROOTS)."
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


class GateClosed(SystemExit):
    """A closed gate, ending the ``gate`` task. Airflow's task runner logs any exception a
    task raises with its traceback (``log.exception``), ``AirflowFailException`` included,
    except ``SystemExit``: that one is a single line, ``Task exited exit_code=...``. A
    closed gate is a verdict, not a crash, so it is told in one line: this exception's
    ``code`` is that line. The gate task has no retries: the verdict would not change."""


def gate_line(decision: Mapping[str, Any]) -> str:
    """The gate in one printable line: open or closed, the verdict and its non-zero counts,
    why, and the run's Parity page (relative to Airflow's base URL)::

        parity: gate closed: divergent (loss 1); verdict divergent (the gate requires
        equivalent); /parity/runs/parity_taxi%2Fmanual__2026-01-02T03%3A04%3A05%2B00%3A00
    """
    state = "open" if decision.get("passed") else "closed"
    verdict = decision.get("verdict") or "error"
    counts = decision.get("counts") or {}
    shown = ", ".join(f"{kind} {n}" for kind, n in counts.items() if n)
    parts = [f"parity: gate {state}: {verdict}" + (f" ({shown})" if shown else "")]
    parts.append(str(decision.get("reason") or ""))
    run_id = decision.get("run_id")
    if run_id:
        parts.append(f"/parity/runs/{quote(str(run_id), safe='')}")
    return printable("; ".join(p for p in parts if p))


def enforce_gate(decision: Mapping[str, Any], on_closed: str) -> None:
    """The ``gate`` task's end (``decision``: the ``record`` task's XCom): one line saying
    the gate. Open, nothing else. Closed, the task fails (``gate.on_closed: fail``: the DAG
    run fails) with ``GateClosed``, or is skipped (``warn``: the DAG run succeeds; a skipped
    gate is told apart from a failed job at a glance)."""
    from airflow.sdk.exceptions import AirflowSkipException

    line = gate_line(decision)
    if decision.get("passed"):
        print(line, flush=True)
        return
    if on_closed == "warn":
        raise AirflowSkipException(f"{line} (gate.on_closed: warn)")
    raise GateClosed(line)


def configure_store(context: Any = None) -> None:
    """Every Parity task's ``pre_execute`` hook: the results database from the Airflow
    Connection ``PARITY_DB_CONN_ID`` when there is one (``parity.airflow.connections``), for
    the task and the jobs it starts; its id, never its URL, in the log. ``PARITY_DB_URL`` is
    left set: each task is a process of its own (under ``dag.test()``, whose tasks share
    one, every task sets the same value)."""
    from airflow.sdk.exceptions import AirflowFailException

    from matcher.errors import ParityError
    from parity.airflow.connections import configure_results_store

    try:
        conn_id = configure_results_store()
    except ParityError as exc:  # a connection of the wrong type: a retry would not mend it
        raise AirflowFailException(str(exc)) from None
    if conn_id is not None:
        print(f"parity: results database from the Airflow connection {conn_id!r}", flush=True)
