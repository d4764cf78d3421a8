"""The per-key work on digests (``matcher.spark.chains``) against the core, without Spark.

Hypothesis draws chains of several keys over few values (so equal events and repeated
values are common), long enough that diverged keys pass ``RESYNC_START`` and
resynchronise, and applies a mix of faults (loss, extra, alteration, moves near and far,
swaps, duplicated values, a whole stretch altered). Each key's events, as digests (one
integer per distinct canonical event), go through ``explain_key``; summed over keys, the
counts by kind and by column, the matched pairs and every divergence's kind and
positions must be ``matcher.compare``'s on the same events. This is the proof of the
method; ``tests/test_spark_chains_spark.py`` proves the Spark plan around it.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from matcher import Equality, compare
from matcher.classify import MAX_ORDER_CHECK
from matcher.dependence import by_key
from matcher.spark.chains import (
    CHEAP,
    CORRUPTION,
    DUPLICATION,
    EXACT,
    LOSS,
    explain_key,
)
from matcher.spark.chains_run import _Part, _Tally, explain_disjoint
from matcher.verdict import Verdict
from tests.fault_mix import with_faults

Event = dict[str, Any]
BY_KEY = by_key("k")
COLUMNS = ("k", "v", "s")


def on_digests(
    reference: Sequence[Event], candidate: Sequence[Event], equality: Equality
) -> tuple[Counter[str], Counter[str], int, list[tuple[str, int, int]]]:
    """Counts by kind and column, matched pairs and every divergence ``(kind, reference
    position, candidate position)``, from ``explain_key`` on each key's digests."""
    ids: dict[Any, int] = {}
    keys: dict[Any, list[tuple[int, int, Event]]] = {}
    for side, stream in enumerate((reference, candidate)):
        for pos, event in enumerate(stream):
            keys.setdefault(event["k"], []).append((pos, side, event))
    lengths = (len(reference), len(candidate))
    fast = equality.is_plain or equality.exact_but_ignored
    kinds: Counter[str] = Counter()
    columns: Counter[str] = Counter()
    matched = pairs = 0
    outcomes = []
    for events in keys.values():
        events.sort(key=lambda t: (t[0], t[1]))
        per_side: tuple[list[Event], list[Event]] = ([], [])
        digests: tuple[list[int], list[int]] = ([], [])
        positions: tuple[list[int], list[int]] = ([], [])
        for pos, side, event in events:
            canonical = equality.canonical(event)
            digests[side].append(ids.setdefault(canonical, len(ids)))
            positions[side].append(pos)
            per_side[side].append(event)
        sides = [side for _, side, _ in events]
        outcome = explain_key(sides, digests, positions, lengths, fast)
        matched += outcome.matched
        pairs += outcome.pairs
        outcomes.append(outcome)
        for d in outcome.divs[EXACT]:
            kinds[d.kind] += 1
            if d.kind == CORRUPTION:
                a, b = per_side[0][d.ref_rank], per_side[1][d.cand_rank]
                columns.update(equality.differing_columns(a, b))
    mode = EXACT if pairs <= MAX_ORDER_CHECK else CHEAP
    found = [(d.kind, *d.at[mode]) for o in outcomes for d in o.divs[mode]]
    return kinds, columns, matched, sorted(found)


def positions_of(verdict: Verdict) -> list[tuple[str, int, int]]:
    return sorted(
        (d.kind, d.reference_position or 0, d.candidate_position or 0) for d in verdict.divergences
    )


@st.composite
def chains(draw: st.DrawFn) -> tuple[list[Event], list[Event]]:
    """A reference over up to 3 keys (so a key can pass ``RESYNC_START``), values drawn
    from a small alphabet, and a candidate with up to 8 faults of mixed kinds, runs of
    lost or new events among them."""
    n = draw(st.integers(0, 260))
    keys = draw(st.integers(1, 3))
    alphabet = draw(st.integers(1, 40))
    reference = [
        {"k": i % keys, "v": draw(st.integers(0, alphabet)) if alphabet < 40 else i, "s": "a"}
        for i in range(n)
    ]
    candidate = with_faults(
        draw,
        reference,
        new=lambda j: {"k": 0, "v": -1 - j, "s": "b"},
        alterations=st.sampled_from([{"s": "b"}, {"s": "c"}]),
        extra_values=st.integers(-3, alphabet),
        longest_stretch=120,
    )
    return reference, candidate


EQUALITIES = st.sampled_from(
    [Equality(), Equality(ignore=frozenset({"s"})), Equality(normalize={"s": ("upper",)})]
)


@settings(max_examples=600, deadline=None)
@given(pair=chains(), equality=EQUALITIES)
def test_explain_key_is_the_cores_account(
    pair: tuple[list[Event], list[Event]], equality: Equality
) -> None:
    reference, candidate = pair
    expected = compare(reference, candidate, BY_KEY, equality, limit=10**6)
    kinds, columns, matched, found = on_digests(reference, candidate, equality)
    assert dict(kinds) == {k: n for k, n in expected.counts.items() if n}
    assert dict(columns) == dict(expected.column_mismatches)
    assert matched == expected.matched_count
    assert found == positions_of(expected)


def test_the_fast_path_keeps_resync_at_where_the_general_path_forgets_it() -> None:
    """One key of 100 events; the candidate lacks the first 35 and has 20 new ones before
    event 65. The queues resynchronise on 35 events of the reference alone, which then
    gains events while the candidate holds none: ``compare``'s fast path keeps the key's
    doubled ``resync_at``, the general path forgets it (``run_online``'s ``fast``), and
    the matched pairs differ (65 against 30)."""
    reference = [{"k": 0, "v": i, "s": "a"} for i in range(100)]
    candidate = reference[35:65] + [{"k": 0, "v": -1 - i, "s": "b"} for i in range(20)]
    candidate += reference[65:]
    expected = compare(reference, candidate, BY_KEY, Equality(), limit=10**6)
    kinds, _, matched, found = on_digests(reference, candidate, Equality())
    assert (dict(kinds), matched) == ({"loss": 35, "duplication": 20}, 65)
    assert expected.matched_count == 65
    assert found == positions_of(expected)


@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(0, 150),
    m=st.integers(0, 150),
    seed=st.integers(0, 2**32 - 1),
    fast=st.booleans(),
)
def test_a_key_whose_sides_share_no_digest_has_the_closed_form(
    n: int, m: int, seed: int, fast: bool
) -> None:
    """``explain_disjoint`` against ``explain_key`` on keys of distinct or repeated
    digests, interleaved at random positions: the counts by kind, the corrupted pairs'
    ranks and the earliest divergence under both placements."""
    if not n + m:
        return
    rng = random.Random(seed)
    alphabet = rng.choice([3, 10**6])
    digests: tuple[list[int], list[int]] = ([rng.randrange(alphabet) for _ in range(n)], [])
    digests[1].extend(alphabet + rng.randrange(alphabet) for _ in range(m))
    order = sorted(rng.sample(range(4 * (n + m) + 10), n + m))
    sides = [0] * n + [1] * m
    rng.shuffle(sides)
    positions: tuple[list[int], list[int]] = ([], [])
    for side, position in zip(sides, order, strict=True):
        positions[side].append(position)
    # each stream's length past its own last position only: the other's may stand beyond it
    lengths = tuple(p[-1] + 1 + rng.randrange(5) if p else rng.randrange(50) for p in positions)
    outcome = explain_key(sides, digests, positions, lengths, fast)
    ref, cand = (np.array([p[0] if p else 0]) for p in positions)
    closed = explain_disjoint(np.array([n]), np.array([m]), ref, cand, lengths)
    kinds = Counter(d.kind for d in outcome.divs[EXACT])
    assert (kinds[CORRUPTION], kinds[LOSS], kinds[DUPLICATION]) == (
        closed.corruptions[0],
        closed.losses[0],
        closed.duplications[0],
    )
    pairs = sorted((d.ref_rank, d.cand_rank) for d in outcome.divs[EXACT] if d.kind == CORRUPTION)
    assert pairs == [(k, k) for k in range(closed.corruptions[0])]
    for mode in (EXACT, CHEAP):
        earliest = min(d.sort_key(mode) for d in outcome.divs[mode])
        assert earliest == (closed.first[0], closed.second[0])
    assert outcome.matched == 0


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), keys=st.integers(1, 40), limit=st.integers(0, 6))
def test_a_part_is_explained_as_each_key_alone(seed: int, keys: int, limit: int) -> None:
    """``chains_run._Tally.add`` on one partition's rows, whose keys it explains all at
    once when their sides share no digest (``_disjoint``, ``explain_disjoint``, ``_best``)
    and one by one otherwise, against ``explain_key`` on each key alone: the counts, the
    pairs matched, the keys with a NaN, each placement's earliest keys, the counts by
    column and the profile of the corrupted pairs, taken in key order."""
    rng = random.Random(seed)
    lengths = (rng.randrange(10, 200), rng.randrange(10, 200))  # (either may be the longer)
    rows: list[dict[str, Any]] = []
    for k in range(keys):
        n, m = rng.randrange(6), rng.randrange(6)
        if not n + m:
            n = 1
        shared = rng.random() < 0.5
        alphabet = rng.choice([2, 5, 1000])
        events = sorted(
            [(pos, 0) for pos in rng.sample(range(lengths[0]), n)]
            + [(pos, 1) for pos in rng.sample(range(lengths[1]), m)]
        )
        nan = rng.random() < 0.1
        for at, (pos, side) in enumerate(events):
            value = rng.randrange(alphabet) + (0 if shared or side == 0 else alphabet)
            label = rng.choice("ab")
            rows.append(
                {"__p_gh": k * 7919 - 50, "__p_gh2": -k, "__p_side": side, "__pos": pos,
                 "__p_h1": value * 31 + (label == "b"), "__p_nan": nan and at == 0,
                 "__p_c0": value, "__p_c1": 1 + (label == "b"), "v": value, "w": label}
            )  # fmt: skip
    batch = pa.RecordBatch.from_pylist(rows)
    tally = _Tally(lengths, True, ["v", "w"], limit, ["v", "w"])
    tally.add(_Part.of(batch, 2))

    kinds: Counter[str] = Counter()
    matched = 0
    nan: list[tuple[int, int]] = []
    firsts: tuple[list[tuple[int, int, int, int]], ...] = ([], [])
    pairs: list[tuple[int, int]] = []
    for k in range(keys):
        key_rows = [(i, r) for i, r in enumerate(rows) if r["__p_gh2"] == -k]
        group = (key_rows[0][1]["__p_gh"], -k)
        if any(r["__p_nan"] for _, r in key_rows):
            nan.append(group)
            continue
        side_rows = ([i for i, r in key_rows if not r["__p_side"]], [])
        side_rows[1].extend(i for i, r in key_rows if r["__p_side"])
        digests = tuple([rows[i]["__p_h1"] for i in s] for s in side_rows)
        positions = tuple([rows[i]["__pos"] for i in s] for s in side_rows)
        sides = [r["__p_side"] for _, r in key_rows]
        outcome = explain_key(sides, digests, positions, lengths, True)  # type: ignore[arg-type]
        matched += outcome.matched
        kinds.update(d.kind for d in outcome.divs[EXACT])
        pairs.extend(
            (side_rows[0][d.ref_rank], side_rows[1][d.cand_rank])
            for d in outcome.divs[EXACT]
            if d.kind == CORRUPTION
        )
        for mode in (EXACT, CHEAP):
            if outcome.divs[mode]:  # (a key may agree here: the screen sends none such)
                first = min(d.sort_key(mode) for d in outcome.divs[mode])
                firsts[mode].append((*first, *group))
    assert (+tally.kinds, tally.matched, tally.nan) == (+kinds, matched, nan)
    held = set()
    for mode in (EXACT, CHEAP):
        # ``_Firsts`` keeps the earliest; between equal positions, the greater group
        kept = sorted(firsts[mode], key=lambda f: (f[0], f[1], -f[2], -f[3]))[:limit]
        assert sorted(tally.firsts[mode].entries()) == sorted(kept)
        held.update((gh, gh2) for *_, gh, gh2 in kept)
    assert set(tally.events) == held
    expected = _Tally(lengths, True, ["v", "w"], limit, ["v", "w"])
    if pairs:
        ref, cand = (np.array(p) for p in zip(*pairs, strict=True))
        digests = np.array([[r["__p_c0"], r["__p_c1"]] for r in rows])
        differs = digests[ref] != digests[cand]
        expected._profile(pa.Table.from_batches([batch]), ref, cand, differs)
        assert tally.columns is not None
        assert tally.columns.tolist() == differs.sum(axis=0).tolist()
    else:
        assert tally.columns is None
    assert tally.profile.summaries() == expected.profile.summaries()
