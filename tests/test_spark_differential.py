"""The Spark matcher against the core matcher, on the same streams, for every dependence form.

Hypothesis draws a reference stream from a small alphabet (so that equal events, shared
keys, nulls and NaN are common), walks it through swaps of adjacent independent events
(equivalent by construction) and then applies up to three faults (drop, duplicate, alter,
swap any adjacent pair, insert). ``matcher.compare`` on the two lists and
``matcher.spark.compare_dataframes`` on the same rows as DataFrames must give the same
verdict: equivalence, counts per kind, per-column mismatches, stream lengths, matched
events, and every witness field by field.

Spark costs about a second per comparison here, so each form gets a modest number of
examples with longer streams rather than many short ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from matcher import Equality, Tolerance, Verdict, compare
from matcher.dependence import (
    Dependence,
    by_key,
    column_equals,
    ordered,
    predicate,
    punctuation,
    typed,
    unordered,
    with_barriers,
)
from matcher.serialize import json_safe
from matcher.spark import compare_dataframes
from tests.spark_fixtures import near, same_ignoring_case, stream_frames

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = [pytest.mark.spark, pytest.mark.slow]

Event = dict[str, Any]
MAX_EVENTS = 20
EXAMPLES = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

NAN = math.nan
VALUES = st.sampled_from([0.0, 1.0, 1.5, 2.0, -0.0, NAN, None])
TEXTS = st.sampled_from(["a", " a", "A", "b", None])


def summary(verdict: Verdict) -> dict[str, Any]:
    """Everything the two matchers must agree on (NaN-safe, for ``==``)."""
    result = verdict.to_dict()
    for key in ("peak_unmatched", "detected_at", "side_stats", "warnings"):
        result.pop(key)
    return json_safe(result)  # type: ignore[no-any-return]


@st.composite
def streams(
    draw: st.DrawFn, events: st.SearchStrategy[Event], dependence: Dependence
) -> tuple[list[Event], list[Event]]:
    reference = draw(st.lists(events, max_size=MAX_EVENTS))
    candidate = [dict(e) for e in reference]
    for _ in range(draw(st.integers(0, len(candidate)))):
        if len(candidate) < 2:
            break
        i = draw(st.integers(0, len(candidate) - 2))
        if not dependence.depends(candidate[i], candidate[i + 1]):
            candidate[i], candidate[i + 1] = candidate[i + 1], candidate[i]
    for _ in range(draw(st.integers(0, 3))):
        fault = draw(st.sampled_from(["drop", "duplicate", "alter", "swap", "insert"]))
        if fault == "insert" or not candidate:
            candidate.insert(draw(st.integers(0, len(candidate))), draw(events))
            continue
        i = draw(st.integers(0, len(candidate) - 1))
        if fault == "drop":
            del candidate[i]
        elif fault == "duplicate":
            candidate.insert(i, dict(candidate[i]))
        elif fault == "alter":
            candidate[i] = {**candidate[i], **_some_field(draw(events), candidate[i])}
        elif i + 1 < len(candidate):
            candidate[i], candidate[i + 1] = candidate[i + 1], candidate[i]
    return reference, candidate


def _some_field(other: Event, event: Event) -> Event:
    """One column of ``other`` (the first that differs), to alter ``event`` a little."""
    for column, value in other.items():
        if json_safe(value) != json_safe(event.get(column)):
            return {column: value}
    return {}


def check(
    spark: SparkSession,
    schema: str,
    pair: tuple[list[Event], list[Event]],
    dependence: Dependence,
    equality: Equality,
    coarse_key: str | None = None,
) -> None:
    names = [part.split()[0] for part in schema.split(",")]
    # Spark has every column in every row: give the core the same events
    reference, candidate = ([{n: e.get(n) for n in names} for e in side] for side in pair)
    expected = compare(reference, candidate, dependence, equality)
    ref_df, cand_df = stream_frames(spark, schema, reference, candidate)
    got = compare_dataframes(ref_df, cand_df, dependence, equality, coarse_key=coarse_key)
    assert summary(got) == summary(expected)


def keyed_events(extra: Mapping[str, st.SearchStrategy[Any]] | None = None) -> Any:
    return st.fixed_dictionaries(
        {"k": st.sampled_from([1, 2, 3, None]), "v": VALUES, "s": TEXTS, **(extra or {})}
    )


KEYED_SCHEMA = "k long, v double, s string"
EQUALITIES = st.sampled_from(
    [
        Equality(),
        Equality(ignore=frozenset({"s"})),
        Equality(normalize={"s": ("trim", "lower")}),
        Equality(tolerance={"v": Tolerance(abs=0.6)}),
        Equality(nan_equal=False),
    ]
)


def forms(name: str) -> Dependence:
    return {"unordered": unordered(), "ordered": ordered(), "by_key": by_key("k")}[name]


@pytest.mark.parametrize("form", ["unordered", "ordered", "by_key"])
@EXAMPLES
@given(data=st.data(), equality=EQUALITIES)
def test_simple_forms_agree_with_the_core(
    spark: SparkSession, form: str, data: st.DataObject, equality: Equality
) -> None:
    dependence = forms(form)
    pair = data.draw(streams(keyed_events(), dependence))
    check(spark, KEYED_SCHEMA, pair, dependence, equality)


BARRIERS = with_barriers(by_key("k"), column_equals("kind", "B"), columns=["kind"])


@EXAMPLES
@given(data=st.data(), equality=EQUALITIES)
def test_by_key_with_barriers_agrees_with_the_core(
    spark: SparkSession, data: st.DataObject, equality: Equality
) -> None:
    events = st.one_of(
        keyed_events({"kind": st.just("E")}),
        keyed_events({"kind": st.just("B")}),
    )
    pair = data.draw(streams(events, BARRIERS))
    check(spark, f"{KEYED_SCHEMA}, kind string", pair, BARRIERS, equality)


TAXI = typed(
    "kind",
    {"taxi": ["taxi_id"], "EOD": None, "EOM": None},
    [("taxi", "taxi"), ("EOD", "*"), ("EOM", "EOM")],
)


@EXAMPLES
@given(data=st.data(), equality=EQUALITIES)
def test_typed_taxi_agrees_with_the_core(
    spark: SparkSession, data: st.DataObject, equality: Equality
) -> None:
    taxi = st.fixed_dictionaries(
        {"kind": st.just("taxi"), "taxi_id": st.sampled_from([1, 2]), "v": VALUES, "s": TEXTS}
    )
    marker = st.fixed_dictionaries(
        {"kind": st.sampled_from(["EOD", "EOM"]), "v": VALUES, "s": TEXTS}
    )
    pair = data.draw(streams(st.one_of(taxi, taxi, marker), TAXI))
    check(spark, "kind string, taxi_id long, v double, s string", pair, TAXI, equality)


PUNCTUATION = punctuation(column_equals("kind", "P"), "ts", columns=["kind"])


@EXAMPLES
@given(data=st.data(), equality=st.sampled_from([Equality(), Equality(ignore=frozenset({"s"}))]))
def test_punctuation_agrees_with_the_core(
    spark: SparkSession, data: st.DataObject, equality: Equality
) -> None:
    events = st.fixed_dictionaries(
        {"kind": st.sampled_from(["E", "E", "P"]), "ts": st.integers(0, 4), "s": TEXTS}
    )
    pair = data.draw(streams(events, PUNCTUATION))
    check(spark, "kind string, ts long, s string", pair, PUNCTUATION, equality)


NEAR = predicate(near, columns=["g", "v"])


@EXAMPLES
@given(data=st.data(), coarse=st.sampled_from([None, "g"]))
def test_predicate_agrees_with_the_core(
    spark: SparkSession, data: st.DataObject, coarse: str | None
) -> None:
    events = st.fixed_dictionaries(
        {"g": st.sampled_from([0, 1, 2]), "v": st.sampled_from([0, 1, 2, 3, None]), "s": TEXTS}
    )
    pair = data.draw(streams(events, NEAR))
    check(spark, "g long, v long, s string", pair, NEAR, Equality(), coarse)


@settings(EXAMPLES, max_examples=8)
@given(data=st.data(), form=st.sampled_from(["by_key", "unordered"]))
def test_an_equality_function_agrees_with_the_core(
    spark: SparkSession, data: st.DataObject, form: str
) -> None:
    dependence = forms(form)
    equality = Equality(function=same_ignoring_case, function_name="same_ignoring_case")
    pair = data.draw(streams(keyed_events(), dependence))
    check(spark, KEYED_SCHEMA, pair, dependence, equality)
