"""The results database's tables, as SQLAlchemy 2 models.

Only the repository (``matcher.store.repository``) uses these; everything else reads and
writes through it, with frozen records (``matcher.store.records``). Tables are created by the
Alembic migrations in ``migrations/versions`` only; a test checks that the migrated schema
and this metadata agree.

* ``runs``: one row per run, keyed by the caller's ``run_id`` (``dag_id/run_id`` from Airflow,
  a uuid from the CLI), so a retried task replaces its row instead of adding one. ``kind`` is
  ``comparison``, ``recovery`` or ``properties`` (``matcher.store.records.RUN_KINDS``); the
  later kinds use the same row with ``reference_version``/``candidate_version`` left empty as
  they see fit, and a properties run completes with a NULL ``verdict`` (it judges nothing; the
  ``verdict`` check lets NULL through, so no migration was needed).
  Counts are ``BIGINT`` (0006): a count is checked below 2**63 before it is written
  (``matcher.store.records.check_count``), the same limit on both backends.
* ``divergences``: the witnesses, ``ordinal`` = their order in the verdict.
* ``column_stats``: per-column mismatch counts (``extra`` for later statistics).
* ``expectation_results``: Great Expectations results beside the verdict.
* ``approvals`` (0007): who accepted which divergences of which run, and revocations;
  append-only (``matcher.approvals``).

``runs.spec_hash`` (0007) is the digest of the spec sections that decide the verdict
(``matcher.spec_digest``); the gate trusts a run only under today's.

JSON columns hold what ``matcher.serialize.json_safe`` produced. They are ``JSON``, not
PostgreSQL's ``JSONB``: JSONB reorders object keys, and an event's columns must read back in
their order.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Deterministic constraint names: SQLite's batch migrations recreate tables and need them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

STATUSES = ("running", "completed", "failed")
VERDICTS = ("equivalent", "divergent", "noisy", "error")

# None is SQL NULL, not JSON 'null': "no event" must read the same in a hand-written query.
JsonValue = JSON(none_as_null=True)

# Airflow's dag_id and run_id are at most 250 characters each; "dag_id/run_id" fits.
RUN_ID_LENGTH = 512
NAME_LENGTH = 250
TAG_LENGTH = 32
#: a sha256 in hex
SPEC_HASH_LENGTH = 64
APPROVAL_ACTIONS = ("approve", "revoke")


#: a divergence count: ``BIGINT`` on PostgreSQL (0006); on SQLite, whose integers are 64-bit
#: whatever the declared type, the ``INTEGER`` the first revisions declared
Count = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC datetime on every backend.

    PostgreSQL stores ``timestamptz``; SQLite has no time zones, so values are stored as naive
    UTC (which also keeps its text ordering chronological) and read back as aware UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()}: give a timezone-aware one")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if not isinstance(value, dt.datetime):
            raise TypeError(f"expected a datetime from the database, got {value!r}")
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Run(Base):
    __tablename__ = "runs"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_LENGTH), primary_key=True)
    validation: Mapped[str] = mapped_column(String(NAME_LENGTH))
    kind: Mapped[str] = mapped_column(String(TAG_LENGTH), server_default="comparison")
    trigger: Mapped[str] = mapped_column(String(TAG_LENGTH))
    reference_version: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    candidate_version: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    status: Mapped[str] = mapped_column(String(16))
    verdict: Mapped[str | None] = mapped_column(String(16))
    gate_passed: Mapped[bool | None] = mapped_column(Boolean)
    gate_reason: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    slice: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    spec: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    stats: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    loss: Mapped[int] = mapped_column(Count, server_default=text("0"))
    duplication: Mapped[int] = mapped_column(Count, server_default=text("0"))
    reordering: Mapped[int] = mapped_column(Count, server_default=text("0"))
    corruption: Mapped[int] = mapped_column(Count, server_default=text("0"))
    total_divergences: Mapped[int] = mapped_column(Count, server_default=text("0"))
    noise: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    dag_id: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    dag_run_id: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    task_try: Mapped[int | None] = mapped_column(Integer)
    engine: Mapped[str] = mapped_column(String(TAG_LENGTH), server_default="core")
    report_path: Mapped[str | None] = mapped_column(Text)
    # How the outputs' schemas differed (matcher.schema.SchemaDiff.to_dict); not "schema",
    # a reserved word in SQL.
    schema_diff: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    # While running: until when the job's last heartbeat vouches for it (NULL otherwise).
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The spec's sections the run's trigger replaced with different ones (a JSON list of
    # "equality", "dependence"); NULL or []: none. The gate stays closed on such a run unless
    # the spec's gate.allow_overrides is true.
    overrides: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    # The spec's verdict digest (matcher.spec_digest, 0007): the gate answers only from a run
    # made under today's spec. NULL: recorded before spec binding (or by a writer without a
    # spec), which no gate trusts.
    spec_hash: Mapped[str | None] = mapped_column(String(SPEC_HASH_LENGTH), nullable=True)

    __table_args__ = (
        CheckConstraint(_one_of("status", STATUSES), name="status"),
        CheckConstraint(_one_of("verdict", VERDICTS), name="verdict"),
        # The history page: one validation's runs, newest first; the gate: the latest
        # completed run of a validation (and candidate version).
        Index("ix_runs_validation_finished_at", "validation", "finished_at"),
        Index("ix_runs_validation_started_at", "validation", "started_at"),
        Index(
            "ix_runs_validation_candidate_version_status",
            "validation",
            "candidate_version",
            "status",
        ),
        Index("ix_runs_started_at", "started_at"),
    )


class DivergenceRow(Base):
    __tablename__ = "divergences"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True
    )
    ordinal: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(TAG_LENGTH))
    key: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    reference_position: Mapped[int | None] = mapped_column(BigInteger)
    candidate_position: Mapped[int | None] = mapped_column(BigInteger)
    reference_event: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    candidate_event: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    columns: Mapped[Any] = mapped_column(JsonValue)
    partner_reference_position: Mapped[int | None] = mapped_column(BigInteger)
    partner_candidate_position: Mapped[int | None] = mapped_column(BigInteger)
    noisy: Mapped[bool] = mapped_column(Boolean, server_default=false())
    #: the check's own words (a recovery run's windows); ``None``: derived from the kind
    explanation: Mapped[str | None] = mapped_column(Text, nullable=True)


class ColumnStatRow(Base):
    __tablename__ = "column_stats"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True
    )
    # Not "column": a reserved word that every hand-written query would have to quote.
    column_name: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    mismatches: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    extra: Mapped[Any] = mapped_column(JsonValue, nullable=True)


class ExpectationResultRow(Base):
    __tablename__ = "expectation_results"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True
    )
    ordinal: Mapped[int] = mapped_column(Integer, primary_key=True)
    suite: Mapped[str] = mapped_column(String(NAME_LENGTH))
    side: Mapped[str] = mapped_column(String(TAG_LENGTH))
    expectation_type: Mapped[str] = mapped_column(String(NAME_LENGTH))
    kwargs: Mapped[Any] = mapped_column(JsonValue)
    success: Mapped[bool] = mapped_column(Boolean)
    observed: Mapped[Any] = mapped_column(JsonValue, nullable=True)
    details: Mapped[Any] = mapped_column(JsonValue, nullable=True)


class ApprovalRow(Base):
    """An approval of a run's divergences, or the revocation of one (0007). Append-only:
    rows are never updated or deleted, so the table is the audit trail. No foreign key to
    ``runs``: the record outlives any run it names."""

    __tablename__ = "approvals"

    approval_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    validation: Mapped[str] = mapped_column(String(NAME_LENGTH))
    candidate_version: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    run_id: Mapped[str] = mapped_column(String(RUN_ID_LENGTH))
    action: Mapped[str] = mapped_column(String(16))
    actor: Mapped[str] = mapped_column(String(NAME_LENGTH))
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    reason: Mapped[str] = mapped_column(Text)
    #: the signature approved (``matcher.approvals.divergence_signature``)
    divergences: Mapped[Any] = mapped_column(JsonValue)
    #: a revoke: the ``approval_id`` it ends
    revokes: Mapped[int | None] = mapped_column(Integer, nullable=True)

    __table_args__ = (
        CheckConstraint(_one_of("action", APPROVAL_ACTIONS), name="action"),
        # The gate: a validation's approvals for one candidate version.
        Index("ix_approvals_validation_candidate_version", "validation", "candidate_version"),
        Index("ix_approvals_run_id", "run_id"),
    )
