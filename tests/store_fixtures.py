"""Fixtures for the results-store tests: real SQLite files and a real PostgreSQL server.

Loaded with ``pytest_plugins = ["store_fixtures"]``. ``db_url`` is parametrized over both
backends, so every test that takes it (or ``store``) runs twice:

* ``sqlite``: a fresh file under ``tmp_path``;
* ``postgres``: a fresh schema (``search_path`` in the URL) inside a database created once per
  test session from ``PARITY_TEST_PG_URL``'s server (default: the ``postgres`` database at
  127.0.0.1:5432, trust auth) and dropped at the end. An unreachable server fails the tests:
  PostgreSQL support is a requirement, not an optional extra.

It also holds the sample run the repository tests write (``start``, ``outcome``) and, spelled
out by hand, exactly what the store must give back (``expected_record``).
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError

from matcher.store import (
    ColumnStat,
    ExpectationRecord,
    RunOutcome,
    RunRecord,
    RunStart,
    Store,
    StoredDivergence,
)
from matcher.verdict import Divergence, Verdict

PG_ADMIN_URL = os.environ.get(
    "PARITY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def _admin_engine(database: str | None = None) -> Engine:
    url = make_url(PG_ADMIN_URL)
    if database is not None:
        url = url.set(database=database)
    return create_engine(url, isolation_level="AUTOCOMMIT")


@pytest.fixture(scope="session")
def pg_database() -> Iterator[URL]:
    """A database of its own for this test session, dropped at the end."""
    name = f"parity_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = _admin_engine()
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        unreachable = str(exc.orig).splitlines()[0]
    else:
        unreachable = None
    if unreachable is not None:
        admin.dispose()
        pytest.fail(
            f"PostgreSQL is unreachable at {make_url(PG_ADMIN_URL).render_as_string()}: "
            f"{unreachable}. The store tests need it (set PARITY_TEST_PG_URL to another "
            "server); they are never skipped.",
            pytrace=False,
        )
    try:
        yield make_url(PG_ADMIN_URL).set(database=name)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_url(pg_database: URL) -> Iterator[str]:
    """A URL whose connections see a fresh, empty schema (dropped after the test)."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = _admin_engine(pg_database.database)
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        url = pg_database.update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'parity.db'}"


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest) -> str:
    """An empty database: a SQLite file, then a PostgreSQL schema."""
    fixture = "sqlite_url" if request.param == "sqlite" else "pg_url"
    url: str = request.getfixturevalue(fixture)
    return url


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A migrated store on ``db_url``."""
    opened = Store.open(db_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """A plain engine on ``db_url``, for looking at the schema beside the repository.

    On SQLite it issues its own ``BEGIN`` (as the store does), so its transactions cover DDL:
    the sqlite3 module's legacy mode would commit each DDL statement on its own.
    """
    plain = create_engine(db_url)
    if plain.dialect.name == "sqlite":

        @event.listens_for(plain, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None

        @event.listens_for(plain, "begin")
        def _on_begin(connection: Connection) -> None:
            connection.exec_driver_sql("BEGIN")

    try:
        yield plain
    finally:
        plain.dispose()


# -- a sample run, and what the store must give back -------------------------------------

UTC = dt.UTC
PLUS_TWO = dt.timezone(dt.timedelta(hours=2))
STARTED = dt.datetime(2026, 1, 2, 5, 0, 0, 123456, tzinfo=PLUS_TWO)  # 03:00:00.123456 UTC
FINISHED = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
HOSTILE = 'Zürich 東京 <script>alert("x")</script> \' ; DROP TABLE runs; -- \x00 \U0001f695'

REFERENCE_EVENT = {
    "id": 7,
    "city": HOSTILE,
    "fare": float("nan"),
    "at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    "amount": Decimal("12.30"),
    "raw": b"\x00\xff",
    "day": dt.date(2026, 1, 2),
    "tip": float("inf"),
}
CANDIDATE_EVENT = {**REFERENCE_EVENT, "fare": 10.5}
# What json_safe makes of them, in the same column order.
SAFE_REFERENCE = {
    "id": 7,
    "city": HOSTILE,
    "fare": "NaN",
    "at": "2026-01-02T03:04:05+00:00",
    "amount": "12.30",
    "raw": "AP8=",
    "day": "2026-01-02",
    "tip": "Infinity",
}
SAFE_CANDIDATE = {**SAFE_REFERENCE, "fare": 10.5}


def start(run_id: str = "taxi/run-1", **overrides: Any) -> RunStart:
    fields: dict[str, Any] = {
        "run_id": run_id,
        "validation": "taxi_distance",
        "trigger": "scheduled",
        "reference_version": "v1.4.0",
        "candidate_version": "v1.5.0-rc1",
        "started_at": STARTED,
        "slice": {"column": "event_time", "from": dt.date(2026, 1, 1), "window": "1d"},
        "spec": {"name": "taxi_distance", "dependence": {"key": ["id"]}, "note": HOSTILE},
        "dag_id": "parity__taxi_distance",
        "dag_run_id": "scheduled__2026-01-02",
        "task_try": 1,
        "engine": "spark",
    }
    fields.update(overrides)
    return RunStart(**fields)


def divergent_verdict() -> Verdict:
    return Verdict(
        equivalent=False,
        divergences=(
            Divergence("corruption", 7, 3, 4, REFERENCE_EVENT, CANDIDATE_EVENT, columns=("fare",)),
            Divergence("loss", (8, "a"), 5, 6, {"id": 8, "city": "Ghent"}, None),
            Divergence(
                "reordering",
                {"id": 9},
                10,
                11,
                {"id": 9},
                {"id": 9},
                partner_reference_position=11,
                partner_candidate_position=10,
            ),
        ),
        counts={"corruption": 1, "loss": 4, "reordering": 1},
        reference_count=100,
        candidate_count=97,
        matched_count=95,
        peak_unmatched=3,
        detected_at=9,
        dependence="key: id",
        column_mismatches={"fare": 1, "tip": 0},
    )


def expected_divergences() -> tuple[StoredDivergence, ...]:
    return (
        StoredDivergence(0, "corruption", 7, 3, 4, SAFE_REFERENCE, SAFE_CANDIDATE, ("fare",)),
        StoredDivergence(
            1, "loss", [8, "a"], 5, 6, {"id": 8, "city": "Ghent"}, None, (), noisy=True
        ),
        StoredDivergence(2, "reordering", {"id": 9}, 10, 11, {"id": 9}, {"id": 9}, (), 11, 10),
    )


EXPECTATIONS = (
    ExpectationRecord(
        "taxi_output",
        "candidate",
        "expect_column_values_to_not_be_null",
        False,
        kwargs={"column": "fare"},
        observed={"unexpected_count": 2, "unexpected_percent": 2.0},
        details={"partial_unexpected_list": [None, None]},
    ),
    ExpectationRecord("taxi_output", "reference", "expect_table_row_count_to_be_between", True),
)


def outcome() -> RunOutcome:
    return RunOutcome.from_verdict(
        divergent_verdict(),
        noisy_keys=[(8, "a")],
        gate_passed=False,
        stats={"timings": {"match_seconds": 1.5}, "barriers": {"reference": 0, "candidate": 0}},
        noise={"reference_runs": 2, "noisy_keys": [[8, "a"]]},
        finished_at=FINISHED,
        report_path="/reports/taxi/run-1.html",
        expectations=EXPECTATIONS,
    )


def expected_record() -> RunRecord:
    return RunRecord(
        run_id="taxi/run-1",
        validation="taxi_distance",
        kind="comparison",
        trigger="scheduled",
        reference_version="v1.4.0",
        candidate_version="v1.5.0-rc1",
        status="completed",
        verdict="divergent",
        gate_passed=False,
        error=None,
        started_at=dt.datetime(2026, 1, 2, 3, 0, 0, 123456, tzinfo=UTC),
        finished_at=FINISHED,
        counts=MappingProxyType({"loss": 4, "duplication": 0, "reordering": 1, "corruption": 1}),
        total_divergences=6,
        dag_id="parity__taxi_distance",
        dag_run_id="scheduled__2026-01-02",
        task_try=1,
        engine="spark",
        report_path="/reports/taxi/run-1.html",
        expectations_total=2,
        expectations_failed=1,
        slice={"column": "event_time", "from": "2026-01-01", "window": "1d"},
        spec={"name": "taxi_distance", "dependence": {"key": ["id"]}, "note": HOSTILE},
        stats={
            "reference_count": 100,
            "candidate_count": 97,
            "matched_count": 95,
            "peak_unmatched": 3,
            "detected_at": 9,
            "dependence": "key: id",
            "timings": {"match_seconds": 1.5},
            "barriers": {"reference": 0, "candidate": 0},
        },
        noise={"reference_runs": 2, "noisy_keys": [[8, "a"]]},
        divergences=expected_divergences(),
        column_stats=(ColumnStat("fare", 1), ColumnStat("tip", 0)),
        expectations=(
            EXPECTATIONS[0],
            ExpectationRecord(
                "taxi_output", "reference", "expect_table_row_count_to_be_between", True, {}
            ),
        ),
    )
