"""The results store's schema: created by Alembic only, identical to the models, on both
SQLite and PostgreSQL."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

from matcher.store import RunStart, Store, StoreError, upgrade
from matcher.store.migrate import HEAD, MIGRATIONS, alembic_config, current_revision, head_revision
from matcher.store.models import Base

pytest_plugins = ["store_fixtures"]

TABLES = {"runs", "divergences", "column_stats", "expectation_results", "approvals"}


def _tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())


def test_one_linear_history_with_importable_file_names() -> None:
    scripts = ScriptDirectory.from_config(alembic_config())
    assert scripts.get_heads() == ["0007"]
    assert head_revision() == "0007" == HEAD  # what readers check without Alembic
    files = sorted(p.name for p in (MIGRATIONS / "versions").glob("*.py"))
    assert files == [
        "__init__.py",
        "r0001_initial.py",
        "r0002_gate_reason.py",
        "r0003_schema_diff.py",
        "r0004_run_lease.py",
        "r0005_divergence_explanation.py",
        "r0006_overrides_and_bigint_counts.py",
        "r0007_spec_hash_and_approvals.py",
    ]
    assert all(re.fullmatch(r"[A-Za-z_]\w*\.py", name) for name in files)


def test_migrate_from_empty_creates_every_table(db_url: str, engine: Engine) -> None:
    assert _tables(engine) == set()
    with Store.open(db_url):
        pass
    assert _tables(engine) == TABLES | {"alembic_version"}
    with engine.connect() as connection:
        assert current_revision(connection) == "0007"


def test_migrated_schema_matches_the_models(db_url: str, engine: Engine) -> None:
    upgrade(db_url)
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_indexes_for_the_history_and_the_gate(db_url: str, engine: Engine) -> None:
    upgrade(db_url)
    indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("runs")}
    assert indexes == {
        "ix_runs_started_at": ["started_at"],
        "ix_runs_validation_candidate_version_status": [
            "validation",
            "candidate_version",
            "status",
        ],
        "ix_runs_validation_finished_at": ["validation", "finished_at"],
        "ix_runs_validation_started_at": ["validation", "started_at"],
    }


def test_migrating_again_is_a_no_op_that_keeps_the_data(db_url: str) -> None:
    with Store.open(db_url) as store:
        store.start_run(RunStart("r1", "taxi"))
    with Store.open(db_url) as store:
        store.migrate()
        run = store.get_run("r1")
    assert run is not None
    assert run.status == "running"


def test_env_uses_the_connection_given_in_the_config(db_url: str, engine: Engine) -> None:
    # The caller owns the transaction: rolling it back must leave no table behind (SQLite and
    # PostgreSQL both have transactional DDL), which proves env.py used this connection.
    with engine.connect() as connection:
        transaction = connection.begin()
        upgrade(connection=connection)
        assert set(inspect(connection).get_table_names()) == TABLES | {"alembic_version"}
        transaction.rollback()
    assert _tables(engine) == set()
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection=connection), "head")
    assert _tables(engine) == TABLES | {"alembic_version"}


def test_downgrade_to_base_removes_everything(db_url: str, engine: Engine) -> None:
    upgrade(db_url)
    command.downgrade(alembic_config(db_url), "base")
    assert _tables(engine) == {"alembic_version"}
    with engine.connect() as connection:
        assert current_revision(connection) is None


def test_offline_mode_prints_the_ddl(db_url: str) -> None:
    buffer = io.StringIO()
    config = alembic_config(db_url)
    config.output_buffer = buffer
    command.upgrade(config, "head", sql=True)
    ddl = buffer.getvalue()
    assert "CREATE TABLE runs" in ddl
    assert "ON DELETE CASCADE" in ddl
    assert "INSERT INTO alembic_version (version_num) VALUES ('0001')" in ddl


def test_a_database_from_a_newer_parity_is_refused_clearly(db_url: str, engine: Engine) -> None:
    upgrade(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = 'ffff'"))
    with pytest.raises(StoreError, match=r"cannot migrate .*: CommandError: .*'ffff'"):
        upgrade(db_url)


def test_sqlite_store_enforces_foreign_keys_and_uses_wal(sqlite_url: str) -> None:
    with Store.open(sqlite_url) as store, store._engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_in_memory_sqlite_is_migrated_on_its_own_connection() -> None:
    with Store.open("sqlite://") as store:
        store.start_run(RunStart("r1", "taxi"))
        assert store.validations() == ["taxi"]


# Imports first, then waits until every worker is ready, so that the migrations really race.
_MIGRATE_WHEN_ALL_READY = """
import sys, time, uuid
from pathlib import Path
from matcher.store import upgrade
url, rendezvous, workers = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
(rendezvous / uuid.uuid4().hex).touch()
while len(list(rendezvous.iterdir())) < workers:
    time.sleep(0.005)
upgrade(url)
"""


@pytest.mark.slow
def test_concurrent_first_migrations_do_not_collide(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    # Parallel tasks of a fresh deployment all call Store.open(): one migrates, the others
    # wait for it and find the schema at head. Processes, not threads: Alembic's context is
    # process-global.
    rendezvous = tmp_path / "ready"
    rendezvous.mkdir()
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _MIGRATE_WHEN_ALL_READY, db_url, str(rendezvous), "3"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [worker.communicate(timeout=120)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0], outputs
    with engine.connect() as connection:
        assert current_revision(connection) == "0007"


def test_0004_expires_runs_left_running_by_an_older_parity(db_url: str, engine: Engine) -> None:
    # Their jobs never renew a lease: killed before the upgrade, they would run forever.
    upgrade(db_url, revision="0003")
    with engine.begin() as connection:
        for run_id, status in (("old/running", "running"), ("old/done", "completed")):
            connection.execute(
                text(
                    "INSERT INTO runs (run_id, validation, trigger, status, started_at) "
                    "VALUES (:id, 'taxi', 'scheduled', :status, '2026-01-02 03:00:00')"
                ),
                {"id": run_id, "status": status},
            )
    upgrade(db_url)
    with Store.open_readonly(db_url) as store:
        running, done = store.get_run("old/running"), store.get_run("old/done")
    assert running is not None and done is not None
    assert (running.status, running.verdict) == ("failed", "error")
    assert running.error is not None
    assert running.error.startswith("the job stopped reporting: its lease expired at 20")
    assert (done.status, done.lease_expires_at) == ("completed", None)


def test_0007_adds_the_spec_hash_and_the_approvals_and_takes_them_back(
    db_url: str, engine: Engine
) -> None:
    # A run recorded by an older Parity has no spec hash (the gate says "recorded before spec
    # binding"); downgrading drops the approvals table and the column, keeping the runs.
    upgrade(db_url, revision="0006")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO runs (run_id, validation, trigger, status, started_at) "
                "VALUES ('old/done', 'taxi', 'scheduled', 'completed', '2026-01-02 03:00:00')"
            )
        )
    assert "approvals" not in _tables(engine)
    upgrade(db_url)
    assert "spec_hash" in {c["name"] for c in inspect(engine).get_columns("runs")}
    approval_indexes = {
        i["name"]: i["column_names"] for i in inspect(engine).get_indexes("approvals")
    }
    assert approval_indexes == {
        "ix_approvals_run_id": ["run_id"],
        "ix_approvals_validation_candidate_version": ["validation", "candidate_version"],
    }
    with Store.open(db_url) as store:
        old = store.get_run("old/done")
        assert old is not None and old.spec_hash is None
        store.start_run(RunStart("new/1", "taxi", spec_hash="ab" * 32))
        new = store.get_run("new/1")
        assert new is not None and new.spec_hash == "ab" * 32
    command.downgrade(alembic_config(db_url), "0006")
    assert "approvals" not in _tables(engine)
    assert "spec_hash" not in {c["name"] for c in inspect(engine).get_columns("runs")}
    with engine.connect() as connection:
        assert current_revision(connection) == "0006"
        kept = connection.execute(text("SELECT run_id FROM runs ORDER BY run_id")).scalars()
        assert list(kept) == ["new/1", "old/done"]
    upgrade(db_url)
    with engine.connect() as connection:
        assert current_revision(connection) == "0007"
