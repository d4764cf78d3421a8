"""Disagreeing ``by_key`` chains explained on digests where the data is
(``matcher.spark.chains_run``), against the core.

That path replaces the core's loop only past ``screen.EXACT_LIMIT`` events in disagreeing
groups; these tests set it to 0 so that small streams take it, and compare the verdict
with ``matcher.compare`` on the same events: counts per kind and column, matched events
and every witness field. A spy on the core's loop (``screen.match_partitions``) counts the
events it was still given, so a fixed case per kind also proves the digests explained it.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from matcher import Equality, Tolerance, Verdict, compare
from matcher.dependence import by_key
from matcher.serialize import json_safe
from matcher.spark import compare_dataframes
from matcher.spark import screen as screen_module
from tests.spark_fixtures import stream_frames

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = pytest.mark.spark

Event = dict[str, Any]
SCHEMA = "k long, seq long, v double, s string"
BY_KEY = by_key("k")
ZERO = {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}


def summary(verdict: Verdict) -> dict[str, Any]:
    result = verdict.to_dict()
    for key in ("peak_unmatched", "detected_at", "side_stats", "warnings"):
        result.pop(key)
    return json_safe(result)  # type: ignore[no-any-return]


@pytest.fixture
def loop_events(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Send every disagreeing group past the exact limit, and record how many events the
    core's loop was given (one entry per call)."""
    monkeypatch.setattr(screen_module, "EXACT_LIMIT", 0)
    given_events: list[int] = []
    real = screen_module.match_partitions

    def spy(partitioned: DataFrame, *args: Any, **kwargs: Any) -> Any:
        given_events.append(partitioned.count())
        return real(partitioned, *args, **kwargs)

    monkeypatch.setattr(screen_module, "match_partitions", spy)
    return given_events


def on_both(
    spark: SparkSession, reference: list[Event], candidate: list[Event], equality: Equality
) -> tuple[Verdict, Verdict]:
    names = [part.split()[0] for part in SCHEMA.split(",")]
    reference, candidate = (
        [{n: e.get(n) for n in names} for e in side] for side in (reference, candidate)
    )
    frames = stream_frames(spark, SCHEMA, reference, candidate)
    return compare_dataframes(*frames, BY_KEY, equality), compare(
        reference, candidate, BY_KEY, equality
    )


def reference_stream(keys: int = 4, per_key: int = 6) -> list[Event]:
    return [
        {"k": k, "seq": i, "v": float(10 * k + i), "s": f"x{i % 3}"}
        for i in range(per_key)
        for k in range(keys)
    ]


def fault(reference: list[Event], kind: str, at: int) -> list[Event]:
    """``reference`` with one fault of ``kind`` at event ``at``."""
    candidate = [dict(e) for e in reference]
    if kind == "loss":
        del candidate[at]
    elif kind == "duplication":
        candidate.insert(at + 1, dict(candidate[at]))
    elif kind == "corruption":
        candidate[at] = {**candidate[at], "v": -1.0, "s": "changed"}
    else:  # moved after its key's next event
        key = candidate[at]["k"]
        after = next(i for i in range(at + 1, len(candidate)) if candidate[i]["k"] == key)
        candidate.insert(after, candidate.pop(at))
    return candidate


@pytest.mark.parametrize("kind", ["loss", "duplication", "corruption", "reordering"])
@pytest.mark.parametrize("at", [0, 9, 21])
def test_a_single_fault_is_explained_on_digests_as_the_core_does(
    spark: SparkSession, loop_events: list[int], kind: str, at: int
) -> None:
    reference = reference_stream()
    if kind == "reordering" and at == 21:
        at = 17  # the last events of a key have no next event to move after
    got, expected = on_both(spark, reference, fault(reference, kind, at), Equality())
    assert summary(got) == summary(expected)
    assert dict(got.counts) == {**ZERO, kind: 1}
    if kind == "corruption":
        assert dict(got.column_mismatches) == {"v": 1, "s": 1}
    assert loop_events == [0]  # nothing was left to the core's loop


def test_every_kind_at_once_in_different_keys(spark: SparkSession, loop_events: list[int]) -> None:
    reference = reference_stream(keys=8)
    candidate = reference
    for kind, at in (("loss", 40), ("duplication", 33), ("corruption", 10), ("reordering", 3)):
        candidate = fault(candidate, kind, at)
    got, expected = on_both(spark, reference, candidate, Equality())
    assert summary(got) == summary(expected)
    assert dict(got.counts) == {"loss": 1, "duplication": 1, "reordering": 1, "corruption": 1}
    assert loop_events == [0]


def test_a_key_with_two_faults_is_explained_where_the_data_is(
    spark: SparkSession, loop_events: list[int]
) -> None:
    reference = reference_stream()
    candidate = fault(fault(reference, "loss", 20), "corruption", 4)  # both in key 0
    got, expected = on_both(spark, reference, candidate, Equality())
    assert summary(got) == summary(expected)
    assert dict(got.counts) == {**ZERO, "loss": 1, "corruption": 1}
    assert loop_events == [0]  # the chain's digests, not the core's loop over events


def test_a_nan_that_equals_nothing_goes_to_the_core_loop(
    spark: SparkSession, loop_events: list[int]
) -> None:
    reference = reference_stream()
    reference[8] = {**reference[8], "v": math.nan}
    candidate = fault(reference, "loss", 0)
    got, expected = on_both(spark, reference, candidate, Equality(nan_equal=False))
    assert summary(got) == summary(expected)
    assert loop_events == [11]  # key 0 holds the NaN: all of it; key 0's loss is simple


EQUALITIES = st.sampled_from(
    [
        Equality(),
        Equality(ignore=frozenset({"s"})),
        Equality(normalize={"s": ("trim", "lower")}),
        Equality(nan_equal=False),
        Equality(tolerance={"v": Tolerance(abs=0.6)}),
    ]
)
FAULTS = st.sampled_from(["drop", "duplicate", "alter", "move", "swap", "insert"])


@st.composite
def faulty_streams(draw: st.DrawFn) -> tuple[list[Event], list[Event]]:
    """A reference of up to 4 keys with up to 10 events each (repeated values common), and
    a candidate with up to 4 faults of any kind."""
    n = draw(st.integers(0, 40))
    values = st.sampled_from([0.0, 1.0, 1.5, -0.0, math.nan, None])
    texts = st.sampled_from(["a", " a", "A", "b", None])
    keys = st.sampled_from([0, 1, 2, None])
    reference = [{"k": draw(keys), "seq": i, "v": draw(values), "s": draw(texts)} for i in range(n)]
    candidate = [dict(e) for e in reference]
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(FAULTS)
        if kind == "insert" or not candidate:
            event = {"k": draw(keys), "seq": -1, "v": draw(values), "s": draw(texts)}
            candidate.insert(draw(st.integers(0, len(candidate))), event)
            continue
        i = draw(st.integers(0, len(candidate) - 1))
        if kind == "drop":
            del candidate[i]
        elif kind == "duplicate":
            candidate.insert(i, dict(candidate[i]))
        elif kind == "alter":
            candidate[i] = {**candidate[i], "v": draw(values), "s": draw(texts)}
        elif kind == "move":
            j = draw(st.integers(0, len(candidate) - 1))
            candidate.insert(j, candidate.pop(i))
        elif i + 1 < len(candidate):
            candidate[i], candidate[i + 1] = candidate[i + 1], candidate[i]
    return reference, candidate


@pytest.mark.slow
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(pair=faulty_streams(), equality=EQUALITIES)
def test_faulty_by_key_agrees_with_the_core(
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    pair: tuple[list[Event], list[Event]],
    equality: Equality,
) -> None:
    monkeypatch.setattr(screen_module, "EXACT_LIMIT", 0)
    got, expected = on_both(spark, *pair, equality)
    assert summary(got) == summary(expected)
