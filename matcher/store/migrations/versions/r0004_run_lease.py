"""Leases on running runs: runs.lease_expires_at.

A running run's job renews its lease while it works (``Store.heartbeat``); a run whose lease
expired is read as failed, and ``Store.expire_runs`` records it so. NULL for runs that are not
running. Runs still running when this revision is applied were started by a Parity that never
renews a lease: their lease expires now, so that a job killed before the upgrade does not stay
"running" forever.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Batch mode: SQLite alters tables by recreating them (only when it must).
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))
    now = dt.datetime.now(dt.UTC)
    if op.get_bind().dialect.name == "sqlite":
        now = now.replace(tzinfo=None)  # naive UTC, as the store keeps instants there
    table = sa.table(
        "runs",
        sa.column("status", sa.String()),
        sa.column("lease_expires_at", sa.DateTime(timezone=True)),
    )
    op.execute(table.update().where(table.c.status == "running").values(lease_expires_at=now))


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("lease_expires_at")
