"""A run's overrides (runs.overrides: the spec sections its trigger replaced, which close the
gate unless the spec allows them), and 64-bit divergence counts (runs.loss, duplication,
reordering, corruption, total_divergences were 32-bit on PostgreSQL: "integer out of range").

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTS = ("loss", "duplication", "reordering", "corruption", "total_divergences")


def upgrade() -> None:
    # Batch mode: SQLite alters tables by recreating them (only when it must). SQLite's
    # integers are 64-bit whatever the declared type: only PostgreSQL's columns change.
    widen = op.get_context().dialect.name != "sqlite"
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("overrides", sa.JSON(none_as_null=True), nullable=True))
        for name in COUNTS if widen else ():
            runs.alter_column(
                name,
                existing_type=sa.Integer(),
                type_=sa.BigInteger(),
                existing_nullable=False,
                existing_server_default=sa.text("0"),
            )


def downgrade() -> None:
    narrow = op.get_context().dialect.name != "sqlite"
    with op.batch_alter_table("runs") as runs:
        for name in COUNTS if narrow else ():
            runs.alter_column(
                name,
                existing_type=sa.BigInteger(),
                type_=sa.Integer(),
                existing_nullable=False,
                existing_server_default=sa.text("0"),
            )
        runs.drop_column("overrides")
