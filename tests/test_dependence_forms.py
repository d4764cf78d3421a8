"""Dependence forms: their ``depends`` truth tables, the equality compatibility check, and the
errors for malformed events and misuse of the matcher."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from matcher import (
    Equality,
    IncompatibleEqualityError,
    InputError,
    MatcherError,
    SpecError,
    StreamMatcher,
    Tolerance,
    compare,
)
from matcher.dependence import (
    by_key,
    column_equals,
    ordered,
    predicate,
    punctuation,
    typed,
    unordered,
    with_barriers,
)
from matcher.errors import ParityError, UserCodeError

T, F = True, False


def table(dependence: Any, events: Sequence[Mapping[str, Any]]) -> list[list[bool]]:
    return [[dependence.depends(x, y) for y in events] for x in events]


# ---------------------------------------------------------------------------------------------
# Truth tables


def test_unordered_and_ordered() -> None:
    events = [{"k": 1}, {"k": 1}, {"k": 2}]
    assert table(unordered(), events) == [[F, F, F], [F, F, F], [F, F, F]]
    assert table(ordered(), events) == [[T, T, T], [T, T, T], [T, T, T]]


def test_by_key_one_column_with_nan_keys() -> None:
    events = [
        {"k": 1, "v": 0},
        {"k": 1, "v": 1},
        {"k": 2, "v": 0},
        {"k": float("nan")},
        {"k": float("nan")},
    ]
    assert table(by_key("k"), events) == [
        [T, T, F, F, F],
        [T, T, F, F, F],
        [F, F, T, F, F],
        [F, F, F, T, T],  # every NaN is the same key
        [F, F, F, T, T],
    ]


def test_by_key_two_columns() -> None:
    events = [
        {"k": 1, "j": "a"},
        {"k": 1, "j": "b"},
        {"k": 2, "j": "a"},
        {"k": 1, "j": "a", "v": 9},
    ]
    assert table(by_key("k", "j"), events) == [
        [T, F, F, T],
        [F, T, F, F],
        [F, F, T, F],
        [T, F, F, T],
    ]


def test_by_key_needs_columns() -> None:
    with pytest.raises(SpecError, match="by_key"):
        by_key()


BARRIER_EVENTS = [
    {"kind": "E", "k": 1},
    {"kind": "E", "k": 1},
    {"kind": "E", "k": 2},
    {"kind": "B"},
    {"kind": "B", "day": 2},
]


def _barriers(base: Any) -> Any:
    return with_barriers(base, column_equals("kind", "B"), columns=["kind"])


def test_with_barriers_over_by_key() -> None:
    dependence = _barriers(by_key("k"))
    assert table(dependence, BARRIER_EVENTS) == [
        [T, T, F, T, T],
        [T, T, F, T, T],
        [F, F, T, T, T],
        [T, T, T, T, T],
        [T, T, T, T, T],
    ]
    assert [dependence.is_barrier(e) for e in BARRIER_EVENTS] == [F, F, F, T, T]
    assert dependence.has_barriers is True


def test_with_barriers_over_unordered_and_ordered() -> None:
    assert table(_barriers(unordered()), BARRIER_EVENTS) == [
        [F, F, F, T, T],
        [F, F, F, T, T],
        [F, F, F, T, T],
        [T, T, T, T, T],
        [T, T, T, T, T],
    ]
    assert table(_barriers(ordered()), BARRIER_EVENTS) == [[T] * 5 for _ in range(5)]


@pytest.mark.parametrize(
    "base",
    [predicate(lambda x, y: True), punctuation(column_equals("kind", "P"), "ts")],
    ids=["predicate", "punctuation"],
)
def test_with_barriers_rejects_other_bases(base: Any) -> None:
    with pytest.raises(SpecError, match="barriers combine with by_key, ordered or unordered"):
        with_barriers(base, column_equals("kind", "B"))


TAXI = typed(
    "kind",
    {"taxi": ["taxi_id"], "EOD": None, "EOM": None},
    [("taxi", "taxi"), ("EOD", "*"), ("EOM", "EOM")],
)


def test_typed_extended_taxi() -> None:
    events = [
        {"kind": "taxi", "taxi_id": 1, "d": 1},
        {"kind": "taxi", "taxi_id": 1, "d": 2},
        {"kind": "taxi", "taxi_id": 2, "d": 1},
        {"kind": "EOD"},
        {"kind": "EOM", "m": 1},
        {"kind": "EOM", "m": 2},
    ]
    assert table(TAXI, events) == [
        [T, T, F, T, F, F],
        [T, T, F, T, F, F],
        [F, F, T, T, F, F],
        [T, T, T, T, T, T],
        [F, F, F, T, T, T],
        [F, F, F, T, T, T],
    ]
    assert [TAXI.is_barrier(e) for e in events] == [F, F, F, T, F, F]
    assert [TAXI.key(e) for e in events] == [1, 1, 2, None, None, None]


GRAPH = typed(
    "kind",
    {"A": ["k"], "B": ["k"], "C": None, "D": None},
    [("A", "A"), ("A", "B", "same_key"), ("B", "C"), ("D", "D")],
)


def test_typed_graph_with_same_key_and_plain_cross_edges() -> None:
    events = [
        {"kind": "A", "k": 0},
        {"kind": "A", "k": 0, "v": 1},
        {"kind": "A", "k": 1},
        {"kind": "B", "k": 0},
        {"kind": "B", "k": 1},
        {"kind": "C"},
        {"kind": "D"},
        {"kind": "D", "v": 1},
    ]
    assert table(GRAPH, events) == [
        # A0 A0' A1 B0 B1 C  D  D'
        [T, T, F, T, F, F, F, F],  # A0: same-key A, same-key B
        [T, T, F, T, F, F, F, F],
        [F, F, T, F, T, F, F, F],  # A1
        [T, T, F, F, F, T, F, F],  # B0: no B-B edge; every C
        [F, F, T, F, F, T, F, F],  # B1
        [F, F, F, T, T, F, F, F],  # C: no C-C edge
        [F, F, F, F, F, F, T, T],  # D: ordered, unkeyed
        [F, F, F, F, F, F, T, T],
    ]
    assert GRAPH.has_barriers is False
    assert not any(GRAPH.is_barrier(e) for e in events)


def test_typed_unconditional_edge_wins_over_same_key() -> None:
    dependence = typed("kind", {"A": ["k"], "B": ["k"]}, [("A", "B", "same_key"), ("A", "B")])
    assert dependence.depends({"kind": "A", "k": 0}, {"kind": "B", "k": 1}) is True
    dependence = typed("kind", {"A": ["k"], "B": ["k"]}, [("A", "B"), ("B", "A", "same_key")])
    assert dependence.depends({"kind": "A", "k": 0}, {"kind": "B", "k": 1}) is True


def test_typed_two_column_keys_and_a_classify_function() -> None:
    dependence = typed(
        lambda e: "big" if e["x"] > 9 else "small",
        {"big": ["k", "j"], "small": None},
        [("big", "big")],
        classify_columns=["x"],
    )
    events = [
        {"x": 10, "k": 1, "j": 1},
        {"x": 11, "k": 1, "j": 1},
        {"x": 12, "k": 1, "j": 2},
        {"x": 1},
        {"x": 2},
    ]
    assert table(dependence, events) == [
        [T, T, F, F, F],
        [T, T, F, F, F],
        [F, F, T, F, F],
        [F, F, F, F, F],
        [F, F, F, F, F],
    ]
    assert dependence.key(events[0]) == (1, 1)


@pytest.mark.parametrize(
    ("types", "edges", "message"),
    [
        ({}, [], "at least one event type"),
        ({"A": ["k"]}, [("A", "Z")], "names unknown type 'Z'"),
        ({"A": ["k"]}, [("A",)], "an edge is"),
        ({"A": ["k"]}, [("A", "A", "other")], "an edge is"),
        ({"A": ["k"], "B": None}, [("A", "B", "same_key")], "needs both types keyed"),
        ({"A": ["k"], "B": None}, [("A", "*", "same_key")], "needs both types keyed"),
        ({"A": ["k"], "B": ["k", "j"]}, [("A", "B", "same_key")], "keys differ in length"),
        ({"A": []}, [], "expected one or more column names"),
    ],
)
def test_typed_spec_errors(types: dict[str, Any], edges: list[Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        typed("kind", types, edges)


def test_punctuation() -> None:
    dependence = punctuation(column_equals("kind", "P"), "ts", columns=["kind"])
    events = [
        {"kind": "P", "ts": 2},
        {"kind": "E", "ts": 1},
        {"kind": "E", "ts": 2},
        {"kind": "E", "ts": 3},
        {"kind": "P", "ts": 1},
        {"kind": "P", "ts": 2, "v": 1},
    ]
    assert table(dependence, events) == [
        # P2 E1 E2 E3 P1 P2'
        [F, T, F, F, T, F],  # P2 depends on what is strictly earlier
        [T, F, F, F, F, T],
        [F, F, F, F, F, F],
        [F, F, F, F, F, F],
        [T, F, F, F, F, T],
        [F, T, F, F, T, F],
    ]


def _sign(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return not ((x["n"] < 0 and y["n"] < 0) or (x["n"] > 0 and y["n"] > 0))


def test_predicate() -> None:
    events = [{"n": n} for n in (-2, -1, 0, 1, 2)]
    assert table(predicate(_sign, columns=["n"]), events) == [
        [F, F, T, T, T],
        [F, F, T, T, T],
        [T, T, T, T, T],
        [T, T, T, F, F],
        [T, T, T, F, F],
    ]
    # a truthy non-bool result is an error naming the function, never read as a dependence
    with pytest.raises(UserCodeError, match=r"returned int 1, expected a bool"):
        predicate(lambda x, y: 1).depends({}, {})


def test_describe() -> None:
    assert unordered().describe() == "unordered"
    assert ordered().describe() == "ordered"
    assert by_key("k", "j").describe() == "by_key(k, j)"
    assert _barriers(by_key("k")).describe() == "by_key(k) with barriers"
    assert punctuation(column_equals("kind", "P"), "ts").describe() == "punctuation(ts)"
    assert compare([], [], by_key("k")).dependence == "by_key(k)"


# ---------------------------------------------------------------------------------------------
# Compatibility of the equality with the dependence


@pytest.mark.parametrize(
    ("dependence", "equality", "message"),
    [
        (by_key("k"), Equality(ignore=frozenset({"k"})), "ignores column 'k'"),
        (by_key("k", "j"), Equality(ignore=frozenset({"j"})), "ignores column 'j'"),
        (by_key("k"), Equality(tolerance={"k": Tolerance(abs=1)}), "has a tolerance on column 'k'"),
        (by_key("k"), Equality(normalize={"k": ("trim",)}), "normalises column 'k'"),
        (by_key("k"), Equality(normalize={"*": ("trim",)}), "every string column"),
        (_barriers(by_key("k")), Equality(ignore=frozenset({"kind"})), "ignores column 'kind'"),
        (_barriers(unordered()), Equality(ignore=frozenset({"kind"})), "ignores column 'kind'"),
        (TAXI, Equality(ignore=frozenset({"kind"})), "ignores column 'kind'"),
        (TAXI, Equality(tolerance={"taxi_id": Tolerance(abs=0.5)}), "column 'taxi_id'"),
        (
            punctuation(column_equals("kind", "P"), "ts", columns=["kind"]),
            Equality(tolerance={"ts": Tolerance(abs=1)}),
            "column 'ts'",
        ),
        (
            punctuation(column_equals("kind", "P"), "ts", columns=["kind"]),
            Equality(ignore=frozenset({"kind"})),
            "column 'kind'",
        ),
        (predicate(_sign, columns=["n"]), Equality(ignore=frozenset({"n"})), "column 'n'"),
    ],
)
def test_incompatible_equality_is_rejected(
    dependence: Any, equality: Equality, message: str
) -> None:
    with pytest.raises(IncompatibleEqualityError, match=message):
        StreamMatcher(dependence, equality)
    with pytest.raises(IncompatibleEqualityError, match=message):
        compare([], [], dependence, equality)
    assert issubclass(IncompatibleEqualityError, SpecError)
    assert issubclass(SpecError, ParityError)


def test_punctuation_timestamp_is_checked_without_columns() -> None:
    """The timestamp column is known even when the punctuation test is opaque."""
    dependence = punctuation(column_equals("kind", "P"), "ts")
    with pytest.raises(IncompatibleEqualityError, match="column 'ts'"):
        compare([], [], dependence, Equality(ignore=frozenset({"ts"})))


@pytest.mark.parametrize(
    ("dependence", "equality"),
    [
        (by_key("k"), Equality(ignore=frozenset({"v"}))),
        (by_key("k"), Equality(tolerance={"v": Tolerance(abs=1)}, normalize={"s": ("lower",)})),
        (by_key("k"), Equality(function=lambda a, b: a["k"] == b["k"])),  # the user vouches
        (ordered(), Equality(normalize={"*": ("trim",)})),
        (unordered(), Equality(ignore=frozenset({"k"}))),
        (predicate(_sign), Equality(ignore=frozenset({"n"}))),  # opaque: the user vouches
        (predicate(_sign, columns=["n"]), Equality(function=lambda a, b: a == b)),
        (TAXI, Equality(ignore=frozenset({"d"}))),
    ],
)
def test_compatible_equality_is_accepted(dependence: Any, equality: Equality) -> None:
    StreamMatcher(dependence, equality)
    assert compare(
        [{"k": 1, "n": 1, "kind": "EOD"}], [{"k": 1, "n": 1, "kind": "EOD"}], dependence, equality
    ).equivalent


# ---------------------------------------------------------------------------------------------
# Malformed events


@pytest.mark.parametrize(
    "equality", [None, Equality(ignore=frozenset({"z"}))], ids=["plain", "rules"]
)
def test_missing_key_column_names_side_and_position(equality: Equality | None) -> None:
    with pytest.raises(InputError, match=r"reference event #0 lacks column 'k'"):
        compare([{"v": 1}], [], by_key("k"), equality)
    with pytest.raises(InputError, match=r"candidate event #2 lacks column 'k'"):
        compare([{"k": 1}] * 3, [{"k": 1}, {"k": 1}, {"v": 1}], by_key("k"), equality)
    with pytest.raises(InputError, match=r"candidate event #0 lacks column 'j'"):
        compare([{"k": 1, "j": 1}], [{"k": 1}], by_key("k", "j"), equality)
    with pytest.raises(InputError, match=r"candidate event #0 lacks column 'k'"):
        compare([{"kind": "E", "k": 1}], [{"kind": "E"}], _barriers(by_key("k")), equality)


def test_missing_key_column_through_push() -> None:
    matcher = StreamMatcher(by_key("k"))
    assert matcher.push("candidate", {"k": 1}) is True
    with pytest.raises(InputError, match=r"candidate event #1 lacks column 'k'"):
        matcher.push("candidate", {"v": 1})


def test_barriers_need_no_key() -> None:
    """A barrier is not keyed: it may lack the key column."""
    assert compare([{"kind": "B"}], [{"kind": "B"}], _barriers(by_key("k"))).equivalent is True


def test_typed_missing_columns_name_side_and_position() -> None:
    reference = [{"kind": "taxi", "taxi_id": 1}]
    with pytest.raises(InputError, match=r"candidate event #0 .*'taxi_id'"):
        compare(reference, [{"kind": "taxi"}], TAXI)
    with pytest.raises(InputError, match=r"candidate event #0.*'kind'"):
        compare(reference, [{"taxi_id": 1}], TAXI)
    with pytest.raises(InputError, match=r"candidate event #0.*'bus'.*not declared"):
        compare(reference, [{"kind": "bus"}], TAXI)


def test_punctuation_missing_timestamp_names_side_and_position() -> None:
    dependence = punctuation(column_equals("kind", "P"), "ts", columns=["kind"])
    with pytest.raises(InputError, match=r"candidate event #0.*'ts'"):
        compare([{"kind": "P", "ts": 1}], [{"kind": "P"}], dependence)
    with pytest.raises(InputError, match=r"reference event #0.*'ts'"):
        compare([{"kind": "P"}], [], dependence)


@pytest.mark.parametrize(
    "dependence",
    [
        pytest.param(by_key("k"), id="by_key"),
        pytest.param(ordered(), id="ordered"),
        pytest.param(unordered(), id="unordered"),
    ],
)
def test_an_event_that_is_not_a_mapping(dependence: Any) -> None:
    with pytest.raises(InputError, match=r"reference event #0"):
        compare([1], [1], dependence)


# ---------------------------------------------------------------------------------------------
# Driving the matcher wrongly


def test_unknown_side() -> None:
    matcher = StreamMatcher(ordered())
    with pytest.raises(MatcherError, match="side must be 'reference' or 'candidate', got 'left'"):
        matcher.push("left", {"a": 1})
    assert matcher.unmatched_count == 0
    assert matcher.finish().equivalent is True  # the bad push left no trace


def test_push_after_finish() -> None:
    matcher = StreamMatcher(by_key("k"))
    matcher.push("reference", {"k": 1})
    verdict = matcher.finish()
    with pytest.raises(MatcherError, match="push after finish"):
        matcher.push("candidate", {"k": 1})
    assert matcher.finish() is verdict
    assert verdict.equivalent is False
    assert issubclass(MatcherError, ParityError)
