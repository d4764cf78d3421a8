"""Disagreeing ``by_key`` chains explained where the data is: a ``mapInArrow`` over digests.

Screening (``matcher.spark.screen``) leaves the groups (keys) whose two sides disagree.
Their events go through one shuffle by group, sorted by (group, position, side): the
core's interleaving within each key, each event with small values beside its columns
(the group's two 64-bit hashes, side, stream position, canonical digest, NaN flag, one
digest per compared column). ``chain_counter`` reads a partition's small values as numpy
arrays (in batches of ``matcher.spark.session.BATCH_ROWS`` rows), splits it into keys, and
gives each key to ``matcher.spark.chains.explain_key`` (the core's online loop,
resynchronisation, classification and merging of moves, on integers), except the keys
whose two sides share no digest (``_disjoint`` finds them): their closed form
(``explain_disjoint``) is taken for all of them at once with numpy, as a column bug in
every row makes every key such a key. The events themselves are turned into Python values
only for the few keys kept for witnesses. A partition sends back a few rows, whatever the
number of faults:

* the counts by kind, and by column for corruptions (the pairs' column digests compared
  in one vectorised step per batch), and the pairs matched;
* per placement (``chains.EXACT``/``CHEAP``: which one the core's classification used
  depends on all keys together), the ``limit`` keys whose earliest divergence comes
  first, with their events: a key holding one of the earliest ``limit`` divergences is
  among the ``limit`` keys whose earliest divergence comes first;
* the keys holding a NaN that equals nothing (digests cannot say what it matches): the
  core's loop takes those (``matcher.spark.per_partition``).

The witnesses are the core's own: on the driver, ``explain_chosen`` runs the same online
loop over the chosen keys' events, classifies the settled chunks and the leftovers with
the core's ``Classifier`` on the real events, then ``merge_moves``, as
``StreamMatcher.finish`` does. Those keys are classified together, so a witness's
placement and reordering partner follow those keys' matched pairs, not all keys' (the
core's ``MAX_ORDER_CHECK``), as ``matcher.spark.result`` already says of the
partition-by-partition path. Counts never depend on it.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa

from matcher.classify import Classifier, merge_moves
from matcher.dependence import Dependence
from matcher.equality import Equality, Event
from matcher.pools import Entry
from matcher.profile import Profile
from matcher.spark.chains import (
    CORRUPTION,
    DUPLICATION,
    LOSS,
    explain_key,
    run_online,
)
from matcher.spark.digests import DIGEST, GH, GH2, NAN, column_digest
from matcher.spark.events import arrow_events, arrow_values, dumps, loads
from matcher.spark.profile_arrays import add_number_arrays, add_pairs, plain_numbers
from matcher.verdict import Divergence

#: the columns ``chain_counter`` reads besides ``matcher.spark.digests``'
SIDE, POS = "__p_side", "__pos"
TALLY_SCHEMA = "tag string, n long, a long, b long, gh long, gh2 long, blob binary"
_TALLY = pa.schema(
    [
        ("tag", pa.string()),
        ("n", pa.int64()),
        ("a", pa.int64()),
        ("b", pa.int64()),
        ("gh", pa.int64()),
        ("gh2", pa.int64()),
        ("blob", pa.binary()),
    ]
)
Group = tuple[int, int]
#: corrupted pairs as arrays: (key in its part, reference rank, candidate rank)
_Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]
#: an event for the driver: its position, side, digest and the event
Tagged = tuple[int, int, int, Event]
_SMALL = (GH, GH2, SIDE, POS, DIGEST, NAN)
#: an odd 64-bit constant (the golden ratio's), to mix a key's index into a digest
_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(slots=True)
class _Part:
    """Rows of one partition, whole keys but perhaps the last: the small values as numpy
    arrays, the rows themselves (for the events of the keys kept for witnesses)."""

    small: tuple[np.ndarray, ...]  # ``_SMALL``, in that order
    columns: np.ndarray  # (rows, compared columns) of column digests
    rows: pa.Table

    @classmethod
    def of(cls, batch: pa.RecordBatch, width: int) -> _Part:
        """``batch``'s rows, with ``width`` column digests (``digests.column_digest``)."""
        small = tuple(batch.column(n).to_numpy(zero_copy_only=False) for n in _SMALL)
        digests = [
            batch.column(column_digest(i)).to_numpy(zero_copy_only=False) for i in range(width)
        ]
        columns = np.column_stack(digests) if digests else np.empty((len(batch), 0), np.int64)
        return cls(small, columns, pa.Table.from_batches([batch]))

    def __len__(self) -> int:
        return len(self.small[0])

    def cut(self, start: int, end: int) -> _Part:
        small = tuple(a[start:end] for a in self.small)
        return _Part(small, self.columns[start:end], self.rows.slice(start, end - start))

    def then(self, other: _Part) -> _Part:
        small = tuple(np.concatenate([a, b]) for a, b in zip(self.small, other.small, strict=True))
        columns = np.concatenate([self.columns, other.columns])
        return _Part(small, columns, pa.concat_tables([self.rows, other.rows]))

    def starts(self) -> np.ndarray:
        """Where each key begins, and the length at the end."""
        gh, gh2 = self.small[0], self.small[1]
        change = (gh[1:] != gh[:-1]) | (gh2[1:] != gh2[:-1])
        return np.concatenate([[0], np.flatnonzero(change) + 1, [len(self)]])


@dataclass(frozen=True, slots=True)
class _Index:
    """Where each key of a ``_Part`` begins (``starts``, and its length at the end), its
    rows on each side, and where each key begins among them."""

    starts: np.ndarray
    ref_rows: np.ndarray
    cand_rows: np.ndarray
    ref_at: np.ndarray
    cand_at: np.ndarray

    @classmethod
    def of(cls, part: _Part) -> _Index:
        starts, sides = part.starts(), part.small[2]
        ref_rows, cand_rows = np.flatnonzero(sides == 0), np.flatnonzero(sides == 1)
        return cls(
            starts,
            ref_rows,
            cand_rows,
            np.searchsorted(ref_rows, starts),
            np.searchsorted(cand_rows, starts),
        )

    def group(self, part: _Part, key: int) -> Group:
        """The hashes of key ``key``."""
        row = int(self.starts[key])
        return int(part.small[0][row]), int(part.small[1][row])


@dataclass(slots=True)
class _Firsts:
    """The ``limit`` keys whose earliest divergence comes first under one placement, as a
    heap (the latest on top), with each key's events while any heap holds it."""

    limit: int
    heap: list[tuple[int, int, int, int]] = field(default_factory=list)

    def offer(self, first: tuple[int, int], group: Group) -> tuple[bool, Group | None]:
        """Whether ``group`` is kept, and the group it pushed out, if any."""
        entry = (-first[0], -first[1], *group)
        if not self.limit:
            return False, None
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, entry)
            return True, None
        if entry <= self.heap[0]:
            return False, None
        out = heapq.heapreplace(self.heap, entry)
        return True, (out[2], out[3])

    def entries(self) -> Iterator[tuple[int, int, int, int]]:
        return ((-a, -b, gh, gh2) for a, b, gh, gh2 in self.heap)


@dataclass(slots=True)
class _Tally:
    """What a partition sends back (see the module docstring)."""

    lengths: Sequence[int]
    fast: bool
    names: list[str]
    limit: int
    compared: list[str] = field(default_factory=list)  # the column digests' columns
    kinds: Counter[str] = field(default_factory=Counter)
    profile: Profile = field(default_factory=Profile)
    columns: np.ndarray | None = None
    matched: int = 0
    firsts: tuple[_Firsts, _Firsts] = (_Firsts(0), _Firsts(0))
    events: dict[Group, tuple[int, list[Tagged]]] = field(default_factory=dict)
    nan: list[Group] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.firsts = (_Firsts(self.limit), _Firsts(self.limit))

    def add(self, part: _Part) -> None:
        """Explain every key of ``part``: the keys whose sides share no digest all at once
        (``_closed``), the others one by one (``_loop``)."""
        at = _Index.of(part)
        nan = np.logical_or.reduceat(part.small[5].astype(bool), at.starts[:-1])
        disjoint = _disjoint(at.starts, part.small[2], part.small[4]) & ~nan
        for g in np.flatnonzero(nan).tolist():
            self.nan.append(at.group(part, g))
        # corrupted pairs, (key, reference rank, candidate rank): in key order below
        corrupted = [self._closed(part, at, np.flatnonzero(disjoint))]
        looped = np.flatnonzero(~disjoint & ~nan).tolist()
        if looped:
            corrupted.append(self._loop(part, at, looped))
        keys, refs, cands = (np.concatenate(c) for c in zip(*corrupted, strict=True))
        if not len(keys):
            return
        order = np.argsort(keys, kind="stable")
        ref_pairs, cand_pairs = at.ref_rows[refs[order]], at.cand_rows[cands[order]]
        differs = part.columns[ref_pairs] != part.columns[cand_pairs]
        differ = differs.sum(axis=0)
        self.columns = differ if self.columns is None else self.columns + differ
        self._profile(part.rows, ref_pairs, cand_pairs, differs)

    def _closed(self, part: _Part, at: _Index, keys: np.ndarray) -> _Pairs:
        """``explain_disjoint`` of the keys ``keys``: their counts, their
        corrupted pairs (the k-th events of each side) and the offers that may be kept."""
        r0, c0 = at.ref_at[keys], at.cand_at[keys]
        n, m = at.ref_at[keys + 1] - r0, at.cand_at[keys + 1] - c0
        positions = part.small[3]
        last_ref, last_cand = max(len(at.ref_rows) - 1, 0), max(len(at.cand_rows) - 1, 0)
        # a side's first position, where it holds any (``explain_disjoint`` reads no other)
        ref = positions[at.ref_rows[np.minimum(r0, last_ref)]] if len(at.ref_rows) else r0
        cand = positions[at.cand_rows[np.minimum(c0, last_cand)]] if len(at.cand_rows) else c0
        closed = explain_disjoint(n, m, ref, cand, self.lengths)
        pairs = closed.corruptions
        for kind, count in (
            (CORRUPTION, pairs), (LOSS, closed.losses), (DUPLICATION, closed.duplications),
        ):  # fmt: skip
            total = int(count.sum())
            if total:
                self.kinds[kind] += total
        first, second = closed.first, closed.second
        for g in _best(first, second, self.limit).tolist():
            key, sort_key = int(keys[g]), (int(first[g]), int(second[g]))
            group = at.group(part, key)
            for mode in (0, 1):
                self._offer(mode, sort_key, part, at, key, group)
        step = np.arange(int(pairs.sum())) - np.repeat(np.cumsum(pairs) - pairs, pairs)
        return np.repeat(keys, pairs), np.repeat(r0, pairs) + step, np.repeat(c0, pairs) + step

    def _loop(self, part: _Part, at: _Index, keys: list[int]) -> _Pairs:
        """``chains.explain_key`` of each key of ``keys``, one by one: counts, offers and
        corrupted pairs."""
        gh_array, gh2_array, side_array, pos_array, digest_array, _ = part.small
        sides, gh, gh2 = side_array.tolist(), gh_array.tolist(), gh2_array.tolist()
        dr, pr = digest_array[at.ref_rows].tolist(), pos_array[at.ref_rows].tolist()
        dc, pc = digest_array[at.cand_rows].tolist(), pos_array[at.cand_rows].tolist()
        bounds, refs, cands = at.starts.tolist(), at.ref_at.tolist(), at.cand_at.tolist()
        out: tuple[list[int], list[int], list[int]] = ([], [], [])
        for g in keys:
            r0, r1, c0, c1 = refs[g], refs[g + 1], cands[g], cands[g + 1]
            outcome = explain_key(
                sides[bounds[g] : bounds[g + 1]], (dr[r0:r1], dc[c0:c1]), (pr[r0:r1], pc[c0:c1]),
                self.lengths, self.fast,
            )  # fmt: skip
            self.matched += outcome.matched
            for d in outcome.divs[0]:
                self.kinds[d.kind] += 1
                if d.kind == CORRUPTION:
                    out[0].append(g)
                    out[1].append(r0 + d.ref_rank)
                    out[2].append(c0 + d.cand_rank)
            group = (gh[bounds[g]], gh2[bounds[g]])
            for mode in (0, 1):
                if outcome.divs[mode]:
                    first = min(d.sort_key(mode) for d in outcome.divs[mode])
                    self._offer(mode, first, part, at, g, group)
        key, ref, cand = (np.array(c, dtype=np.int64) for c in out)
        return key, ref, cand

    def _profile(
        self, rows: pa.Table, ref_pairs: np.ndarray, cand_pairs: np.ndarray, differs: np.ndarray
    ) -> None:
        """Add the corrupted pairs (rows ``ref_pairs[i]`` and ``cand_pairs[i]`` of ``rows``)
        to the profile, column ``j`` for the pairs where ``differs[i, j]``, as the core's
        ``Profile.add`` would. Only the columns that differ somewhere, and the times, are
        taken."""
        changed = np.flatnonzero(differs.any(axis=0)).tolist()
        names = [self.compared[j] for j in changed]
        times_of = [n for n in self.names if _is_time(rows.schema.field(n).type)]
        reference = rows.select(list(dict.fromkeys([*names, *times_of]))).take(ref_pairs)
        candidate = rows.select(names).take(cand_pairs)
        times = _times(reference, times_of)
        for j in changed:
            pairs = np.flatnonzero(differs[:, j])
            name = self.compared[j]
            column = self.profile.column(name)
            old, new = reference.column(name).take(pairs), candidate.column(name).take(pairs)
            if times is None:
                moments = None
            elif isinstance(times, list):
                moments = [times[i] for i in pairs.tolist()]
            else:
                moments = times.take(pairs)
            if plain_numbers(old) and plain_numbers(new):
                add_number_arrays(column, old, new, moments)
            else:
                olds = arrow_values(pa.table({name: old}), name)
                news = arrow_values(pa.table({name: new}), name)
                add_pairs(column, olds, news, moments)

    def _offer(
        self, mode: int, first: tuple[int, int], part: _Part, at: _Index, key: int, group: Group
    ) -> None:
        """Keep the events of ``part``'s key ``key`` (its hashes: ``group``) while one of the
        heaps holds it."""
        kept, out = self.firsts[mode].offer(first, group)
        if out is not None:
            holders, events = self.events[out]
            if holders == 1:
                del self.events[out]
            else:
                self.events[out] = (holders - 1, events)
        if not kept:
            return
        if group in self.events:
            holders, events = self.events[group]
            self.events[group] = (holders + 1, events)
            return
        start, end = int(at.starts[key]), int(at.starts[key + 1])
        rows = part.rows.slice(start, end - start)
        tags = zip(*(rows.column(n).to_pylist() for n in (POS, SIDE, DIGEST)), strict=True)
        events = [
            (p, s, h, e) for (p, s, h), e in zip(tags, arrow_events(rows, self.names), strict=True)
        ]
        self.events[group] = (1, events)

    def rows(self) -> pa.RecordBatch:
        out: list[dict[str, Any]] = [{"tag": "matched", "n": self.matched}]
        out.extend({"tag": kind, "n": n} for kind, n in self.kinds.items())
        if self.columns is not None:
            out.extend(
                {"tag": "column", "n": int(n), "a": i} for i, n in enumerate(self.columns) if n
            )
        for mode in (0, 1):
            for pos, ref, gh, gh2 in self.firsts[mode].entries():
                out.append({"tag": f"first{mode}", "a": pos, "b": ref, "gh": gh, "gh2": gh2})
        for (gh, gh2), (_, events) in self.events.items():
            out.extend({"tag": "event", "gh": gh, "gh2": gh2, "blob": dumps(t)} for t in events)
        out.extend({"tag": "nan", "gh": gh, "gh2": gh2} for gh, gh2 in self.nan)
        if self.profile.columns:
            out.append({"tag": "profile", "blob": self.profile.to_partial().encode()})
        return pa.RecordBatch.from_pylist(out, schema=_TALLY)


def _disjoint(starts: np.ndarray, sides: np.ndarray, digests: np.ndarray) -> np.ndarray:
    """For each key (rows ``starts[g]`` to ``starts[g + 1]``), whether its two sides share
    no digest. Each row's (key, digest) is mixed into one 64-bit number, and a key shares
    a digest when one of its reference rows' numbers is among the candidate rows': equal
    pairs mix equally, so a shared digest is never missed; two pairs that mix alike by
    chance only send a key to ``explain_key``, which explains any key."""
    keys = len(starts) - 1
    key = np.repeat(np.arange(keys, dtype=np.uint64), np.diff(starts))
    mixed = digests.astype(np.uint64) + key * _MIX
    ref = sides == 0
    hit = pd.Series(mixed[ref]).isin(mixed[~ref]).to_numpy()  # a hash table: no sort
    disjoint = np.ones(keys, dtype=bool)
    disjoint[key[ref][hit].astype(np.int64)] = False
    return disjoint


@dataclass(frozen=True, slots=True)
class Disjoint:
    """``chains.explain_key``'s account of keys whose sides share no digest, one entry per
    key: how many of each kind, and the ``sort_key`` of its earliest divergence (``first``,
    ``second``: the same under both placements). A key's corruptions pair the k-th events
    of each side, ``k < corruptions``."""

    corruptions: np.ndarray
    losses: np.ndarray
    duplications: np.ndarray
    first: np.ndarray
    second: np.ndarray


def explain_disjoint(
    n: np.ndarray, m: np.ndarray, ref: np.ndarray, cand: np.ndarray, lengths: Sequence[int]
) -> Disjoint:
    """Keys of ``n`` reference and ``m`` candidate events (``n + m > 0``) whose sides share
    no digest; ``ref``, ``cand``: each side's first position (any number for a side that
    holds none).

    The alignment has no match, so its script is every deletion, then every insertion:
    a lost event's ``near`` is past the candidate's end (``lengths[1]``) or, placed cheaply,
    at the key's first candidate event; an extra event's is past the reference's end.
    Every such position is after the first corruption's in the order of ``sort_key``."""
    lengths_ref, lengths_cand = lengths[0], lengths[1]
    pairs = np.minimum(n, m)
    paired, lost = pairs > 0, n > 0
    first = np.where(
        paired,
        np.minimum(ref, cand),
        np.where(lost, np.minimum(ref, lengths_cand), np.minimum(lengths_ref, cand)),
    )
    second = np.where(paired | lost, ref, lengths_ref)
    return Disjoint(pairs, n - pairs, m - pairs, first, second)


def _best(first: np.ndarray, second: np.ndarray, limit: int) -> np.ndarray:
    """The keys that may be among the ``limit`` whose ``(first, second)`` comes first: the
    ``limit`` first and every key that ties with the last of them (``_Firsts`` breaks ties
    by group)."""
    if limit <= 0:
        return np.empty(0, dtype=np.int64)
    if len(first) <= limit:
        return np.arange(len(first))
    last = np.lexsort((second, first))[limit - 1]
    f, s = first[last], second[last]
    return np.flatnonzero((first < f) | ((first == f) & (second <= s)))


def _is_time(kind: pa.DataType) -> bool:
    return bool(pa.types.is_timestamp(kind) or pa.types.is_date(kind))


def _times(table: pa.Table, names: Sequence[str]) -> pa.ChunkedArray | list[Any] | None:
    """Each row's time as ``matcher.profile.time_of`` reads its event: the first of its
    date and timestamp columns that is not null; ``None``: no such column. One column
    without a time zone stays an Arrow array (its values are the events' as they are)."""
    found = [n for n in names if _is_time(table.schema.field(n).type)]
    if not found:
        return None
    if len(found) == 1 and getattr(table.schema.field(found[0]).type, "tz", None) is None:
        return table.column(found[0])
    values = [arrow_values(table, n) for n in found]
    return [next((v for v in row if v is not None), None) for row in zip(*values, strict=True)]


def chain_counter(
    lengths: Sequence[int],
    fast: bool,
    limit: int,
    names: Sequence[str],
    compared: Sequence[str] = (),
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function over a partition sorted by (group, position, side);
    ``fast``: whether ``matcher.compare`` takes its fast path for this equality
    (``matcher.spark.chains.run_online``); ``names``: the events' columns; ``compared``:
    the columns of the column digests, in their order."""
    columns, digested = list(names), list(compared)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tally = _Tally(lengths, fast, columns, limit, digested)
        carry: _Part | None = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            part = _Part.of(batch, len(digested))
            if carry is not None:
                part = carry.then(part)
            last = int(part.starts()[-2])  # the last key may go on in the next batch
            if last:
                tally.add(part.cut(0, last))
            carry = part.cut(last, len(part))
        if carry is not None:
            tally.add(carry)
        yield tally.rows()

    return run


@dataclass(frozen=True, slots=True)
class ChainTally:
    """The partitions' rows summed: counts by kind and column, pairs matched, the events
    of the keys that hold the earliest divergences, and the keys the core's loop must take."""

    kinds: Counter[str]
    columns: Counter[str]
    matched: int
    chosen: dict[Group, list[Tagged]]
    nan: list[Group]
    profile: Profile = field(default_factory=Profile)


def read_tally(table: pa.Table, names: Sequence[str], limit: int) -> ChainTally:
    """Sum the partitions' rows (``names``: the compared columns, by index)."""
    kinds: Counter[str] = Counter()
    columns: Counter[str] = Counter()
    matched = 0
    firsts: tuple[list[tuple[int, int, int, int]], list[tuple[int, int, int, int]]] = ([], [])
    events: dict[Group, list[bytes]] = {}
    nan: list[Group] = []
    profile = Profile()
    values = [table.column(c).to_pylist() for c in ("tag", "n", "a", "b", "gh", "gh2", "blob")]
    for tag, n, a, b, gh, gh2, blob in zip(*values, strict=True):
        if tag == "matched":
            matched += n
        elif tag == "column":
            columns[names[a]] += n
        elif tag.startswith("first"):
            firsts[int(tag[-1])].append((a, b, gh, gh2))
        elif tag == "event":
            events.setdefault((gh, gh2), []).append(blob)
        elif tag == "nan":
            nan.append((gh, gh2))
        elif tag == "profile":
            profile.merge(Profile.from_partial(blob))
        else:
            kinds[tag] += n
    chosen = {(gh, gh2) for mode in firsts for _, _, gh, gh2 in heapq.nsmallest(limit, mode)}
    kept = {group: [loads(blob) for blob in events[group]] for group in sorted(chosen)}
    return ChainTally(kinds, columns, matched, kept, nan, profile)


def explain_chosen(
    groups: dict[Group, list[Tagged]],
    dependence: Dependence,
    equality: Equality,
    lengths: Sequence[int],
    limit: int,
) -> list[Divergence]:
    """The earliest ``limit`` divergences of the chosen keys, from their events
    ``(position, side, digest, event)``, as ``StreamMatcher`` finds them."""
    fast = equality.is_plain or equality.exact_but_ignored
    classifier = Classifier(dependence, equality, list(lengths))
    early: list[Divergence] = []
    left: tuple[list[Entry], list[Entry]] = ([], [])
    for key_events in groups.values():
        key_events.sort(key=lambda t: (t[0], t[1]))
        entries: tuple[list[Entry], list[Entry]] = ([], [])
        digests: tuple[list[int], list[int]] = ([], [])
        order = []
        for pos, side, digest, event in key_events:
            order.append((side, len(entries[side])))
            entries[side].append(Entry(pos, event, None))
            digests[side].append(digest)
        online = run_online(order, digests, fast)
        for ref, cand in online.settled:
            early.extend(
                classifier.classify([entries[0][i] for i in ref], [entries[1][j] for j in cand])
            )
        for side in (0, 1):
            left[side].extend(entries[side][i] for i in online.left[side])
    final = classifier.classify(*(sorted(entries, key=_pos) for entries in left))
    found = sorted([*early, *final], key=Divergence.sort_key)
    if early:
        found = merge_moves(found, dependence, equality)
    return found[:limit]


def _pos(entry: Entry) -> int:
    return entry.pos
