"""Many processes writing one store at once: every write waits its turn, none fails.

Real processes (not threads: each has its own connections, as parallel Airflow tasks do),
released together from a rendezvous so that their writes really overlap.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from matcher.store import Store

pytestmark = pytest.mark.slow
pytest_plugins = ["store_fixtures"]
TESTS = Path(__file__).resolve().parent

# argv: url, rendezvous folder, workers, worker number, runs. Once every worker is ready,
# starts and completes its own runs (the sample run, with all its evidence), each from a
# store of its own, as separate jobs do.
_WRITE_RUNS = """
import sys, time
from pathlib import Path
from matcher.store import Store
from store_fixtures import outcome, start
url, rendezvous, workers, me, runs = sys.argv[1], Path(sys.argv[2]), *map(int, sys.argv[3:])
(rendezvous / str(me)).touch()
while len(list(rendezvous.iterdir())) < workers:
    time.sleep(0.005)
for n in range(runs):
    run_id = f"w{me}/run-{n}"
    with Store.open(url) as store, store.running(start(run_id)):
        store.record_run(run_id, outcome())
"""

# argv: url, rendezvous folder, workers, worker number, runs. Every worker starts the same
# run ids, as retried or duplicated tasks of one DAG run do.
_START_SAME_RUNS = """
import sys, time
from pathlib import Path
from matcher.store import RunStart, Store
url, rendezvous, workers, me, runs = sys.argv[1], Path(sys.argv[2]), *map(int, sys.argv[3:])
with Store.open(url) as store:
    (rendezvous / str(me)).touch()
    while len(list(rendezvous.iterdir())) < workers:
        time.sleep(0.005)
    for n in range(runs):
        store.start_run(RunStart(f"shared/run-{n}", "taxi", task_try=me))
"""


def _race(script: str, url: str, tmp_path: Path, workers: int, runs: int) -> list[str]:
    """Run ``workers`` processes of ``script`` together; their outputs, each checked exit 0."""
    rendezvous = tmp_path / "ready"
    rendezvous.mkdir()
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, url, str(rendezvous), str(workers), str(me), str(runs)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": str(TESTS)},  # store_fixtures
        )
        for me in range(workers)
    ]
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    assert [process.returncode for process in processes] == [0] * workers, outputs
    return outputs


@pytest.mark.parametrize("workers", [2, 6])
def test_concurrent_sqlite_writers_all_complete(
    sqlite_url: str, tmp_path: Path, workers: int
) -> None:
    # Used to fail at once with "database is locked": PRAGMA journal_mode on every connect,
    # and deferred transactions that cannot wait to upgrade to a write.
    _race(_WRITE_RUNS, sqlite_url, tmp_path, workers, runs=20)
    with Store.open_readonly(sqlite_url) as store:
        runs = store.list_runs(limit=1000)
    assert sorted(run.run_id for run in runs) == sorted(
        f"w{me}/run-{n}" for me in range(workers) for n in range(20)
    )
    assert {(run.status, run.verdict, run.total_divergences) for run in runs} == {
        ("completed", "divergent", 6)
    }


def test_concurrent_starts_of_the_same_runs_all_succeed(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    # PostgreSQL used to raise UniqueViolation for all but one of the processes creating a
    # new run id at once (update-else-insert); now one statement inserts or replaces.
    Store.open(db_url).close()
    _race(_START_SAME_RUNS, db_url, tmp_path, workers=6, runs=20)
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT run_id, status, task_try FROM runs ORDER BY run_id")
        ).all()
    assert sorted(run_id for run_id, _, _ in rows) == sorted(f"shared/run-{n}" for n in range(20))
    assert {status for _, status, _ in rows} == {"running"}
    assert {task_try for _, _, task_try in rows} <= set(range(6))


def test_sqlite_write_transactions_take_the_write_lock_first(sqlite_url: str) -> None:
    # BEGIN IMMEDIATE: a write transaction that read first and then found the lock taken
    # could not wait for it (SQLite fails at once rather than risk a deadlock), so the lock
    # is taken at BEGIN, where waiting is safe. Seen here: no one else can begin writing.
    path = sqlite_url.removeprefix("sqlite:///")
    with Store.open(sqlite_url) as store, store._transaction("test") as connection:
        connection.execute(text("SELECT count(*) FROM runs")).scalar_one()
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                other.execute("BEGIN IMMEDIATE")
        finally:
            other.close()
    with Store.open(sqlite_url) as store, store._snapshot("test") as connection:
        connection.execute(text("SELECT count(*) FROM runs")).scalar_one()
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # readers leave the writer be
            other.execute("ROLLBACK")
        finally:
            other.close()
