"""The matcher against the brute-force oracle (``tests/oracle.py``), over every dependence form.

Each form comes with its own *specification*: ``depends`` written here from the design's
words, independently of ``matcher.dependence`` (a test first checks that the two agree on
every generated pair). Equalities likewise come with a specification written here. The
oracle only ever sees these specifications.

Streams are short (at most six events, so the oracle stays brute force) and drawn from
small alphabets, so that equal events, shared keys and collisions are common. The candidate
is either a random stream, or the reference walked through random swaps of adjacent
independent events with events replaced by equal ones (equivalent by construction),
optionally followed by one fault (drop, duplicate, alter, swap any adjacent pair, insert).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import oracle
import pytest
from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from matcher import Equality, StreamMatcher, Tolerance, compare
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

Event = dict[str, Any]
Spec = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]

ABSENT = object()  # a payload "value": the column is left out of the event
MAX_LENGTH = 6
MAX_LENGTH_PREFIXES = 5  # the prefix oracle enumerates partial matchings


def nan() -> float:
    """A fresh NaN object each time: equality must not rely on ``is``."""
    return float("nan")


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def same(a: Any, b: Any, nan_equal: bool = True) -> bool:
    """Value equality in which NaN equals NaN (when ``nan_equal``)."""
    if is_nan(a) and is_nan(b):
        return nan_equal
    return bool(a == b)


# ---------------------------------------------------------------------------------------------
# Equalities: the matcher's ``Equality``, its specification, and how to draw payloads


@dataclass(frozen=True)
class EqualityCase:
    name: str
    equality: Equality | None
    spec: Spec
    # Each payload column: its equivalence classes of values (each a list of members).
    payload: Mapping[str, list[list[Any]]]
    transitive: bool = True


def _spec_plain(
    a: Mapping[str, Any], b: Mapping[str, Any], ignore: frozenset[str] = frozenset()
) -> bool:
    # An absent column reads as null (Spark's JSON writer drops null fields).
    keys = (a.keys() | b.keys()) - ignore
    return all(same(a.get(k), b.get(k)) for k in keys)


def _spec_ignore(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _spec_plain(a, b, frozenset({"note"}))


def _spec_tolerance(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(
        abs(a[k] - b[k]) <= 0.5 if k == "x" else same(a.get(k), b.get(k))
        for k in a.keys() | b.keys()
    )


def _spec_normalize(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(
        a[k].strip().lower() == b[k].strip().lower() if k == "s" else same(a.get(k), b.get(k))
        for k in a.keys() | b.keys()
    )


def _spec_nan_unequal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(same(a.get(k), b.get(k), nan_equal=False) for k in a.keys() | b.keys())


EQUALITIES = [
    EqualityCase("plain", None, _spec_plain, {"v": [[0], [1]]}),
    EqualityCase(
        "ignore",
        Equality(ignore=frozenset({"note"})),
        _spec_ignore,
        {"v": [[0], [1]], "note": [["p", "q", "r"]]},
    ),
    # A grid on which |a - b| <= 0.5 is an equivalence: {0, 0.1} and {5}.
    EqualityCase(
        "tolerance",
        Equality(tolerance={"x": Tolerance(abs=0.5)}),
        _spec_tolerance,
        {"x": [[0.0, 0.1], [5.0]]},
    ),
    EqualityCase(
        "normalize",
        Equality(normalize={"s": ("trim", "lower")}),
        _spec_normalize,
        {"s": [["a", " a", "A ", " A"], ["b"]]},
    ),
    EqualityCase("nan", Equality(nan_equal=True), _spec_plain, {"x": [[1.0], ["NaN"]]}),
    # NaN equal to nothing: not reflexive, so not an equivalence; the verdict still holds
    # (such an event can never be matched) but the prefix theory is not checked.
    EqualityCase(
        "nan_unequal",
        Equality(nan_equal=False),
        _spec_nan_unequal,
        {"x": [[1.0], ["NaN"]]},
        transitive=False,
    ),
]
EQUALITY_BY_NAME = {case.name: case for case in EQUALITIES}
# An absent column reads as null (Spark's JSON writer drops null fields); kept apart so that
# its own test says what fails.
ABSENT_IS_NULL = EqualityCase(
    "absent_is_null", None, _spec_plain, {"v": [[0], [1]], "z": [[None, ABSENT], [2]]}
)


def _member(value: Any) -> Any:
    return nan() if value == "NaN" else value


@st.composite
def payloads(draw: st.DrawFn, case: EqualityCase) -> Event:
    drawn = {
        column: _member(draw(st.sampled_from(draw(st.sampled_from(classes)))))
        for column, classes in case.payload.items()
    }
    return {column: value for column, value in drawn.items() if value is not ABSENT}


def _equal_variant(draw: st.DrawFn, case: EqualityCase, event_: Event) -> Event:
    """``event_`` with each payload value replaced by a member of its class."""
    out = dict(event_)
    for column, classes in case.payload.items():
        value = event_.get(column, ABSENT)
        for members in classes:
            if any(value is m or same(value, _member(m)) for m in members):
                member = _member(draw(st.sampled_from(members)))
                if member is ABSENT:
                    out.pop(column, None)
                else:
                    out[column] = member
                break
    return out


# ---------------------------------------------------------------------------------------------
# Dependence forms: the matcher's relation, its specification, and the dependence columns


@dataclass(frozen=True)
class Form:
    name: str
    make: Callable[[], Any]
    spec: Spec
    base: st.SearchStrategy[Event]


def _is(kind: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda e: e.get("kind") == kind


_keys3 = st.sampled_from([0, 1, 2])
_keys_nan = st.one_of(st.sampled_from([0, 1]), st.builds(nan))
_plain_event = st.fixed_dictionaries({"kind": st.just("E"), "k": _keys3})
_barrier_event = st.fixed_dictionaries({"kind": st.just("B")})
_with_barrier_events = st.one_of(_plain_event, _plain_event, _plain_event, _barrier_event)


def _spec_barriers(base: Spec) -> Spec:
    return lambda x, y: _is("B")(x) or _is("B")(y) or base(x, y)


def _spec_taxi(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    # The extended taxi example of DiffStream (Fig. 5 of the testing chapter).
    return (
        _is("EOD")(x)
        or _is("EOD")(y)
        or (_is("EOM")(x) and _is("EOM")(y))
        or (_is("taxi")(x) and _is("taxi")(y) and x["taxi_id"] == y["taxi_id"])
    )


def _spec_graph(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    """A: keyed, ordered per key; A-B same key only; B-C always; D ordered (unkeyed);
    B, C unordered among themselves; everything else independent."""
    a, b = x["kind"], y["kind"]
    pair = {a, b}
    if a == b == "A":
        return bool(x["k"] == y["k"])
    if pair == {"A", "B"}:
        return bool(x["k"] == y["k"])
    if pair == {"B", "C"}:
        return True
    return a == b == "D"


def _spec_punctuation(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return bool((_is("P")(x) and y["ts"] < x["ts"]) or (_is("P")(y) and x["ts"] < y["ts"]))


def _spec_sign(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    both_negative = x["n"] < 0 and y["n"] < 0
    both_positive = x["n"] > 0 and y["n"] > 0
    return not (both_negative or both_positive)


def _spec_near(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return abs(x["p"] - y["p"]) <= 1


def _graph_typed() -> Any:
    return typed(
        "kind",
        {"A": ["k"], "B": ["k"], "C": None, "D": None},
        [("A", "A"), ("A", "B", "same_key"), ("B", "C"), ("D", "D")],
    )


FORMS = [
    Form(
        "unordered",
        unordered,
        lambda x, y: False,
        st.fixed_dictionaries({"k": st.sampled_from([0, 1])}),
    ),
    Form(
        "ordered", ordered, lambda x, y: True, st.fixed_dictionaries({"k": st.sampled_from([0, 1])})
    ),
    Form(
        "by_key",
        lambda: by_key("k"),
        lambda x, y: x["k"] == y["k"],
        st.fixed_dictionaries({"k": _keys3}),
    ),
    Form(
        "by_key_nan_keys",
        lambda: by_key("k"),
        lambda x, y: same(x["k"], y["k"]),
        st.fixed_dictionaries({"k": _keys_nan}),
    ),
    Form(
        "by_key_two_columns",
        lambda: by_key("k", "j"),
        lambda x, y: same(x["k"], y["k"]) and same(x["j"], y["j"]),
        st.fixed_dictionaries({"k": st.sampled_from([0, 1]), "j": st.sampled_from(["a", "b"])}),
    ),
    Form(
        "barriers_by_key",
        lambda: with_barriers(by_key("k"), column_equals("kind", "B"), columns=["kind"]),
        _spec_barriers(lambda x, y: x["k"] == y["k"]),
        _with_barrier_events,
    ),
    Form(
        "barriers_ordered",
        lambda: with_barriers(ordered(), column_equals("kind", "B"), columns=["kind"]),
        lambda x, y: True,
        _with_barrier_events,
    ),
    Form(
        "barriers_unordered",
        lambda: with_barriers(unordered(), column_equals("kind", "B"), columns=["kind"]),
        _spec_barriers(lambda x, y: False),
        _with_barrier_events,
    ),
    Form(
        "typed_taxi",
        lambda: typed(
            "kind",
            {"taxi": ["taxi_id"], "EOD": None, "EOM": None},
            [("taxi", "taxi"), ("EOD", "*"), ("EOM", "EOM")],
        ),
        _spec_taxi,
        st.one_of(
            st.fixed_dictionaries({"kind": st.just("taxi"), "taxi_id": _keys3}),
            st.fixed_dictionaries({"kind": st.just("taxi"), "taxi_id": _keys3}),
            st.fixed_dictionaries({"kind": st.just("EOD")}),
            st.fixed_dictionaries({"kind": st.just("EOM")}),
        ),
    ),
    Form(
        "typed_graph",
        _graph_typed,
        _spec_graph,
        st.one_of(
            st.fixed_dictionaries(
                {"kind": st.sampled_from(["A", "B"]), "k": st.sampled_from([0, 1])}
            ),
            st.fixed_dictionaries({"kind": st.sampled_from(["C", "D"])}),
        ),
    ),
    Form(
        "punctuation",
        lambda: punctuation(column_equals("kind", "P"), "ts", columns=["kind"]),
        _spec_punctuation,
        st.fixed_dictionaries(
            {"kind": st.sampled_from(["E", "E", "P"]), "ts": st.sampled_from([0, 1, 2])}
        ),
    ),
    Form(
        "predicate_sign",
        lambda: predicate(_spec_sign_copy, columns=["n"]),
        _spec_sign,
        st.fixed_dictionaries({"n": st.integers(-2, 2)}),
    ),
    Form(
        "predicate_near_opaque",
        lambda: predicate(lambda x, y: abs(x["p"] - y["p"]) < 2),
        _spec_near,
        st.fixed_dictionaries({"p": st.integers(0, 4)}),
    ),
]
FORM_IDS = [form.name for form in FORMS]
KEYED_FORMS = {"ordered", "by_key", "by_key_nan_keys", "by_key_two_columns"}  # per-key queues


def _spec_sign_copy(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    """What a user would write: both negative or both positive are independent."""
    return not ((x["n"] < 0 and y["n"] < 0) or (x["n"] > 0 and y["n"] > 0))


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class Case:
    form: Form
    eq: EqualityCase
    reference: list[Event]
    candidate: list[Event]

    def dependence(self) -> Any:
        return self.form.make()

    def oracle_equivalent(self) -> bool:
        return oracle.equivalent(self.reference, self.candidate, self.form.spec, self.eq.spec)


@st.composite
def events(draw: st.DrawFn, form: Form, eq: EqualityCase) -> Event:
    return {**draw(form.base), **draw(payloads(eq))}


@st.composite
def cases(
    draw: st.DrawFn,
    form: Form,
    max_length: int = MAX_LENGTH,
    equalities: list[EqualityCase] = EQUALITIES,
) -> Case:
    eq = draw(st.sampled_from(equalities))
    reference = draw(st.lists(events(form, eq), max_size=max_length))
    mode = draw(st.sampled_from(["random", "walk", "walk", "walk_fault", "walk_fault"]))
    if mode == "random":
        size = draw(st.sampled_from([len(reference), len(reference), max(0, len(reference) - 1)]))
        candidate = draw(st.lists(events(form, eq), min_size=size, max_size=size))
        return Case(form, eq, reference, candidate)
    candidate = list(reference)
    for _ in range(draw(st.integers(0, 2 * len(candidate)))):
        if len(candidate) < 2:
            break
        t = draw(st.integers(0, len(candidate) - 2))
        if not form.spec(candidate[t], candidate[t + 1]):
            candidate[t], candidate[t + 1] = candidate[t + 1], candidate[t]
    candidate = [_equal_variant(draw, eq, e) for e in candidate]
    if mode == "walk_fault":
        fault = draw(st.sampled_from(["drop", "duplicate", "alter", "swap", "insert"]))
        if fault == "insert" or not candidate:
            candidate.insert(draw(st.integers(0, len(candidate))), draw(events(form, eq)))
        else:
            t = draw(st.integers(0, len(candidate) - 1))
            if fault == "drop":
                del candidate[t]
            elif fault == "duplicate":
                candidate.insert(t, dict(candidate[t]))
            elif fault == "alter":
                candidate[t] = draw(events(form, eq))
            elif t + 1 < len(candidate):
                candidate[t], candidate[t + 1] = candidate[t + 1], candidate[t]
    return Case(form, eq, reference, candidate[: max_length + 1])


def _interleavings(case: Case) -> st.SearchStrategy[list[str]]:
    sides = ["reference"] * len(case.reference) + ["candidate"] * len(case.candidate)
    return st.permutations(sides)


def _connected(case: Case, sides: list[str]) -> list[tuple[str, Event]]:
    streams = {"reference": iter(case.reference), "candidate": iter(case.candidate)}
    return [(side, next(streams[side])) for side in sides]


def _check_specs_agree(case: Case) -> None:
    """The matcher's ``depends`` and ``equal`` agree with the specifications used by the oracle."""
    dependence = case.dependence()
    equality = case.eq.equality or Equality()
    everything = case.reference + case.candidate
    for x in everything:
        for y in everything:
            assert dependence.depends(x, y) == case.form.spec(x, y), (x, y)
            assert equality.equal(x, y) == case.eq.spec(x, y), (x, y)


# ---------------------------------------------------------------------------------------------
# The oracle itself


def test_oracle_examples_from_the_paper() -> None:
    a, b, c = {"n": "a"}, {"n": "b"}, {"n": "c"}

    def a_b_c_b(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
        return {x["n"], y["n"]} in ({"a", "b"}, {"c", "b"})

    def also_a_c(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
        return a_b_c_b(x, y) or {x["n"], y["n"]} == {"a", "c"}

    eq = _spec_plain
    # Example 4.2
    assert oracle.equivalent([a, c, b], [c, a, b], a_b_c_b, eq) is True
    assert oracle.equivalent_by_matching([a, c, b], [c, a, b], a_b_c_b, eq) is True
    assert oracle.equivalent([a, c, b], [c, a, b], also_a_c, eq) is False
    assert oracle.equivalent_by_matching([a, c, b], [c, a, b], also_a_c, eq) is False
    # Example 4.3: <a, a, b> against <a, b> with a D b can never be completed.
    ab = lambda x, y: {x["n"], y["n"]} == {"a", "b"}  # noqa: E731
    assert oracle.extendable([a, a, b], [a, b], ab, eq) is False
    assert oracle.extendable([a, a], [a, b], ab, eq) is False
    assert oracle.extendable([a, a], [a], ab, eq) is True
    # Example 4.4: the connected stream <(a,1), (c,2), ...> is distinguishable at (c,2) iff a D c.
    connected = [
        ("reference", a),
        ("candidate", c),
        ("reference", c),
        ("reference", b),
        ("candidate", a),
        ("candidate", b),
    ]
    assert oracle.first_distinguishing_index(connected, a_b_c_b, eq) is None
    assert oracle.first_distinguishing_index(connected, also_a_c, eq) == 1
    # Example 4.1's stream, against itself with the last two events swapped (both b, fine)
    # and with a b moved before an a (not fine).
    s = [a, a, b, a, a, a, b, b]
    assert oracle.equivalent(s, [a, a, b, a, a, a, b, b], ab, eq) is True
    assert oracle.equivalent(s, [a, a, b, a, a, b, a, b], ab, eq) is False
    assert oracle.equivalent(s, [a, b, a, a, a, a, b, b], ab, eq) is False


def test_oracle_reachable_orders_counts() -> None:
    events_ = [{"i": i} for i in range(4)]
    assert len(list(oracle.reachable_orders(events_, lambda x, y: False))) == 24
    assert list(oracle.reachable_orders(events_, lambda x, y: True)) == [(0, 1, 2, 3)]
    # 0 D 1 and 2 D 3 only: the linear extensions of two 2-chains, C(4, 2) = 6.
    pairs = ({0, 1}, {2, 3})
    assert len(list(oracle.reachable_orders(events_, lambda x, y: {x["i"], y["i"]} in pairs))) == 6


def test_oracle_minimal_unmatched_examples() -> None:
    a, b = {"n": "a"}, {"n": "b"}
    ab = lambda x, y: {x["n"], y["n"]} == {"a", "b"}  # noqa: E731
    assert oracle.minimal_unmatched([a, b], [b], ab, _spec_plain) == 3
    assert oracle.minimal_unmatched([a, b], [a], ab, _spec_plain) == 1
    assert oracle.minimal_unmatched([a, a], [a], ab, _spec_plain) == 1
    assert oracle.minimal_unmatched([], [], ab, _spec_plain) == 0


@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
@given(data=st.data())
def test_oracle_views_agree(form: Form, data: st.DataObject) -> None:
    """Swap search, the matching definition and the prefix characterisation agree."""
    case = data.draw(cases(form, max_length=MAX_LENGTH_PREFIXES))
    if not case.eq.transitive:
        return
    r, c, dep, eq = case.reference, case.candidate, form.spec, case.eq.spec
    expected = oracle.equivalent(r, c, dep, eq)
    assert oracle.equivalent_by_matching(r, c, dep, eq) == expected
    full = any(not u1 and not u2 for _, u1, u2 in oracle._matched_prefixes(r, c, dep, eq))
    assert full == expected
    if expected:
        assert oracle.extendable(r, c, dep, eq)
        assert oracle.minimal_unmatched(r, c, dep, eq) == 0


# ---------------------------------------------------------------------------------------------
# The matcher against the oracle


@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
@given(data=st.data())
def test_compare_agrees_with_oracle(form: Form, data: st.DataObject) -> None:
    case = data.draw(cases(form))
    _check_specs_agree(case)
    expected = case.oracle_equivalent()
    event(f"equivalent={expected}")
    verdict = compare(case.reference, case.candidate, case.dependence(), case.eq.equality)
    assert verdict.equivalent == expected
    assert verdict.reference_count == len(case.reference)
    assert verdict.candidate_count == len(case.candidate)
    total = sum(verdict.counts.values())
    if expected:
        assert verdict.divergences == ()
        assert verdict.divergence is None
        assert total == 0
        assert verdict.detected_at is None
        assert verdict.matched_count == len(case.reference)
    else:
        assert verdict.divergence is not None
        assert verdict.divergence == verdict.divergences[0]
        assert total >= 1
        assert len(verdict.divergences) == total  # default limit 100 is never reached here
        positions = [d.position for d in verdict.divergences]
        assert positions == sorted(positions)
    assert verdict.to_dict()["equivalent"] is expected


@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
@given(data=st.data())
def test_compare_agrees_with_oracle_when_absent_is_null(form: Form, data: st.DataObject) -> None:
    case = data.draw(cases(form, equalities=[ABSENT_IS_NULL]))
    _check_specs_agree(case)
    verdict = compare(case.reference, case.candidate, case.dependence(), case.eq.equality)
    assert verdict.equivalent == case.oracle_equivalent()


@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
@given(data=st.data())
def test_stream_matcher_any_interleaving(form: Form, data: st.DataObject) -> None:
    """Pushing in any interleaving gives the oracle's verdict; the state is the minimal one
    until the streams are proven distinguishable, which happens exactly at the first
    finitely distinguishable prefix (Theorems 4.8 and 4.9).

    Under a tolerance, forms other than ``ordered``/``by_key`` decide only at the end
    (``matcher.pairing``: a tolerance need not be transitive), so they prove nothing online.
    """
    case = data.draw(cases(form, max_length=MAX_LENGTH_PREFIXES))
    sides = data.draw(_interleavings(case))
    connected = _connected(case, sides)
    dep, eq = form.spec, case.eq.spec
    theory = case.eq.transitive
    deferred = case.eq.name == "tolerance" and form.name not in KEYED_FORMS
    proof = oracle.first_distinguishing_index(connected, dep, eq) if theory else None

    matcher = StreamMatcher(case.dependence(), case.eq.equality)
    pushed: dict[str, list[Event]] = {"reference": [], "candidate": []}
    first_false: int | None = None
    observed_unmatched = [0]
    for index, (side, ev) in enumerate(connected):
        ok = matcher.push(side, ev)
        pushed[side].append(ev)
        if first_false is not None:
            assert ok is False  # once divergent, always divergent
        elif not ok:
            first_false = index
        assert matcher.divergent is (first_false is not None)
        assert matcher.detected_at == first_false
        assert 0 <= matcher.unmatched_count <= index + 1
        observed_unmatched.append(matcher.unmatched_count)
        if theory and first_false is None and (proof is None or index < proof):
            assert matcher.unmatched_count == oracle.minimal_unmatched(
                pushed["reference"], pushed["candidate"], dep, eq
            )
    verdict = matcher.finish()

    expected = case.oracle_equivalent()
    event(f"equivalent={expected}")
    assert verdict.equivalent == expected
    assert (
        verdict.equivalent
        == compare(case.reference, case.candidate, case.dependence(), case.eq.equality).equivalent
    )
    assert verdict.detected_at == first_false
    if theory:
        assert first_false == (None if deferred else proof)
    if first_false is not None:
        assert verdict.equivalent is False
    assert verdict.peak_unmatched == max(observed_unmatched)
    if verdict.equivalent:
        assert matcher.unmatched_count == 0
        assert verdict.matched_count == len(case.reference)
        assert sum(verdict.counts.values()) == 0
    else:
        assert len(verdict.divergences) >= 1
        assert sum(verdict.counts.values()) >= 1
    assert matcher.finish() is verdict  # finish() is idempotent


@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
def test_generated_cases_cover_both_outcomes(form: Form) -> None:
    """The generators are not degenerate: over a fixed seed, each form gives plenty of
    equivalent and plenty of divergent cases, and exercises every equality."""
    outcomes: Counter[bool] = Counter()
    equalities: Counter[str] = Counter()

    @settings(max_examples=300, derandomize=True, database=None, phases=[Phase.generate])
    @given(case=cases(form))
    def run(case: Case) -> None:
        outcomes[case.oracle_equivalent()] += 1
        equalities[case.eq.name] += 1

    run()
    total = sum(outcomes.values())
    assert total >= 250
    assert outcomes[True] >= total // 5, outcomes
    assert outcomes[False] >= total // 5, outcomes
    assert set(equalities) == set(EQUALITY_BY_NAME), equalities


# ---------------------------------------------------------------------------------------------
# Long keyed streams: the fast path of ``compare`` and the re-synchronisation of diverged keys
# against a second independent oracle (per-key projections, which is what trace equivalence
# means when the dependence is "same key")


def _projections(stream: list[Event], key: Callable[[Event], Any]) -> dict[Any, list[Event]]:
    out: dict[Any, list[Event]] = {}
    for e in stream:
        out.setdefault(key(e), []).append(e)
    return out


def keyed_equivalent(
    reference: list[Event], candidate: list[Event], key: Callable[[Event], Any], equal: Spec
) -> bool:
    ref, cand = _projections(reference, key), _projections(candidate, key)
    return ref.keys() == cand.keys() and all(
        len(ref[k]) == len(cand[k])
        and all(equal(a, b) for a, b in zip(ref[k], cand[k], strict=True))
        for k in ref
    )


@st.composite
def long_keyed_cases(draw: st.DrawFn) -> tuple[list[Event], list[Event]]:
    keys = draw(st.integers(1, 3))
    size = draw(st.integers(0, 300))
    reference = [{"k": draw(st.integers(0, keys - 1)), "v": i % 7} for i in range(size)]
    candidate = [dict(e) for e in reference]
    # a legal shuffle: a stable sort on a random per-key-block rank keeps each key's order
    if draw(st.booleans()) and keys > 1:
        ranks = {k: draw(st.integers(0, 3)) for k in range(keys)}
        candidate.sort(key=lambda e: ranks[e["k"]])
    for _ in range(draw(st.integers(0, 3))):
        fault = draw(st.sampled_from(["drop", "duplicate", "alter", "move"]))
        if not candidate:
            break
        t = draw(st.integers(0, len(candidate) - 1))
        if fault == "drop":
            del candidate[t]
        elif fault == "duplicate":
            candidate.insert(t, dict(candidate[t]))
        elif fault == "alter":
            candidate[t] = {**candidate[t], "v": 9}
        else:
            moved = candidate.pop(t)
            candidate.insert(draw(st.integers(0, len(candidate))), moved)
    return reference, candidate


LONG_FORMS = {
    "by_key": (lambda: by_key("k"), lambda e: e["k"]),
    "ordered": (ordered, lambda e: ()),
}


@pytest.mark.parametrize(
    "equality", [None, Equality(ignore=frozenset({"note"}))], ids=["plain", "rules"]
)
@pytest.mark.parametrize("form", list(LONG_FORMS))
@given(case=long_keyed_cases())
def test_long_keyed_streams_against_projections(
    form: str, equality: Equality | None, case: tuple[list[Event], list[Event]]
) -> None:
    reference, candidate = case
    make, key = LONG_FORMS[form]
    expected = keyed_equivalent(reference, candidate, key, _spec_plain)
    event(f"equivalent={expected}")
    verdict = compare(reference, candidate, make(), equality)
    assert verdict.equivalent == expected
    assert verdict.reference_count == len(reference)
    assert verdict.candidate_count == len(candidate)
    if expected:
        assert sum(verdict.counts.values()) == 0
        assert verdict.matched_count == len(reference)
    else:
        assert sum(verdict.counts.values()) >= 1
        assert verdict.divergences


@pytest.mark.parametrize("form", list(LONG_FORMS))
@given(case=long_keyed_cases(), data=st.data())
def test_long_keyed_streams_pushed_in_any_order(
    form: str, case: tuple[list[Event], list[Event]], data: st.DataObject
) -> None:
    reference, candidate = case
    make, key = LONG_FORMS[form]
    expected = keyed_equivalent(reference, candidate, key, _spec_plain)
    matcher = StreamMatcher(make())
    r, c = iter(reference), iter(candidate)
    left = [len(reference), len(candidate)]
    pushed = 0
    divergent_since: int | None = None
    while left[0] or left[1]:
        side = 0 if not left[1] else 1 if not left[0] else data.draw(st.integers(0, 1))
        burst = data.draw(st.integers(1, 40))
        for _ in range(min(burst, left[side])):
            ok = matcher.push(("reference", "candidate")[side], next(r if side == 0 else c))
            left[side] -= 1
            pushed += 1
            if divergent_since is not None:
                assert ok is False
            elif not ok:
                divergent_since = pushed - 1
            assert matcher.unmatched_count <= pushed
    verdict = matcher.finish()
    assert verdict.equivalent == expected
    assert verdict.detected_at == divergent_since
    if expected:
        assert matcher.unmatched_count == 0
    else:
        assert sum(verdict.counts.values()) >= 1
