"""The online matcher: Algorithm DiffStream (Kallas et al., OOPSLA 2020, §4).

Events arrive one at a time from either side. Each one either matches a minimal equal
unmatched event of the other side, or proves the streams distinguishable (it depends on an
unmatched event of the other side), or waits in its side's unmatched set. The matcher
decides at the earliest event that makes the streams distinguishable (Theorem 4.8) and
holds nothing but the two unmatched sets (Theorem 4.9).

Unlike the paper's algorithm it does not stop at the first proof: the event is kept
unmatched and matching goes on, so that ``finish()`` can explain every divergence
(``matcher.classify``). The verdict is unaffected: once distinguishable, always divergent.

The algorithm assumes ``≡`` is an equivalence; a tolerance is not one (1.0 ≈ 1.05 ≈ 1.1, but
1.0 ≉ 1.1), and greedy pairing can then miss a pairing that exists. The rule under a
tolerance: the streams are equivalent iff *some* pairing within tolerance keeps the order
of every dependent pair. For ``ordered`` and ``by_key`` the pairing of a chain is forced,
rank by rank, and this loop decides it exactly, event by event. For the other forms the
matcher keeps every event and ``finish()`` decides over the leftovers with
``matcher.pairing.settle`` (maximum matchings; its docstring has the method, the cost and
the bound past which the verdict stays greedy and carries a warning); ``push`` then proves
nothing early and ``detected_at`` stays ``None``.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from itertools import chain, repeat, zip_longest
from typing import cast

from matcher.classify import Classifier, merge_moves
from matcher.dependence import Dependence
from matcher.diff import Op, align
from matcher.equality import FLAT_CLASSES, PLAIN, Equality, Event
from matcher.errors import InputError, MatcherError
from matcher.pairing import needs_pairing, settle
from matcher.pools import Entry, KeyedPool
from matcher.profile import Profile
from matcher.verdict import Divergence, Verdict

SIDES = ("reference", "candidate")
_SIDE_INDEX = {"reference": 0, "candidate": 1}
DEFAULT_LIMIT = 100
RESYNC_RUN = 16  # matches in a row after which a diverged key counts as agreeing again
RESYNC_START = 64  # events a diverged key holds before the first attempt to resynchronise


class StreamMatcher:
    """Feed events with ``push(side, event)``; ``finish()`` returns the ``Verdict``.

    ``limit`` is how many divergences keep their witnesses (all are counted).
    """

    def __init__(
        self,
        dependence: Dependence,
        equality: Equality | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.dependence = dependence
        self.equality = PLAIN if equality is None else equality
        self.equality.check_compatible(dependence.columns)
        self.limit = limit
        self._pools = (dependence.new_pool(self.equality), dependence.new_pool(self.equality))
        self._route = dependence.route(self.equality)
        self._lengths = [0, 0]
        self._pushed = 0
        self._matched = 0
        self._peak = 0
        self._detected_at: int | None = None
        self._verdict: Verdict | None = None
        self._classifier = Classifier(dependence, self.equality, self._lengths)
        self._settled: list[Divergence] = []  # classified early by ``_resynchronise``
        self._resync_at: dict[Hashable, int] = {}
        # Under a tolerance the greedy pairing may miss one: keep every event for ``settle``.
        self._seen: tuple[list[Entry], list[Entry]] | None = (
            ([], []) if needs_pairing(self.equality, self._pools[0]) else None
        )

    @property
    def unmatched_count(self) -> int:
        """Events held now: the sizes of the two unmatched sets."""
        return len(self._pools[0]) + len(self._pools[1])

    @property
    def peak_unmatched(self) -> int:
        return self._peak

    @property
    def divergent(self) -> bool:
        """True as soon as the streams are proven distinguishable."""
        return self._detected_at is not None

    @property
    def detected_at(self) -> int | None:
        return self._detected_at

    def push(self, side: str, event: Event) -> bool:
        """Process one event; returns ``False`` once the streams are known to differ."""
        index = _SIDE_INDEX.get(side)
        if index is None:
            raise MatcherError(f"side must be 'reference' or 'candidate', got {side!r}")
        self._push(index, event)
        return self._detected_at is None

    def _push(self, side: int, event: Event) -> None:
        if self._verdict is not None:
            raise MatcherError("push after finish(): start a new StreamMatcher")
        position = self._lengths[side]
        if event.__class__ is not dict and not isinstance(event, Mapping):
            raise InputError(
                f"{SIDES[side]} event #{position} is a {type(event).__name__}, not a mapping "
                "of column names to values"
            )
        self._lengths[side] = position + 1
        try:
            route = self._route(event)
        except KeyError as exc:
            raise InputError(
                f"{SIDES[side]} event #{position} lacks column {exc.args[0]!r} "
                f"that the dependence {self.dependence.describe()} reads"
            ) from exc
        except TypeError as exc:
            raise InputError(f"{SIDES[side]} event #{position} is not a mapping: {exc}") from exc
        except InputError as exc:
            raise InputError(f"{SIDES[side]} event #{position}: {exc}") from exc
        x = Entry(position, event, route)
        self._pushed += 1
        if self._seen is not None:
            self._seen[side].append(x)
        try:
            self._place(side, x)
        except KeyError as exc:  # a user's dependence or equality function read it
            raise InputError(
                f"{SIDES[side]} event #{position} lacks column {exc.args[0]!r}"
            ) from exc
        except InputError as exc:
            raise InputError(f"{SIDES[side]} event #{position}: {exc}") from exc

    def _place(self, side: int, x: Entry) -> None:
        """Lines 7-14 of Algorithm DiffStream for one event."""
        own, other = self._pools[side], self._pools[1 - side]
        if own.blocker(x) is None and other.take_match(x) is not None:
            self._matched += 1
            return
        if self._detected_at is None and self._seen is None and other.blocker(x) is not None:
            self._detected_at = self._pushed - 1
        own.add(x)
        held = len(own) + len(other)
        if held > self._peak:
            self._peak = held
        if self._detected_at is not None and isinstance(own, KeyedPool):
            self._resynchronise(x.route)

    def feed(self, reference: Iterable[Event], candidate: Iterable[Event]) -> None:
        """Push both streams, alternating one event from each (a fair interleaving)."""
        events = _interleave(reference, candidate)
        equal = _keyed_equal(self.equality)
        if isinstance(self._pools[0], KeyedPool) and equal is not None:
            self._feed_keyed(events, equal)
            return
        push = self._push
        for side, event in events:
            push(side, event)

    def _feed_keyed(
        self, events: Iterator[tuple[int, Event]], equal: Callable[[Event, Event], bool]
    ) -> None:
        """``feed`` for per-key queues (``by_key``, ``ordered``) and plain equality, or
        plain but for ignored columns (``equal``, from ``_keyed_equal``).

        The common case of ``_push`` inlined: when the event's own side holds nothing of its
        key, it either matches the other side's head or joins its own queue; the rest (a
        mismatch, a key held on both sides after a divergence, a bad event) goes through
        ``_push`` with the counters written back around it.
        """
        route = self._route
        pools = cast("tuple[KeyedPool, KeyedPool]", self._pools)
        queues = (pools[0].queues, pools[1].queues)
        lengths = self._lengths
        sizes = [pools[0].size, pools[1].size]
        matched, peak = self._matched, self._peak
        for side, event in events:
            try:
                if event.__class__ is not dict:
                    raise TypeError  # ``_push`` checks it is a mapping
                key = route(event)
                theirs = queues[1 - side].get(key)
                ours = queues[side].get(key)
            except (KeyError, TypeError, InputError):
                theirs = ours = None
                key = _BAD_KEY
            if key is not _BAD_KEY:
                if not theirs:
                    entry = Entry(lengths[side], event, key)
                    if ours is None:
                        queues[side][key] = deque((entry,))
                    else:
                        ours.append(entry)
                    lengths[side] += 1
                    sizes[side] += 1
                    if sizes[0] + sizes[1] > peak:
                        peak = sizes[0] + sizes[1]
                    continue
                if ours is None:
                    head = theirs[0].event
                    if equal(head, event):  # not ``==``: ``true == 1``
                        theirs.popleft()
                        if not theirs:
                            del queues[1 - side][key]
                        sizes[1 - side] -= 1
                        lengths[side] += 1
                        matched += 1
                        continue
            pools[0].size, pools[1].size = sizes
            self._pushed = lengths[0] + lengths[1]
            self._matched, self._peak = matched, peak
            self._push(side, event)
            sizes = [pools[0].size, pools[1].size]
            matched, peak = self._matched, self._peak
        pools[0].size, pools[1].size = sizes
        self._pushed = lengths[0] + lengths[1]
        self._matched, self._peak = matched, peak

    def _resynchronise(self, key: Hashable) -> None:
        pools = cast("tuple[KeyedPool, KeyedPool]", self._pools)
        settled, matched = resynchronise(pools, key, self._classifier, self._resync_at)
        self._settled.extend(settled)
        self._matched += matched

    def finish(self) -> Verdict:
        """The verdict: equivalent iff no event proved a difference and nothing is left."""
        if self._verdict is not None:
            return self._verdict
        reference, candidate = self._pools[0].entries(), self._pools[1].entries()
        matched = self._matched
        warnings: tuple[str, ...] = ()
        if self._seen is not None:
            settled = settle(self._seen, (reference, candidate), self.dependence, self.equality)
            reference, candidate = settled.left
            matched = self._lengths[0] - len(reference)
            warnings = (settled.warning,) if settled.warning else ()
        equivalent = self._detected_at is None and not reference and not candidate
        divergences = list(self._settled)
        if not equivalent:
            divergences.extend(self._classifier.classify(reference, candidate))
            divergences.sort(key=Divergence.sort_key)
        if self._settled:
            divergences = merge_moves(divergences, self.dependence, self.equality)
        counts: Counter[str] = Counter(d.kind for d in divergences)
        columns = Counter(c for d in divergences if d.kind == "corruption" for c in d.columns)
        self._verdict = Verdict(
            equivalent=equivalent,
            divergences=tuple(divergences[: self.limit]),
            counts=counts,
            reference_count=self._lengths[0],
            candidate_count=self._lengths[1],
            matched_count=matched,
            peak_unmatched=self._peak,
            detected_at=self._detected_at,
            dependence=self.dependence.describe(),
            column_mismatches=columns,
            column_profiles=Profile().add_divergences(divergences).summaries(),
            every_divergence=tuple(divergences),
            side_stats={side: {"rows": n} for side, n in zip(SIDES, self._lengths, strict=True)},
            warnings=warnings,
        )
        return self._verdict


_BAD_KEY = object()  # an event whose key cannot be read: ``_push`` reports it


def _keyed_equal(equality: Equality) -> Callable[[Event, Event], bool] | None:
    """``equality.equal``, fast, for the fast path of ``feed``: for plain equality, and for
    plain equality but for ignored columns (the usual spec: a run's timestamp or sequence
    number ignored), which ``Equality.equal`` decides column by column by the rules. Here
    the common case, the same columns holding values of one flat class each that ``==``
    calls equal, is decided as the plain path decides it (``Equality.equal``); anything
    else goes to the rules. ``None`` for the other equalities."""
    if equality.is_plain:
        return equality.equal
    if not equality.exact_but_ignored:
        return None
    ignore, rules = equality.ignore, equality.equal

    def equal(a: Event, b: Event) -> bool:
        if a.keys() != b.keys():
            return rules(a, b)
        for column, value in a.items():
            if column in ignore:
                continue
            kind = value.__class__
            other = b[column]
            if kind is not other.__class__ or kind not in FLAT_CLASSES or value != other:
                return rules(a, b)
        return True

    return equal


def _interleave(
    reference: Iterable[Event], candidate: Iterable[Event]
) -> Iterator[tuple[int, Event]]:
    """One event from each side in turn, then the rest of the longer side.

    Built of C iterators only (no Python frame per event; this is the matcher's hot path):
    each side's events tagged with its index, paired, flattened, and the ``None`` that
    stands for an exhausted side dropped (a tagged event is a non-empty tuple, never
    false)."""
    pairs = zip_longest(zip(repeat(0), reference), zip(repeat(1), candidate))
    return filter(None, chain.from_iterable(pairs))


def resynchronise(
    pools: tuple[KeyedPool, KeyedPool],
    key: Hashable,
    classifier: Classifier,
    resync_at: dict[Hashable, int],
) -> tuple[list[Divergence], int]:
    """Settle a key that both sides hold after a divergence, once they agree again.

    Without this every later event of a diverged key would stay unmatched, and memory
    would grow with the stream. When the key's queues, aligned, end in a run of
    ``RESYNC_RUN`` matches, everything up to that run is classified now and dropped from
    ``pools``. ``resync_at`` remembers per key the size of the next attempt: attempts
    double, so the work stays linear. Returns the divergences settled and the events
    matched.
    """
    ours, theirs = pools[0].queues.get(key), pools[1].queues.get(key)
    if not ours or not theirs:
        resync_at.pop(key, None)
        return [], 0
    size = len(ours) + len(theirs)
    if size < resync_at.get(key, RESYNC_START):
        return [], 0
    reference, candidate = list(ours), list(theirs)
    ops = align(reference, candidate, classifier.equal_entries, classifier.entry_key)
    cut = _end_of_last_run(ops, RESYNC_RUN)
    if cut is None:
        resync_at[key] = 2 * size
        return [], 0
    ref_end = 1 + max((i for i, _ in ops[: cut + 1] if i is not None), default=-1)
    cand_end = 1 + max((j for _, j in ops[: cut + 1] if j is not None), default=-1)
    settled = classifier.classify(reference[:ref_end], candidate[:cand_end])
    matched = sum(1 for i, j in ops[: cut + 1] if i is not None and j is not None)
    for pool, rest in ((pools[0], reference[ref_end:]), (pools[1], candidate[cand_end:])):
        pool.size -= len(pool.queues[key]) - len(rest)
        if rest:
            pool.queues[key] = deque(rest)
        else:
            del pool.queues[key]
    resync_at[key] = max(RESYNC_START, 2 * (len(reference) + len(candidate) - ref_end - cand_end))
    return settled, matched


def _end_of_last_run(ops: list[Op], run: int) -> int | None:
    """The index of the op that ends the last run of ``run`` consecutive matches."""
    length = 0
    for t in range(len(ops) - 1, -1, -1):
        i, j = ops[t]
        if i is not None and j is not None:
            length += 1
            if length == run:
                return t + run - 1
        else:
            length = 0
    return None


def compare(
    reference_events: Iterable[Event],
    candidate_events: Iterable[Event],
    dependence: Dependence,
    equality: Equality | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
) -> Verdict:
    """Decide whether two streams are equivalent under ``dependence`` and ``equality``.

    Both iterables are consumed once, interleaved fairly, so memory follows the unmatched
    events rather than the stream lengths.
    """
    matcher = StreamMatcher(dependence, equality, limit=limit)
    matcher.feed(reference_events, candidate_events)
    return matcher.finish()


def events(rows: Iterable[Event]) -> Iterator[Event]:
    """Identity helper kept for symmetry with readers: rows already are events."""
    return iter(rows)
