"""The schema's life: Alembic, driven from code (no ``alembic.ini`` or working directory needed).

``upgrade(url)`` brings a database to the newest revision; ``Store.migrate()`` calls it. To
write a new revision after changing ``models.py``::

    alembic -c matcher/store/alembic.ini revision --autogenerate -m "what changed"

(the URL comes from ``database_url()``, so ``PARITY_DB_URL`` picks the database to diff
against). On SQLite, revisions use batch mode (``render_as_batch``), and migrations run on a
connection without ``PRAGMA foreign_keys``: a batch migration recreates tables, and dropping
``runs`` with foreign keys enforced would cascade-delete every run's evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, make_url, text
from sqlalchemy.exc import SQLAlchemyError

from matcher.store.config import database_url
from matcher.store.errors import StoreError, describe, masked

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
#: the newest revision, which a reader checks the database against without importing Alembic
#: (a third of a ``parity history``'s start); a test holds it equal to Alembic's own head
HEAD = "0007"
# Revision files must be importable module names for mypy: no leading digit.
FILE_TEMPLATE = "r%%(rev)s_%%(slug)s"


def alembic_config(url: str | None = None, *, connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for Parity's migrations, on ``url`` or an open ``connection``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("file_template", FILE_TEMPLATE)
    if url is not None:
        # ConfigParser interpolates '%': a percent-encoded password would otherwise break.
        rendered = make_url(url).render_as_string(hide_password=False)
        config.set_main_option("sqlalchemy.url", rendered.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade(
    url: str | None = None, *, connection: Connection | None = None, revision: str = "head"
) -> None:
    """Migrate the database at ``url`` (default ``database_url()``), or on ``connection``.

    With a connection, the caller owns its transaction (``with engine.begin() as conn``).
    """
    from alembic import command
    from alembic.util import CommandError

    if connection is not None:
        url = connection.engine.url.render_as_string(hide_password=False)
    else:
        url = database_url(url)
    try:
        command.upgrade(
            alembic_config(None if connection else url, connection=connection), revision
        )
    except (SQLAlchemyError, CommandError, ValueError) as exc:
        # CommandError: e.g. the database is at a revision this version of Parity lacks;
        # ValueError: a URL that does not parse (ArgumentError is a SQLAlchemyError).
        raise StoreError(f"cannot migrate {masked(url)}: {describe(exc, url)}") from exc


def head_revision() -> str | None:
    """The newest revision in ``migrations/versions``, as Alembic reads it."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The revision the database on ``connection`` is at (``None``: never migrated): the row
    of Alembic's ``alembic_version`` table (one row: the history is linear)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars()
    return next(iter(versions), None)
