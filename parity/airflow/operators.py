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

On a cluster (the connection's master is not ``local[...]``) both operators submit, through
``submitted_job``, Parity's own jobs (slice, match, expectations) and the applications that are
modules of its packages (the bundled examples) with the project's code for the executors
(``parity.runs.package``: one zip per content under ``$PARITY_HOME/packages/``)::

    --conf spark.archives=$PARITY_HOME/packages/parity-<digest>.zip#parity-code
    --conf spark.executorEnv.PYTHONPATH=parity-code

A user's own application gets its spec's ``py_files`` only; on ``local[...]`` nothing is added.

An application given by URL (``s3a://artifacts/etl/etl-1.5.0.py``, ``https://...``: a spec's
own, or an ad-hoc run's under an allowed prefix, ``parity.airflow.plan.AdhocPolicy``) is
staged by the task into a temporary directory of its own (``parity.runs.artifacts``) and
``spark-submit`` gets the local file; the log says what ran::

    parity: staged s3a://artifacts/etl/etl-1.5.0.py (5120 bytes, sha256 9f86d0…) as /tmp/…

Parity's own jobs (slice, match, expectations) get ``PARITY_DB_URL`` from the results
database's Airflow Connection when there is one (``parity.airflow.connections``), in their
process's environment, never on the command line the hook logs.

The ``match`` task submits nothing when the run's outputs are small and local: it runs the
same job with ``--engine core`` in a Python process on the worker (``parity.runs.engines``,
``PARITY_CORE_MATCH_BYTES``), its output in the task's log, and fails as a ``spark-submit``
that exited non-zero would. Its *Rendered Template* page then shows that command.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from matcher.errors import ParityError
from matcher.files.locations import local_bytes
from parity.airflow.plan import PLAN_TASK, RunPlan, job_for
from parity.runs import artifacts
from parity.runs.engines import BYTES_VARIABLE, core_match_argv, core_match_limit
from parity.runs.package import PACKAGES_DIR, ProjectCode, is_local_master, submitted_to
from parity.runs.submits import SparkJob

EXPECTATIONS_TASK = "expectations"
#: the plan's jobs that are Parity's own (the expectations job is ``ExpectationsOperator``'s)
OWN_JOBS = ("slice", "match")
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


def master_url(conn_type: str | None, host: str | None, port: int | None) -> str:
    """The master the Spark provider's hook submits to for a connection, by its rule
    (``SparkSubmitHook._resolve_connection``): a ``spark`` connection's host when it holds a
    whole URL (``spark://h:7077``, ``k8s://https://h``) or has no port (``local[2]``,
    ``yarn``), else ``TYPE://HOST``; then ``:PORT`` when the connection has one."""
    if conn_type == "spark" and host and ("://" in host or not port):
        master = host
    else:
        master = f"{conn_type}://{host or ''}"
    return f"{master}:{port}" if port else master


def spark_master(conn_id: str) -> str:
    """The master of the Spark connection ``conn_id``; ``yarn`` when there is no such
    connection, as the hook then defaults to."""
    from airflow.providers.common.compat.sdk import AirflowException, BaseHook

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowException:
        return "yarn"
    return master_url(conn.conn_type, conn.host, conn.port)


def submitted_job(
    job: SparkJob,
    *,
    own: bool,
    master: str,
    code: ProjectCode | None = None,
    cache_dir: Path | None = None,
) -> SparkJob:
    """``job`` as it is submitted to ``master``: on a cluster, when it is Parity's own
    (``own``) or its application is a module of the project's packages, with the project's
    zip for its executors (built into ``cache_dir``, default ``$PARITY_HOME/packages``, unless
    the same code is already there); otherwise as planned."""
    if is_local_master(master):  # nothing ships: no need to know where the cache is
        return job
    if cache_dir is None:
        from parity.airflow.factory import parity_home

        cache_dir = parity_home() / PACKAGES_DIR
    return submitted_to(job, master, own=own, cache_dir=cache_dir, code=code)


@contextlib.contextmanager
def open_stored(url: str) -> Iterator[tuple[int | None, Any]]:
    """The file at a Hadoop-style URI (``s3a://``, ``hdfs://``, ``gs://``...), its size and
    a stream of its bytes, read through ``pyarrow.fs`` as the workspace is
    (``matcher.files.locations``): ``artifacts.stage``'s ``open_stored``."""
    from pyarrow import fs as pafs

    from matcher.files.locations import resolve

    filesystem, path = resolve(url)
    info = filesystem.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(path)
    if info.type != pafs.FileType.File:
        raise IsADirectoryError(path)
    with filesystem.open_input_stream(path) as stream:
        yield info.size, stream


@contextlib.contextmanager
def results_db_environment() -> Iterator[None]:
    """``PARITY_DB_URL`` set, for the processes started within, to the results database's
    Airflow Connection when there is one (``parity.airflow.connections``), restored after:
    Parity's own jobs record to it. Passed through the environment, never as an argument or
    a ``--conf``, which the provider's hook logs; the store's own error masks a password."""
    from airflow.sdk.exceptions import AirflowFailException

    from matcher.store.config import URL_VARIABLE
    from parity.airflow.connections import results_db_url

    try:
        url = results_db_url()
    except ParityError as exc:  # the connection's type: retrying would not mend it
        raise AirflowFailException(str(exc)) from None
    if url is None:
        yield
        return
    previous = os.environ.get(URL_VARIABLE)
    os.environ[URL_VARIABLE] = url
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(URL_VARIABLE, None)
        else:
            os.environ[URL_VARIABLE] = previous


def match_outputs(plan: RunPlan) -> list[str]:
    """What the run's match job reads: the reference, the candidate and the rerun."""
    return [plan.path(name) for name in ("reference", "candidate", "rerun") if name in plan.jobs]


class ParitySparkSubmitOperator(SparkSubmitOperator):
    """Submits one job of the run's plan (the ``plan`` task's XCom); the match job of small
    local outputs runs on the core instead (module docstring)."""

    def __init__(self, *, job: str, **kwargs: Any) -> None:
        super().__init__(name=f"parity-{job}", **kwargs)
        self.job = job
        self._planned: SparkJob | None = None
        self._outputs: list[str] = []
        self._core: subprocess.Popen[str] | None = None
        #: the core's command, when rendering already chose it (``_show_core_command``)
        self._core_argv: list[str] | None = None

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        super().render_template_fields(context, jinja_env)
        ti = context["ti"]
        plan = RunPlan.from_dict(ti.xcom_pull(task_ids=PLAN_TASK))
        job = job_for(plan, self.job, task_try=ti.try_number)
        self._planned, self._outputs = job, match_outputs(plan)
        job = submitted_job(job, own=self.job in OWN_JOBS, master=spark_master(self._conn_id))
        self.application = job.application
        self.application_args = list(job.args)
        self.conf = dict(job.conf)
        self.name = job.name
        self.py_files = ",".join(job.py_files) or None
        self.jars = ",".join(job.jars) or None
        self._java_class = job.main_class
        if self.job == "match":
            self._show_core_command()

    def _show_core_command(self) -> None:
        """When the core will decide, the fields show its command, not a ``spark-submit``
        line that never runs: the task's *Rendered Template* page is then the application
        and its arguments ending in ``--engine core``, with no Spark configuration. The
        upstream jobs have written the outputs by now, so their size is known; a bad
        setting is left for ``execute`` to fail the task with."""
        from airflow.sdk.exceptions import AirflowFailException

        try:
            command = self._core_command()
        except AirflowFailException:
            return
        if command is not None:
            self._core_argv = command
            self.application, self.application_args = command[1], command[2:]
            self.conf, self.py_files, self.jars = {}, None, None

    def execute(self, context: Any) -> None:
        # The store's connection goes to Parity's own jobs only: an application is user
        # code, and needs no password of the results database.
        own = self.job in OWN_JOBS
        with results_db_environment() if own else contextlib.nullcontext():
            if self.job == "match" and self._planned is not None:
                command = self._core_argv or self._core_command()
                if command is not None:
                    self._run_core(command)
                    return
            with self._staged_application():
                try:
                    super().execute(context)
                finally:
                    # The provider's hook reads spark-submit's output through a pipe it
                    # never closes.
                    process = getattr(self._hook, "_submit_sp", None)
                    if process is not None and process.stdout is not None:
                        process.stdout.close()

    @contextlib.contextmanager
    def _staged_application(self) -> Iterator[None]:
        """An application URL (``parity.runs.artifacts``) copied into a directory of this
        task try's own, removed afterwards, and ``spark-submit`` given that file: the bytes
        that run are those whose size and SHA-256 the log shows. The *Rendered Template*
        page keeps the URL."""
        url = self.application
        if not artifacts.is_stageable(url):
            yield
            return
        from airflow.providers.common.compat.sdk import AirflowException
        from airflow.sdk.exceptions import AirflowFailException

        from matcher.store.errors import redact

        shown = redact(artifacts.shown(url), url)
        try:
            limit = artifacts.max_bytes()
        except ParityError as exc:  # the deployment's setting: retrying would not mend it
            raise AirflowFailException(str(exc)) from None
        with tempfile.TemporaryDirectory(prefix="parity-stage-") as directory:
            try:
                staged = artifacts.stage(url, Path(directory), open_stored=open_stored, limit=limit)
            except artifacts.ArtifactFetchError as exc:  # the network or the store: retry
                raise AirflowException(redact(str(exc), url)) from None
            except ParityError as exc:
                raise AirflowFailException(redact(str(exc), url)) from None
            self.log.info(
                "parity: staged %s (%d bytes, sha256 %s) as %s",
                shown,
                staged.size,
                staged.sha256,
                staged.path,
            )
            self.application = str(staged.path)
            try:
                yield
            finally:
                self.application = url

    def on_kill(self) -> None:
        if self._core is not None and self._core.poll() is None:
            self._core.kill()
            return
        super().on_kill()

    def _core_command(self) -> list[str] | None:
        """The match job on the core when the outputs are small and local, else None."""
        from airflow.sdk.exceptions import AirflowFailException

        assert self._planned is not None
        try:
            limit = core_match_limit()
        except ParityError as exc:  # the deployment's setting: retrying would not mend it
            raise AirflowFailException(str(exc)) from None
        size = None if limit is None else local_bytes(self._outputs, limit)
        if size is None:
            return None
        self.log.info(
            "parity: the outputs hold %d bytes, at most %s=%d: the core matcher decides in a "
            "Python process, without spark-submit",
            size,
            BYTES_VARIABLE,
            limit,
        )
        return core_match_argv(self._planned)

    def _run_core(self, command: Sequence[str]) -> None:
        """Run ``command``, its output in the task's log; a non-zero exit fails the task."""
        from airflow.providers.common.compat.sdk import AirflowException

        self.log.info("parity: running %s", " ".join(command))
        self._core = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert self._core.stdout is not None
        with self._core.stdout:
            for line in self._core.stdout:
                self.log.info("%s", line.rstrip("\n"))
        code = self._core.wait()
        if code != 0:
            raise AirflowException(f"the match job exited with code {code} (see its output above)")


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
        job = submitted_job(job, own=True, master=spark_master(self._conn_id))
        self.application = job.application
        self.application_args = list(job.args)
        self.conf = dict(job.conf)
        self.name = job.name

    def execute(self, context: Any) -> None:
        with results_db_environment():
            super().execute(context)
