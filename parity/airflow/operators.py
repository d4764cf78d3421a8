"""The operators of a validation DAG: every one submits a job of the run's plan.

* ``ParitySparkSubmitOperator`` is ``SparkSubmitOperator`` told which job of the run's plan
  to submit (``slice``, ``reference``, ``candidate``, ``rerun`` or ``match``): it takes the
  application, arguments and configuration from the plan when its fields are rendered, so
  that the task's *Rendered Template* page shows the exact spark-submit line.
* ``ExpectationsOperator`` is the ``expectations`` task, ``jobs/check_expectations.py`` on the
  run's outputs::

    match >> ExpectationsOperator(task_id="expectations", root=root, conn_id=conn_id) >> record

  It submits, between ``match`` and ``record``, the spark-submit line ``expectations_job``
builds from the run's plan (the ``plan`` task's XCom)::

    jobs/check_expectations.py --run-id DAG_ID/RUN_ID --spec SPEC --candidate RUN_DIR/candidate
        --reference RUN_DIR/reference --report-dir RUN_DIR/report --root REPO

The store's URL is not an argument (it may hold a password): the job reads PARITY_DB_URL,
as the match job does. Imported by the DAG factory only; imports no Great Expectations.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from parity.airflow.plan import PLAN_TASK, RunPlan, job_for
from parity.runs.submits import SparkJob

EXPECTATIONS_TASK = "expectations"
DOC = (
    "Runs the spec's Great Expectations suites on the outputs and the expectations derived "
    "from the reference's profile on the candidate (`jobs/check_expectations.py`); stores the "
    "results beside the verdict and writes the Data Docs to the run's `report/data_docs/`."
)


def expectations_job(plan: RunPlan, root: Path, conf: Mapping[str, str] | None = None) -> SparkJob:
    """The expectations job of a run: its outputs, spec, report folder and store run id."""
    args = (
        *("--run-id", plan.run_id, "--spec", plan.spec_file),
        *("--candidate", plan.path("candidate"), "--reference", plan.path("reference")),
        *("--report-dir", plan.path("report"), "--root", str(root)),
    )
    return SparkJob(
        application=str(root / "jobs" / "check_expectations.py"),
        args=args,
        conf=dict(conf or {}),
        name=f"parity-{plan.validation}-expectations",
    )


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


class ExpectationsOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` submitting ``expectations_job`` for the run's plan; the task's
    *Rendered Template* page shows the exact spark-submit line."""

    def __init__(
        self, *, root: Path, spark_conf: Mapping[str, str] | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("task_id", EXPECTATIONS_TASK)
        kwargs.setdefault("doc_md", DOC)
        super().__init__(name="parity-expectations", **kwargs)
        self.root = str(root)
        self.spark_conf = dict(spark_conf or {})

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        super().render_template_fields(context, jinja_env)
        plan = RunPlan.from_dict(context["ti"].xcom_pull(task_ids=PLAN_TASK))
        job = expectations_job(plan, Path(self.root), self.spark_conf)
        self.application = job.application
        self.application_args = list(job.args)
        self.conf = dict(job.conf)
        self.name = job.name
