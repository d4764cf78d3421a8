"""Runs, divergences, column statistics and expectation results.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _run_id_column() -> sa.Column[str]:
    return sa.Column("run_id", sa.String(length=512), nullable=False)


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(length=512), nullable=False),
        sa.Column("validation", sa.String(length=250), nullable=False),
        sa.Column("kind", sa.String(length=32), server_default="comparison", nullable=False),
        sa.Column("trigger", sa.String(length=32), nullable=False),
        sa.Column("reference_version", sa.String(length=250), nullable=True),
        sa.Column("candidate_version", sa.String(length=250), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=True),
        sa.Column("gate_passed", sa.Boolean(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("slice", sa.JSON(), nullable=True),
        sa.Column("spec", sa.JSON(), nullable=True),
        sa.Column("stats", sa.JSON(), nullable=True),
        sa.Column("loss", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("duplication", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("reordering", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("corruption", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("total_divergences", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("noise", sa.JSON(), nullable=True),
        sa.Column("dag_id", sa.String(length=250), nullable=True),
        sa.Column("dag_run_id", sa.String(length=250), nullable=True),
        sa.Column("task_try", sa.Integer(), nullable=True),
        sa.Column("engine", sa.String(length=32), server_default="core", nullable=False),
        sa.Column("report_path", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'completed', 'failed')", name=op.f("ck_runs_status")
        ),
        sa.CheckConstraint(
            "verdict IN ('equivalent', 'divergent', 'noisy', 'error')",
            name=op.f("ck_runs_verdict"),
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_runs")),
    )
    op.create_index("ix_runs_started_at", "runs", ["started_at"])
    op.create_index(
        "ix_runs_validation_candidate_version_status",
        "runs",
        ["validation", "candidate_version", "status"],
    )
    op.create_index("ix_runs_validation_finished_at", "runs", ["validation", "finished_at"])
    op.create_index("ix_runs_validation_started_at", "runs", ["validation", "started_at"])

    op.create_table(
        "divergences",
        _run_id_column(),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("key", sa.JSON(), nullable=True),
        sa.Column("reference_position", sa.BigInteger(), nullable=True),
        sa.Column("candidate_position", sa.BigInteger(), nullable=True),
        sa.Column("reference_event", sa.JSON(), nullable=True),
        sa.Column("candidate_event", sa.JSON(), nullable=True),
        sa.Column("columns", sa.JSON(), nullable=False),
        sa.Column("partner_reference_position", sa.BigInteger(), nullable=True),
        sa.Column("partner_candidate_position", sa.BigInteger(), nullable=True),
        sa.Column("noisy", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.run_id"],
            name=op.f("fk_divergences_run_id_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "ordinal", name=op.f("pk_divergences")),
    )
    op.create_table(
        "column_stats",
        _run_id_column(),
        sa.Column("column_name", sa.String(length=250), nullable=False),
        sa.Column("mismatches", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.run_id"],
            name=op.f("fk_column_stats_run_id_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "column_name", name=op.f("pk_column_stats")),
    )
    op.create_table(
        "expectation_results",
        _run_id_column(),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("suite", sa.String(length=250), nullable=False),
        sa.Column("side", sa.String(length=32), nullable=False),
        sa.Column("expectation_type", sa.String(length=250), nullable=False),
        sa.Column("kwargs", sa.JSON(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("observed", sa.JSON(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.run_id"],
            name=op.f("fk_expectation_results_run_id_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "ordinal", name=op.f("pk_expectation_results")),
    )


def downgrade() -> None:
    op.drop_table("expectation_results")
    op.drop_table("column_stats")
    op.drop_table("divergences")
    op.drop_index("ix_runs_validation_started_at", table_name="runs")
    op.drop_index("ix_runs_validation_finished_at", table_name="runs")
    op.drop_index("ix_runs_validation_candidate_version_status", table_name="runs")
    op.drop_index("ix_runs_started_at", table_name="runs")
    op.drop_table("runs")
