"""``matcher.diff.align`` against a brute-force oracle of the longest common subsequence.

Every script ``align`` returns is checked for validity (each index of either side exactly
once, in order; matched events equal), and the number of its matches against the oracle,
by each of its algorithms (Hunt-Szymanski over keyed or over all pairs, Myers' linear-space
algorithm), under an exact equality with repeated events and under a tolerance, which is
not transitive. Then exact alignments of reversed, moved and swapped events.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from itertools import combinations
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from matcher import Equality, Tolerance, compare
from matcher.classify import Classifier
from matcher.dependence import by_key
from matcher.diff import MAX_EDIT_DISTANCE, MAX_MATCH_PAIRS, Op, align, align_values
from matcher.pools import Entry

Equal = Callable[[Entry, Entry], bool]

# -- the oracle and the checks -----------------------------------------------------------


def embeds(seq: Sequence[Entry], b: Sequence[Entry], equal: Equal) -> bool:
    """Whether ``seq`` is a subsequence of ``b`` under ``equal``. Taking the earliest fit
    for each event is right for any relation: a later one leaves less of ``b``."""
    j = 0
    for x in seq:
        while j < len(b) and not equal(x, b[j]):
            j += 1
        if j == len(b):
            return False
        j += 1
    return True


def lcs_length(a: Sequence[Entry], b: Sequence[Entry], equal: Equal) -> int:
    """The longest subsequence of ``a`` that embeds in ``b``, by trying them all."""
    for size in range(min(len(a), len(b)), 0, -1):
        if any(
            embeds([a[i] for i in kept], b, equal) for kept in combinations(range(len(a)), size)
        ):
            return size
    return 0


def matches_of(ops: list[Op], a: Sequence[Entry], b: Sequence[Entry], equal: Equal) -> int:
    """Check that ``ops`` is an edit script from ``a`` to ``b``; return its matches."""
    assert [i for i, _ in ops if i is not None] == list(range(len(a)))
    assert [j for _, j in ops if j is not None] == list(range(len(b)))
    assert (None, None) not in ops
    pairs = [(i, j) for i, j in ops if i is not None and j is not None]
    assert all(equal(a[i], b[j]) for i, j in pairs)
    return len(pairs)


def entries(values: Sequence[Any]) -> list[Entry]:
    return [Entry(pos, {"v": value}, None) for pos, value in enumerate(values)]


def equal_v(x: Entry, y: Entry) -> bool:
    return bool(x.event["v"] == y.event["v"])


def near_v(x: Entry, y: Entry) -> bool:
    """Within 0.5: 1.0 is near 1.5, which is near 2.0, but 1.0 is not near 2.0."""
    return abs(x.event["v"] - y.event["v"]) <= 0.5


def key_v(x: Entry) -> Hashable:
    return x.event["v"]


def same_key(x: Entry) -> Hashable:
    return 0  # compatible with any equality: every pair is a candidate


# Each algorithm, chosen by whether a key is given and by the bound on candidate pairs.
ALGORITHMS: dict[str, tuple[bool, int]] = {
    "hunt-szymanski keyed": (True, MAX_MATCH_PAIRS),
    "hunt-szymanski all pairs": (False, MAX_MATCH_PAIRS),
    "myers": (False, 0),
}


def bounds(pairs: int = MAX_MATCH_PAIRS, edits: int = MAX_EDIT_DISTANCE) -> Any:
    return patch.multiple("matcher.diff", MAX_MATCH_PAIRS=pairs, MAX_EDIT_DISTANCE=edits)


small = st.lists(st.integers(0, 3), max_size=7)
halves = st.lists(st.integers(0, 6).map(lambda n: n / 2), max_size=7)


# -- properties ---------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@given(a=small, b=small)
def test_exact_equality_gives_a_longest_common_subsequence(
    algorithm: str, a: list[int], b: list[int]
) -> None:
    keyed, pairs = ALGORITHMS[algorithm]
    xs, ys = entries(a), entries(b)
    with bounds(pairs):
        ops = align(xs, ys, equal_v, key_v if keyed else None)
    assert matches_of(ops, xs, ys, equal_v) == lcs_length(xs, ys, equal_v)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@given(a=halves, b=halves)
def test_tolerance_gives_a_longest_common_subsequence(
    algorithm: str, a: list[float], b: list[float]
) -> None:
    keyed, pairs = ALGORITHMS[algorithm]
    xs, ys = entries(a), entries(b)
    with bounds(pairs):
        ops = align(xs, ys, near_v, same_key if keyed else None)
    assert matches_of(ops, xs, ys, near_v) == lcs_length(xs, ys, near_v)


@given(
    a=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), max_size=7),
    b=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), max_size=7),
)
def test_the_classifiers_equality_gives_a_longest_common_subsequence(
    a: list[tuple[int, int]], b: list[tuple[int, int]]
) -> None:
    """The classifier's key is the canonical form, which leaves the tolerance column out:
    the key proposes, the tolerance decides."""
    equality = Equality(tolerance={"x": Tolerance(abs=1.0)})
    classifier = Classifier(by_key("k"), equality, [len(a), len(b)])
    xs = [Entry(p, {"k": k, "x": float(x)}, k) for p, (k, x) in enumerate(a)]
    ys = [Entry(p, {"k": k, "x": float(x)}, k) for p, (k, x) in enumerate(b)]
    equal = classifier.equal_entries
    ops = align(xs, ys, equal, classifier.entry_key)
    assert matches_of(ops, xs, ys, equal) == lcs_length(xs, ys, equal)


@given(a=small, b=small)
def test_past_both_bounds_the_script_stays_valid(a: list[int], b: list[int]) -> None:
    xs, ys = entries(a), entries(b)
    for key in (key_v, None):
        with bounds(0, 1):
            ops = align(xs, ys, equal_v, key)
        assert matches_of(ops, xs, ys, equal_v) <= lcs_length(xs, ys, equal_v)


@pytest.mark.parametrize("limits", [(MAX_MATCH_PAIRS, MAX_EDIT_DISTANCE), (0, 5_000), (0, 1)])
@given(a=st.lists(st.integers(0, 5), max_size=30), b=st.lists(st.integers(0, 5), max_size=30))
def test_values_that_are_their_own_key_align_as_align_does(
    limits: tuple[int, int], a: list[int], b: list[int]
) -> None:
    """``align_values`` (the Spark engine's digests) gives ``align``'s very script under
    equality with the value as its key: the same matches, the same tie-breaking, the same
    fall-backs past ``MAX_MATCH_PAIRS`` and ``MAX_EDIT_DISTANCE``."""
    with bounds(*limits):
        assert align_values(a, b) == align(a, b, operator.eq, lambda x: x)  # type: ignore[arg-type]


# -- exact alignments ---------------------------------------------------------------------


def reversed_script(n: int) -> list[Op]:
    """Delete all but the last, match it with the candidate's first, insert the rest."""
    return [(i, None) for i in range(n - 1)] + [(n - 1, 0)] + [(None, j) for j in range(1, n)]


@pytest.mark.parametrize("n", [3_000, 50_000])
def test_a_reversed_key_keeps_one_match(n: int) -> None:
    a = entries(range(n))
    assert align(a, a[::-1], equal_v, key_v) == reversed_script(n)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_aligns_a_reversed_key_alike(algorithm: str) -> None:
    keyed, pairs = ALGORITHMS[algorithm]
    a = entries(range(400))
    with bounds(pairs):
        assert align(a, a[::-1], equal_v, key_v if keyed else None) == reversed_script(400)


def test_a_swap_deletes_first() -> None:
    a, b = entries(["x", "y"]), entries(["y", "x"])
    for key in (key_v, None):
        assert align(a, b, equal_v, key) == [(0, None), (1, 0), (None, 1)]


def test_events_moved_to_the_front_are_the_only_ones_unmatched() -> None:
    a = entries(range(100))
    b = a[90:] + a[:90]
    ops = align(a, b, equal_v, key_v)
    assert ops == [(None, j) for j in range(10)] + [(i, i + 10) for i in range(90)] + [
        (i, None) for i in range(90, 100)
    ]


def test_one_corrupted_event_is_a_substitution() -> None:
    a, b = entries([1, 2, 3, 4, 5]), entries([1, 2, 9, 4, 5])
    assert align(a, b, equal_v, key_v) == [(0, 0), (1, 1), (2, None), (None, 2), (3, 3), (4, 4)]


def test_past_both_bounds_a_reversed_key_is_aligned_near_the_diagonal() -> None:
    a = entries(range(10))
    with bounds(0, 2):
        ops = align(a, a[::-1], equal_v)
    assert ops == [(i, None) for i in range(10)] + [(None, j) for j in range(10)]


def test_a_reversed_key_is_one_match_and_reorderings_through_compare() -> None:
    reference = [{"k": 0, "seq": i} for i in range(3_000)]
    verdict = compare(reference, reference[::-1], by_key("k"))
    assert verdict.counts == {"loss": 0, "duplication": 0, "reordering": 2_999, "corruption": 0}
