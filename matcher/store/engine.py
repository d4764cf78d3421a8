"""The store's SQLAlchemy engine: how each backend is connected.

SQLite files get enforced foreign keys, WAL (readers never block the writer, nor it them) and
SQLAlchemy-issued ``BEGIN``: the sqlite3 module's legacy mode begins a transaction only at the
first write, so an operation's reads would not be part of it. PostgreSQL gets a connect timeout
so that an unreachable server fails a gate in seconds, not after TCP's minutes.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.pool import StaticPool

SQLITE_BUSY_TIMEOUT_SECONDS = 30
POSTGRES_CONNECT_TIMEOUT_SECONDS = 10


def create_store_engine(url: str) -> Engine:
    """An engine for ``url``; it connects on first use."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url)
    if backend == "postgresql" and "connect_timeout" not in parsed.query:
        return create_engine(
            url,
            pool_pre_ping=True,
            connect_args={"connect_timeout": POSTGRES_CONNECT_TIMEOUT_SECONDS},
        )
    return create_engine(url, pool_pre_ping=True)


def is_in_memory(url: str) -> bool:
    """Whether ``url`` is an in-memory SQLite database (gone with its last connection)."""
    parsed = make_url(url)
    database = parsed.database or ""
    return parsed.get_backend_name() == "sqlite" and (
        database in ("", ":memory:")
        or "mode=memory" in database
        or parsed.query.get("mode") == "memory"
    )


def _sqlite_engine(url: str) -> Engine:
    if is_in_memory(url):
        # One shared connection, or every thread (and the migration) sees its own database.
        engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, below
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA journal_mode = WAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN")

    return engine
