"""The results database from an Airflow Connection: ``results_db_url()``.

A deployment keeps the store's credentials where it keeps every other secret, in an Airflow
Connection (the metadata database, a secrets backend, or an ``AIRFLOW_CONN_<ID>`` variable)::

    export AIRFLOW_CONN_PARITY_DB='{"conn_type": "postgres", "host": "db", "login": "parity",
                                    "password": "...", "schema": "parity", "port": 5432}'

    from parity.airflow.connections import configure_results_store, results_db_url

    results_db_url()           # 'postgresql+psycopg://parity:...@db:5432/parity', or None
    configure_results_store()  # a task's first step: Store.open() now opens that database

The connection is ``PARITY_DB_CONN_ID`` (default ``parity_db``). Without it, nothing changes:
the store is found as ``matcher.store.config`` says (``PARITY_DB_URL``, ``parity.toml``,
``~/.parity/parity.db``). With it, it wins over ``PARITY_DB_URL``: Airflow's connection is the
deployment's own answer. Airflow spells a connection as a URI (``postgres://``,
``postgresql://``, ``sqlite:////abs/path.db``) or JSON; the store wants a SQLAlchemy URL with
the psycopg driver, made here. libpq options in the connection's extra (``sslmode``...) become
query parameters. The URL is never logged (it holds the password).
"""

from __future__ import annotations

import json
import os
from typing import Any

from matcher.store.config import URL_VARIABLE
from matcher.store.errors import StoreError

CONN_ID_VARIABLE = "PARITY_DB_CONN_ID"
DEFAULT_CONN_ID = "parity_db"
POSTGRES_TYPES = frozenset({"postgres", "postgresql"})
SQLITE_TYPES = frozenset({"sqlite"})
#: extra keys passed on to libpq; others (Airflow hook options) are not the driver's business
LIBPQ_OPTIONS = frozenset(
    {
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "sslcrl",
        "connect_timeout",
        "options",
        "application_name",
        "target_session_attrs",
        "keepalives",
        "keepalives_idle",
    }
)


def results_conn_id() -> str:
    """The connection id: ``PARITY_DB_CONN_ID``, default ``parity_db``."""
    return os.environ.get(CONN_ID_VARIABLE) or DEFAULT_CONN_ID


def results_db_url() -> str | None:
    """The connection ``PARITY_DB_CONN_ID`` as a SQLAlchemy URL, or ``None`` when Airflow has
    no such connection (callers then fall back to ``matcher.store.config``). A connection of
    a type the store cannot use is a ``StoreError`` naming it."""
    connection = _connection(results_conn_id())
    return None if connection is None else sqlalchemy_url(connection)


def configure_results_store() -> str | None:
    """Point ``Store.open()`` in this process, and the processes it starts (spark-submit), at
    the connection's database, when there is one: ``PARITY_DB_URL`` is where
    ``matcher.store.config`` looks. Returns the connection id used (for a log line), else
    ``None``."""
    url = results_db_url()
    if url is None:
        return None
    os.environ[URL_VARIABLE] = url
    return results_conn_id()


def sqlalchemy_url(connection: Any) -> str:
    """An Airflow ``Connection`` (``conn_type``, ``host``, ``schema``...) as the store's URL."""
    from sqlalchemy import URL

    conn_type = (connection.conn_type or "").lower()
    if conn_type in POSTGRES_TYPES:
        return URL.create(
            "postgresql+psycopg",
            username=connection.login or None,
            password=connection.password or None,
            host=connection.host or None,
            port=connection.port or None,
            database=connection.schema or None,
            query=_libpq_options(connection),
        ).render_as_string(hide_password=False)
    if conn_type in SQLITE_TYPES:
        path = connection.host or connection.schema
        if not path:
            raise StoreError(f"connection {connection.conn_id}: sqlite: no database file (host)")
        return URL.create("sqlite", database=path).render_as_string(hide_password=False)
    raise StoreError(
        f"connection {connection.conn_id}: conn_type {conn_type or '(none)'!r} is not a "
        "results database (postgres or sqlite)"
    )


def _connection(conn_id: str) -> Any:
    try:
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException
    except ImportError:  # the CLI without Airflow: no connections to look at
        return None
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def _libpq_options(connection: Any) -> dict[str, str]:
    try:
        extra = json.loads(connection.extra) if connection.extra else {}
    except ValueError:
        extra = {}
    if not isinstance(extra, dict):
        return {}
    return {key: str(value) for key, value in extra.items() if key in LIBPQ_OPTIONS}
