"""Alembic's environment for the results store.

The database comes from, in order: an open connection in ``config.attributes["connection"]``
(the caller owns its transaction: tests, and ``Store.migrate`` on in-memory SQLite), the
``sqlalchemy.url`` option of the ``Config``, or ``matcher.store.config.database_url()``.

Concurrent migrators (the parallel tasks of a fresh deployment, each calling ``Store.open()``)
are serialised: PostgreSQL takes a transaction-scoped advisory lock, SQLite runs every
migration in one ``BEGIN IMMEDIATE`` transaction; either way the version is read only once the
lock is held, so the later migrators find the schema at head and do nothing. A SQLite file is
put in WAL mode here, before the transaction (the mode is kept in the file).
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import JSON, Connection, Engine, create_engine, event, text
from sqlalchemy.pool import NullPool

from matcher.store.config import database_url
from matcher.store.engine import ensure_wal
from matcher.store.models import Base, UTCDateTime

# Any constant shared by all migrators; "parity" in ASCII.
POSTGRES_MIGRATION_LOCK = 0x706172697479
SQLITE_LOCK_TIMEOUT_SECONDS = 60

config = context.config
target_metadata = Base.metadata


def _render_item(kind: str, item: Any, autogen: AutogenContext) -> str | Literal[False]:
    """Revisions spell plain SQLAlchemy types, so they never import the models they predate."""
    if kind == "type" and isinstance(item, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    if kind == "type" and isinstance(item, JSON):
        return "sa.JSON()"
    return False


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    dialect = connection.dialect.name if connection is not None else (url or "").split(":")[0]
    sqlite = dialect.startswith("sqlite")
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things: batch mode recreates the table instead.
        render_as_batch=sqlite,
        # SQLite's DDL is transactional once BEGIN is ours (below): one transaction for all.
        transactional_ddl=True if sqlite else None,
        literal_binds=connection is None,
        render_item=_render_item,
    )


def _migration_engine(url: str) -> Engine:
    """A plain engine: no ``PRAGMA foreign_keys`` (see ``matcher.store.migrate``)."""
    if not url.startswith("sqlite"):
        return create_engine(url, poolclass=NullPool)
    engine = create_engine(
        url, poolclass=NullPool, connect_args={"timeout": SQLITE_LOCK_TIMEOUT_SECONDS}
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        # Once, here, rather than on every store connection: see matcher.store.engine.
        ensure_wal(dbapi_connection, SQLITE_LOCK_TIMEOUT_SECONDS)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # The write lock before the first read: concurrent migrators queue here.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _run(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": POSTGRES_MIGRATION_LOCK}
            )
        context.run_migrations()


def run_migrations_offline() -> None:
    """``alembic upgrade --sql``: print the DDL instead of running it."""
    _configure(url=config.get_main_option("sqlalchemy.url") or database_url())
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if isinstance(connection, Connection):
        _run(connection)
        return
    engine = _migration_engine(config.get_main_option("sqlalchemy.url") or database_url())
    try:
        with engine.connect() as connection:
            _run(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
