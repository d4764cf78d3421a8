"""The results database: runs, their verdicts and evidence, and the history of both.

    from matcher.store import RunOutcome, RunStart, Store

    store = Store.open()              # PARITY_DB_URL, parity.toml, or ~/.parity/parity.db
    with store.running(RunStart("taxi/2026-01-01", "taxi_distance", trigger="scheduled")):
        store.record_run("taxi/2026-01-01", RunOutcome.from_verdict(verdict))
    store.latest_run("taxi_distance").verdict

``Store`` is the only way code reads or writes the database (SQLite by default, PostgreSQL in
production); the schema is created and changed by Alembic migrations only
(``matcher.store.migrate``). This is the one ``matcher`` package that imports SQLAlchemy,
Alembic and psycopg (an import contract checks it).
"""

from matcher.store.config import DATA_DOCS_DIR, database_url
from matcher.store.errors import StoreError, UnknownRunError
from matcher.store.lease import Heartbeat, lease_seconds
from matcher.store.migrate import upgrade
from matcher.store.records import (
    ApprovalRecord,
    ColumnStat,
    ExpectationRecord,
    ExpiredRun,
    RunOutcome,
    RunRecord,
    RunStart,
    RunSummary,
    StoredDivergence,
)
from matcher.store.repository import Store

__all__ = [
    "DATA_DOCS_DIR",
    "ApprovalRecord",
    "ColumnStat",
    "ExpectationRecord",
    "ExpiredRun",
    "Heartbeat",
    "RunOutcome",
    "RunRecord",
    "RunStart",
    "RunSummary",
    "Store",
    "StoreError",
    "StoredDivergence",
    "UnknownRunError",
    "database_url",
    "lease_seconds",
    "upgrade",
]
