"""The store's tables page, read from the SQLAlchemy models (``matcher.store.models``): each
table, its columns with their types, nullability and keys, its constraints and indexes, and
the Alembic revision the models are at."""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, Table
from sqlalchemy.dialects import postgresql, sqlite

from matcher.store.migrate import head_revision
from matcher.store.models import Base
from tools.gen_reference import REGENERATE

INTRO = """
The results database's tables, as the models in `matcher/store/models.py` define them and
the Alembic migrations in `matcher/store/migrations/versions/` create them. Read them through
`matcher.store.Store` (or `parity history --json`, `parity report --json`, the HTTP API),
not with SQL: the columns are the store's, not a contract. How the store is found, migrated
and shared is on [The results store](store.md). Types are given as SQLite and PostgreSQL
spell them; a `JSON` column holds one JSON document.
"""


def _type(column: Column[object], dialect: object) -> str:
    return str(column.type.compile(dialect=dialect))  # type: ignore[arg-type]


def _table(table: Table) -> list[str]:
    lines = [f"## `{table.name}`", ""]
    lines += ["| column | SQLite | PostgreSQL | null | key |", "|---|---|---|---|---|"]
    for column in table.columns:
        key = []
        if column.primary_key:
            key.append("primary")
        key += [f"→ `{fk.target_fullname}`" for fk in column.foreign_keys]
        cells = (
            f"`{column.name}`",
            _type(column, sqlite.dialect()),
            _type(column, postgresql.dialect()),  # type: ignore[no-untyped-call]
            "yes" if column.nullable else "no",
            ", ".join(key),
        )
        lines.append("| " + " | ".join(cells) + " |")
    checks = sorted(str(c.sqltext) for c in table.constraints if isinstance(c, CheckConstraint))
    if checks:
        lines += ["", "Checks: " + "; ".join(f"`{c}`" for c in checks) + "."]
    indexes = sorted(
        f"`{index.name}` ({', '.join(c.name for c in index.columns)})" for index in table.indexes
    )
    if indexes:
        lines += ["", "Indexes: " + "; ".join(indexes) + "."]
    return [*lines, ""]


def render_store_page() -> str:
    lines = [
        "# The store's tables",
        "",
        f"<!-- Generated from matcher/store/models.py by `{REGENERATE}`; do not edit. -->",
        "",
        INTRO.strip(),
        "",
        f"Schema revision: `{head_revision()}`.",
        "",
    ]
    for table in Base.metadata.sorted_tables:
        lines += _table(table)
    return "\n".join(lines)
