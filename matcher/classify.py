"""Explaining a divergence: turn the events left unmatched into witnessed divergences.

The online matcher decides *whether* the streams are equivalent, at the earliest event that
proves they are not. Saying *what* went wrong needs to look further ahead, so it is done
once, over the events that stayed unmatched (matched events form consistent prefixes).

1. Barriers (events dependent with everything) are aligned first; the barriers matched on
   both sides cut the streams into *units*, so a lost barrier merges two units instead of
   shifting every later event.
2. Within a unit, events are grouped by *chain* (the form's mutually ordered sets, e.g. one
   key). A chain's two sides are aligned with Myers' diff under the equality; unordered
   events are paired as multisets.
3. If chains can depend on each other, matched pairs whose dependent order differs are
   reorderings (the events in most inversions are taken out first).
4. An unmatched reference event equal to an unmatched candidate event has moved: a
   reordering. An unmatched pair at the *same place* (below) is a corruption. What
   remains is loss (reference) or duplication (candidate).

The same place. A corruption says "the event that belongs here was replaced by this one";
anything else that differs is an event missing from one stream and an event extra in the
other. Where an event belongs is what the dependence relation orders it against
(DESIGN.md, core semantics: two streams are equivalent up to swapping adjacent
*independent* events, so an event's place is fixed only relative to the events it
depends on; DiffStream, sections 3 and 4.1, reads a stream as the partial order its
dependence relation induces, so an event has no place but its order against dependent
events; and Wallaroo's sequence detector reads ``1, 3, 4, 5`` as a loss, a gap, not as
2 corrupted). So, for one unmatched reference event ``x`` and one unmatched
candidate event ``y``, in the group (unit between matched barriers, chain) each lies in:

* a *chain* (a key of ``by_key``, a typed key, ``ordered``'s one chain, the barriers):
  the same place is the same gap between matched events of that chain, and the same
  offset in it: ``x`` is the k-th unmatched reference event of the gap (after step 4's
  moved events are taken out), ``y`` the k-th unmatched candidate event. This is a
  substitution of the chain's edit script. ``[1,2,3,4]`` against ``[1,3,4,5]`` under
  ``ordered`` is a loss of 2 (between 1 and 3) and an extra 5 (after 4), not 2 becoming 5;
  ``[1,2,3]`` against ``[1,9,3]`` is one corruption.
* no chain (``unordered``, a type without a self edge, the events of a punctuation or
  predicate form): nothing orders these events among themselves, so position says nothing
  about which replaced which, and the same place is the same unit. Each unmatched
  reference event, in stream order, pairs with the earliest free candidate event of its
  unit that is similar (at most half the compared columns differ). Only when the unit
  has at most ``MAX_SIMILARITY_PAIRS`` losses x duplications: beyond, none pair, so that
  the cost stays linear and an engine that explains a unit in parts knows, from the
  counts alone, whether any pairing applies.

Either way, ``x`` and ``y`` must agree on every column the dependence reads
(``Dependence.columns``): a pair that differs in a key column is an event that left its
key's chain, a loss on the old key and an extra event on the new one (datacompy's
"unique rows" on each side), never a corruption of the key. A corruption never crosses
groups, so classifying each group alone (the Spark engine, at scale) finds the same kinds,
save two cases: equal events in two units (moved across a barrier: a reordering here) and
a chainless unit explained in parts, which must be told whether its whole is within
``MAX_SIMILARITY_PAIRS`` (``matcher.spark.per_partition`` does).

This is exact for any single lost, duplicated, moved or altered event, and a readable
account otherwise.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from matcher.dependence import Dependence
from matcher.diff import align, entry_key
from matcher.equality import Equality
from matcher.pools import Entry
from matcher.verdict import Divergence, Kind

Group = tuple[int, Hashable]  # (unit between matched barriers, chain); chain None: unordered

MAX_ORDER_CHECK = 2_000
#: losses x duplications of one unordered group (no chain) compared for similarity: beyond
#: it, none are paired, so classification stays linear when thousands of events are lost
#: and duplicated (and an engine explaining part of the group can tell, from the counts)
MAX_SIMILARITY_PAIRS = 40_000
MAX_BARRIER_TRIALS = 32

BARRIER_GROUP: tuple[int, Hashable] = (-1, ("barrier",))


@dataclass(slots=True, eq=False)
class _Loose:
    """An unmatched event awaiting classification."""

    entry: Entry
    gap: tuple[Group, int]  # its group, and which gap between matches in that group
    near: int | None  # the other stream's position where it would stand


@dataclass(slots=True)
class _Pairing:
    """What pairing has found so far: matched pairs, and each side's unmatched events."""

    pairs: list[tuple[Entry, Entry, Group | None]]
    loose_ref: list[_Loose] = field(default_factory=list)
    loose_cand: list[_Loose] = field(default_factory=list)


class Classifier:
    """Explains the unmatched events of one finished comparison (see the module doc)."""

    def __init__(
        self,
        dependence: Dependence,
        equality: Equality,
        lengths: Sequence[int],
        similarity_pairs: int = MAX_SIMILARITY_PAIRS,
    ) -> None:
        self.dependence = dependence
        self.equality = equality
        self.lengths = lengths  # the streams' lengths so far (a live view while matching)
        self.similarity_pairs = similarity_pairs  # see MAX_SIMILARITY_PAIRS
        self.entry_key = entry_key(equality)  # the alignment's candidate pairs (matcher.diff)

    def equal_entries(self, x: Entry, y: Entry) -> bool:
        return self.equality.equal(x.event, y.event)

    def classify(self, reference: list[Entry], candidate: list[Entry]) -> list[Divergence]:
        dep = self.dependence
        if not dep.has_barriers:
            return self._explain(([], []), (reference, candidate), [])
        barriers: tuple[list[Entry], list[Entry]] = ([], [])
        events: tuple[list[Entry], list[Entry]] = ([], [])
        for side, entries in enumerate((reference, candidate)):
            for e in entries:
                (barriers if dep.is_barrier(e.event) else events)[side].append(e)
        # Equally long alignments of the barriers can explain the events differently, and a
        # moved barrier makes every event it crossed look reordered: try the alignments
        # found from either end, each less one matched barrier at a time, and keep the
        # explanation with the fewest divergences.
        best: list[Divergence] | None = None
        for kept in (self._matched_barriers(barriers), self._matched_barriers(barriers, True)):
            trials = [kept]
            if len(kept) <= MAX_BARRIER_TRIALS:
                trials += [[p for p in kept if p is not pair] for pair in kept]
            for trial_kept in trials:
                trial = self._explain(barriers, events, trial_kept)
                if best is None or len(trial) < len(best):
                    best = trial
        assert best is not None
        return best

    def _matched_barriers(
        self, barriers: tuple[list[Entry], list[Entry]], from_end: bool = False
    ) -> list[tuple[Entry, Entry]]:
        ref, cand = barriers
        if from_end:
            ref, cand = ref[::-1], cand[::-1]
        ops = align(ref, cand, self.equal_entries, self.entry_key)
        kept = [(ref[i], cand[j]) for i, j in ops if i is not None and j is not None]
        return kept[::-1] if from_end else kept

    def _explain(
        self,
        barriers: tuple[list[Entry], list[Entry]],
        events: tuple[list[Entry], list[Entry]],
        matched_barriers: list[tuple[Entry, Entry]],
    ) -> list[Divergence]:
        """Classify with ``matched_barriers`` cutting the streams into units."""
        dep = self.dependence
        paired = _Pairing([(r, c, BARRIER_GROUP) for r, c in matched_barriers])
        units = ([r.pos for r, _ in matched_barriers], [c.pos for _, c in matched_barriers])
        matched = {id(e) for pair in matched_barriers for e in pair}
        for side, loose in ((0, paired.loose_ref), (1, paired.loose_cand)):
            for e in barriers[side]:
                if id(e) not in matched:
                    gap = bisect.bisect(units[side], e.pos)
                    loose.append(_Loose(e, (BARRIER_GROUP, gap), None))

        groups: dict[Group, tuple[list[Entry], list[Entry]]] = {}
        for side in (0, 1):
            for e in events[side]:
                group = (bisect.bisect(units[side], e.pos), dep.chain(e.event))
                groups.setdefault(group, ([], []))[side].append(e)
        for group, (ref, cand) in groups.items():
            if group[1] is None:
                self._pair_multiset(group, ref, cand, paired)
            else:
                self._align_chain(group, ref, cand, paired)
        pairs, loose_ref, loose_cand = paired.pairs, paired.loose_ref, paired.loose_cand
        self._place(loose_ref, loose_cand, pairs, units)

        found: list[Divergence] = []
        if not dep.chains_independent:
            found.extend(self._order_violations(pairs))
        found.extend(self._moved(loose_ref, loose_cand, pairs))
        found.extend(self._corruptions(loose_ref, loose_cand))
        found.extend(self._single("loss", x) for x in loose_ref)
        found.extend(self._single("duplication", y) for y in loose_cand)
        found.sort(key=Divergence.sort_key)
        return found

    def _place(
        self,
        loose_ref: list[_Loose],
        loose_cand: list[_Loose],
        pairs: list[tuple[Entry, Entry, Group | None]],
        units: tuple[list[int], list[int]],
    ) -> None:
        """Say where each unmatched event would stand in the other stream.

        Before the first matched event that follows it and depends on it (matched events that
        precede it all came first, since matching keeps prefixes), else at the other
        stream's end: putting a single lost event back there restores equivalence. Past
        ``MAX_ORDER_CHECK`` pairs, a cheaper bound: before its chain's next matched event
        and the barrier closing its unit.
        """
        depends = self.dependence.depends
        exact = len(pairs) <= MAX_ORDER_CHECK
        for side, loose in ((0, loose_ref), (1, loose_cand)):
            other = 1 - side
            ends = sorted(((r, c) for r, c, _ in pairs), key=lambda pair: pair[side].pos)
            positions = [pair[side].pos for pair in ends]
            for x in loose:
                if exact:
                    start = bisect.bisect(positions, x.entry.pos)
                    x.near = min(
                        (
                            pair[other].pos
                            for pair in ends[start:]
                            if depends(x.entry.event, pair[side].event)
                        ),
                        default=self.lengths[other],
                    )
                    continue
                unit = bisect.bisect(units[side], x.entry.pos)
                closing = units[other][unit] if unit < len(units[other]) else self.lengths[other]
                x.near = min(self.lengths[other] if x.near is None else x.near, closing)

    # -- step 2: pairing within chains -------------------------------------------------

    def _align_chain(
        self,
        group: Group,
        ref: list[Entry],
        cand: list[Entry],
        found: _Pairing,
    ) -> None:
        gap = 0
        ops = align(ref, cand, self.equal_entries, self.entry_key)
        next_cand = _next_positions([j for _, j in ops], cand, self.lengths[1])
        next_ref = _next_positions([i for i, _ in ops], ref, self.lengths[0])
        for index, (i, j) in enumerate(ops):
            if i is not None and j is not None:
                found.pairs.append((ref[i], cand[j], group))
                gap += 1
            elif i is not None:
                found.loose_ref.append(_Loose(ref[i], (group, gap), next_cand[index]))
            elif j is not None:
                found.loose_cand.append(_Loose(cand[j], (group, gap), next_ref[index]))

    def _pair_multiset(
        self,
        group: Group,
        ref: list[Entry],
        cand: list[Entry],
        found: _Pairing,
    ) -> None:
        buckets: dict[Hashable, list[Entry]] = {}
        for y in cand:
            buckets.setdefault(self.equality.canonical(y.event), []).append(y)
        for x in ref:
            bucket = buckets.get(self.equality.canonical(x.event), [])
            for i, y in enumerate(bucket):
                if self.equality.equal(x.event, y.event):
                    found.pairs.append((x, bucket.pop(i), None))
                    break
            else:
                found.loose_ref.append(_Loose(x, (group, 0), None))
        leftover = sorted((y for bucket in buckets.values() for y in bucket), key=lambda e: e.pos)
        found.loose_cand.extend(_Loose(y, (group, 0), None) for y in leftover)

    # -- step 3: dependent pairs in the opposite order ---------------------------------

    def _order_violations(self, pairs: list[tuple[Entry, Entry, Group | None]]) -> list[Divergence]:
        if len(pairs) > MAX_ORDER_CHECK:
            return []
        depends = self.dependence.depends
        ordered = sorted(pairs, key=lambda p: p[0].pos)
        inversions: dict[int, set[int]] = {}
        for i, (ri, ci, gi) in enumerate(ordered):
            for j in range(i + 1, len(ordered)):
                rj, cj, gj = ordered[j]
                if ci.pos > cj.pos and (gi is None or gi != gj) and depends(ri.event, rj.event):
                    inversions.setdefault(i, set()).add(j)
                    inversions.setdefault(j, set()).add(i)
        found = []
        while inversions:
            worst = max(inversions, key=lambda i: (len(inversions[i]), -i))
            partners = inversions.pop(worst)
            for other in partners:
                inversions[other].discard(worst)
                if not inversions[other]:
                    del inversions[other]
            ref, cand, _ = ordered[worst]
            partner_ref, partner_cand, _ = ordered[min(partners)]
            found.append(
                Divergence(
                    "reordering",
                    self.dependence.key(ref.event),
                    ref.pos,
                    cand.pos,
                    ref.event,
                    cand.event,
                    partner_reference_position=partner_ref.pos,
                    partner_candidate_position=partner_cand.pos,
                )
            )
        return found

    # -- step 4: moved, corrupted, lost and extra events -------------------------------

    def _moved(
        self,
        loose_ref: list[_Loose],
        loose_cand: list[_Loose],
        pairs: list[tuple[Entry, Entry, Group | None]],
    ) -> list[Divergence]:
        found = []
        buckets: dict[Hashable, list[_Loose]] = {}
        for y in loose_cand:
            buckets.setdefault(self.equality.canonical(y.entry.event), []).append(y)
        taken: set[int] = set()
        for x in loose_ref:
            bucket = buckets.get(self.equality.canonical(x.entry.event), [])
            for i, y in enumerate(bucket):
                if self.equality.equal(x.entry.event, y.entry.event):
                    del bucket[i]
                    taken.update((id(x), id(y)))
                    partner = self._crossed(x.entry, y.entry, pairs)
                    found.append(
                        Divergence(
                            "reordering",
                            self.dependence.key(x.entry.event),
                            x.entry.pos,
                            y.entry.pos,
                            x.entry.event,
                            y.entry.event,
                            partner_reference_position=partner and partner[0].pos,
                            partner_candidate_position=partner and partner[1].pos,
                        )
                    )
                    break
        _drop(loose_ref, taken)
        _drop(loose_cand, taken)
        return found

    def _crossed(
        self, x: Entry, y: Entry, pairs: list[tuple[Entry, Entry, Group | None]]
    ) -> tuple[Entry, Entry] | None:
        """The matched dependent event nearest to ``x`` that ``x`` moved across, if any."""
        if len(pairs) > MAX_ORDER_CHECK:
            return None
        depends = self.dependence.depends
        best: tuple[Entry, Entry] | None = None
        for r, c, _ in pairs:
            crossed = (r.pos < x.pos) != (c.pos < y.pos)
            nearer = best is None or abs(r.pos - x.pos) < abs(best[0].pos - x.pos)
            if crossed and nearer and depends(x.event, r.event):
                best = (r, c)
        return best

    def _corruptions(self, loose_ref: list[_Loose], loose_cand: list[_Loose]) -> list[Divergence]:
        """Pair the unmatched events that stand at the same place (see the module doc)."""
        found = []
        taken: set[int] = set()
        by_gap: dict[tuple[Group, int], tuple[list[_Loose], list[_Loose]]] = {}
        for side, loose in ((0, loose_ref), (1, loose_cand)):
            for x in loose:
                by_gap.setdefault(x.gap, ([], []))[side].append(x)
        for gap, (refs, cands) in by_gap.items():
            if gap[0][1] is not None:
                # A chain: the k-th unmatched event of a gap on each side, a substitution.
                pairs = [(x, y) for x, y in zip(refs, cands, strict=False) if self._alike(x, y)]
            elif len(refs) * len(cands) <= self.similarity_pairs:
                pairs = self._similar_pairs(refs, cands)
            else:
                continue
            for x, y in pairs:
                taken.update((id(x), id(y)))
                found.append(self._corruption(x, y))
        _drop(loose_ref, taken)
        _drop(loose_cand, taken)
        return found

    def _similar_pairs(
        self, refs: list[_Loose], cands: list[_Loose]
    ) -> list[tuple[_Loose, _Loose]]:
        """Without a chain, position means nothing: each unmatched reference event, in
        stream order, pairs with the earliest free candidate event similar to it."""
        pairs = []
        free = list(cands)
        for x in refs:
            for i, y in enumerate(free):
                if self._similar(x, y) and self._alike(x, y):
                    pairs.append((x, free.pop(i)))
                    break
        return pairs

    def _alike(self, x: _Loose, y: _Loose) -> bool:
        """Whether the two events agree on every column the dependence reads: one that
        differs there (a key) put the event in another place, which no pairing undoes."""
        columns = self.dependence.columns
        if not columns:
            return True
        a, b = x.entry.event, y.entry.event
        return not self.equality.differing_columns(
            {c: a.get(c) for c in columns}, {c: b.get(c) for c in columns}
        )

    def _similar(self, x: _Loose, y: _Loose) -> bool:
        a, b = x.entry.event, y.entry.event
        compared = len((a.keys() | b.keys()) - self.equality.ignore)
        return self.equality.differs_in_at_most(a, b, max(1, compared // 2))

    def _corruption(self, x: _Loose, y: _Loose) -> Divergence:
        a, b = x.entry.event, y.entry.event
        return Divergence(
            "corruption",
            self.dependence.key(a),
            x.entry.pos,
            y.entry.pos,
            a,
            b,
            columns=self.equality.differing_columns(a, b),
        )

    def _single(self, kind: Kind, loose: _Loose) -> Divergence:
        event = loose.entry.event
        if kind == "loss":
            return Divergence(
                kind, self.dependence.key(event), loose.entry.pos, loose.near, event, None
            )
        return Divergence(
            kind, self.dependence.key(event), loose.near, loose.entry.pos, None, event
        )


def merge_moves(
    divergences: list[Divergence], dependence: Dependence, equality: Equality
) -> list[Divergence]:
    """A loss and a duplication of equal events in one chain are one moved event.

    Classification within one stretch of a stream pairs them itself; this joins the
    stretches that the online matcher settled separately after it resynchronised.
    """
    result: list[Divergence | None] = list(divergences)
    losses: dict[tuple[Hashable, Hashable], list[int]] = {}
    for i, d in enumerate(divergences):
        if d.kind == "loss" and d.reference_event is not None:
            event = d.reference_event
            losses.setdefault((dependence.chain(event), equality.canonical(event)), []).append(i)
    for i, d in enumerate(divergences):
        if d.kind != "duplication" or d.candidate_event is None:
            continue
        event = d.candidate_event
        waiting = losses.get((dependence.chain(event), equality.canonical(event)), [])
        for n, index in enumerate(waiting):
            loss = divergences[index]
            if loss.reference_event is not None and equality.equal(loss.reference_event, event):
                del waiting[n]
                result[i] = None
                result[index] = Divergence(
                    "reordering",
                    loss.key,
                    loss.reference_position,
                    d.candidate_position,
                    loss.reference_event,
                    event,
                )
                break
    return sorted((d for d in result if d is not None), key=Divergence.sort_key)


def _next_positions(indexes: list[int | None], entries: list[Entry], length: int) -> list[int]:
    """For each op, the stream position of the next event at or after it on that side."""
    result = [length] * len(indexes)
    upcoming = length
    for t in range(len(indexes) - 1, -1, -1):
        i = indexes[t]
        if i is not None:
            upcoming = entries[i].pos
        result[t] = upcoming
    return result


def _drop(loose: list[_Loose], taken: set[int]) -> None:
    """Remove the events in ``taken`` (by identity) from ``loose``, keeping its order: one
    pass, where removing them one by one would cost a pass each."""
    if taken:
        loose[:] = [x for x in loose if id(x) not in taken]
