"""A witness's explanation in words, when the check that found it wrote one:
divergences.explanation (recovery runs' sequence-window violations say what was expected).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Batch mode: SQLite alters tables by recreating them (only when it must).
    with op.batch_alter_table("divergences") as divergences:
        divergences.add_column(sa.Column("explanation", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("divergences") as divergences:
        divergences.drop_column("explanation")
