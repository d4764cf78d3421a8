"""The schema findings beside the verdict: runs.schema_diff.

A JSON document (``matcher.schema.SchemaDiff.to_dict``): the mode, whether a finding made
the run divergent, and the findings. NULL for runs recorded before it, and for runs whose
schemas were not compared. Not named ``schema``: a reserved word in SQL that every
hand-written query would have to quote.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Batch mode: SQLite alters tables by recreating them (only when it must).
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("schema_diff", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("schema_diff")
