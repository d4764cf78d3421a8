"""Records to table rows and back: the repository's only knowledge of column names.

Every JSON value is passed through ``matcher.serialize.json_safe`` on the way in (idempotent on
values that already are JSON-safe), so a hand-built record cannot smuggle a NaN or a datetime
into a JSON column.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from sqlalchemy import ColumnElement, RowMapping, Select, and_, case, false, func, select

from matcher.schema import SchemaDiff
from matcher.serialize import json_safe
from matcher.store.lease import lease_expired_reason
from matcher.store.models import ExpectationResultRow, Run
from matcher.store.records import (
    ColumnStat,
    ExpectationRecord,
    RunOutcome,
    RunStart,
    StoredDivergence,
)
from matcher.verdict import KINDS

Row = dict[str, Any]

# A run's results: reset when it (re)starts or fails, written when it completes.
NO_RESULTS: Mapping[str, Any] = MappingProxyType(
    {
        "verdict": None,
        "gate_passed": None,
        "gate_reason": None,
        "error": None,
        "finished_at": None,
        "stats": None,
        "noise": None,
        "report_path": None,
        "schema_diff": None,
        "lease_expires_at": None,
        "total_divergences": 0,
        **dict.fromkeys(KINDS, 0),
    }
)
# Not in a listing; the slice (small) is.
_DOCUMENT_COLUMNS = frozenset({"spec", "stats", "noise"})
_SUMMARY_COLUMNS: tuple[ColumnElement[Any], ...] = tuple(
    c for c in Run.__table__.columns if c.name not in _DOCUMENT_COLUMNS
)
_SUMMARY_FIELDS = tuple(
    c.name for c in _SUMMARY_COLUMNS if c.name not in KINDS and c.name != "schema_diff"
)
FAILED_GATE_REASON = "the run failed (verdict error)"


def failed_values(error: str, finished_at: dt.datetime) -> Row:
    """The ``runs`` columns of a failed run: verdict ``error``, gate closed, no results."""
    return {
        **NO_RESULTS,
        "status": "failed",
        "verdict": "error",
        "gate_passed": False,
        "gate_reason": FAILED_GATE_REASON,
        # PostgreSQL's text cannot hold NUL, and an error may quote a bad row verbatim.
        "error": error.replace("\x00", "\\x00"),
        "finished_at": finished_at,
    }


def lease_expired(now: dt.datetime) -> ColumnElement[bool]:
    """Running runs whose job stopped renewing their lease before ``now``."""
    return and_(Run.status == "running", Run.lease_expires_at <= now)


def status_as_read(now: dt.datetime) -> ColumnElement[Any]:
    """The status a reader sees: ``failed`` for a running run whose lease expired."""
    return case((lease_expired(now), "failed"), else_=Run.status)


def verdict_as_read(now: dt.datetime) -> ColumnElement[Any]:
    """The verdict a reader sees: ``error`` for a running run whose lease expired."""
    return case((lease_expired(now), "error"), else_=Run.verdict)


def start_values(run: RunStart) -> Row:
    """The ``runs`` columns a run has when it was started (everything but ``run_id``)."""
    return {
        "validation": run.validation,
        "kind": run.kind,
        "trigger": run.trigger,
        "reference_version": run.reference_version,
        "candidate_version": run.candidate_version,
        "started_at": run.started_at,
        "slice": json_safe(run.slice),
        "spec": json_safe(run.spec),
        "dag_id": run.dag_id,
        "dag_run_id": run.dag_run_id,
        "task_try": run.task_try,
        "engine": run.engine,
        "overrides": None if run.overrides is None else list(run.overrides),
        "spec_hash": run.spec_hash,
    }


def outcome_values(outcome: RunOutcome) -> Row:
    """The ``runs`` columns a completed run's outcome sets (``finished_at`` may be ``None``)."""
    return {
        **NO_RESULTS,
        "status": "completed",
        "verdict": outcome.verdict,
        "gate_passed": outcome.gate_passed,
        "gate_reason": outcome.gate_reason,
        "finished_at": outcome.finished_at,
        "stats": json_safe(outcome.stats),
        "noise": json_safe(outcome.noise),
        "report_path": outcome.report_path,
        "schema_diff": None if outcome.schema is None else json_safe(outcome.schema.to_dict()),
        "total_divergences": outcome.total_divergences,
        **outcome.counts,
    }


def divergence_rows(run_id: str, divergences: Sequence[StoredDivergence]) -> list[Row]:
    return [
        {
            "run_id": run_id,
            "ordinal": d.ordinal,
            "kind": d.kind,
            "key": json_safe(d.key),
            "reference_position": d.reference_position,
            "candidate_position": d.candidate_position,
            "reference_event": json_safe(d.reference_event),
            "candidate_event": json_safe(d.candidate_event),
            "columns": [str(c) for c in d.columns],
            "partner_reference_position": d.partner_reference_position,
            "partner_candidate_position": d.partner_candidate_position,
            "noisy": d.noisy,
            "explanation": d.explanation,
        }
        for d in divergences
    ]


def column_stat_rows(run_id: str, stats: Sequence[ColumnStat]) -> list[Row]:
    return [
        {
            "run_id": run_id,
            "column_name": c.column,
            "mismatches": c.mismatches,
            "extra": json_safe(c.extra),
        }
        for c in stats
    ]


def expectation_rows(run_id: str, results: Sequence[ExpectationRecord]) -> list[Row]:
    return [
        {
            "run_id": run_id,
            "ordinal": ordinal,
            "suite": r.suite,
            "side": r.side,
            "expectation_type": r.expectation_type,
            "kwargs": json_safe(r.kwargs),
            "success": r.success,
            "observed": json_safe(r.observed),
            "details": json_safe(r.details),
        }
        for ordinal, r in enumerate(results)
    ]


def _expectation_count(*conditions: ColumnElement[bool]) -> ColumnElement[int]:
    return (
        select(func.count())
        .select_from(ExpectationResultRow)
        .where(ExpectationResultRow.run_id == Run.run_id, *conditions)
        .scalar_subquery()
    )


def select_summaries() -> Select[Any]:
    """``runs`` without its documents (spec, stats, noise): what a listing needs, with
    the run's expectation results counted (all, failed)."""
    return select(
        *_SUMMARY_COLUMNS,
        _expectation_count().label("expectations_total"),
        _expectation_count(ExpectationResultRow.success == false()).label("expectations_failed"),
    )


def summary_fields(
    row: RowMapping, now: dt.datetime, expectations: Sequence[ExpectationRecord] | None = None
) -> dict[str, Any]:
    """The ``RunSummary`` fields of a ``runs`` row: a ``select_summaries`` row, or a whole
    ``runs`` row with the run's ``expectations`` (which the expectation counts come from).

    A running run whose lease expired before ``now`` reads as what ``Store.expire_runs``
    would make of it, without writing: readers may not be able to write."""
    fields = {name: row[name] for name in _SUMMARY_FIELDS}
    lease = fields["lease_expires_at"]
    if fields["status"] == "running" and lease is not None and lease <= now:
        fields.update(
            {
                key: value
                for key, value in failed_values(lease_expired_reason(lease), lease).items()
                if key in fields
            }
        )
    fields["counts"] = MappingProxyType({k: row[k] for k in KINDS})
    fields["schema"] = schema_record(row["schema_diff"])
    fields["overrides"] = overrides_record(row["overrides"])
    if expectations is None:
        fields["expectations_total"] = row["expectations_total"]
        fields["expectations_failed"] = row["expectations_failed"]
    else:
        fields["expectations_total"] = len(expectations)
        fields["expectations_failed"] = sum(not e.success for e in expectations)
    return fields


def overrides_record(document: Any) -> tuple[str, ...]:
    """The stored overrides as section names (the store is untrusted input: a value that is
    not a list of names reads as overriding an unknown section, which keeps the gate
    closed, rather than as none)."""
    if document is None:
        return ()
    if isinstance(document, list) and all(isinstance(name, str) for name in document):
        return tuple(document)
    return ("(unreadable overrides)",)


def schema_record(document: Any) -> SchemaDiff | None:
    """The stored schema findings (``None``: not compared, or a run from before them)."""
    return None if document is None else SchemaDiff.from_dict(document)


def divergence_record(row: RowMapping) -> StoredDivergence:
    return StoredDivergence(
        ordinal=row["ordinal"],
        kind=row["kind"],
        key=row["key"],
        reference_position=row["reference_position"],
        candidate_position=row["candidate_position"],
        reference_event=row["reference_event"],
        candidate_event=row["candidate_event"],
        columns=tuple(row["columns"]),
        partner_reference_position=row["partner_reference_position"],
        partner_candidate_position=row["partner_candidate_position"],
        noisy=row["noisy"],
        explanation=row["explanation"],
    )


def column_stat_record(row: RowMapping) -> ColumnStat:
    return ColumnStat(row["column_name"], row["mismatches"], row["extra"])


def expectation_record(row: RowMapping) -> ExpectationRecord:
    return ExpectationRecord(
        suite=row["suite"],
        side=row["side"],
        expectation_type=row["expectation_type"],
        success=row["success"],
        kwargs=row["kwargs"],
        observed=row["observed"],
        details=row["details"],
    )
