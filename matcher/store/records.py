"""What goes into the results store and what comes out: frozen values, never ORM objects.

Writers build a ``RunStart`` when a run begins and a ``RunOutcome`` when it ends (from a
``matcher.Verdict`` with ``RunOutcome.from_verdict``); readers get ``RunSummary`` rows for
listings and a ``RunRecord`` (a summary plus its evidence) for one run.

Every JSON value (events, keys, spec, slice, statistics) goes through
``matcher.serialize.json_safe`` on the way in, so what reads back is exactly that: NaN as
``"NaN"``, datetimes as ISO strings, Decimal as its string, bytes as base64.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

from matcher.gate import OVERRIDABLE
from matcher.schema import SchemaDiff
from matcher.serialize import json_safe
from matcher.store.errors import InvalidRecordError, StoreError
from matcher.store.limits import (
    INTEGER_LIMIT,
    NAME_LENGTH,
    START_LENGTHS,
    TAG_LENGTH,
    check_count,
    check_text,
)
from matcher.verdict import KINDS, Divergence, Kind, Verdict

COMPARISON = "comparison"
#: a streaming job killed and restarted from its checkpoint (``parity.recovery``)
RECOVERY = "recovery"
#: an operator tested for its six properties (``parity properties``): it compares nothing,
#: so it has findings (the properties, in its stats' ``properties``) and no verdict
PROPERTIES = "properties"
RUN_KINDS = (COMPARISON, RECOVERY, PROPERTIES)
#: the kinds whose verdict a deploy gate may rest on (``Store.latest_run``)
GATED_KINDS = (COMPARISON, RECOVERY)
#: the kinds the match job stores (a properties run is stored by ``parity properties``)
MATCHED_KINDS = (COMPARISON, RECOVERY)
RUN_VERDICTS = ("equivalent", "divergent", "noisy", "error")
#: the verdicts an approval may accept: a failed run (``error``) is never approved away
APPROVABLE_VERDICTS = ("divergent", "noisy")
APPROVE, REVOKE = "approve", "revoke"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def require_aware(name: str, value: dt.datetime | None) -> None:
    """Refuse naive datetimes: the store keeps UTC instants, not wall-clock readings."""
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise StoreError(f"{name}: expected a timezone-aware datetime, got {value.isoformat()}")


def _zero_counts() -> Mapping[str, int]:
    return MappingProxyType(dict.fromkeys(KINDS, 0))


@dataclass(frozen=True, slots=True)
class RunStart:
    """A run as it begins: who started it, on what, and for which validation.

    ``run_id`` is the caller's key (``dag_id/run_id`` from Airflow, a uuid from the CLI); a
    retried task passes the same one and replaces its previous attempt. ``slice`` and ``spec``
    are JSON documents (the input slice and the validation spec as loaded).
    """

    run_id: str
    validation: str
    trigger: str = "manual"
    kind: str = COMPARISON
    reference_version: str | None = None
    candidate_version: str | None = None
    started_at: dt.datetime | None = None
    slice: Any = None
    spec: Any = None
    dag_id: str | None = None
    dag_run_id: str | None = None
    task_try: int | None = None
    engine: str = "core"
    #: the spec's sections the run's trigger replaced with different ones (``OVERRIDABLE``:
    #: a run that loosens its verdict's rules; the gate stays closed unless the spec allows
    #: it). ``None``: not stated by this writer; a later start of the same run (the match
    #: job after the plan task) keeps what the earlier one stored.
    overrides: tuple[str, ...] | None = None
    #: the digest of the spec sections that decide the verdict (``matcher.spec_digest``); the
    #: gate trusts a run only under today's. ``None``: not stated by this writer; a later
    #: start of the same run keeps what the earlier one stored (as ``overrides``).
    spec_hash: str | None = None

    def __post_init__(self) -> None:
        if not self.run_id:
            raise StoreError("run_id: expected a non-empty string")
        if not self.validation:
            raise StoreError(f"run {self.run_id!r}: validation: expected a non-empty name")
        for name, limit in START_LENGTHS.items():
            check_text(name, getattr(self, name), limit)
        if self.kind not in RUN_KINDS:
            raise InvalidRecordError(
                f"kind: expected one of {', '.join(RUN_KINDS)}, got {self.kind!r}"
            )
        if self.task_try is not None:
            check_count("task_try", self.task_try, INTEGER_LIMIT)
        if self.overrides is not None:
            unknown = sorted(set(self.overrides) - set(OVERRIDABLE))
            if unknown:
                raise InvalidRecordError(
                    f"overrides: expected sections among {', '.join(OVERRIDABLE)}, "
                    f"got {unknown[0]!r}"
                )
            ordered = tuple(name for name in OVERRIDABLE if name in self.overrides)
            object.__setattr__(self, "overrides", ordered)
        require_aware("started_at", self.started_at)


@dataclass(frozen=True, slots=True)
class StoredDivergence:
    """A divergence's witness as the store keeps it: JSON-safe key and events.

    ``ordinal`` is its place in the verdict (0 = the earliest); ``noisy`` marks a divergence on
    a key where the reference disagreed with itself.
    """

    ordinal: int
    kind: str
    key: Any
    reference_position: int | None
    candidate_position: int | None
    reference_event: Mapping[str, Any] | None
    candidate_event: Mapping[str, Any] | None
    columns: tuple[str, ...] = ()
    partner_reference_position: int | None = None
    partner_candidate_position: int | None = None
    noisy: bool = False
    #: the witness in words, when the check that found it wrote them (``None``: the kind's
    #: own explanation, ``Divergence.explain()``)
    explanation: str | None = None

    def __post_init__(self) -> None:
        check_count("divergence ordinal", self.ordinal, INTEGER_LIMIT)
        for name in (
            "reference_position",
            "candidate_position",
            "partner_reference_position",
            "partner_candidate_position",
        ):
            value = getattr(self, name)
            if value is not None:
                check_count(f"divergence {self.ordinal}: {name}", value)

    def explain(self) -> str:
        """One line for a human: the check's words, else the matcher's for the kind."""
        if self.explanation is not None:
            return self.explanation
        if self.kind not in KINDS:  # a later kind of run may store others
            return self.kind
        return self.to_divergence().explain()

    @classmethod
    def from_divergence(
        cls, divergence: Divergence, ordinal: int, *, noisy: bool = False
    ) -> StoredDivergence:
        return cls(
            ordinal=ordinal,
            kind=divergence.kind,
            key=json_safe(divergence.key),
            reference_position=divergence.reference_position,
            candidate_position=divergence.candidate_position,
            reference_event=_safe_event(divergence.reference_event),
            candidate_event=_safe_event(divergence.candidate_event),
            columns=tuple(divergence.columns),
            partner_reference_position=divergence.partner_reference_position,
            partner_candidate_position=divergence.partner_candidate_position,
            noisy=noisy,
        )

    def to_divergence(self) -> Divergence:
        """The witness as the matcher's ``Divergence`` (its values as stored: JSON-safe), for
        ``Divergence.explain()``; ``ordinal`` and ``noisy`` are the store's own."""
        return Divergence(
            cast(Kind, self.kind),  # one of KINDS: the store writes no other
            self.key,
            self.reference_position,
            self.candidate_position,
            self.reference_event,
            self.candidate_event,
            self.columns,
            self.partner_reference_position,
            self.partner_candidate_position,
        )


def _safe_event(event: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if event is None else {str(k): json_safe(v) for k, v in event.items()}


@dataclass(frozen=True, slots=True)
class ColumnStat:
    """Per-column statistics of a run: how many events differed in ``column``."""

    column: str
    mismatches: int
    extra: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        check_text("column_stats.column", self.column, NAME_LENGTH)
        check_count(f"column_stats.{self.column}.mismatches", self.mismatches)


@dataclass(frozen=True, slots=True)
class ExpectationRecord:
    """One Great Expectations result on one side's output.

    ``side`` is ``reference`` or ``candidate`` for comparisons (free text for later kinds);
    ``observed`` is the result's observed value, ``details`` the rest of its result dict.
    """

    suite: str
    side: str
    expectation_type: str
    success: bool
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    observed: Any = None
    details: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        check_text("expectation suite", self.suite, NAME_LENGTH)
        check_text("expectation side", self.side, TAG_LENGTH)
        check_text("expectation type", self.expectation_type, NAME_LENGTH)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended, written in one transaction by ``Store.record_run``.

    ``verdict`` is one of ``RUN_VERDICTS``, or ``None`` for a run that judges nothing: a
    properties run (kind ``properties``) completes with findings and no verdict, as none of
    equivalent, divergent, noisy or error says what testing an operator found; such an
    outcome carries no divergences. ``counts`` counts every divergence per kind
    (``divergences`` may hold only the first few).
    ``expectations=None`` leaves the run's stored expectation results as they are; a tuple
    (even empty) replaces them.
    """

    verdict: str | None
    counts: Mapping[str, int] = field(default_factory=_zero_counts)
    divergences: tuple[StoredDivergence, ...] = ()
    column_stats: tuple[ColumnStat, ...] = ()
    stats: Mapping[str, Any] | None = None
    noise: Mapping[str, Any] | None = None
    gate_passed: bool | None = None
    finished_at: dt.datetime | None = None
    report_path: str | None = None
    expectations: tuple[ExpectationRecord, ...] | None = None
    gate_reason: str | None = None
    #: how the outputs' schemas differed (``None``: not compared)
    schema: SchemaDiff | None = None

    def __post_init__(self) -> None:
        if self.verdict is not None and self.verdict not in RUN_VERDICTS:
            raise StoreError(
                f"verdict: expected one of {', '.join(RUN_VERDICTS)}, got {self.verdict!r}"
            )
        if self.verdict is None and (self.divergences or any(self.counts.values())):
            raise StoreError("verdict: a run without a verdict has no divergences")
        unknown = sorted(set(self.counts) - set(KINDS))
        if unknown:
            raise StoreError(f"counts: unknown divergence kinds {', '.join(unknown)}")
        counts = {k: check_count(f"counts.{k}", self.counts.get(k, 0)) for k in KINDS}
        check_count("total divergences", sum(counts.values()))
        object.__setattr__(self, "counts", MappingProxyType(counts))
        require_aware("finished_at", self.finished_at)

    @property
    def total_divergences(self) -> int:
        return sum(self.counts.values())

    @classmethod
    def from_verdict(
        cls,
        verdict: Verdict,
        *,
        verdict_name: str | None = None,
        noisy_keys: Iterable[Any] = (),
        noisy_ordinals: Iterable[int] = (),
        gate_passed: bool | None = None,
        stats: Mapping[str, Any] | None = None,
        noise: Mapping[str, Any] | None = None,
        finished_at: dt.datetime | None = None,
        report_path: str | None = None,
        expectations: Sequence[ExpectationRecord] | None = None,
    ) -> RunOutcome:
        """The outcome a ``Verdict`` describes.

        ``verdict_name`` overrides the verdict's own (``noisy`` when the noise runs say so);
        divergences whose key is in ``noisy_keys``, or whose index is in ``noisy_ordinals``
        (``matcher.noise.NoiseReport.noisy_ordinals``), are marked noisy; ``stats`` adds to the
        verdict's own statistics (stream sizes, peak unmatched, detection point, dependence).
        """
        noisy = {_canonical(k) for k in noisy_keys}
        ordinals = frozenset(noisy_ordinals)
        own_stats: dict[str, Any] = {
            "reference_count": verdict.reference_count,
            "candidate_count": verdict.candidate_count,
            "matched_count": verdict.matched_count,
            "peak_unmatched": verdict.peak_unmatched,
            "detected_at": verdict.detected_at,
            "dependence": verdict.dependence,
        }
        return cls(
            verdict=verdict_name or verdict.status,
            counts=verdict.counts,
            divergences=tuple(
                StoredDivergence.from_divergence(
                    d, i, noisy=i in ordinals or _canonical(d.key) in noisy
                )
                for i, d in enumerate(verdict.divergences)
            ),
            column_stats=tuple(
                ColumnStat(column, count, verdict.column_profiles.get(column))
                for column, count in verdict.column_mismatches.items()
            ),
            stats={**own_stats, **(stats or {})},
            noise=noise,
            gate_passed=gate_passed,
            finished_at=finished_at,
            report_path=report_path,
            expectations=None if expectations is None else tuple(expectations),
            schema=verdict.schema,
        )


def _canonical(key: Any) -> str:
    """Keys as comparable text: a key may be a list or a dict, which do not hash."""
    return json.dumps(json_safe(key), sort_keys=True)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run as the history lists it (no evidence: see ``RunRecord``)."""

    run_id: str
    validation: str
    kind: str
    trigger: str
    reference_version: str | None
    candidate_version: str | None
    status: str
    verdict: str | None
    gate_passed: bool | None
    error: str | None
    started_at: dt.datetime
    finished_at: dt.datetime | None
    counts: Mapping[str, int]
    total_divergences: int
    dag_id: str | None
    dag_run_id: str | None
    task_try: int | None
    engine: str
    report_path: str | None
    #: Why the gate opened or stayed closed (``Store.set_gate``), one line.
    gate_reason: str | None = field(default=None, kw_only=True)
    # Keyword-only, so that ``RunRecord`` can add fields without defaults after them.
    # The input slice (a small JSON document: time column, window, sample) is listed too.
    slice: Any = field(default=None, kw_only=True)
    # Counted from the run's expectation results.
    expectations_total: int = field(default=0, kw_only=True)
    expectations_failed: int = field(default=0, kw_only=True)
    #: how the outputs' schemas differed (``None``: not compared, or recorded before 0003);
    #: listed too, so that a run divergent by its schema alone says why in the history
    schema: SchemaDiff | None = field(default=None, kw_only=True)
    #: while running: until when the job's heartbeat vouches for it (``matcher.store.lease``);
    #: a running run whose lease expired is read as failed, so this is ``None`` on it
    lease_expires_at: dt.datetime | None = field(default=None, kw_only=True)
    #: the spec's sections the run's trigger replaced (``RunStart.overrides``); ``()``: none
    overrides: tuple[str, ...] = field(default=(), kw_only=True)
    #: the verdict digest of the spec the run was made under (``RunStart.spec_hash``);
    #: ``None``: recorded before spec binding, or by a writer that had no spec
    spec_hash: str | None = field(default=None, kw_only=True)

    @property
    def duration(self) -> dt.timedelta | None:
        return None if self.finished_at is None else self.finished_at - self.started_at

    @property
    def expectations_passed(self) -> bool | None:
        """``True`` when every stored expectation succeeded, ``False`` when one failed,
        ``None`` when the run has no expectation results (none configured, or not run yet)."""
        return None if self.expectations_total == 0 else self.expectations_failed == 0


@dataclass(frozen=True, slots=True)
class ExpiredRun:
    """A running run whose lease had expired, as ``Store.expire_runs`` recorded it failed."""

    run_id: str
    validation: str
    lease_expired_at: dt.datetime
    #: the run's ``error`` now (``matcher.store.lease.lease_expired_reason``)
    reason: str


@dataclass(frozen=True, slots=True)
class RunRecord(RunSummary):
    """One run with its documents and evidence, as ``Store.get_run`` returns it."""

    spec: Any
    stats: Mapping[str, Any] | None
    noise: Mapping[str, Any] | None
    divergences: tuple[StoredDivergence, ...]
    column_stats: tuple[ColumnStat, ...]
    expectations: tuple[ExpectationRecord, ...]


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One row of the approvals trail (``Store.approve``, ``Store.revoke``): who accepted
    which divergences of which run, when and why; or who revoked such an approval.

    ``divergences`` is the signature approved (``matcher.approvals.divergence_signature``):
    a revoke repeats the signature of the approval it ends (``revokes``: its id)."""

    approval_id: int
    validation: str
    candidate_version: str | None
    run_id: str
    action: str
    actor: str
    at: dt.datetime
    reason: str
    divergences: Mapping[str, Any]
    revokes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-safe values (``parity approve --json``, the gate's JSON)."""
        return {
            "approval_id": self.approval_id,
            "validation": self.validation,
            "candidate_version": self.candidate_version,
            "run_id": self.run_id,
            "action": self.action,
            "actor": self.actor,
            "at": self.at.isoformat(),
            "reason": self.reason,
            "divergences": json_safe(dict(self.divergences)),
            "revokes": self.revokes,
        }
