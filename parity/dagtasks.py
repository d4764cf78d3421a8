"""The Airflow pieces of a validation DAG: its Spark task, its parameters, its record step.

* ``ParitySparkSubmitOperator`` is ``SparkSubmitOperator`` told which job of the run's plan
  to submit (``slice``, ``reference``, ``candidate``, ``rerun`` or ``match``): it takes the
  application, arguments and configuration from the plan when its fields are rendered, so
  that the task's *Rendered Template* page shows the exact spark-submit line.
* ``params_for`` is the ad-hoc trigger form: the DAG's ``Param``s, each a JSON schema.
* ``record_gate`` computes and stores the gate after the match (or records the run as
  failed when a job before it failed).
* ``fail_running_match`` marks the run failed when the match task failed while its run was
  still running (the job was killed before it could say so).

Imported by the DAG files only (through ``parity.dagfactory``), never by the CLI.
"""

from __future__ import annotations

import json
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Param

from matcher.spec import Spec
from matcher.store import RunStart, Store
from matcher.store.repository import one_line
from parity.plan import RunPlan, job_for

PLAN_TASK = "plan"


class ParitySparkSubmitOperator(SparkSubmitOperator):
    """Submits one job of the run's plan (the ``plan`` task's XCom)."""

    def __init__(self, *, job: str, **kwargs: Any) -> None:
        super().__init__(name=f"parity-{job}", **kwargs)
        self.job = job

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        super().render_template_fields(context, jinja_env)
        ti = context["ti"]
        plan = RunPlan.from_dict(ti.xcom_pull(task_ids=PLAN_TASK))
        job = job_for(plan, self.job, task_try=ti.try_number)
        self.application = job.application
        self.application_args = list(job.args)
        self.conf = dict(job.conf)
        self.name = job.name
        self.py_files = ",".join(job.py_files) or None
        self.jars = ",".join(job.jars) or None
        self._java_class = job.main_class

    def execute(self, context: Any) -> None:
        try:
            super().execute(context)
        finally:
            # The provider's hook reads spark-submit's output through a pipe it never closes.
            process = getattr(self._hook, "_submit_sp", None)
            if process is not None and process.stdout is not None:
                process.stdout.close()


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


def record_gate(plan: RunPlan, spec: Spec, failed_tasks: list[str]) -> dict[str, Any]:
    """Store the gate's decision on the run and return it (``passed``, ``reason``).

    * The match recorded a verdict: the gate follows the spec's policy (``parity.gate``),
      and is closed whatever the verdict when a task after the match failed.
    * A job before the match failed (or the match crashed before recording): the run is
      recorded as failed, verdict ``error``, so that the history shows it; gate closed.
    * The match job failed with an error: it marked the run failed itself; gate closed.
    """
    from parity.gate import record_run_gate

    failed = ", ".join(failed_tasks)
    with Store.open() as store:
        stored = store.get_run(plan.run_id)
        if stored is None or stored.status == "running":
            store.mark_failed(plan.run_id, f"{failed or 'a task'} failed", start=_start(plan))
            stored = store.get_run(plan.run_id)
        assert stored is not None
        if stored.status == "failed":
            return {"passed": False, "reason": f"the run failed: {stored.error}"}
        decision = record_run_gate(store, plan.run_id, spec)
        if failed_tasks:
            reason = f"{failed} failed; {decision.reason}"
            store.set_gate(plan.run_id, False, reason)
            return {"passed": False, "reason": reason}
    return {"passed": decision.passed, "reason": decision.reason}


def fail_running_match(context: Any) -> None:
    """The ``match`` task's ``on_failure_callback``: when the task failed for good (killed,
    timed out, its process lost) while its run is still ``running``, mark the run failed now
    rather than when its lease expires. A run the job ended itself, completed or failed, is
    left as it is. The run id is the plan's, ``dag_id/dag_run_id``."""
    run = context["dag_run"]
    exception = context.get("exception")
    cause = f": {one_line(exception)}" if isinstance(exception, BaseException) else ""
    with Store.open() as store:
        store.fail_if_running(f"{run.dag_id}/{run.run_id}", f"the match task failed{cause}")


def _start(plan: RunPlan) -> RunStart:
    dag_id, _, dag_run_id = plan.run_id.partition("/")
    return RunStart(
        run_id=plan.run_id,
        validation=plan.validation,
        trigger=plan.trigger,
        reference_version=plan.reference_version,
        candidate_version=plan.candidate_version,
        slice=dict(plan.slice),
        spec={"file": plan.spec_file},
        dag_id=dag_id,
        dag_run_id=dag_run_id,
        engine="spark",
    )


def _section(spec: Spec, name: str) -> str:
    value = getattr(spec, name).model_dump(exclude_defaults=True, mode="json")
    return json.dumps(value, sort_keys=True)
