"""Leases on running runs: a job killed outright does not leave its run running forever.

A real process holds the lease (``Heartbeat``) and is killed with SIGKILL, on both backends;
readers then show the run failed without writing, and ``parity runs expire`` records it. The
match job itself, killed the same way under ``spark-submit``, is in ``test_match_job.py``.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import Engine, text

from matcher.spec import load_spec
from matcher.store import (
    ExpiredRun,
    Heartbeat,
    RunOutcome,
    RunStart,
    Store,
    StoreError,
    lease_seconds,
)
from matcher.store.errors import masked
from matcher.store.lease import LEASE_VARIABLE, lease_expired_reason
from parity.cli import main

pytest_plugins = ["store_fixtures"]

# argv: url, run id, ready file. Starts the run, renews its lease every 50 ms, and says so
# (the ready file) once the lease was renewed; then works until it is killed.
_HOLD_A_LEASE = """
import sys, threading
from pathlib import Path
from matcher.store import Heartbeat, RunStart, Store
url, run_id, ready = sys.argv[1], sys.argv[2], Path(sys.argv[3])
store = Store.open(url)
store.start_run(RunStart(run_id, "taxi", trigger="scheduled"))
with Heartbeat(store, run_id, period=0.05):
    first = store.get_run(run_id).lease_expires_at
    while store.get_run(run_id).lease_expires_at == first:
        threading.Event().wait(0.01)
    ready.touch()
    threading.Event().wait()
"""


def _raw(engine: Engine, run_id: str) -> tuple[str, dt.datetime | None]:
    """The run's stored status and lease, as the database holds them (no lease logic)."""
    with engine.connect() as connection:
        status, lease = connection.execute(
            text("SELECT status, lease_expires_at FROM runs WHERE run_id = :id"), {"id": run_id}
        ).one()
    if isinstance(lease, str):  # SQLite: naive UTC text
        lease = dt.datetime.fromisoformat(lease)
    if lease is not None and lease.tzinfo is None:
        lease = lease.replace(tzinfo=dt.UTC)
    return status, lease


def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    while not path.exists():
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)


def _sleep_past(moment: dt.datetime) -> None:
    """Wait until ``moment`` has passed on this machine's clock (the lease's clock)."""
    while dt.datetime.now(dt.UTC) <= moment:
        time.sleep(0.05)


def test_a_killed_job_reads_as_failed_once_its_lease_expired_and_expire_records_it(
    db_url: str, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Store.open(db_url).close()
    ready = tmp_path / "ready"
    job = subprocess.Popen(
        [sys.executable, "-c", _HOLD_A_LEASE, db_url, "taxi/killed", str(ready)],
        env={**os.environ, LEASE_VARIABLE: "1"},
        start_new_session=True,  # its own process group, killed whole as a scheduler does
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _wait_for(ready, job)
    os.killpg(job.pid, signal.SIGKILL)
    job.communicate()
    status, lease = _raw(engine, "taxi/killed")
    assert status == "running" and lease is not None
    _sleep_past(lease)

    reason = lease_expired_reason(lease)
    assert reason.startswith("the job stopped reporting: its lease expired at ")
    with Store.open_readonly(db_url) as store:
        run = store.get_run("taxi/killed")
        assert run is not None
        assert (run.status, run.verdict, run.error, run.finished_at) == (
            "failed",
            "error",
            reason,
            lease,
        )
        assert (run.gate_passed, run.lease_expires_at) == (False, None)
        assert [r.run_id for r in store.list_runs(status="failed")] == ["taxi/killed"]
        assert [r.run_id for r in store.list_runs(verdict="error")] == ["taxi/killed"]
        assert store.list_runs(status="running") == []
        newest = store.latest_run("taxi", completed_only=False)
        assert newest is not None and newest.status == "failed"
    assert _raw(engine, "taxi/killed") == ("running", lease)  # read, not written

    assert main(["runs", "expire", "--db", db_url]) == 0
    assert capsys.readouterr().out == (
        f"failed taxi/killed (taxi): {reason}\n1 expired run(s) failed in {masked(db_url)}\n"
    )
    assert _raw(engine, "taxi/killed") == ("failed", None)
    with Store.open_readonly(db_url) as store:
        assert store.get_run("taxi/killed") == run  # what readers showed is what was written
    assert main(["runs", "expire", "--db", db_url]) == 0
    assert capsys.readouterr().out == f"0 expired run(s) failed in {masked(db_url)}\n"


def test_heartbeats_renew_running_runs_only(store: Store, engine: Engine) -> None:
    store.start_run(RunStart("r1", "taxi"))
    _, started = _raw(engine, "r1")
    assert started is not None
    assert store.heartbeat("r1") is True
    _, renewed = _raw(engine, "r1")
    assert renewed is not None and renewed >= started
    store.record_run("r1", RunOutcome("equivalent"))
    assert store.heartbeat("r1") is False
    assert _raw(engine, "r1") == ("completed", None)
    assert store.heartbeat("never-started") is False
    assert store.expire_runs() == []


def test_a_live_run_is_not_expired(store: Store) -> None:
    store.start_run(RunStart("r1", "taxi"))
    assert store.expire_runs() == []
    run = store.get_run("r1")
    assert run is not None and run.status == "running"
    assert run.lease_expires_at is not None


def test_expire_returns_what_it_failed(
    store: Store, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEASE_VARIABLE, "0.001")
    store.start_run(RunStart("b/1", "taxi"))
    store.start_run(RunStart("a/1", "bus"))
    _, lease_b = _raw(engine, "b/1")
    _, lease_a = _raw(engine, "a/1")
    assert lease_a is not None and lease_b is not None
    _sleep_past(max(lease_a, lease_b))
    assert store.expire_runs() == [
        ExpiredRun("a/1", "bus", lease_a, lease_expired_reason(lease_a)),
        ExpiredRun("b/1", "taxi", lease_b, lease_expired_reason(lease_b)),
    ]


def test_fail_if_running_leaves_an_ended_run_alone(store: Store) -> None:
    store.start_run(RunStart("done", "taxi"))
    store.record_run("done", RunOutcome("equivalent"))
    store.start_run(RunStart("live", "taxi"))
    assert store.fail_if_running("done", "the match task failed") is False
    assert store.fail_if_running("live", "the match task failed") is True
    assert store.fail_if_running("never", "the match task failed") is False
    done, live = store.get_run("done"), store.get_run("live")
    assert done is not None and (done.status, done.verdict) == ("completed", "equivalent")
    assert live is not None
    assert (live.status, live.verdict, live.error) == ("failed", "error", "the match task failed")
    assert store.get_run("never") is None


def test_the_heartbeat_thread_renews_until_the_block_ends(store: Store, engine: Engine) -> None:
    store.start_run(RunStart("r1", "taxi"))
    _, first = _raw(engine, "r1")
    with Heartbeat(store, "r1", period=0.01):
        while _raw(engine, "r1")[1] == first:
            time.sleep(0.01)
    _, last = _raw(engine, "r1")
    assert last is not None and first is not None and last > first
    assert _raw(engine, "r1") == ("running", last)  # no beat after the block


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf", "nan"])
def test_a_bad_lease_setting_is_one_line(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LEASE_VARIABLE, value)
    with pytest.raises(StoreError) as raised:
        lease_seconds()
    assert str(raised.value) == (
        f"PARITY_RUN_LEASE_SECONDS={value!r}: expected a number of seconds > 0"
    )


def test_the_default_lease_and_beat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LEASE_VARIABLE, raising=False)
    assert lease_seconds() == 120.0
    monkeypatch.setenv(LEASE_VARIABLE, "2.5")
    assert lease_seconds() == 2.5


def test_the_airflow_callback_fails_a_match_that_died_running(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from parity.airflow.tasks import fail_running_match

    with Store.open(sqlite_url) as store:
        store.start_run(RunStart("parity__taxi/manual__1", "taxi"))
        store.start_run(RunStart("parity__taxi/manual__2", "taxi"))
        store.record_run("parity__taxi/manual__2", RunOutcome("divergent"))
    monkeypatch.setenv("PARITY_DB_URL", sqlite_url)
    for dag_run_id in ("manual__1", "manual__2"):
        fail_running_match(
            {
                "dag_run": SimpleNamespace(dag_id="parity__taxi", run_id=dag_run_id),
                "exception": RuntimeError("Task received SIGTERM signal\nmore"),
            }
        )
    with Store.open_readonly(sqlite_url) as store:
        died, ended = (
            store.get_run("parity__taxi/manual__1"),
            store.get_run("parity__taxi/manual__2"),
        )
    assert died is not None and (died.status, died.error) == (
        "failed",
        "the match task failed: RuntimeError: Task received SIGTERM signal",
    )
    assert ended is not None and (ended.status, ended.verdict) == ("completed", "divergent")


def test_the_match_task_carries_the_callback() -> None:
    from parity.airflow.factory import build_dag
    from parity.airflow.tasks import fail_running_match

    root = Path(__file__).resolve().parent.parent
    spec = load_spec(root / "dags" / "validations" / "taxi_parallel.yaml")
    dag = build_dag(spec, root=root)
    assert dag.get_task("match").on_failure_callback == [fail_running_match]
    assert {t.task_id for t in dag.tasks if t.on_failure_callback} == {"match"}
