"""Tolerant matching (issue 10, item 1): equivalent whenever *some* pairing within tolerance
respects the dependence, whatever the order of the events.

A tolerance is not an equivalence (``1.0 ≈ 1.05 ≈ 1.1``, ``1.0 ≉ 1.1``), so the greedy
online matcher can pair wrongly; ``matcher.pairing`` decides at the end. The oracle
(``tests/oracle.py``) enumerates the pairings under its own tolerant equality
(``oracle.tolerant``), and the dependences are specified here again, so that neither reads
``matcher.equality`` or ``matcher.dependence``. Value pools are chosen so that chains of
near values (where greedy pairing goes wrong) are common, and none sits on a tolerance's
boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import oracle
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from matcher import Divergence, Equality, StreamMatcher, Tolerance, Verdict, compare
from matcher.dependence import (
    by_key,
    column_equals,
    ordered,
    punctuation,
    typed,
    unordered,
    with_barriers,
)
from matcher.pairing import Settled, hopcroft_karp, maximum_matching, settle
from matcher.pools import Entry

Event = dict[str, Any]
Spec = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
MAX_LENGTH = 6
EXAMPLES = 100  # per form: the suite must stay fast


@dataclass(frozen=True)
class Tolerant:
    name: str
    equality: Equality
    spec: Spec
    values: tuple[Any, ...]  # for column "n"


TOLERANCES = [
    # 0.0 ≈ 0.25 ≈ 0.5 but 0.0 ≉ 0.5: finite floats, the sorted path
    Tolerant(
        "abs_float",
        Equality(tolerance={"n": Tolerance(abs=0.3)}),
        oracle.tolerant({"n": (0.3, 0.0)}),
        (0.0, 0.25, 0.5, 0.75),
    ),
    Tolerant(
        "abs_int",
        Equality(tolerance={"n": Tolerance(abs=1.5)}),
        oracle.tolerant({"n": (1.5, 0.0)}),
        (0, 1, 2, 3),
    ),
    # 4 ≈ 5 ≈ 6 ≈ 7 relatively, 4 ≉ 6
    Tolerant(
        "rel",
        Equality(tolerance={"n": Tolerance(rel=0.21)}),
        oracle.tolerant({"n": (0.0, 0.21)}),
        (4.0, 5.0, 6.0, 7.0),
    ),
    # a null among the numbers: not all floats, so Hopcroft-Karp
    Tolerant(
        "abs_with_null",
        Equality(tolerance={"n": Tolerance(abs=0.3)}),
        oracle.tolerant({"n": (0.3, 0.0)}),
        (0.0, 0.25, 0.5, None),
    ),
    # two tolerant columns: Hopcroft-Karp
    Tolerant(
        "two_columns",
        Equality(tolerance={"n": Tolerance(abs=0.3), "m": Tolerance(abs=0.3)}),
        oracle.tolerant({"n": (0.3, 0.0), "m": (0.3, 0.0)}),
        (0.0, 0.25, 0.5),
    ),
]


def _is(kind: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda e: e.get("kind") == kind


@dataclass(frozen=True)
class Form:
    name: str
    make: Callable[[], Any]
    spec: Spec
    base: st.SearchStrategy[Event]
    exact: bool = True  # False: may fall back to the greedy verdict, with a warning


def _barriers(base: Spec) -> Spec:
    return lambda x, y: _is("B")(x) or _is("B")(y) or base(x, y)


_data = st.fixed_dictionaries({"kind": st.just("E"), "k": st.sampled_from([0, 1])})
_with_barriers = st.one_of(_data, _data, _data, st.fixed_dictionaries({"kind": st.just("B")}))

FORMS = [
    Form("unordered", unordered, lambda x, y: False, st.fixed_dictionaries({})),
    Form("ordered", ordered, lambda x, y: True, st.fixed_dictionaries({})),
    Form(
        "by_key",
        lambda: by_key("k"),
        lambda x, y: x["k"] == y["k"],
        st.fixed_dictionaries({"k": st.sampled_from([0, 1])}),
    ),
    Form(
        "barriers_unordered",
        lambda: with_barriers(unordered(), column_equals("kind", "B"), columns=["kind"]),
        _barriers(lambda x, y: False),
        _with_barriers,
    ),
    Form(
        "barriers_by_key",
        lambda: with_barriers(by_key("k"), column_equals("kind", "B"), columns=["kind"]),
        _barriers(lambda x, y: x["k"] == y["k"]),
        _with_barriers,
    ),
    Form(
        "typed_taxi",
        lambda: typed(
            "kind",
            {"taxi": ["taxi_id"], "EOD": None, "EOM": None},
            [("taxi", "taxi"), ("EOD", "*"), ("EOM", "EOM")],
        ),
        lambda x, y: (
            _is("EOD")(x)
            or _is("EOD")(y)
            or (_is("EOM")(x) and _is("EOM")(y))
            or (_is("taxi")(x) and _is("taxi")(y) and x["taxi_id"] == y["taxi_id"])
        ),
        st.one_of(
            st.fixed_dictionaries({"kind": st.just("taxi"), "taxi_id": st.sampled_from([0, 1])}),
            st.fixed_dictionaries({"kind": st.just("taxi"), "taxi_id": st.sampled_from([0, 1])}),
            st.fixed_dictionaries({"kind": st.sampled_from(["EOD", "EOM"])}),
        ),
    ),
    # Punctuations sharing a timestamp are independent of each other: when two such classes
    # depend on each other's neighbours the exact method does not apply (the bound).
    Form(
        "punctuation",
        lambda: punctuation(column_equals("kind", "P"), "ts", columns=["kind"]),
        lambda x, y: bool(
            (_is("P")(x) and y["ts"] < x["ts"]) or (_is("P")(y) and x["ts"] < y["ts"])
        ),
        st.fixed_dictionaries(
            {"kind": st.sampled_from(["E", "E", "P"]), "ts": st.sampled_from([0, 1, 2])}
        ),
        exact=False,
    ),
    # B and C are unordered types that depend on each other: outside the exact method.
    Form(
        "typed_graph",
        lambda: typed("kind", {"B": None, "C": None}, [("B", "C")]),
        lambda x, y: {x["kind"], y["kind"]} == {"B", "C"},
        st.fixed_dictionaries({"kind": st.sampled_from(["B", "C"])}),
        exact=False,
    ),
]
FORM_IDS = [f.name for f in FORMS]


@dataclass(frozen=True)
class Case:
    form: Form
    tol: Tolerant
    reference: list[Event]
    candidate: list[Event]

    def expected(self) -> bool:
        pairings = oracle.pairings(self.reference, self.candidate, self.form.spec, self.tol.spec)
        return next(pairings, None) is not None

    def verdict(
        self, reference: list[Event] | None = None, candidate: list[Event] | None = None
    ) -> Verdict:
        return compare(
            self.reference if reference is None else reference,
            self.candidate if candidate is None else candidate,
            self.form.make(),
            self.tol.equality,
        )


@st.composite
def _events(draw: st.DrawFn, form: Form, tol: Tolerant) -> Event:
    out = dict(draw(form.base))
    for column in tol.equality.tolerance:
        out[column] = draw(st.sampled_from(tol.values))
    if draw(st.booleans()):
        out["v"] = draw(st.sampled_from([0, 1]))  # an exact column: several classes
    return out


def _near(draw: st.DrawFn, tol: Tolerant, e: Event) -> Event:
    """``e`` with its tolerant values moved to values within tolerance of them."""
    out = dict(e)
    for column in tol.equality.tolerance:
        near = [v for v in tol.values if tol.spec({column: v}, {column: e[column]})]
        out[column] = draw(st.sampled_from(near))
    return out


def _walk(draw: Callable[..., Any], spec: Spec, stream: list[Event]) -> list[Event]:
    """``stream`` after random swaps of adjacent independent events."""
    out = list(stream)
    for _ in range(draw(st.integers(0, 2 * len(out)))):
        if len(out) < 2:
            break
        t = draw(st.integers(0, len(out) - 2))
        if not spec(out[t], out[t + 1]):
            out[t], out[t + 1] = out[t + 1], out[t]
    return out


@st.composite
def cases(draw: st.DrawFn, form: Form) -> Case:
    tol = draw(st.sampled_from(TOLERANCES))
    reference = draw(st.lists(_events(form, tol), max_size=MAX_LENGTH))
    mode = draw(st.sampled_from(["random", "near", "near", "near_fault"]))
    if mode == "random":
        candidate = draw(
            st.lists(_events(form, tol), min_size=len(reference), max_size=len(reference))
        )
        return Case(form, tol, reference, candidate)
    candidate = [_near(draw, tol, e) for e in _walk(draw, form.spec, reference)]
    if mode == "near_fault" and candidate:
        t = draw(st.integers(0, len(candidate) - 1))
        fault = draw(st.sampled_from(["drop", "alter", "insert"]))
        if fault == "drop":
            del candidate[t]
        elif fault == "alter":
            candidate[t] = draw(_events(form, tol))
        else:
            candidate.insert(t, draw(_events(form, tol)))
    return Case(form, tol, reference, candidate)


# ---------------------------------------------------------------------------------------------
# Worked examples, exact values


EQ = Equality(tolerance={"n": Tolerance(abs=0.1)})


def test_the_issue_example_is_equivalent_in_both_orders() -> None:
    ref, cand = [{"n": 1.0}, {"n": 1.1}], [{"n": 1.05}, {"n": 1.0}]
    for reference in (ref, ref[::-1]):
        for candidate in (cand, cand[::-1]):
            verdict = compare(reference, candidate, unordered(), EQ)
            assert (verdict.equivalent, verdict.matched_count, verdict.warnings) == (True, 2, ())


def test_a_divergence_names_what_a_maximum_matching_leaves() -> None:
    # 1.0 pairs 1.05 greedily, leaving 1.1 and 1.0 unmatched; the maximum matching pairs
    # 1.0-1.0 and 1.1-1.05, leaving only 0.7 against 1.3: one corruption, not two.
    reference = [{"n": 1.0}, {"n": 1.1}, {"n": 0.7}]
    candidate = [{"n": 1.05}, {"n": 1.3}, {"n": 1.0}]
    verdict = compare(reference, candidate, unordered(), EQ)
    assert verdict.equivalent is False
    assert verdict.matched_count == 2
    assert verdict.divergences == (
        Divergence("corruption", None, 2, 1, {"n": 0.7}, {"n": 1.3}, ("n",)),
    )


def test_a_chain_pairs_rank_by_rank() -> None:
    # Under ``ordered`` the only order-keeping pairing is rank to rank: 1.1 against 1.0.
    verdict = compare([{"n": 1.0}, {"n": 1.1}], [{"n": 1.05}, {"n": 1.0}], ordered(), EQ)
    assert (verdict.equivalent, verdict.detected_at, verdict.counts["corruption"]) == (
        False,
        3,
        1,
    )
    verdict = compare([{"n": 1.0}, {"n": 1.1}], [{"n": 1.05}, {"n": 1.15}], ordered(), EQ)
    assert verdict.equivalent is True


def test_barriers_pair_within_their_epoch() -> None:
    dependence = with_barriers(unordered(), column_equals("kind", "B"), columns=["kind"])
    reference = [
        {"kind": "E", "n": 1.0},
        {"kind": "E", "n": 1.1},
        {"kind": "B", "n": 0.0},
        {"kind": "E", "n": 2.0},
    ]
    candidate = [
        {"kind": "E", "n": 1.05},
        {"kind": "E", "n": 1.0},
        {"kind": "B", "n": 0.0},
        {"kind": "E", "n": 2.0},
    ]
    verdict = compare(reference, candidate, dependence, EQ)
    assert (verdict.equivalent, verdict.matched_count, verdict.warnings) == (True, 4, ())
    # the same values across the barrier: 1.1 before it, its partner 1.05 after it
    moved = [candidate[1], candidate[2], candidate[0], candidate[3]]
    assert compare(reference, moved, dependence, EQ).equivalent is False


def test_past_the_budget_the_greedy_verdict_stands_with_a_warning() -> None:
    def entries(values: list[float]) -> list[Entry]:
        return [Entry(i, {"n": v, "m": 0.0}, None) for i, v in enumerate(values)]

    # two tolerant columns: Hopcroft-Karp, 2 x 2 comparisons
    equality = Equality(tolerance={"n": Tolerance(abs=0.1), "m": Tolerance(abs=0.1)})
    seen = (entries([1.0, 1.1]), entries([1.05, 1.0]))
    greedy = ([seen[0][1]], [seen[1][1]])
    settled = settle(seen, greedy, unordered(), equality, budget=3)
    assert settled.left == greedy
    assert settled.warning == (
        "tolerant pairing: deciding exactly would take more than 3 comparisons; this is the "
        "greedy pairing's verdict, and a pairing within tolerance may exist"
    )
    assert settle(seen, greedy, unordered(), equality, budget=4) == Settled(([], []))


def test_two_dependent_unordered_classes_fall_back_with_a_warning() -> None:
    dependence = typed("kind", {"B": None, "C": None}, [("B", "C")])
    b1, b2, c = {"kind": "B", "n": 1.0}, {"kind": "B", "n": 1.1}, {"kind": "C", "n": 0.0}
    reference = [b1, b2, c, c]  # two Cs: an unordered class, not a chain
    candidate = [{"kind": "B", "n": 1.05}, {"kind": "B", "n": 1.0}, c, c]
    verdict = compare(reference, candidate, dependence, EQ)
    assert verdict.equivalent is False
    assert verdict.warnings == (
        "tolerant pairing: under typed(B, C), events of two unordered classes depend on each "
        "other; this is the greedy pairing's verdict, and a pairing within tolerance may exist",
    )


# ---------------------------------------------------------------------------------------------
# The oracle under a tolerance


@settings(max_examples=EXAMPLES)
@given(data=st.data())
@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
def test_oracle_views_agree_under_a_tolerance(form: Form, data: st.DataObject) -> None:
    """Enumerated pairings, the matching definition and the swap search agree."""
    case = data.draw(cases(form))
    r, c, dep, eq = case.reference, case.candidate, form.spec, case.tol.spec
    expected = case.expected()
    assert oracle.equivalent_by_matching(r, c, dep, eq) == expected
    assert oracle.equivalent(r, c, dep, eq) == expected


def test_oracle_tolerance_is_not_transitive() -> None:
    equal = oracle.tolerant({"n": (0.3, 0.0)})
    assert equal({"n": 0.0}, {"n": 0.25}) and equal({"n": 0.25}, {"n": 0.5})
    assert not equal({"n": 0.0}, {"n": 0.5})
    assert list(
        oracle.pairings([{"n": 0.0}, {"n": 0.5}], [{"n": 0.25}, {"n": 0.0}], _free, equal)
    ) == [(1, 0)]


def _free(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return False


# ---------------------------------------------------------------------------------------------
# The core against the oracle


@settings(max_examples=EXAMPLES)
@given(data=st.data())
@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
def test_compare_agrees_with_oracle_under_a_tolerance(form: Form, data: st.DataObject) -> None:
    case = data.draw(cases(form))
    expected = case.expected()
    event(f"equivalent={expected}")
    verdict = case.verdict()
    if form.exact or not verdict.warnings:
        assert verdict.equivalent == expected
        assert verdict.warnings == ()
    else:  # the bound: only ever a divergent verdict that says it may be wrong
        assert verdict.equivalent is False
    if verdict.equivalent:
        assert verdict.divergences == ()
        assert verdict.matched_count == len(case.reference)
        assert verdict.detected_at is None
    else:
        assert sum(verdict.counts.values()) >= 1


@settings(max_examples=EXAMPLES)
@given(data=st.data())
@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
def test_verdict_does_not_depend_on_the_order_the_dependence_leaves_free(
    form: Form, data: st.DataObject
) -> None:
    """Both streams reordered by swaps of adjacent independent events: the same verdict."""
    case = data.draw(cases(form))
    verdict = case.verdict()
    reordered = case.verdict(
        _walk(data.draw, form.spec, case.reference), _walk(data.draw, form.spec, case.candidate)
    )
    if form.exact or not (verdict.warnings or reordered.warnings):
        assert reordered.equivalent == verdict.equivalent == case.expected()


@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_unordered_matches_as_many_pairs_as_possible(data: st.DataObject) -> None:
    form = FORMS[0]
    case = data.draw(cases(form))
    shuffled = (
        data.draw(st.permutations(case.reference)),
        data.draw(st.permutations(case.candidate)),
    )
    largest = oracle.largest_pairing(case.reference, case.candidate, case.tol.spec)
    for reference, candidate in ((case.reference, case.candidate), shuffled):
        verdict = case.verdict(list(reference), list(candidate))
        assert verdict.matched_count == largest
        assert verdict.equivalent == (largest == len(case.reference) == len(case.candidate))


@settings(max_examples=EXAMPLES)
@given(data=st.data())
@pytest.mark.parametrize("form", FORMS[:4], ids=FORM_IDS[:4])
def test_any_interleaving_gives_the_oracle_verdict(form: Form, data: st.DataObject) -> None:
    case = data.draw(cases(form))
    sides = data.draw(
        st.permutations(["reference"] * len(case.reference) + ["candidate"] * len(case.candidate))
    )
    streams = {"reference": iter(case.reference), "candidate": iter(case.candidate)}
    matcher = StreamMatcher(form.make(), case.tol.equality)
    for side in sides:
        matcher.push(side, next(streams[side]))
    assert matcher.finish().equivalent == case.expected()


# ---------------------------------------------------------------------------------------------
# The matching itself: sorted pairing against Hopcroft-Karp, Hopcroft-Karp against brute force


def _entries(values: list[Any]) -> list[Entry]:
    return [Entry(i, {"n": v}, None) for i, v in enumerate(values)]


_floats = st.lists(st.integers(-40, 40).map(lambda i: i / 8), max_size=40)


@settings(max_examples=EXAMPLES)
@given(
    xs=_floats,
    ys=_floats,
    tolerance=st.sampled_from([0.0, 0.3, 0.6, 1.1]),
    rel=st.sampled_from([0.0, 0.05, 0.5, 0.9]),
)
def test_sorted_pairing_is_a_maximum_matching(
    xs: list[float], ys: list[float], tolerance: float, rel: float
) -> None:
    """Negative and positive values, absolute and relative tolerances (``rel < 1``)."""
    equality = Equality(tolerance={"n": Tolerance(abs=tolerance, rel=rel)})
    left = maximum_matching(_entries(xs), _entries(ys), equality)
    assert left is not None
    graph = [[j for j, y in enumerate(ys) if equality.equal({"n": x}, {"n": y})] for x in xs]
    pairs = sum(1 for j in hopcroft_karp(graph, len(ys)) if j >= 0)
    assert len(xs) - len(left[0]) == len(ys) - len(left[1]) == pairs


@settings(max_examples=EXAMPLES)
@given(
    xs=st.lists(st.sampled_from([0.0, 0.25, 0.5, None]), max_size=MAX_LENGTH),
    ys=st.lists(st.sampled_from([0.0, 0.25, 0.5, None]), max_size=MAX_LENGTH),
)
def test_hopcroft_karp_against_brute_force(xs: list[Any], ys: list[Any]) -> None:
    equality = Equality(tolerance={"n": Tolerance(abs=0.3)})
    left = maximum_matching(_entries(xs), _entries(ys), equality)
    assert left is not None
    largest = oracle.largest_pairing(
        [{"n": x} for x in xs], [{"n": y} for y in ys], oracle.tolerant({"n": (0.3, 0.0)})
    )
    assert len(xs) - len(left[0]) == len(ys) - len(left[1]) == largest


def test_hopcroft_karp_on_a_long_path() -> None:
    # x_i ~ y_i and x_i ~ y_(i+1): greedy on the wrong edges needs one long augmenting path
    n = 3000
    graph = [[i + 1, i] if i + 1 < n else [i] for i in range(n)]
    assert sorted(hopcroft_karp(graph, n)) == list(range(n))
