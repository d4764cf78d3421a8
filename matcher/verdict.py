"""Verdicts and their witnesses: what the matcher returns, as values.

A divergence is a result with a witness, not an exception. Its kind is one of Wallaroo's
violations of correctness:

* ``loss``: a reference event that the candidate lacks;
* ``duplication``: a candidate event beyond the reference's copies of it;
* ``reordering``: the same events, but a dependent pair in the opposite order;
* ``corruption``: an event replaced by a different one (``columns`` says which differ).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from matcher.equality import Event

if TYPE_CHECKING:  # matcher.schema imports this module (``judge``)
    from matcher.schema import SchemaDiff

Kind = Literal["loss", "duplication", "reordering", "corruption"]
KINDS: tuple[Kind, ...] = ("loss", "duplication", "reordering", "corruption")
EQUIVALENT = "equivalent"
DIVERGENT = "divergent"
#: said of every verdict on two empty outputs: equivalent, but nothing was compared, and a
#: release whose job wrote nothing is suspect (``gate.empty`` decides whether it passes)
EMPTY_WARNING = "both outputs are empty: there was no output to compare"


@dataclass(frozen=True, slots=True)
class Divergence:
    """One difference between the streams, with its witness.

    Positions are 0-based indexes into each stream. For a ``loss`` the candidate has no
    event: ``candidate_position`` is where it would stand (the index of the next candidate
    event that matched, or the candidate's length), and ``candidate_event`` is ``None``;
    symmetrically for a ``duplication``. For a ``reordering`` both events are the same
    (up to equality) and ``partner_*`` name the dependent event it swapped with, when known.
    """

    kind: Kind
    key: Any
    reference_position: int | None
    candidate_position: int | None
    reference_event: Event | None
    candidate_event: Event | None
    columns: tuple[str, ...] = ()
    partner_reference_position: int | None = None
    partner_candidate_position: int | None = None

    @property
    def position(self) -> int:
        """The earliest stream position this divergence involves, for ordering reports."""
        known = [p for p in (self.reference_position, self.candidate_position) if p is not None]
        return min(known) if known else 0

    def sort_key(self) -> tuple[int, int]:
        """Earliest first: by the earliest position involved, then the reference's."""
        return self.position, self.reference_position or 0

    def explain(self) -> str:
        """One line for a human."""
        r, c = self.reference_position, self.candidate_position
        if self.kind == "loss":
            return f"reference event #{r} is missing from the candidate (expected near #{c})"
        if self.kind == "duplication":
            return f"candidate event #{c} is beyond the reference's copies (near reference #{r})"
        if self.kind == "reordering":
            partner = ""
            if self.partner_reference_position is not None:
                partner = (
                    f"; it swapped with reference #{self.partner_reference_position}"
                    f" / candidate #{self.partner_candidate_position}"
                )
            return f"reference event #{r} appears out of order at candidate #{c}{partner}"
        return f"reference event #{r} became candidate event #{c}: {', '.join(self.columns)} differ"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "reference_position": self.reference_position,
            "candidate_position": self.candidate_position,
            "reference_event": None if self.reference_event is None else dict(self.reference_event),
            "candidate_event": None if self.candidate_event is None else dict(self.candidate_event),
            "columns": list(self.columns),
            "partner_reference_position": self.partner_reference_position,
            "partner_candidate_position": self.partner_candidate_position,
            "explanation": self.explain(),
        }


def _zero_counts() -> Mapping[str, int]:
    return MappingProxyType(dict.fromkeys(KINDS, 0))


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of comparing two streams.

    ``divergences`` holds the first ``limit`` divergences by stream position, with
    witnesses; ``counts`` counts every divergence found, per kind. ``detected_at`` is the
    index in the connected stream (both sides interleaved, as pushed) of the event that
    proved the streams distinguishable (Theorem 4.8: the earliest possible), or ``None``
    when that was only known at the end of the streams.
    """

    equivalent: bool
    divergences: tuple[Divergence, ...] = ()
    counts: Mapping[str, int] = field(default_factory=_zero_counts)
    reference_count: int = 0
    candidate_count: int = 0
    matched_count: int = 0
    peak_unmatched: int = 0
    detected_at: int | None = None
    dependence: str = ""
    column_mismatches: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: per column that differed, what the corruptions did to it, over all of them
    #: (``matcher.profile.ColumnProfile.summary``)
    column_profiles: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: per side ("reference", "candidate"): statistics such as rows, keys, barriers
    side_stats: Mapping[str, Mapping[str, int]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: things the user should know about how the verdict was reached (e.g. one partition)
    warnings: tuple[str, ...] = ()
    #: how the outputs' schemas differ (``matcher.schema``); ``None``: no difference, or no
    #: schemas (events given to ``compare``). ``equivalent`` is already false when a finding
    #: is divergent (``matcher.schema.judge``).
    schema: SchemaDiff | None = None
    #: every divergence, not only the first ``limit`` (the core keeps them, for an export
    #: of the differences: ``matcher.files.differences``); ``None``: not kept (the Spark paths
    #: write their table where the data is). Not part of the verdict's value or document.
    every_divergence: tuple[Divergence, ...] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "counts", MappingProxyType({k: self.counts.get(k, 0) for k in KINDS})
        )
        schema_divergent = self.schema is not None and self.schema.divergent  # its witness
        if not self.equivalent and not any(self.counts.values()) and not schema_divergent:
            # A divergence is a result with a witness: "divergent" with nothing counted is
            # a matcher bug (a null key once read as "no chain" did this), never a verdict.
            # Raised, not asserted, so that ``python -O`` keeps it.
            raise AssertionError("a divergent verdict counts no divergence (a bug in Parity)")
        object.__setattr__(
            self, "column_mismatches", MappingProxyType(dict(self.column_mismatches))
        )
        object.__setattr__(self, "column_profiles", MappingProxyType(dict(self.column_profiles)))
        object.__setattr__(
            self,
            "side_stats",
            MappingProxyType({k: MappingProxyType(dict(v)) for k, v in self.side_stats.items()}),
        )

    @property
    def divergence(self) -> Divergence | None:
        """The earliest divergence, or ``None`` when the streams are equivalent."""
        return self.divergences[0] if self.divergences else None

    @property
    def status(self) -> str:
        return EQUIVALENT if self.equivalent else DIVERGENT

    @property
    def total_divergences(self) -> int:
        return sum(self.counts.values())

    @property
    def empty(self) -> bool:
        """Neither output had an event: the verdict is equivalent, and says nothing."""
        return self.reference_count == 0 and self.candidate_count == 0

    @property
    def notes(self) -> tuple[str, ...]:
        """Every warning a report shows: the matcher's, and ``EMPTY_WARNING`` when empty."""
        return (EMPTY_WARNING, *self.warnings) if self.empty else self.warnings

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.status,
            "equivalent": self.equivalent,
            "counts": dict(self.counts),
            "total_divergences": self.total_divergences,
            "divergences": [d.to_dict() for d in self.divergences],
            "column_mismatches": dict(self.column_mismatches),
            "column_profiles": {c: dict(p) for c, p in self.column_profiles.items()},
            "reference_count": self.reference_count,
            "candidate_count": self.candidate_count,
            "matched_count": self.matched_count,
            "peak_unmatched": self.peak_unmatched,
            "detected_at": self.detected_at,
            "dependence": self.dependence,
            "side_stats": {side: dict(stats) for side, stats in self.side_stats.items()},
            "empty": self.empty,
            "warnings": list(self.notes),
            "schema": None if self.schema is None else self.schema.to_dict(),
        }
