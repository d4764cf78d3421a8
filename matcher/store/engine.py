"""The store's SQLAlchemy engine: how each backend is connected.

SQLite files get enforced foreign keys and SQLAlchemy-issued ``BEGIN``: the sqlite3 module's
legacy mode begins a transaction only at the first write, so an operation's reads would not be
part of it. Write transactions begin ``IMMEDIATE``: a deferred transaction that reads and then
writes cannot wait for the write lock (SQLite answers "database is locked" at once, since
waiting could deadlock), while ``BEGIN IMMEDIATE`` takes the lock first and so waits for it up to
the busy timeout. WAL (readers never block the writer, nor it them) is set once, when the
schema is migrated (``migrations/env.py``): the mode is kept in the file, and setting it on
every connection fails at once when another connection holds the database.

A read-only engine (``readonly=True``) opens a SQLite file with ``mode=ro``, and, when the
file's folder cannot be written and no ``-shm`` file exists (so no other connection has the
database open), as ``immutable``: reading a WAL database otherwise needs to create that file.
PostgreSQL gets a connect timeout so that an unreachable server fails a gate in seconds, not
after TCP's minutes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.pool import StaticPool

SQLITE_BUSY_TIMEOUT_SECONDS = 30
POSTGRES_CONNECT_TIMEOUT_SECONDS = 10
#: the execution option ``Store`` sets on a connection whose transaction writes
WRITE_OPTION = "parity_writes"
WAL_RETRY_SECONDS = 0.05


def create_store_engine(url: str, *, readonly: bool = False) -> Engine:
    """An engine for ``url``; it connects on first use."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url, readonly=readonly)
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


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite ``url`` (``None``: another backend, in memory, a ``file:`` URI)."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or is_in_memory(url):
        return None
    if parsed.query.get("uri") or database.startswith("file:"):
        return None
    return Path(database)


def readonly_sqlite_url(url: str) -> str:
    """``url`` as a read-only URI: ``mode=ro``, and ``immutable=1`` where the folder cannot
    be written and no ``-shm`` file exists (no connection has the database open)."""
    path = sqlite_file(url)
    if path is None:
        return url
    absolute = path.resolve()
    options = "mode=ro"
    shm = absolute.with_name(absolute.name + "-shm")
    if not shm.exists() and not os.access(absolute.parent, os.W_OK):
        options += "&immutable=1"
    return f"sqlite:///file:{quote(str(absolute))}?{options}&uri=true"


def _sqlite_engine(url: str, *, readonly: bool) -> Engine:
    if is_in_memory(url):
        # One shared connection, or every thread (and the migration) sees its own database.
        engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        target = readonly_sqlite_url(url) if readonly else url
        engine = create_engine(target, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, below
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        writes = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")

    return engine


def ensure_wal(dbapi_connection: Any, timeout: float = SQLITE_BUSY_TIMEOUT_SECONDS) -> None:
    """Put the SQLite file in WAL mode (kept in the file), retrying while another connection
    holds it: switching the mode needs the database to itself, and SQLite refuses at once
    rather than waiting. Called by the migration, before its transaction."""
    deadline = time.monotonic() + timeout
    while True:
        cursor = dbapi_connection.cursor()
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() in ("wal", "memory"):
                return
            cursor.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(WAL_RETRY_SECONDS)
        finally:
            cursor.close()
