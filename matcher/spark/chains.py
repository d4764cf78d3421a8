"""The core's per-key work on one ``by_key`` chain, done on integers: its events' digests.

For a key of ``by_key`` (no barriers, exact equality), what ``matcher.compare`` does
depends only on that key's events and their interleaving (reference position ``p`` and
candidate position ``q``, taken in turn: ``matcher.online._interleave``):

1. the online loop (``matcher.online``, ``matcher.pools.KeyedPool``): an arriving event
   matches the head of the other side's queue when its own queue is empty and the head is
   equal, else joins its own queue; once a key holds events on both sides, every arrival
   of the key (size ``>= resync_at``, ``RESYNC_START`` at first) tries ``resynchronise``:
   align the queues, and if they end in a run of ``RESYNC_RUN`` matches, classify and drop
   everything up to it (a settled chunk); else double ``resync_at``. In ``compare``'s
   fast path (plain equality, or plain but for ignored columns) an arrival while the
   other side holds nothing joins its queue without a word; on the general path
   (``StreamMatcher._push``, also ``matcher.spark.replay.PoolLoop``) it also forgets the
   key's ``resync_at``: ``fast`` chooses;
2. ``Classifier.classify`` of each settled chunk and of what is left at the end: the
   chain's alignment (``matcher.diff.align``: Hunt-Szymanski with its tie-breaking), then
   moved events (an unmatched reference event takes the first equal unmatched candidate
   event), corruptions (the k-th unmatched events of a gap on each side), losses and
   duplications, each with the position where it would stand (``near``);
3. ``merge_moves`` over the key's divergences when it settled chunks.

Here each event is its 64-bit canonical digest (as screening computes it: equal digests
stand for equal events, ``matcher.spark.screen``), and the same steps run on lists of
integers, aligned by the core's own algorithm (``matcher.diff.align_values``: ``align``'s
script for items that are their own key, without a call per item): the same matches,
gaps, pairings and counts, without one Python object per event. Two things depend on
more than the key: ``near`` under ``MAX_ORDER_CHECK`` (the classification looks for the
next matched pair when it holds at most that many pairs, else for the next event of the
chain; only a witness's position), so both are computed (``Div`` keeps a position pair
per mode), and the lengths of the streams (where an event missing at the end would
stand).

A key whose two sides share no digest has a closed form
(``matcher.spark.chains_run.explain_disjoint``, for many keys at once): nothing
matches online or in any alignment, so no chunk settles, and the classification pairs the
k-th events of its one gap: ``min(n, m)`` corruptions, the rest of the longer side lost or
extra, the first corruption (or the first loss or extra event) its earliest divergence
under both placements. A column bug that alters every row makes every key such a key.

A key whose first ``cut`` pairs agree has them matched online in any interleaving, and
after the first pair that differs nothing matches again until the key resynchronises
(``matcher.spark.screen.without_agreeing_prefix``); so a key with fewer than
``RESYNC_START`` events from its cut on needs no loop at all: all of them are left.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from matcher.classify import MAX_ORDER_CHECK
from matcher.diff import Op, align_values
from matcher.online import RESYNC_RUN, RESYNC_START, _end_of_last_run

LOSS, DUPLICATION, REORDERING, CORRUPTION = "loss", "duplication", "reordering", "corruption"
#: position pairs of a ``Div``: 0 under the exact placement, 1 under the cheap one
EXACT, CHEAP = 0, 1

Ranks = list[int]


@dataclass(frozen=True, slots=True)
class Online:
    """What the online loop did with one key: the chunks it settled (ranks per side, in
    order), what it left, and how many pairs it matched from the cut on."""

    settled: list[tuple[Ranks, Ranks]]
    left: tuple[Ranks, Ranks]
    matched: int


@dataclass(frozen=True, slots=True)
class Div:
    """One divergence of a key: its kind, its (reference, candidate) positions under each
    placement (``EXACT``, ``CHEAP``), the digest of its event (to merge moves) and the
    ranks of its events (``-1``: none), for a corruption's columns."""

    kind: str
    at: tuple[tuple[int, int], tuple[int, int]]
    digest: int
    ref_rank: int = -1
    cand_rank: int = -1

    def sort_key(self, mode: int) -> tuple[int, int]:
        """``Divergence.sort_key`` under placement ``mode``."""
        ref, cand = self.at[mode]
        return min(ref, cand), ref


def _align(a: list[int], b: list[int]) -> list[Op]:
    """The core's ``align`` on digests: equal digests are equal events, and a digest is
    its own canonical form (``align_values``: ``align`` without a call per item)."""
    return align_values(a, b)


def run_online(
    order: Sequence[tuple[int, int]], digests: tuple[Sequence[int], Sequence[int]], fast: bool
) -> Online:
    """The online loop over one key's events, ``order`` their ``(side, rank)`` in the
    core's interleaving (see the module docstring)."""
    queues: list[Ranks] = [[], []]
    heads = [0, 0]
    resync_at = RESYNC_START
    settled: list[tuple[Ranks, Ranks]] = []
    matched = 0
    for side, rank in order:
        own, other = queues[side], queues[1 - side]
        head = heads[1 - side]
        theirs = len(other) - head
        mine = digests[side][rank]
        if theirs and heads[side] == len(own) and digests[1 - side][other[head]] == mine:
            if theirs == 1:
                queues[1 - side], heads[1 - side] = [], 0
            else:
                heads[1 - side] = head + 1
            matched += 1
            continue
        own.append(rank)
        if not theirs:
            if not fast:
                resync_at = RESYNC_START
            continue
        size = len(own) - heads[side] + theirs
        if size < resync_at:
            continue
        ref, cand = queues[0][heads[0] :], queues[1][heads[1] :]
        a = [digests[0][i] for i in ref]
        b = [digests[1][j] for j in cand]
        ops = _align(a, b)
        cut = _end_of_last_run(ops, RESYNC_RUN)
        if cut is None:
            resync_at = 2 * size
            continue
        done = ops[: cut + 1]
        ref_end = 1 + max((i for i, _ in done if i is not None), default=-1)
        cand_end = 1 + max((j for _, j in done if j is not None), default=-1)
        settled.append((ref[:ref_end], cand[:cand_end]))
        matched += sum(1 for i, j in done if i is not None and j is not None)
        queues, heads = [ref[ref_end:], cand[cand_end:]], [0, 0]
        resync_at = max(RESYNC_START, 2 * (len(ref) + len(cand) - ref_end - cand_end))
    return Online(settled, (queues[0][heads[0] :], queues[1][heads[1] :]), matched)


def classify_chain(
    ranks: tuple[Ranks, Ranks],
    digests: tuple[Sequence[int], Sequence[int]],
    positions: tuple[Sequence[int], Sequence[int]],
    lengths: Sequence[int],
) -> tuple[int, list[Div]]:
    """``Classifier.classify`` of one chain's unmatched events (``ranks`` per side): the
    pairs its alignment matched, and its divergences, in no particular order."""
    ref, cand = ranks
    dr, dc = digests
    pr, pc = positions
    a = [dr[i] for i in ref]
    b = [dc[j] for j in cand]
    ops = _align(a, b)
    pairs = sum(1 for i, j in ops if i is not None and j is not None)
    # (index, gap, near exact, near cheap), filled from the end: the next matched pair's
    # other-side position (exact) or the next event of the other side (cheap)
    loose_ref: list[tuple[int, int, int, int]] = []
    loose_cand: list[tuple[int, int, int, int]] = []
    gap = pairs
    next_cand = next_cand_match = lengths[1]
    next_ref = next_ref_match = lengths[0]
    for i, j in reversed(ops):
        if i is not None and j is not None:
            gap -= 1
            next_cand = next_cand_match = pc[cand[j]]
            next_ref = next_ref_match = pr[ref[i]]
        elif i is not None:
            loose_ref.append((i, gap, next_cand_match, next_cand))
            next_ref = pr[ref[i]]
        elif j is not None:
            loose_cand.append((j, gap, next_ref_match, next_ref))
            next_cand = pc[cand[j]]
    loose_ref.reverse()
    loose_cand.reverse()

    found: list[Div] = []
    buckets: dict[int, deque[int]] = {}
    for n, (j, _, _, _) in enumerate(loose_cand):
        buckets.setdefault(b[j], deque()).append(n)
    moved_cand: set[int] = set()
    left_ref = []
    for x in loose_ref:
        bucket = buckets.get(a[x[0]])
        if bucket:
            n = bucket.popleft()
            moved_cand.add(n)
            r, c = pr[ref[x[0]]], pc[cand[loose_cand[n][0]]]
            found.append(Div(REORDERING, ((r, c), (r, c)), a[x[0]]))
        else:
            left_ref.append(x)
    left_cand = [y for n, y in enumerate(loose_cand) if n not in moved_cand]

    by_gap: dict[int, tuple[list[tuple[int, int, int, int]], list[tuple[int, int, int, int]]]]
    by_gap = {}
    for side, loose in ((0, left_ref), (1, left_cand)):
        for x in loose:
            by_gap.setdefault(x[1], ([], []))[side].append(x)
    for refs, cands in by_gap.values():
        for n in range(min(len(refs), len(cands))):
            i, j = refs[n][0], cands[n][0]
            r, c = pr[ref[i]], pc[cand[j]]
            found.append(Div(CORRUPTION, ((r, c), (r, c)), a[i], ref[i], cand[j]))
        for i, _, exact, cheap in refs[len(cands) :]:
            r = pr[ref[i]]
            found.append(Div(LOSS, ((r, exact), (r, cheap)), a[i]))
        for j, _, exact, cheap in cands[len(refs) :]:
            c = pc[cand[j]]
            found.append(Div(DUPLICATION, ((exact, c), (cheap, c)), b[j]))
    return pairs, found


def merge_moves(divs: list[Div], mode: int) -> list[Div]:
    """``matcher.classify.merge_moves`` for one key under placement ``mode``: a loss and a
    duplication of equal events, from chunks classified apart, are one moved event."""
    ordered = sorted(divs, key=lambda d: d.sort_key(mode))
    result: list[Div | None] = list(ordered)
    losses: dict[int, deque[int]] = {}
    for n, d in enumerate(ordered):
        if d.kind == LOSS:
            losses.setdefault(d.digest, deque()).append(n)
    for n, d in enumerate(ordered):
        if d.kind != DUPLICATION:
            continue
        waiting = losses.get(d.digest)
        if waiting:
            index = waiting.popleft()
            result[n] = None
            r, c = ordered[index].at[mode][0], d.at[mode][1]
            result[index] = Div(REORDERING, ((r, c), (r, c)), d.digest)
    return [d for d in result if d is not None]


@dataclass(frozen=True, slots=True)
class KeyOutcome:
    """One key, explained: its divergences under each placement (as lists they differ
    only when chunks were merged), every pair it matched, and the pairs that the final
    classification aligned (which, summed over keys, choose the placement)."""

    divs: tuple[list[Div], list[Div]]
    matched: int
    pairs: int


def explain_key(
    sides: Sequence[int],
    digests: tuple[Sequence[int], Sequence[int]],
    positions: tuple[Sequence[int], Sequence[int]],
    lengths: Sequence[int],
    fast: bool,
) -> KeyOutcome:
    """The core's account of one key, from its events' sides in interleaving order and
    each side's digests and positions by rank (``matched`` counts every matched pair)."""
    dr, dc = digests
    common = min(len(dr), len(dc))
    cut = 0
    while cut < common and dr[cut] == dc[cut]:
        cut += 1
    if len(dr) + len(dc) - 2 * cut < RESYNC_START:
        online = Online([], (list(range(cut, len(dr))), list(range(cut, len(dc)))), 0)
    else:
        counts = [0, 0]
        order = []
        for side in sides:
            rank = counts[side]
            counts[side] = rank + 1
            if rank >= cut:
                order.append((side, rank))
        online = run_online(order, digests, fast)
    divs: list[Div] = []
    for chunk in online.settled:
        pairs, found = classify_chain(chunk, digests, positions, lengths)
        mode = EXACT if pairs <= MAX_ORDER_CHECK else CHEAP
        divs.extend(
            Div(d.kind, (d.at[mode], d.at[mode]), d.digest, d.ref_rank, d.cand_rank) for d in found
        )
    pairs, found = classify_chain(online.left, digests, positions, lengths)
    divs.extend(found)
    matched = cut + online.matched
    if not online.settled:
        return KeyOutcome((divs, divs), matched, pairs)
    return KeyOutcome((merge_moves(divs, EXACT), merge_moves(divs, CHEAP)), matched, pairs)
