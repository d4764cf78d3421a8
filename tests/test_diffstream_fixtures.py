"""The DiffStream examples with their known verdicts: the tutorial's IncDec and DifferentSign,
the taxi examples of the testing chapter, and Examples 4.1-4.4 of the paper (§4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import oracle
import pytest

from matcher import StreamMatcher, compare
from matcher.dependence import by_key, predicate, typed

Event = dict[str, Any]
ZERO = {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}


def plain_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a == b


def counts(**kinds: int) -> dict[str, int]:
    return {**ZERO, **kinds}


# ---------------------------------------------------------------------------------------------
# IncDec: Inc-Inc and Dec-Dec independent, every other pair dependent, B a barrier


def Inc(n: int) -> Event:
    return {"op": "inc", "n": n}


def Dec(n: int) -> Event:
    return {"op": "dec", "n": n}


B: Event = {"op": "B"}


def _incdec(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    both_inc = x["op"] == y["op"] == "inc"
    both_dec = x["op"] == y["op"] == "dec"
    return not (both_inc or both_dec)


INCDEC = {
    "predicate": lambda: predicate(_incdec, columns=["op"]),
    "typed": lambda: typed(
        "op", {"inc": None, "dec": None, "B": None}, [("inc", "dec"), ("B", "*")]
    ),
}


@pytest.mark.parametrize("form", list(INCDEC))
def test_incdec_same_relation_both_ways(form: str) -> None:
    dependence = INCDEC[form]()
    events = [Inc(1), Inc(2), Dec(1), Dec(2), B, {"op": "B"}]
    for x in events:
        for y in events:
            assert dependence.depends(x, y) is _incdec(x, y), (x, y)


@pytest.mark.parametrize("form", list(INCDEC))
def test_incdec_not_equivalent(form: str) -> None:
    reference = [Inc(1), Dec(2), B, Inc(3), Dec(1), B]
    candidate = [Dec(2), Inc(1), B, Dec(1), Inc(3), B]
    assert oracle.equivalent(reference, candidate, _incdec, plain_equal) is False
    verdict = compare(reference, candidate, INCDEC[form]())
    assert verdict.equivalent is False
    # (Inc1, ref) then (Dec2, cand): Dec2 depends on the unmatched Inc1
    assert verdict.detected_at == 1
    assert verdict.detected_at == oracle.first_distinguishing_index(
        oracle.fair_interleaving(reference, candidate), _incdec, plain_equal
    )
    assert dict(verdict.counts) == counts(reordering=2)
    assert {d.kind for d in verdict.divergences} == {"reordering"}


@pytest.mark.parametrize("form", list(INCDEC))
def test_incdec_equivalent(form: str) -> None:
    reference = [Dec(1), Dec(2), B, Inc(3), Inc(1), B]
    candidate = [Dec(2), Dec(1), B, Inc(1), Inc(3), B]
    assert oracle.equivalent(reference, candidate, _incdec, plain_equal) is True
    verdict = compare(reference, candidate, INCDEC[form]())
    assert verdict.equivalent is True
    assert verdict.divergences == ()
    assert verdict.detected_at is None
    assert dict(verdict.counts) == ZERO
    assert verdict.matched_count == 6


@pytest.mark.parametrize("form", list(INCDEC))
def test_incdec_swap_across_barrier_is_divergent(form: str) -> None:
    reference = [Inc(1), Inc(2), B, Inc(3)]
    candidate = [Inc(1), B, Inc(2), Inc(3)]
    verdict = compare(reference, candidate, INCDEC[form]())
    assert verdict.equivalent is False
    assert dict(verdict.counts) == counts(reordering=1)


# ---------------------------------------------------------------------------------------------
# DifferentSign: x D y unless both negative or both positive (0 depends on everything)


def _different_sign(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return not ((x["v"] < 0 and y["v"] < 0) or (x["v"] > 0 and y["v"] > 0))


def ints(*values: int) -> list[Event]:
    return [{"v": v} for v in values]


def test_different_sign_not_equivalent() -> None:
    reference, candidate = ints(1, 2, 0, 3, 1, 0, 2), ints(2, 1, 0, 1, 3, 0)
    assert oracle.equivalent(reference, candidate, _different_sign, plain_equal) is False
    verdict = compare(reference, candidate, predicate(_different_sign, columns=["v"]))
    assert verdict.equivalent is False
    # The trailing 2 could still arrive: only the end of the streams tells.
    assert verdict.detected_at is None
    assert dict(verdict.counts) == counts(loss=1)
    d = verdict.divergence
    assert d is not None
    assert (d.kind, d.reference_position, d.reference_event, d.candidate_event) == (
        "loss",
        6,
        {"v": 2},
        None,
    )


def test_different_sign_equivalent() -> None:
    reference, candidate = ints(1, 2, 0, 3, 1, 0), ints(2, 1, 0, 1, 3, 0)
    assert oracle.equivalent(reference, candidate, _different_sign, plain_equal) is True
    verdict = compare(reference, candidate, predicate(_different_sign, columns=["v"]))
    assert verdict.equivalent is True
    assert verdict.divergences == ()
    assert verdict.detected_at is None


def test_different_sign_zero_is_a_barrier() -> None:
    verdict = compare(ints(1, 0, 2), ints(1, 2, 0), predicate(_different_sign, columns=["v"]))
    assert verdict.equivalent is False
    assert dict(verdict.counts) == counts(reordering=1)
    assert compare(ints(-1, -2, 0), ints(-2, -1, 0), predicate(_different_sign)).equivalent is True
    assert compare(ints(-1, 2), ints(2, -1), predicate(_different_sign)).equivalent is False


# ---------------------------------------------------------------------------------------------
# Taxis: events of the same taxi are dependent


def taxi(i: int, loc: int) -> Event:
    return {"taxi_id": i, "loc": loc}


TAXIS = [taxi(1, 10), taxi(2, 20), taxi(1, 11), taxi(3, 30), taxi(2, 21), taxi(1, 12)]


def test_taxi_equivalent_interleaving() -> None:
    candidate = [taxi(2, 20), taxi(3, 30), taxi(1, 10), taxi(2, 21), taxi(1, 11), taxi(1, 12)]
    verdict = compare(TAXIS, candidate, by_key("taxi_id"))
    assert verdict.equivalent is True
    assert verdict.divergences == ()
    # the parallel output is not the sequential one
    assert compare(TAXIS, candidate, predicate(lambda x, y: True)).equivalent is False


def test_taxi_per_taxi_reorder_is_divergent() -> None:
    candidate = [taxi(1, 11), taxi(2, 20), taxi(1, 10), taxi(3, 30), taxi(2, 21), taxi(1, 12)]
    verdict = compare(TAXIS, candidate, by_key("taxi_id"))
    assert verdict.equivalent is False
    assert dict(verdict.counts) == counts(reordering=1)
    d = verdict.divergence
    assert d is not None
    assert d.kind == "reordering"
    assert d.key == 1
    # the same relation as a predicate gives the same verdict
    same_taxi = predicate(lambda x, y: x["taxi_id"] == y["taxi_id"], columns=["taxi_id"])
    assert compare(TAXIS, candidate, same_taxi).equivalent is False


EXTENDED = typed(
    "kind",
    {"taxi": ["taxi_id"], "EOD": None, "EOM": None},
    [("taxi", "taxi"), ("EOD", "*"), ("EOM", "EOM")],
)


def _extended(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    """The testing chapter's Fig. 5, verbatim."""

    def is_eod(e: Mapping[str, Any]) -> bool:
        return e["kind"] == "EOD"

    def is_eom(e: Mapping[str, Any]) -> bool:
        return e["kind"] == "EOM"

    def is_taxi(e: Mapping[str, Any]) -> bool:
        return e["kind"] == "taxi"

    return (
        is_eod(x)
        or is_eod(y)
        or (is_eom(x) and is_eom(y))
        or (is_taxi(x) and is_taxi(y) and x["taxi_id"] == y["taxi_id"])
    )


def t(i: int, d: int) -> Event:
    return {"kind": "taxi", "taxi_id": i, "d": d}


EOD1, EOD2, EOM1 = {"kind": "EOD", "day": 1}, {"kind": "EOD", "day": 2}, {"kind": "EOM", "month": 1}
DAYS = [t(1, 1), t(2, 1), EOD1, t(1, 2), t(2, 2), EOM1, EOD2]


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (DAYS, True),
        ([t(2, 1), t(1, 1), EOD1, t(2, 2), t(1, 2), EOM1, EOD2], True),
        # an EOM may stand anywhere between two EODs
        ([t(1, 1), t(2, 1), EOD1, EOM1, t(1, 2), t(2, 2), EOD2], True),
        ([t(1, 1), t(2, 1), EOD1, t(1, 2), EOM1, t(2, 2), EOD2], True),
        # but not across an EOD
        ([t(1, 1), t(2, 1), EOM1, EOD1, t(1, 2), t(2, 2), EOD2], False),
        ([t(1, 1), t(2, 1), EOD1, t(1, 2), t(2, 2), EOD2, EOM1], False),
        # a taxi event after the EOD of its day
        ([t(1, 1), EOD1, t(2, 1), t(1, 2), t(2, 2), EOM1, EOD2], False),
        # one taxi's events swapped within a day
        ([t(1, 2), t(2, 1), EOD1, t(1, 1), t(2, 2), EOM1, EOD2], False),
        # an EOD lost
        ([t(1, 1), t(2, 1), t(1, 2), t(2, 2), EOM1, EOD2], False),
    ],
)
def test_extended_taxi(candidate: list[Event], expected: bool) -> None:
    assert oracle.equivalent(DAYS, candidate, _extended, plain_equal) is expected
    assert compare(DAYS, candidate, EXTENDED).equivalent is expected
    assert compare(DAYS, candidate, predicate(_extended)).equivalent is expected


# ---------------------------------------------------------------------------------------------
# The paper's examples


A, Bv, C = {"e": "a"}, {"e": "b"}, {"e": "c"}


def _a_b_c_b(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return {x["e"], y["e"]} in ({"a", "b"}, {"c", "b"})


def _also_a_c(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return _a_b_c_b(x, y) or {x["e"], y["e"]} == {"a", "c"}


EXAMPLE_42 = {
    "predicate": (lambda: predicate(_a_b_c_b), lambda: predicate(_also_a_c)),
    "typed": (
        lambda: typed("e", {"a": None, "b": None, "c": None}, [("a", "b"), ("c", "b")]),
        lambda: typed("e", {"a": None, "b": None, "c": None}, [("a", "b"), ("c", "b"), ("a", "c")]),
    ),
}


@pytest.mark.parametrize("form", list(EXAMPLE_42))
def test_example_4_2(form: str) -> None:
    without_a_c, with_a_c = EXAMPLE_42[form]
    assert compare([A, C, Bv], [C, A, Bv], without_a_c()).equivalent is True
    verdict = compare([A, C, Bv], [C, A, Bv], with_a_c())
    assert verdict.equivalent is False
    assert dict(verdict.counts) == counts(reordering=1)


EXAMPLE_44 = [
    ("reference", A),
    ("candidate", C),
    ("reference", C),
    ("reference", Bv),
    ("candidate", A),
    ("candidate", Bv),
]


@pytest.mark.parametrize("form", list(EXAMPLE_42))
def test_example_4_4_equivalent_run(form: str) -> None:
    without_a_c, _ = EXAMPLE_42[form]
    matcher = StreamMatcher(without_a_c())
    held = []
    for side, event in EXAMPLE_44:
        assert matcher.push(side, event) is True
        held.append(matcher.unmatched_count)
    # u1={a}; u2={c}; c matched; b waits behind a; a matched; b matched
    assert held == [1, 2, 1, 2, 1, 0]
    verdict = matcher.finish()
    assert verdict.equivalent is True
    assert verdict.detected_at is None
    assert verdict.peak_unmatched == 2


@pytest.mark.parametrize("form", list(EXAMPLE_42))
def test_example_4_4_detected_at_the_second_event(form: str) -> None:
    _, with_a_c = EXAMPLE_42[form]
    matcher = StreamMatcher(with_a_c())
    assert matcher.push("reference", A) is True
    assert matcher.divergent is False
    assert matcher.push("candidate", C) is False  # c depends on the unmatched a
    assert matcher.divergent is True
    assert matcher.detected_at == 1
    for side, event in EXAMPLE_44[2:]:
        assert matcher.push(side, event) is False
    verdict = matcher.finish()
    assert verdict.equivalent is False
    assert verdict.detected_at == 1
    assert oracle.first_distinguishing_index(EXAMPLE_44, _also_a_c, plain_equal) == 1


def test_example_4_3_is_finitely_distinguishable() -> None:
    """<a, a, b> against <a, b> with a D b: no continuation can make them equivalent."""
    ab = predicate(lambda x, y: {x["e"], y["e"]} == {"a", "b"})
    matcher = StreamMatcher(ab)
    connected = [
        ("reference", A),
        ("candidate", A),
        ("reference", A),
        ("candidate", Bv),
        ("reference", Bv),
    ]
    results = [matcher.push(side, event) for side, event in connected]
    # the candidate's b depends on the reference's unmatched second a
    assert results == [True, True, True, False, False]
    assert matcher.detected_at == 3
    assert matcher.finish().equivalent is False


def test_example_4_1_logical_order() -> None:
    """s = <a, a, b, a, a, a, b, b> with a D b: s[1] < s[4] through s[3] although a and a are
    independent, so an a may not cross a b; s[4], s[5], s[6] are unordered among themselves."""
    ab = predicate(lambda x, y: {x["e"], y["e"]} == {"a", "b"})
    s = [{"e": e, "i": i} for i, e in enumerate("aabaaabb", start=1)]
    a1, a2, b3, a4, a5, a6, b7, b8 = s
    assert compare(s, [a2, a1, b3, a6, a4, a5, b8, b7], ab).equivalent is True
    assert compare(s, [a1, b3, a2, a4, a5, a6, b7, b8], ab).equivalent is False
    assert compare(s, [a1, a2, a4, b3, a5, a6, b7, b8], ab).equivalent is False
    assert compare(s, [a1, a2, b3, a4, a5, b7, a6, b8], ab).equivalent is False
    # the two leftmost elements are the minimal ones: either may come first
    assert compare(s, [a2, a1, *s[2:]], ab).equivalent is True
