"""Runs bound to their spec, and approvals: runs.spec_hash (the digest of the spec sections
that decide the verdict, ``matcher.spec_digest``; NULL on runs recorded before) and the
append-only ``approvals`` table (who accepted which divergences of which run, and the
revocations).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Batch mode: SQLite alters tables by recreating them (only when it must).
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("spec_hash", sa.String(length=64), nullable=True))
    op.create_table(
        "approvals",
        sa.Column("approval_id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("validation", sa.String(length=250), nullable=False),
        sa.Column("candidate_version", sa.String(length=250), nullable=True),
        sa.Column("run_id", sa.String(length=512), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("actor", sa.String(length=250), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("divergences", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("revokes", sa.Integer(), nullable=True),
        sa.CheckConstraint("action IN ('approve', 'revoke')", name=op.f("ck_approvals_action")),
        sa.PrimaryKeyConstraint("approval_id", name=op.f("pk_approvals")),
    )
    op.create_index(
        "ix_approvals_validation_candidate_version",
        "approvals",
        ["validation", "candidate_version"],
    )
    op.create_index("ix_approvals_run_id", "approvals", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_approvals_run_id", table_name="approvals")
    op.drop_index("ix_approvals_validation_candidate_version", table_name="approvals")
    op.drop_table("approvals")
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("spec_hash")
