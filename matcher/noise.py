"""Noise: which of the candidate's divergences the reference's own non-determinism explains.

    noise = Noise.measure([reference_vs_rerun])       # Verdicts: the reference against its reruns
    report = explain(noise, reference_vs_candidate)   # -> NoiseReport; report.verdict is the run's
    result = compare_with_noise(compare, "out/reference", "out/candidate",
                                reruns=["out/rerun"], limit=100)   # both steps, any engine

The reference runs a second time on the same slice with other partition counts, and the
matcher compares the two runs exactly as it compares reference and candidate. Whatever that
finds is the reference's *noise* (the non-determinism property of Xu et al.; Diffy's two
primaries): the consumer gets those differences from production already, so the same
differences from the candidate may not be the candidate's fault.

**The rule.** A divergence's *scope* is its dependence key; events without a key (the
``ordered``, ``unordered``, ``punctuation`` and ``predicate`` forms, barrier events, typed
events of an unkeyed type) share one scope, the stream (shown as key ``null``). From the
reference-vs-rerun divergences:

* a scope is *order-noisy* when the rerun reordered events in it (a ``reordering``);
* a scope is *event-noisy* when the rerun lost or duplicated events in it (``loss`` or
  ``duplication``: which events the reference emits there is not determined by the input);
* a column is *noisy* when it differed in any ``corruption`` (on any key, as Diffy marks
  fields; the ``columns`` of the rerun's corruptions).

A candidate divergence is **explained by noise** when

* it is a ``reordering`` in an order-noisy scope, or
* it is a ``loss`` or ``duplication`` in an event-noisy scope, or
* it is a ``corruption`` in an event-noisy scope, or one whose differing columns are all
  noisy columns.

Noise of one kind never excuses another: a reference that only reorders taxi T1 does not
excuse a candidate that loses one of T1's events, and a noisy ``emitted_at`` column does not
excuse a corrupted ``distance``.

The run's verdict is ``equivalent`` when the candidate matches the reference, ``noisy``
when every candidate divergence is explained, ``divergent`` otherwise. "Every" means every
one, not only those with witnesses: when the candidate's witnesses were cut off (``limit``),
the rest are explained only if the complete counts prove it (every divergence is a
corruption and every column that differed in one is noisy); otherwise the verdict is
``divergent``, and the report says the check was incomplete. Likewise, scopes are known only
from the rerun's witnesses: if those were cut off, some noisy scopes are unknown, which can
only turn ``noisy`` into ``divergent``, never the reverse. Noisy columns are always complete
(they come from the rerun's per-column counts).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from matcher.serialize import json_safe
from matcher.verdict import DIVERGENT, EQUIVALENT, KINDS, Divergence, Verdict

NOISY = "noisy"
#: Witnesses kept per rerun comparison (and for the candidate's, when the reference is noisy).
NOISE_LIMIT = 100_000
#: How many noisy keys a report lists (all are counted).
KEYS_SHOWN = 1_000

ORDER = "order"
EVENTS = "events"
COLUMNS = "columns"
#: What explained a divergence: order noise, event noise, or noisy columns, in its scope.
EXPLANATIONS = (ORDER, EVENTS, COLUMNS)


def scope_of(key: Any) -> str:
    """A key as comparable text (keys may be lists or mappings, which do not hash); the
    stream scope of key-less events is ``"null"``."""
    return json.dumps(json_safe(key), sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Noise:
    """What the reference's reruns showed, as the rule above reads it.

    ``order_scopes``/``event_scopes`` hold ``scope_of(key)`` texts, ``keys`` their JSON-safe
    key values; ``complete`` is whether every rerun divergence came with its witness (so
    that every noisy scope is known); ``counts`` and ``divergences`` count all of them.
    """

    reruns: int = 0
    order_scopes: frozenset[str] = frozenset()
    event_scopes: frozenset[str] = frozenset()
    columns: frozenset[str] = frozenset()
    keys: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    complete: bool = True

    @classmethod
    def measure(cls, reruns: Sequence[Verdict]) -> Noise:
        """The noise shown by the reference compared with each of its reruns."""
        order: set[str] = set()
        events: set[str] = set()
        keys: dict[str, Any] = {}
        for verdict in reruns:
            for d in verdict.divergences:
                scope = scope_of(d.key)
                keys.setdefault(scope, json_safe(d.key))
                if d.kind == "reordering":
                    order.add(scope)
                elif d.kind in ("loss", "duplication"):
                    events.add(scope)
        noisy = order | events
        return cls(
            reruns=len(reruns),
            order_scopes=frozenset(order),
            event_scopes=frozenset(events),
            columns=frozenset(c for v in reruns for c, n in v.column_mismatches.items() if n > 0),
            keys=MappingProxyType({s: k for s, k in keys.items() if s in noisy}),
            counts=MappingProxyType({k: sum(v.counts[k] for v in reruns) for k in KINDS}),
            complete=all(len(v.divergences) == v.total_divergences for v in reruns),
        )

    @property
    def total(self) -> int:
        """Every divergence between the reference and its reruns."""
        return sum(self.counts.values())

    @property
    def silent(self) -> bool:
        """The reference agreed with itself on every rerun (or there was none)."""
        return self.total == 0

    def explanation(self, divergence: Divergence) -> str | None:
        """What explains ``divergence`` (``order``, ``events`` or ``columns``), or ``None``."""
        scope = scope_of(divergence.key)
        kind = divergence.kind
        if kind == "reordering":
            return ORDER if scope in self.order_scopes else None
        if scope in self.event_scopes:
            return EVENTS
        if kind == "corruption" and divergence.columns and self.columns >= set(divergence.columns):
            return COLUMNS
        return None

    def explains_all_counted(self, verdict: Verdict) -> bool:
        """Whether the complete counts alone prove every divergence explained: all are
        corruptions, and every column that differed in one is noisy."""
        counts = verdict.counts
        only_corruptions = verdict.total_divergences == counts["corruption"]
        differing = {c for c, n in verdict.column_mismatches.items() if n > 0}
        return only_corruptions and bool(differing) and self.columns >= differing

    def noisy_keys(self) -> list[dict[str, Any]]:
        """Noisy scopes as ``{"key", "order", "events"}``, sorted by key text."""
        return [
            {
                "key": self.keys[scope],
                "order": scope in self.order_scopes,
                "events": scope in self.event_scopes,
            }
            for scope in sorted(self.keys)
        ]


@dataclass(frozen=True, slots=True)
class NoiseReport:
    """The candidate's divergences read against the reference's noise.

    ``explanations[i]`` says what explains ``verdict.divergences[i]`` (``None``: nothing),
    for the witnesses kept (``trim``); ``checked`` witnesses were checked, ``explained`` of
    them explained; ``total`` counts every candidate divergence; ``checked_all`` is whether
    every one was checked (its witness seen, or the counts proved them all explained);
    ``verdict`` is the run's.
    """

    verdict: str
    noise: Noise
    explanations: tuple[str | None, ...]
    total: int
    checked: int
    explained: int
    checked_all: bool

    @property
    def unexplained(self) -> int:
        """Checked candidate divergences that nothing explains."""
        return self.checked - self.explained

    def trim(self, limit: int) -> NoiseReport:
        """The same report, keeping the explanations of the first ``limit`` witnesses."""
        return replace(self, explanations=self.explanations[:limit])

    def noisy_ordinals(self) -> tuple[int, ...]:
        """Indexes of the explained witnesses kept (the store's ``noisy`` flags)."""
        return tuple(i for i, e in enumerate(self.explanations) if e is not None)

    def summary(self) -> str:
        """One line for a human."""
        n = self.noise
        if n.reruns == 0:
            return "noise not measured (no reference rerun)"
        if n.silent:
            return f"the reference agreed with itself on {_runs(n.reruns)}"
        where = (
            f"{_count(len(n.keys), 'noisy key')}, {_count(len(n.columns), 'noisy column')}"
            f" ({_count(n.total, 'divergence')} of the reference from {_runs(n.reruns)})"
        )
        if self.verdict == EQUIVALENT:
            return f"equivalent, though the reference is noisy: {where}"
        if self.verdict == NOISY:
            return f"all {self.total} divergences are explained by noise: {where}"
        if self.unexplained == 0:
            return (
                f"the {self.checked} divergences checked of {self.total} are explained by "
                f"noise, but the rest could not be checked: {where}"
            )
        cut = "" if self.checked == self.total else f" (of {self.checked} checked)"
        unexplained = f"{self.unexplained} of {self.total} divergences are not explained by noise"
        return f"{unexplained}{cut}: {where}"

    def to_dict(self) -> dict[str, Any]:
        """The ``noise`` document the store keeps with the run (JSON-safe)."""
        n = self.noise
        keys = n.noisy_keys()
        return {
            "verdict": self.verdict,
            "summary": self.summary(),
            "reference_runs": n.reruns + 1,
            "reference_divergences": n.total,
            "reference_counts": dict(n.counts),
            "noise_complete": n.complete,
            "noisy_key_count": len(keys),
            "noisy_keys": keys[:KEYS_SHOWN],
            "noisy_columns": sorted(n.columns),
            "candidate_divergences": self.total,
            "checked": self.checked,
            "explained": self.explained,
            "checked_all": self.checked_all,
            "witnesses": [
                {"ordinal": i, "explained_by": e} for i, e in enumerate(self.explanations)
            ],
        }


def explain(noise: Noise, verdict: Verdict) -> NoiseReport:
    """Read the reference-vs-candidate ``verdict`` against the reference's ``noise``."""
    explanations = tuple(noise.explanation(d) for d in verdict.divergences)
    total, checked = verdict.total_divergences, len(explanations)
    explained = sum(e is not None for e in explanations)
    # Noise explains event divergences, never a divergent schema change (matcher.schema).
    schema_divergent = verdict.schema is not None and verdict.schema.divergent
    if verdict.equivalent or total == 0 or schema_divergent:
        status = EQUIVALENT if verdict.equivalent else DIVERGENT
        return NoiseReport(status, noise, explanations, total, checked, explained, True)
    if checked == total and explained == total:
        return NoiseReport(NOISY, noise, explanations, total, checked, explained, True)
    if checked < total and noise.explains_all_counted(verdict):
        return NoiseReport(NOISY, noise, explanations, total, checked, explained, True)
    return NoiseReport(DIVERGENT, noise, explanations, total, checked, explained, checked == total)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _runs(n: int) -> str:
    return "its rerun" if n == 1 else f"{n} reruns"


#: An engine's comparison of two outputs: ``compare(reference, other, limit)`` is the verdict
#: keeping ``limit`` witnesses and the seconds reading and matching took.
Compare = Callable[[str, str, int], tuple[Verdict, float]]


@dataclass(frozen=True, slots=True)
class NoisyComparison:
    """The candidate's verdict (first ``limit`` witnesses), its reading against the
    reference's noise, and how long each half took (seconds)."""

    verdict: Verdict
    report: NoiseReport | None
    seconds: float
    noise_seconds: float

    @property
    def status(self) -> str:
        """The run's verdict: the noise report's, else the comparison's."""
        return self.verdict.status if self.report is None else self.report.verdict


def compare_with_noise(
    compare: Compare,
    reference: str,
    candidate: str,
    *,
    reruns: Sequence[str] = (),
    limit: int,
    noise_limit: int = NOISE_LIMIT,
) -> NoisyComparison:
    """Compare the reference with each rerun, then with the candidate, on one engine.

    Each rerun is compared keeping witnesses for up to ``noise_limit`` divergences, so that
    every noisy key is known; when the reference is noisy, the candidate is compared keeping
    as many, so that every candidate divergence can be checked against the noise. The
    verdict returned keeps the first ``limit``."""
    started = time.perf_counter()
    noise = Noise.measure([compare(reference, rerun, noise_limit)[0] for rerun in reruns])
    noise_seconds = time.perf_counter() - started
    wide = limit if noise.silent else max(limit, noise_limit)
    full, seconds = compare(reference, candidate, wide)
    report = explain(noise, full).trim(limit) if reruns else None
    verdict = replace(full, divergences=full.divergences[:limit])
    return NoisyComparison(verdict, report, seconds, noise_seconds)
