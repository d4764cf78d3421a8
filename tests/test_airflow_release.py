"""The release loop in Airflow's vocabulary, on real Airflow (``dag.test()`` on the real dags
folder): every verdict an Asset event, a closed gate one log line without a traceback or a
retry, a rejected run stored as failed, the results database from an Airflow Connection,
the validation group in a team's DAG (build ─► validate ─► deploy, real Spark), and the
deploy example's decision.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import shutil
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import DAGS, ROOT, ParityEnv, dag_bag

from matcher.store import Store, StoreError

pytest_plugins = ("airflow_fixtures", "store_fixtures")

pytestmark = [
    # Airflow's in-process execution API (dag.test) imports starlette.testclient, which
    # warns that it uses httpx; nothing of ours uses it.
    pytest.mark.filterwarnings(
        "ignore:Using `httpx` with `starlette.testclient` is deprecated:UserWarning"
    ),
    # The Spark provider's SparkSubmitHook never closes spark-submit's stdout pipe.
    pytest.mark.filterwarnings("ignore:unclosed file <_io.TextIOWrapper name=:ResourceWarning"),
]
UTC = dt.UTC
VALIDATION = "maxrow_wellformed"
#: a window that ends before it starts: the plan rejects the run
BAD_WINDOW = {"window_start": "2024-05-02T00:00:00Z", "window_end": "2024-05-01T00:00:00Z"}
REJECTION = (
    "params.window_end: must be after window_start (2024-05-02T00:00:00+00:00), "
    "got 2024-05-01T00:00:00+00:00"
)


@pytest.fixture(autouse=True)
def collect_leaked_pipes() -> Iterator[None]:
    yield
    gc.collect()


def states(run: Any) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


@contextmanager
def task_log_events(task_id: str) -> Iterator[list[MutableMapping[str, Any]]]:
    """What the task runner logs while ``dag.test()`` runs task ``task_id``, as structlog
    events (the lines of the task's log file, before rendering). ``dag.test()`` runs each
    task in this process (``run_task_in_process``), with a task logger made at the task's
    start, so capturing around that call sees exactly that task's log."""
    from airflow.sdk.execution_time import supervisor
    from structlog.testing import capture_logs

    run_in_process = supervisor.run_task_in_process
    events: list[MutableMapping[str, Any]] = []

    def capturing(ti: Any, task: Any, client: Any = None) -> Any:
        if ti.task_id != task_id:
            return run_in_process(ti, task, client=client)
        with capture_logs() as captured:
            try:
                return run_in_process(ti, task, client=client)
            finally:
                events.extend(captured)

    # dag.test() imports run_task_in_process from the module at each task (as tools/demo.py).
    supervisor.run_task_in_process = capturing
    try:
        yield events
    finally:
        supervisor.run_task_in_process = run_in_process


def asset_events(dag_id: str, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The Asset events a DAG run's tasks emitted, from Airflow's metadata database."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetModel.name, AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetEvent.source_dag_id == dag_id, AssetEvent.source_run_id == run_id)
        )
        return [(name, dict(extra)) for name, extra in rows]


def copy_validation(name: str, tmp_path: Path, validations: Path) -> None:
    """The bundled spec ``name`` in ``validations``, reading its capture generated under
    ``tmp_path`` (not the repository's ``data/``)."""
    from jobs.examples.generate import generate

    text = (DAGS / "validations" / f"{name}.yaml").read_text(encoding="utf-8")
    capture = generate(name, tmp_path / "captures").path
    text = text.replace(f"data/captures/{name}", str(capture))
    (validations / f"{name}.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def maxrow_dag(parity_env: ParityEnv, tmp_path: Path, airflow_db: Path) -> Any:
    copy_validation(VALIDATION, tmp_path, parity_env.validations)
    bag = dag_bag()
    assert bag.import_errors == {}
    return bag


# --- the results database from an Airflow Connection ---------------------------------------


def connection_json(url: str) -> str:
    """An Airflow connection (JSON form) for the SQLAlchemy ``url`` of the store tests."""
    from sqlalchemy import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return json.dumps({"conn_type": "sqlite", "host": parsed.database})
    return json.dumps(
        {
            "conn_type": "postgres",
            "host": parsed.host,
            "port": parsed.port,
            "login": parsed.username,
            "schema": parsed.database,
            "extra": dict(parsed.query),
        }
    )


def test_a_connection_is_the_store_url_the_store_expects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from parity.airflow.connections import results_db_url

    monkeypatch.delenv("PARITY_DB_CONN_ID", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_PARITY_DB", raising=False)
    assert results_db_url() is None
    monkeypatch.setenv(
        "AIRFLOW_CONN_PARITY_DB",
        json.dumps(
            {
                "conn_type": "postgres",
                "host": "db.example",
                "port": 5433,
                "login": "parity",
                "password": "p@ss/word",
                "schema": "results",
                "extra": {"sslmode": "require", "cursor": "dictcursor"},
            }
        ),
    )
    assert results_db_url() == (
        "postgresql+psycopg://parity:p%40ss%2Fword@db.example:5433/results?sslmode=require"
    )
    monkeypatch.setenv("AIRFLOW_CONN_PARITY_DB", "postgresql://u@h/db")
    assert results_db_url() == "postgresql+psycopg://u@h/db"
    monkeypatch.setenv("AIRFLOW_CONN_PARITY_DB", "sqlite:////var/lib/parity/results.db")
    assert results_db_url() == "sqlite:////var/lib/parity/results.db"
    # another connection id, named by the deployment
    monkeypatch.setenv("PARITY_DB_CONN_ID", "results")
    assert results_db_url() is None
    monkeypatch.setenv("AIRFLOW_CONN_RESULTS", "mysql://u@h/db")
    with pytest.raises(StoreError, match=r"^connection results: conn_type 'mysql' is not a "):
        results_db_url()


def test_a_rejected_run_is_stored_published_and_gated_in_one_line(
    maxrow_dag: Any,
    parity_env: ParityEnv,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bad parameters: the plan stores the run failed with its reason in the connection's
    database (not PARITY_DB_URL's), ``record`` publishes it (verdict ``error``, gate closed)
    and ``gate`` fails with one line in its log, no traceback, no retry."""
    monkeypatch.setenv("AIRFLOW_CONN_PARITY_DB", connection_json(db_url))
    # dag.test() runs the tasks in this process: the PARITY_DB_URL their hook sets is undone
    # with parity_env's.
    dag = maxrow_dag.dags[f"parity_{VALIDATION}"]
    with task_log_events("gate") as gate_log:
        run = dag.test(run_conf={**BAD_WINDOW, "candidate_version": "2.0-rc1"})
    assert str(run.state) == "failed"
    assert states(run) == {
        "plan": "failed",
        "slice_input": "upstream_failed",
        "run_reference": "upstream_failed",
        "run_candidate": "upstream_failed",
        "match": "upstream_failed",
        "expectations": "upstream_failed",
        "record": "success",
        "gate": "failed",
    }
    run_id = f"parity_{VALIDATION}/{run.run_id}"
    reason = f"rejected by the plan: {REJECTION}"
    with Store.open(db_url) as store:
        stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.status, stored.verdict, stored.error, stored.validation) == (
        "failed",
        "error",
        reason,
        VALIDATION,
    )
    assert (stored.candidate_version, stored.reference_version, stored.trigger) == (
        "2.0-rc1",
        "sequential",
        "adhoc",
    )
    assert (stored.dag_id, stored.dag_run_id) == (f"parity_{VALIDATION}", run.run_id)
    with Store.open(parity_env.db_url) as store:
        assert store.list_runs() == []
    [(name, extra)] = asset_events(f"parity_{VALIDATION}", run.run_id)
    assert name == f"parity://{VALIDATION}"
    assert extra == {
        "validation": VALIDATION,
        "run_id": run_id,
        "dag_run_id": run.run_id,
        "verdict": "error",
        "gate": "closed",
        "passed": False,
        "reason": f"the run failed: {reason}",
        "candidate_version": "2.0-rc1",
        "reference_version": "sequential",
        "counts": {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0},
        "spec_hash": stored.spec_hash,
    }
    [gate] = [ti for ti in run.get_task_instances() if ti.task_id == "gate"]
    assert gate.try_number == 1 and gate.max_tries == 0
    link = "/parity/runs/" + run_id.replace("/", "%2F").replace(":", "%3A").replace("+", "%2B")
    line = f"parity: gate closed: error; the run failed: {reason}; {link}"
    # one line at level error, Airflow's "Task exited" with the gate's line; no traceback
    assert [e for e in gate_log if e["log_level"] in ("error", "critical")] == [
        {"event": "Task exited", "exit_code": line, "log_level": "error", "logger_name": "task"}
    ]
    assert not [e for e in gate_log if "exc_info" in e or "exception" in e]
    # the gate says why: the newest attempt of that version was rejected
    from parity.views.gate import gate_status

    with Store.open(db_url) as store:
        status = gate_status(store, VALIDATION, "2.0-rc1")
    assert status.state == "no_verdict"
    assert status.reason == f"newest attempt failed: {reason}"


def test_a_spec_names_its_spark_connection(
    parity_env: ParityEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matcher.errors import SpecError
    from matcher.spec import load_spec
    from parity.airflow.factory import build_dag

    copy_validation(VALIDATION, tmp_path, parity_env.validations)
    path = parity_env.validations / f"{VALIDATION}.yaml"
    monkeypatch.setenv("PARITY_SPARK_CONN_ID", "spark_deployment")
    spark_tasks = ("slice_input", "run_reference", "run_candidate", "match", "expectations")
    dag = build_dag(load_spec(path), root=ROOT)
    assert {dag.task_dict[t]._conn_id for t in spark_tasks} == {"spark_deployment"}
    path.write_text(path.read_text() + "airflow: {conn_id: spark_cluster}\n")
    dag = build_dag(load_spec(path), root=ROOT)
    assert {dag.task_dict[t]._conn_id for t in spark_tasks} == {"spark_cluster"}
    path.write_text(path.read_text().replace("spark_cluster", "'spark cluster'"))
    with pytest.raises(SpecError, match=r"airflow.conn_id: .*a connection id is letters"):
        load_spec(path)


# --- the gate's line --------------------------------------------------------------------------


def test_the_gate_is_one_line_and_a_closed_one_exits_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    from parity.airflow.tasks import GateClosed, enforce_gate

    decision = {
        "passed": False,
        "reason": "verdict divergent (the gate requires equivalent)\x1b[31m",
        "verdict": "divergent",
        "counts": {"loss": 2, "duplication": 0, "reordering": 0, "corruption": 1},
        "run_id": "parity_taxi/manual__1",
    }
    line = (
        "parity: gate closed: divergent (loss 2, corruption 1); verdict divergent (the gate "
        "requires equivalent)\\x1b[31m; /parity/runs/parity_taxi%2Fmanual__1"
    )
    with pytest.raises(GateClosed) as closed:
        enforce_gate(decision, "fail")
    assert closed.value.code == line
    with pytest.raises(AirflowSkipException, match=r"\(gate.on_closed: warn\)$"):
        enforce_gate(decision, "warn")
    enforce_gate({**decision, "passed": True, "verdict": "equivalent", "counts": {}}, "fail")
    assert capsys.readouterr().out.startswith("parity: gate open: equivalent; verdict divergent")


# --- the deploy example's decision ----------------------------------------------------------


class Event:
    """What a deploy DAG's ``triggering_asset_events`` hold: a time and an extra."""

    def __init__(self, minute: int, extra: dict[str, Any]) -> None:
        self.timestamp = dt.datetime(2026, 1, 2, 3, minute, tzinfo=UTC)
        self.extra = extra


def test_the_deploy_example_ships_only_on_the_newest_open_gate() -> None:
    from parity.airflow.assets import deploy_decision, validation_asset

    asset = validation_asset("taxi_parallel")
    assert asset.uri == "parity://taxi_parallel/"
    opened = {"validation": "taxi_parallel", "candidate_version": "1.5", "verdict": "equivalent"}
    closed = {**opened, "verdict": "divergent", "reason": "verdict divergent"}
    decision = deploy_decision({asset: [Event(1, {**opened, "gate": "open"})]}, asset)
    assert (decision.deploy, decision.line) == (
        True,
        "gate open: taxi_parallel 1.5 (equivalent): deploying",
    )
    # the newest event decides, whatever the order they come in
    events = [Event(5, {**closed, "gate": "closed"}), Event(1, {**opened, "gate": "open"})]
    decision = deploy_decision({asset: events}, asset)
    assert (decision.deploy, decision.line) == (
        False,
        "gate closed: taxi_parallel 1.5 (divergent): verdict divergent: not deploying",
    )
    assert decision.extra is not None and decision.extra["verdict"] == "divergent"
    assert deploy_decision({}, asset).deploy is False
    other = validation_asset("taxi_parallel_buggy")
    assert deploy_decision({other: [Event(1, {"gate": "open"})]}, asset).deploy is False


def test_the_example_dags_load_from_the_real_dags_folder(
    parity_env: ParityEnv, tmp_path: Path, airflow_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk import Asset, AssetAll

    copy_validation(VALIDATION, tmp_path, parity_env.validations)
    shutil.copy(DAGS / "validations" / "taxi_parallel.yaml", parity_env.validations)
    bag = dag_bag()
    assert bag.import_errors == {}
    release = bag.dags["parity_release_example"]
    assert sorted(release.task_dict) == sorted(
        [
            *("build", "deploy", "plan", "slice_input", "run_reference", "run_candidate"),
            *("match", "expectations", "record", "gate"),
        ]
    )
    assert release.task_dict["plan"].upstream_task_ids == {"build"}
    assert release.task_dict["deploy"].upstream_task_ids == {"build", "gate"}
    deploy = bag.dags["parity_deploy_example"]
    assert deploy.timetable.asset_condition == AssetAll(Asset("parity://taxi_parallel"))
    assert deploy.task_dict["deploy"].upstream_task_ids == {"gate_open"}
    # A deployment whose validations folder lacks the examples' specs gets no examples (and
    # no import error).
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(tmp_path / "no-such-folder"))
    bag = dag_bag()
    assert (bag.import_errors, bag.dag_ids) == ({}, [])


# --- build ─► validate ─► deploy, for real ----------------------------------------------------


@pytest.mark.release_e2e
@pytest.mark.spark
@pytest.mark.timeout(1800)
def test_the_release_example_validates_the_build_and_deploys(
    maxrow_dag: Any, parity_env: ParityEnv
) -> None:
    dag = maxrow_dag.dags["parity_release_example"]
    run = dag.test()
    assert str(run.state) == "success", states(run)
    assert set(states(run).values()) == {"success"}
    assert len(states(run)) == 10
    version = f"build-{run.run_id}"
    run_id = f"parity_release_example/{run.run_id}"
    with Store.open(parity_env.db_url) as store:
        stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.validation, stored.status, stored.verdict, stored.gate_passed) == (
        VALIDATION,
        "completed",
        "equivalent",
        True,
    )
    assert (stored.candidate_version, stored.reference_version) == (version, "sequential")
    [(name, extra)] = asset_events("parity_release_example", run.run_id)
    assert name == f"parity://{VALIDATION}"
    assert {k: extra[k] for k in ("verdict", "gate", "passed", "candidate_version")} == {
        "verdict": "equivalent",
        "gate": "open",
        "passed": True,
        "candidate_version": version,
    }
    assert (extra["run_id"], extra["dag_run_id"]) == (run_id, run.run_id)
