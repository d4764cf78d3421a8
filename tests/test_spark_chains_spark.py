"""The faulty path of ``by_key`` on Spark (``matcher.spark.chains_run``) against the core.

``screen.EXACT_LIMIT`` is set to 0, so that small streams take the path that large ones
take (digests explained per key in a ``mapInArrow``, witnesses re-explained on the
driver), and Arrow batches are made tiny, so that keys straddle batches. Hypothesis draws
several keys, long enough to resynchronise, with mixed faults; the verdict must be
``matcher.compare``'s on the same events: counts by kind and by column, matched events,
and every witness field by field.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from matcher import Equality, Verdict, compare
from matcher.dependence import by_key
from matcher.serialize import json_safe
from matcher.spark import compare_dataframes
from matcher.spark import screen as screen_module
from matcher.spark.session import ARROW_ROWS
from tests.fault_mix import with_faults
from tests.spark_fixtures import stream_frames

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = pytest.mark.spark

Event = dict[str, Any]
SCHEMA = "k long, v long, x double, s string"
BY_KEY = by_key("k")


def summary(verdict: Verdict) -> dict[str, Any]:
    result = verdict.to_dict()
    for key in ("peak_unmatched", "detected_at", "side_stats", "warnings"):
        result.pop(key)
    safe: dict[str, Any] = json_safe(result)
    return safe


@pytest.fixture
def chain_path(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every disagreeing group past the exact limit, Arrow batches of 7 rows, and a record
    of the events the core's loop was still given (one entry per call)."""
    monkeypatch.setattr(screen_module, "EXACT_LIMIT", 0)
    given_events: list[int] = []
    real = screen_module.match_partitions  # type: ignore[attr-defined]

    def spy(partitioned: DataFrame, *args: Any, **kwargs: Any) -> Any:
        given_events.append(partitioned.count())
        return real(partitioned, *args, **kwargs)

    monkeypatch.setattr(screen_module, "match_partitions", spy)
    old = spark.conf.get(ARROW_ROWS, None)
    spark.conf.set(ARROW_ROWS, "7")  # kept by ``arrow_batches``: keys go on across batches
    yield given_events
    if old is None:
        spark.conf.unset(ARROW_ROWS)
    else:
        spark.conf.set(ARROW_ROWS, old)


def on_both(
    spark: SparkSession,
    reference: list[Event],
    candidate: list[Event],
    equality: Equality,
    limit: int = 100,
) -> tuple[Verdict, Verdict]:
    frames = stream_frames(spark, SCHEMA, reference, candidate)
    got = compare_dataframes(*frames, BY_KEY, equality, limit=limit)
    return got, compare(reference, candidate, BY_KEY, equality, limit=limit)


def event(k: int, v: int, x: float = 0.0, s: str = "a") -> Event:
    return {"k": k, "v": v, "x": x, "s": s}


def test_every_key_with_several_faults(spark: SparkSession, chain_path: list[int]) -> None:
    """Each of 6 keys of 30 events loses one, gains one, has one altered and two moved: the
    issue's "faults in every key", with none left to the core's loop."""
    reference = [event(i % 6, i) for i in range(180)]
    candidate = [dict(e) for e in reference]
    for k in range(6):
        at = [i for i, e in enumerate(candidate) if e["k"] == k]
        candidate[at[3]] = {**candidate[at[3]], "s": "b", "x": 1.0}
        candidate.insert(at[20] + 1, candidate.pop(at[9]))
        candidate.insert(at[25] + 1, candidate.pop(at[14]))
        candidate.insert(at[17], event(k, -1))
        del candidate[at[28]]
    got, expected = on_both(spark, reference, candidate, Equality())
    assert summary(got) == summary(expected)
    assert dict(got.counts) == {"loss": 6, "duplication": 6, "reordering": 12, "corruption": 6}
    assert dict(got.column_mismatches) == {"s": 6, "x": 6}
    assert chain_path == [0]


def test_every_row_corrupted(spark: SparkSession, chain_path: list[int]) -> None:
    """A column bug: every event altered, in keys long enough to try to resynchronise."""
    reference = [event(i % 3, i) for i in range(300)]
    candidate = [{**e, "x": 0.5} for e in reference]
    got, expected = on_both(spark, reference, candidate, Equality(), limit=5)
    assert summary(got) == summary(expected)
    assert dict(got.counts) == {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 300}
    assert dict(got.column_mismatches) == {"x": 300}


def test_the_profile_is_timed_by_a_time_column_that_is_not_compared(
    spark: SparkSession, chain_path: list[int]
) -> None:
    """The corrupted pairs' profile counts them by the reference event's date, read from a
    column the equality ignores, as the core does; only ``x`` changed."""
    days = [dt.date(2026, 1, 1) + dt.timedelta(days=i % 40) for i in range(300)]
    reference = [{"k": i % 3, "d": days[i], "x": float(i)} for i in range(300)]
    candidate = [{**e, "x": e["x"] + 0.5} for e in reference]
    equality = Equality(ignore=frozenset({"d"}))
    frames = stream_frames(spark, "k long, d date, x double", reference, candidate)
    got = compare_dataframes(*frames, BY_KEY, equality, limit=5)
    expected = compare(reference, candidate, BY_KEY, equality, limit=5)
    assert summary(got) == summary(expected)
    assert sum(got.column_profiles["x"]["over_time"]["counts"].values()) == 300


@pytest.mark.parametrize("agreeing", [0, 1])
def test_the_events_are_narrowed_to_the_disagreeing_keys_only_when_some_agree(
    spark: SparkSession, chain_path: list[int], monkeypatch: pytest.MonkeyPatch, agreeing: int
) -> None:
    """When every key disagrees (a column bug), the chains' job takes every event without
    a join; when one agrees, the join leaves it out. The verdict is the core's either way."""
    reference = [event(i % 4, i) for i in range(200)]
    candidate = [e if e["k"] < agreeing else {**e, "x": 0.5} for e in reference]
    joins: list[int] = []
    real = screen_module._in_groups

    def spy(hashed: DataFrame, groups: DataFrame, n_groups: int) -> DataFrame:
        joins.append(n_groups)
        return real(hashed, groups, n_groups)

    monkeypatch.setattr(screen_module, "_in_groups", spy)
    got, expected = on_both(spark, reference, candidate, Equality(), limit=5)
    assert summary(got) == summary(expected)
    assert got.counts["corruption"] == 200 - 50 * agreeing
    assert joins == ([3] if agreeing else [])


def test_a_long_key_resynchronises_and_merges_its_moves(
    spark: SparkSession, chain_path: list[int]
) -> None:
    """One key of 400 events: an event moved far (a loss and a duplication settled apart,
    merged into a reordering), a stretch altered, losses on both sides of it."""
    reference = [event(1, i % 50, float(i)) for i in range(400)]
    candidate = [dict(e) for e in reference]
    candidate.insert(350, candidate.pop(20))
    for i in range(100, 130):
        candidate[i] = {**candidate[i], "s": "z"}
    del candidate[200]
    del candidate[60]
    got, expected = on_both(spark, reference, candidate, Equality())
    assert summary(got) == summary(expected)
    assert expected.counts["reordering"] >= 1
    assert chain_path == [0]


def test_a_nan_key_goes_to_the_core_loop(spark: SparkSession, chain_path: list[int]) -> None:
    reference = [event(i % 4, i) for i in range(40)]
    reference[5] = {**reference[5], "x": math.nan}  # key 1
    candidate = [dict(e) for e in reference]
    del candidate[9]  # key 1, after the NaN
    del candidate[2]  # key 2
    got, expected = on_both(spark, reference, candidate, Equality(nan_equal=False))
    assert summary(got) == summary(expected)
    assert chain_path == [19]  # key 1, whole: 10 reference events, 9 candidate


def test_resync_at_is_kept_as_compare_keeps_it(spark: SparkSession, chain_path: list[int]) -> None:
    """``matcher.compare``'s fast path keeps a key's ``resync_at`` while the other side
    holds nothing (``tests/test_spark_chains.py`` has the case): 65 pairs matched."""
    reference = [event(0, i) for i in range(100)]
    candidate = reference[35:65] + [event(0, -1 - i, s="b") for i in range(20)]
    candidate += reference[65:]
    got, expected = on_both(spark, reference, candidate, Equality())
    assert summary(got) == summary(expected)
    assert got.matched_count == 65


@st.composite
def faulty_chains(draw: st.DrawFn) -> tuple[list[Event], list[Event]]:
    """Up to 4 keys and 240 events over a small alphabet, and up to 8 faults of mixed kinds,
    a whole stretch altered among them."""
    n = draw(st.integers(0, 240))
    keys = draw(st.integers(1, 4))
    alphabet = draw(st.integers(1, 30))
    reference = [event(i % keys, draw(st.integers(0, alphabet))) for i in range(n)]
    candidate = with_faults(
        draw,
        reference,
        new=lambda j: event(0, -1 - j, s="b"),
        alterations=st.sampled_from([{"x": 1.0}, {"x": -0.0}, {"x": 2.5}]),
        extra_values=st.integers(-2, alphabet),
        longest_stretch=100,
    )
    return reference, candidate


EQUALITIES = st.sampled_from(
    [Equality(), Equality(ignore=frozenset({"x"})), Equality(normalize={"s": ("upper",)})]
)


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(pair=faulty_chains(), equality=EQUALITIES, limit=st.sampled_from([3, 100]))
def test_faulty_chains_agree_with_the_core(
    spark: SparkSession,
    chain_path: list[int],
    pair: tuple[list[Event], list[Event]],
    equality: Equality,
    limit: int,
) -> None:
    got, expected = on_both(spark, *pair, equality, limit)
    assert summary(got) == summary(expected)
