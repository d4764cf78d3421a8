"""``Equality``: the ≡ of DiffStream, as data (ignore, tolerance, NaN, normalisation, function),
with the column-level difference a corruption reports and the canonical value the multiset
pools hash on."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from matcher import Equality, SpecError, Tolerance, compare
from matcher.dependence import by_key, unordered
from matcher.equality import PLAIN

NAN = float("nan")


class Float(float):
    """A float subclass, as numpy's ``float64`` is: its NaN is still a NaN."""


# ---------------------------------------------------------------------------------------------
# Plain equality


def test_plain_equality_is_value_equality_over_all_columns() -> None:
    eq = Equality()
    assert eq.is_plain is True
    assert PLAIN.is_plain is True
    assert eq.equal({"a": 1, "b": "x"}, {"b": "x", "a": 1}) is True
    assert eq.equal({"a": 1, "b": "x"}, {"a": 1, "b": "y"}) is False
    assert eq.equal({"a": [1, 2]}, {"a": [1, 2]}) is True
    assert eq.equal({"a": [1, 2]}, {"a": [2, 1]}) is False


def test_an_absent_column_reads_as_null() -> None:
    """Spark's JSON writer drops null fields: absent and null are the same value."""
    eq = Equality()
    assert eq.equal({"a": 1}, {"a": 1, "b": None}) is True
    assert eq.equal({"a": 1, "b": None}, {"a": 1}) is True
    assert eq.equal({"a": 1}, {"a": 1, "b": 0}) is False
    assert eq.canonical({"a": 1}) == eq.canonical({"a": 1, "b": None})
    assert eq.differing_columns({"a": 1}, {"a": 1, "b": None}) == ()
    assert eq.differing_columns({"a": 1}, {"a": 1, "b": 0}) == ("b",)
    rules = Equality(ignore=frozenset({"t"}))
    assert rules.equal({"a": 1, "t": 1}, {"a": 1, "b": None}) is True
    assert rules.canonical({"a": 1, "t": 1}) == rules.canonical({"a": 1, "b": None})
    assert (
        compare([{"k": 1, "v": 1}], [{"k": 1, "v": 1, "z": None}], unordered()).equivalent is True
    )


def test_nan_equals_nan_by_default_and_not_when_disabled() -> None:
    a, b = {"x": float("nan"), "y": 1}, {"x": float("nan"), "y": 1}
    assert a["x"] is not b["x"]
    assert Equality().equal(a, b) is True
    assert Equality(nan_equal=True).equal(a, b) is True
    assert Equality(nan_equal=False).equal(a, b) is False
    assert Equality(nan_equal=False).equal(a, a) is False  # NaN equals nothing, itself included
    assert Equality().equal({"x": NAN}, {"x": 0.0}) is False
    assert Equality().equal({"x": [float("nan")]}, {"x": [float("nan")]}) is True
    assert Equality(nan_equal=False).equal({"x": [float("nan")]}, {"x": [float("nan")]}) is False
    # the same NaN object in both lists: Python's list equality would say equal by identity
    assert Equality(nan_equal=False).equal({"x": [NAN]}, {"x": [NAN]}) is False
    assert Equality(nan_equal=False).equal({"x": {"y": NAN}}, {"x": {"y": NAN}}) is False
    assert Equality().is_plain is True
    assert Equality(nan_equal=False).is_plain is False


def test_nan_in_a_tolerance_column() -> None:
    tol = {"x": Tolerance(abs=1.0)}
    assert Equality(tolerance=tol).equal({"x": NAN}, {"x": float("nan")}) is True
    assert Equality(tolerance=tol, nan_equal=False).equal({"x": NAN}, {"x": float("nan")}) is False
    assert Equality(tolerance=tol).equal({"x": NAN}, {"x": 0.0}) is False


# ---------------------------------------------------------------------------------------------
# Ignore


def test_ignored_columns_are_never_compared() -> None:
    eq = Equality(ignore=frozenset({"emitted_at"}))
    assert eq.is_plain is False
    assert eq.equal({"id": 1, "emitted_at": 10}, {"id": 1, "emitted_at": 99}) is True
    assert eq.equal({"id": 1, "emitted_at": 10}, {"id": 1}) is True  # absent on one side too
    assert eq.equal({"id": 1, "emitted_at": 10}, {"id": 2, "emitted_at": 10}) is False
    assert eq.loosened_columns == frozenset({"emitted_at"})


# ---------------------------------------------------------------------------------------------
# Tolerance


@pytest.mark.parametrize(
    ("tolerance", "a", "b", "expected"),
    [
        (Tolerance(abs=0.5), 1.0, 1.5, True),
        (Tolerance(abs=0.5), 1.0, 1.25, True),
        (Tolerance(abs=0.5), 1.0, 1.5001, False),
        (Tolerance(abs=0.5), -1.0, -0.5, True),
        (Tolerance(abs=0.5), 3, 3, True),
        (Tolerance(abs=0.5), 3, 4, False),
        (Tolerance(rel=0.1), 100.0, 110.0, True),  # 10 <= 0.1 * max(100, 110) = 11
        (Tolerance(rel=0.1), 100.0, 111.0, True),  # 11 <= 11.1
        (Tolerance(rel=0.1), 100.0, 112.0, False),  # 12 > 11.2
        (Tolerance(rel=0.1), 0.0, 0.001, False),  # relative to 0.001: 0.001 > 0.0001
        (Tolerance(abs=1.0, rel=0.01), 0.0, 1.0, True),  # by abs
        (Tolerance(abs=1.0, rel=0.01), 1000.0, 1010.0, True),  # by rel: 10 <= 10.1
        (Tolerance(abs=1.0, rel=0.01), 1000.0, 1011.0, False),  # 11 > 10.11 and > 1
        (Tolerance(), 1.0, 1.0, True),
        (Tolerance(), 1.0, 1.0000001, False),
        (Tolerance(abs=1e300), math.inf, math.inf, True),
        (Tolerance(abs=1e300), math.inf, 1e300, False),
        (Tolerance(abs=1e300), -math.inf, math.inf, False),
        # an integer beyond a double's range (JSON allows any) is an infinity, as Spark reads it
        (Tolerance(abs=0.5), 10**400, 10**400, True),
        (Tolerance(abs=0.5), 10**400, math.inf, True),
        (Tolerance(abs=0.5), -(10**400), 10**400, False),
        (Tolerance(abs=0.5), 10**400, 1e308, False),
        (Tolerance(abs=0.5), "a", "a", True),  # not numbers: plain ==
        (Tolerance(abs=0.5), "a", "b", False),
        (Tolerance(abs=0.5), None, 0.0, False),
        (Tolerance(abs=0.5), True, 1, False),  # a boolean is no number
        (Tolerance(abs=0.5), "1", 1, False),
        (Tolerance(abs=0.5), [1.0, "a"], [1.25, "a"], True),  # inside an array too
        (Tolerance(abs=0.5), {"p": [3]}, {"p": [3.5]}, True),
        (Tolerance(abs=0.5), {"p": [3]}, {"p": [3.6]}, False),
    ],
)
def test_tolerance(tolerance: Tolerance, a: Any, b: Any, expected: bool) -> None:
    eq = Equality(tolerance={"x": tolerance})
    assert eq.equal({"x": a, "id": 1}, {"x": b, "id": 1}) is expected
    assert eq.equal({"x": b, "id": 1}, {"x": a, "id": 1}) is expected  # symmetric
    # the tolerance is on "x" only
    assert eq.equal({"x": a, "id": 1.0}, {"x": a, "id": 1.25}) is False


@pytest.mark.parametrize(
    "bad", [{"abs": -0.1}, {"rel": -1.0}, {"abs": math.nan}, {"rel": math.nan}]
)
def test_tolerance_must_be_non_negative(bad: dict[str, float]) -> None:
    with pytest.raises(SpecError):
        Tolerance(**bad)


# ---------------------------------------------------------------------------------------------
# Normalisation


def test_normalize_trim_and_case() -> None:
    eq = Equality(normalize={"s": ("trim", "lower")})
    assert eq.equal({"s": "  Ab ", "n": 1}, {"s": "ab", "n": 1}) is True
    assert eq.equal({"s": "a b", "n": 1}, {"s": "ab", "n": 1}) is False
    assert eq.equal({"s": "ab", "n": 1}, {"s": "ab", "n": 2}) is False
    assert eq.equal({"s": "ab", "t": "AB"}, {"s": "ab", "t": "ab"}) is False  # only "s"
    assert eq.equal({"s": 1}, {"s": 1}) is True  # non-strings compare as they are
    assert eq.equal({"s": None}, {"s": ""}) is False


def test_normalize_steps_and_all_columns() -> None:
    assert Equality(normalize={"s": ("upper",)}).equal({"s": "ab"}, {"s": "AB"}) is True
    assert Equality(normalize={"s": ("trim",)}).equal({"s": " ab"}, {"s": "AB"}) is False
    assert Equality(normalize={"s": ("casefold",)}).equal({"s": "Straße"}, {"s": "STRASSE"}) is True
    assert Equality(normalize={"s": ("lower",)}).equal({"s": "Straße"}, {"s": "STRASSE"}) is False
    everything = Equality(normalize={"*": ("trim", "lower")})
    assert everything.equal({"a": " X", "b": "Y "}, {"a": "x", "b": "y"}) is True
    assert everything.equal({"a": " X", "b": "Y "}, {"a": "x", "b": "z"}) is False


def test_unknown_normalisation_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match=r"normalize\.s: unknown step 'reverse'"):
        Equality(normalize={"s": ("trim", "reverse")})


# ---------------------------------------------------------------------------------------------
# A user function


def test_function_replaces_the_rules() -> None:
    eq = Equality(function=lambda a, b: a["id"] == b["id"], ignore=frozenset({"id"}))
    assert eq.is_plain is False
    assert eq.equal({"id": 1, "v": 1}, {"id": 1, "v": 2}) is True
    assert eq.equal({"id": 1, "v": 1}, {"id": 2, "v": 1}) is False
    assert eq.canonical({"id": 1}) is None  # no hash can be promised for a function


def test_function_drives_the_matcher() -> None:
    eq = Equality(function=lambda a, b: a["id"] == b["id"])
    ref = [{"id": 1, "v": 1}, {"id": 2, "v": 2}]
    assert compare(ref, [{"id": 2, "v": 0}, {"id": 1, "v": 0}], unordered(), eq).equivalent is True
    assert compare(ref, [{"id": 2, "v": 0}, {"id": 3, "v": 0}], unordered(), eq).equivalent is False


# ---------------------------------------------------------------------------------------------
# Differing columns (the corruption witness)


def test_differing_columns_in_reference_order_then_candidate_extras() -> None:
    eq = Equality(ignore=frozenset({"t"}), tolerance={"x": Tolerance(abs=0.5)})
    a = {"c": 1, "x": 1.0, "b": "p", "t": 5, "a": 0}
    b = {"a": 9, "x": 1.4, "b": "q", "t": 6, "c": 1, "z": 0}
    assert eq.differing_columns(a, b) == ("b", "a", "z")
    assert eq.differing_columns(a, dict(a)) == ()
    assert eq.differing_columns({"x": 1.0}, {"x": 2.0}) == ("x",)
    assert eq.differing_columns({"k": 1}, {}) == ("k",)
    assert Equality().differing_columns({"x": NAN}, {"x": float("nan")}) == ()
    assert Equality(nan_equal=False).differing_columns({"x": NAN}, {"x": NAN}) == ("x",)
    assert Equality(normalize={"s": ("lower",)}).differing_columns({"s": "A"}, {"s": "a"}) == ()


# ---------------------------------------------------------------------------------------------
# Canonical values: equal events hash alike


EQUALITIES = {
    "plain": Equality(),
    "ignore": Equality(ignore=frozenset({"t"})),
    "tolerance": Equality(tolerance={"x": Tolerance(abs=0.5)}),
    "normalize": Equality(normalize={"s": ("trim", "lower")}),
    "normalize_all": Equality(normalize={"*": ("trim", "lower")}),
    "nan_unequal": Equality(nan_equal=False),
}

_values = st.one_of(
    st.sampled_from([0, 1, 0.0, 0.3, 1.0, 5.0, "a", " A", "a ", "b", None]),
    st.builds(lambda: float("nan")),
    st.lists(st.sampled_from([0, 1, "a"]), max_size=2),
)
_events = st.dictionaries(st.sampled_from(["s", "t", "x"]), _values, min_size=1, max_size=3)


@st.composite
def _near(draw: st.DrawFn, event: dict[str, Any]) -> dict[str, Any]:
    """An event likely equal to ``event`` under some equality: nulls dropped or added,
    strings re-spaced or re-cased, numbers nudged, fresh NaN objects, some columns redrawn."""
    out: dict[str, Any] = {}
    for column, value in event.items():
        change = draw(st.sampled_from(["keep", "keep", "drop_null", "respell", "nudge", "redraw"]))
        if change == "drop_null" and value is None:
            continue
        if change == "respell" and isinstance(value, str):
            value = draw(
                st.sampled_from([value.strip(), f" {value}", value.upper(), value.lower()])
            )
        elif change == "nudge" and isinstance(value, float):
            value = (
                float("nan") if value != value else value + draw(st.sampled_from([0.0, 0.2, 1.0]))
            )
        elif change == "redraw":
            value = draw(_values)
        out[column] = value
    if draw(st.booleans()):
        out[draw(st.sampled_from(["s", "t", "x", "y"]))] = (
            None if draw(st.booleans()) else draw(_values)
        )
    return out


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    a = draw(_events)
    b = draw(st.one_of(_events, _near(a)))
    return a, b


@pytest.mark.parametrize("name", list(EQUALITIES))
@given(pair=_pairs())
@example(pair=({"s": 0}, {"s": 0, "t": None}))
@example(pair=({"x": float("nan")}, {"x": Float("nan")}))
def test_equal_events_share_a_canonical_value(
    name: str, pair: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    a, b = pair
    eq = EQUALITIES[name]
    assert eq.equal(a, b) == eq.equal(b, a)
    if eq.equal(a, b):
        assert eq.canonical(a) == eq.canonical(b)
        assert eq.differing_columns(a, b) == ()
    else:
        assert eq.differing_columns(a, b) != ()
    hash(eq.canonical(a))


@pytest.mark.parametrize("name", ["plain", "ignore", "normalize"])
@given(pair=_pairs())
@example(pair=({"s": 0}, {"s": 0, "t": None}))
@example(pair=({"x": float("nan")}, {"x": Float("nan")}))
def test_unordered_matching_follows_equality(
    name: str, pair: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    a, b = pair
    eq = EQUALITIES[name]
    assert compare([a], [b], unordered(), eq).equivalent is eq.equal(a, b)


def test_canonical_values_for_known_events() -> None:
    plain = Equality()
    assert plain.canonical({"a": 1, "b": "x"}) == plain.canonical({"b": "x", "a": 1})
    assert plain.canonical({"a": 1}) != plain.canonical({"a": 2})
    assert plain.canonical({"x": float("nan")}) == plain.canonical({"x": float("nan")})
    ignore = Equality(ignore=frozenset({"t"}))
    assert ignore.canonical({"a": 1, "t": 1}) == ignore.canonical({"a": 1, "t": 2})
    norm = Equality(normalize={"s": ("trim", "lower")})
    assert norm.canonical({"s": " A"}) == norm.canonical({"s": "a"})
    tol = Equality(tolerance={"x": Tolerance(abs=0.5)})
    assert tol.canonical({"x": 0.0, "a": 1}) == tol.canonical({"x": 0.4, "a": 1})
    off = Equality(nan_equal=False)
    assert off.canonical({"x": NAN}) != off.canonical({"x": NAN})


def test_canonical_of_a_float_subclass_nan() -> None:
    a, b = {"x": Float("nan")}, {"x": Float("nan")}
    assert Equality().equal(a, b) is True
    assert Equality().canonical(a) == Equality().canonical(b)


def test_unordered_matches_float_subclass_nan() -> None:
    ref, cand = [{"x": Float("nan"), "k": 1}], [{"x": Float("nan"), "k": 1}]
    assert compare(ref, cand, unordered()).equivalent is True


def test_keyed_matching_of_float_subclass_nan() -> None:
    ref, cand = [{"x": Float("nan"), "k": 1}], [{"x": Float("nan"), "k": 1}]
    assert compare(ref, cand, by_key("k")).equivalent is True
    assert compare(ref, cand, by_key("x")).equivalent is True


def test_numpy_nan_under_unordered() -> None:
    np = pytest.importorskip("numpy")
    ref, cand = [{"x": np.float64("nan"), "k": 1}], [{"x": np.float64("nan"), "k": 1}]
    assert Equality().equal(ref[0], cand[0]) is True
    assert compare(ref, cand, unordered()).equivalent is True
