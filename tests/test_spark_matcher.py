"""The Spark matcher: single faults with exact witnesses, the one-shuffle plan, equality in
SQL, coarse keys, and the paths for many unmatched events.

Expectations are the core's (``matcher.compare`` on the same events), and for by_key also
written out here, so that a test cannot pass by both matchers being wrong the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from matcher import Equality, InputError, Tolerance, Verdict, compare
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
from matcher.spark import SparkComparison, compare_dataframes, read_stream
from matcher.spark import grouped_run as grouped_module
from matcher.spark import grouped_sql as keyed_module
from matcher.spark import screen as screen_module
from matcher.spark.equality_sql import TRIM_PATTERN, literal, pair_equal
from tests.spark_fixtures import near, stream_frames

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = pytest.mark.spark

Event = dict[str, Any]
ZERO = {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}


def E(k: int, v: int) -> Event:
    return {"k": k, "v": v}


R = [E(1, 10), E(2, 20), E(1, 11), E(2, 21), E(1, 12), E(2, 22), E(1, 13), E(2, 23)]


def summary(verdict: Verdict) -> dict[str, Any]:
    result = verdict.to_dict()
    for key in ("peak_unmatched", "detected_at", "side_stats", "warnings"):
        result.pop(key)
    return json_safe(result)  # type: ignore[no-any-return]


def on_spark(
    spark: SparkSession,
    schema: str,
    reference: list[Event],
    candidate: list[Event],
    dependence: Dependence,
    equality: Equality | None = None,
    **options: Any,
) -> Verdict:
    """The Spark verdict, after checking it is the core's on the same events."""
    names = [part.split()[0] for part in schema.split(",")]
    reference = [{n: e.get(n) for n in names} for e in reference]
    candidate = [{n: e.get(n) for n in names} for e in candidate]
    frames = stream_frames(spark, schema, reference, candidate)
    verdict = compare_dataframes(*frames, dependence, equality, **options)
    assert summary(verdict) == summary(compare(reference, candidate, dependence, equality))
    return verdict


def witness(verdict: Verdict) -> list[tuple[Any, ...]]:
    return [
        (
            d.kind,
            d.key,
            d.reference_position,
            d.candidate_position,
            d.reference_event,
            d.candidate_event,
            d.columns,
            d.partner_reference_position,
            d.partner_candidate_position,
        )
        for d in verdict.divergences
    ]


# ---------------------------------------------------------------------------------------------
# Single faults, by kind


SINGLE_FAULTS = {
    "loss": (R[:3] + R[4:], ("loss", 2, 3, 4, E(2, 21), None, (), None, None), 5),
    "duplication": (R[:4] + R[3:], ("duplication", 2, 5, 4, None, E(2, 21), (), None, None), 6),
    "reordering": (
        [*R[:2], R[4], R[3], R[2], *R[5:]],
        ("reordering", 1, 2, 4, E(1, 11), E(1, 11), (), 4, 2),
        5,
    ),
    "corruption": (
        [*R[:5], E(2, 99), *R[6:]],
        ("corruption", 2, 5, 5, E(2, 22), E(2, 99), ("v",), None, None),
        6,
    ),
}


@pytest.mark.parametrize("kind", list(SINGLE_FAULTS))
def test_a_single_fault_by_key_has_the_cores_witness(spark: SparkSession, kind: str) -> None:
    candidate, expected, matched = SINGLE_FAULTS[kind]
    verdict = on_spark(spark, "k long, v long", R, candidate, by_key("k"))
    assert verdict.equivalent is False
    assert dict(verdict.counts) == {**ZERO, kind: 1}
    assert witness(verdict) == [expected]
    assert verdict.matched_count == matched
    assert dict(verdict.column_mismatches) == ({"v": 1} if kind == "corruption" else {})
    assert verdict.side_stats == {
        "reference": {"rows": 8, "keys": 2, "barriers": 0},
        "candidate": {"rows": len(candidate), "keys": 2, "barriers": 0},
    }
    assert verdict.dependence == "by_key(k)"


BARRIER = with_barriers(by_key("k"), column_equals("kind", "EOD"), columns=["kind"])
DAY = [
    {"kind": "T", "k": 1, "v": 1},
    {"kind": "T", "k": 2, "v": 1},
    {"kind": "T", "k": 1, "v": 2},
    {"kind": "EOD", "v": 1},
    {"kind": "T", "k": 2, "v": 2},
    {"kind": "T", "k": 1, "v": 3},
    {"kind": "EOD", "v": 2},
    {"kind": "T", "k": 1, "v": 4},
]


@pytest.mark.parametrize(
    "candidate",
    [
        DAY[:2] + DAY[3:],  # a lost event
        [*DAY[:4], DAY[5], DAY[4], *DAY[6:]],  # keys swapped within a day: equivalent
        [*DAY[:3], DAY[4], DAY[3], *DAY[5:]],  # an event moved across the barrier
        DAY[:6] + DAY[7:],  # a lost barrier
        [*DAY[:3], {"kind": "EOD", "v": 9}, *DAY[4:]],  # a corrupted barrier
        [*DAY, DAY[-1]],  # a duplicate at the end
    ],
    ids=["loss", "independent-swap", "across-barrier", "lost-barrier", "bad-barrier", "dup"],
)
def test_key_and_barriers_agree_with_the_core(spark: SparkSession, candidate: list[Event]) -> None:
    verdict = on_spark(spark, "kind string, k long, v long", DAY, candidate, BARRIER)
    assert verdict.side_stats["reference"] == {"rows": 8, "keys": 2, "barriers": 2}


def test_an_event_moved_across_a_barrier_is_a_reordering(spark: SparkSession) -> None:
    candidate = [*DAY[:3], DAY[4], DAY[3], *DAY[5:]]
    verdict = on_spark(spark, "kind string, k long, v long", DAY, candidate, BARRIER)
    [(kind, key, ref, cand, *_)] = witness(verdict)
    assert (kind, key, ref, cand) == ("reordering", 2, 4, 3)


TAXI = typed(
    "kind",
    {"taxi": ["taxi_id"], "EOD": None, "EOM": None},
    [("taxi", "taxi"), ("EOD", "*"), ("EOM", "EOM")],
)
MONTH = [
    {"kind": "taxi", "taxi_id": 1, "d": 1.0},
    {"kind": "taxi", "taxi_id": 2, "d": 2.0},
    {"kind": "EOM", "d": 3.0},
    {"kind": "EOD", "d": 3.0},
    {"kind": "taxi", "taxi_id": 1, "d": 1.5},
    {"kind": "EOM", "d": 4.5},
]


@pytest.mark.parametrize(
    ("candidate", "kinds"),
    [
        ([MONTH[1], MONTH[2], MONTH[0], *MONTH[3:]], ZERO),  # EOM is independent of taxis
        ([*MONTH[:4], MONTH[5], MONTH[4]], ZERO),
        ([MONTH[0], MONTH[1], MONTH[3], MONTH[2], *MONTH[4:]], {**ZERO, "reordering": 1}),
        ([*MONTH[:4], {**MONTH[4], "d": 9.0}, MONTH[5]], {**ZERO, "corruption": 1}),
    ],
)
def test_typed_taxi_agrees_with_the_core(
    spark: SparkSession, candidate: list[Event], kinds: Mapping[str, int]
) -> None:
    verdict = on_spark(spark, "kind string, taxi_id long, d double", MONTH, candidate, TAXI)
    assert dict(verdict.counts) == kinds
    assert verdict.side_stats["reference"] == {"rows": 6, "keys": 2, "barriers": 1}


def test_an_undeclared_type_is_the_cores_error(spark: SparkSession) -> None:
    events = [{"kind": "taxi", "taxi_id": 1}, {"kind": "bus", "taxi_id": 2}]
    frames = stream_frames(spark, "kind string, taxi_id long", events, events)
    with pytest.raises(InputError) as spark_error:
        compare_dataframes(*frames, TAXI)
    with pytest.raises(InputError) as core_error:
        compare(events, events, TAXI)
    assert (
        str(spark_error.value)
        == str(core_error.value)
        == ("reference event #1: typed dependence: event type 'bus' is not declared in types")
    )


@pytest.mark.parametrize(
    ("dependence", "kind", "counts"),
    [
        (ordered(), "loss", {"loss": 1}),
        (ordered(), "duplication", {"duplication": 1}),
        (ordered(), "reordering", {"reordering": 2}),  # 12 and 11 both crossed 21
        (ordered(), "corruption", {"corruption": 1}),
        (unordered(), "loss", {"loss": 1}),
        (unordered(), "reordering", {}),
        (unordered(), "corruption", {"corruption": 1}),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_single_faults_of_ordered_and_unordered(
    spark: SparkSession, dependence: Dependence, kind: str, counts: dict[str, int]
) -> None:
    verdict = on_spark(spark, "k long, v long", R, SINGLE_FAULTS[kind][0], dependence)
    assert dict(verdict.counts) == {**ZERO, **counts}
    assert verdict.equivalent is (not counts)


# ---------------------------------------------------------------------------------------------
# The plan: one shuffle by the dependence key


def exchanges(df: DataFrame) -> list[str]:
    """The shuffle exchanges of a plan: ``Exchange`` nodes, not ``BroadcastExchange`` (which
    ship the small table of stream offsets that ``read_stream`` joins) or reused ones."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return [
        line.strip(" :+-")
        for line in plan.splitlines()
        if "Exchange " in line and "BroadcastExchange" not in line
    ]


@pytest.mark.parametrize("dependence", [by_key("k"), BARRIER], ids=["by_key", "key-and-barriers"])
def test_the_matching_plan_has_one_shuffle_by_the_key(
    spark: SparkSession, dependence: Dependence
) -> None:
    frame = spark.createDataFrame(DAY, "kind string, k long, v long")
    stream = read_stream(spark, frame)
    plan = SparkComparison(stream, stream, dependence).matching_plan()
    [exchange] = exchanges(plan)
    assert exchange.startswith("Exchange hashpartitioning(__p_g#")


def test_the_screening_plan_has_one_shuffle_and_one_sort(spark: SparkSession) -> None:
    stream = read_stream(spark, spark.createDataFrame(R, "k long, v long"))
    plan = SparkComparison(stream, stream, by_key("k")).screening_plan()
    assert plan is not None
    [exchange] = exchanges(plan)
    assert exchange.startswith("Exchange hashpartitioning(__p_gh#")
    executed = plan._jdf.queryExecution().executedPlan().toString()
    sorts = [line for line in executed.splitlines() if line.strip(" :+-").startswith("Sort [")]
    assert len(sorts) == 1


@pytest.mark.parametrize(
    "dependence, equality",
    [
        (BARRIER, None),
        (ordered(), None),
        (by_key("k"), Equality(tolerance={"v": Tolerance(abs=1)})),
    ],
    ids=["barriers", "ordered", "tolerance"],
)
def test_what_screening_cannot_decide_goes_to_the_full_plan(
    spark: SparkSession, dependence: Dependence, equality: Equality | None
) -> None:
    frame = spark.createDataFrame(DAY, "kind string, k long, v long")
    stream = read_stream(spark, frame)
    comparison = SparkComparison(stream, stream, dependence, equality or Equality())
    assert comparison.screening_plan() is None


def test_screening_sends_only_the_groups_that_disagree(spark: SparkSession) -> None:
    candidate = [*R[:7], E(2, 99)]  # key 2's last event corrupted; key 1 agrees
    frames = stream_frames(spark, "k long, v long", R, candidate)
    comparison = SparkComparison(*frames, by_key("k"))
    streams = comparison.streams()
    route = comparison.route(streams)
    assert route.layout is not None
    plan = grouped_module.grouped_plan(streams, route.layout, Equality())
    screened = screen_module.screen(plan, streams.reference, streams.candidate)
    try:
        found = (screened.rows, screened.keys, screened.agreed, screened.n_bad, screened.bad_events)
        assert found == ((8, 8), (2, 2), 4, 1, 8)
        union = keyed_module.tagged_union(plan, streams.reference, streams.candidate)
        sent = screen_module.restrict(union, screened).select("k", "__p_side").collect()
        assert sorted(tuple(r) for r in sent) == [(2, 0)] * 4 + [(2, 1)] * 4
    finally:
        screened.release()


SCREENED_CASES = {
    # xxhash64 skips nulls: the null mask and JSON for nested values keep these apart
    "null moved between columns": (
        "k long, a string, b string",
        [{"k": 1, "a": None, "b": "x"}],
        [{"k": 1, "a": "x", "b": None}],
    ),
    "null moved inside an array": (
        "k long, xs array<long>",
        [{"k": 1, "xs": [None, 1]}],
        [{"k": 1, "xs": [1, None]}],
    ),
    "a null key that diverges": (
        "k long, v long",
        [{"k": None, "v": 1}, {"k": None, "v": 2}, {"k": 3, "v": 1}],
        [{"k": None, "v": 2}, {"k": None, "v": 1}, {"k": 3, "v": 1}],
    ),
    "NaN and -0.0 are the core's": (
        "k long, x double",
        [{"k": 1, "x": math.nan}, {"k": 1, "x": -0.0}],
        [{"k": 1, "x": math.nan}, {"k": 1, "x": 0.0}],
    ),
}


@pytest.mark.parametrize("case", SCREENED_CASES, ids=list(SCREENED_CASES))
@pytest.mark.parametrize("nan_equal", [True, False], ids=["nan-equal", "nan-unequal"])
def test_screening_agrees_with_the_core(spark: SparkSession, case: str, nan_equal: bool) -> None:
    schema, reference, candidate = SCREENED_CASES[case]
    on_spark(spark, schema, reference, candidate, by_key("k"), Equality(nan_equal=nan_equal))
    on_spark(spark, schema, reference, candidate, unordered(), Equality(nan_equal=nan_equal))


def test_the_general_path_is_one_partition_without_a_coarse_key(spark: SparkSession) -> None:
    events = [{"kind": "E", "ts": 1}, {"kind": "E", "ts": 0}, {"kind": "P", "ts": 2}]
    dependence = punctuation(column_equals("kind", "P"), "ts", columns=["kind"])
    candidate = [events[1], events[0], events[2]]  # the punctuation stays after both
    verdict = on_spark(spark, "kind string, ts long", events, candidate, dependence)
    assert verdict.equivalent is True
    assert verdict.warnings == (
        "the punctuation(ts) dependence is matched by the core in each partition: "
        "with no coarse key, matched in a single partition",
    )


# ---------------------------------------------------------------------------------------------
# Equality in SQL


def test_tolerance_and_ignore_are_said_in_sql(spark: SparkSession) -> None:
    equality = Equality(ignore=frozenset({"note"}), tolerance={"v": Tolerance(abs=0.5, rel=0.01)})
    reference = [
        {"k": 1, "v": 1.0, "note": "a"},
        {"k": 1, "v": 100.0, "note": "b"},
        {"k": 2, "v": math.nan, "note": "c"},
        {"k": 2, "v": math.inf, "note": "d"},
    ]
    candidate = [
        {"k": 1, "v": 1.5, "note": "x"},  # within abs
        {"k": 1, "v": 100.9, "note": "y"},  # within rel
        {"k": 2, "v": math.nan, "note": "z"},
        {"k": 2, "v": 1e308, "note": "w"},  # infinity is close only to itself
    ]
    frames = stream_frames(spark, "k long, v double, note string", reference, candidate)
    assert (
        SparkComparison(*frames, by_key("k"), equality)
        .route(SparkComparison(*frames, by_key("k"), equality).streams())
        .path
        == "grouped"
    )
    verdict = on_spark(
        spark, "k long, v double, note string", reference, candidate, by_key("k"), equality
    )
    assert witness(verdict) == [
        ("corruption", 2, 3, 3, reference[3], candidate[3], ("v",), None, None)
    ]


VALUES: list[Any] = [None, 0.0, -0.0, 1.0, 1.4, 2.0, 1e-12, math.nan, math.inf, -math.inf, 3e300]
TEXTS: list[Any] = [None, "a", " a", "A\t", "\u00a0a\u2003", "b", "\u0130", "\u00df"]


@pytest.mark.parametrize(
    "equality",
    [
        Equality(),
        Equality(nan_equal=False),
        Equality(tolerance={"x": Tolerance(abs=0.5)}),
        Equality(tolerance={"x": Tolerance(rel=0.5)}, nan_equal=False),
        Equality(normalize={"s": ("trim", "lower")}),
        Equality(normalize={"*": ("upper",)}),
    ],
)
def test_column_equality_in_sql_is_the_cores(spark: SparkSession, equality: Equality) -> None:
    pairs = [
        (a, b, s, t)
        for a in VALUES
        for b in VALUES
        for s, t in zip(TEXTS, TEXTS[1:] + TEXTS[:1], strict=True)
    ]
    df = spark.createDataFrame(pairs, "a double, b double, s string, t string")
    fields = {f.name: f for f in df.schema.fields}
    x = fields["a"].__class__("x", fields["a"].dataType)
    s = fields["s"].__class__("s", fields["s"].dataType)
    got = df.selectExpr(
        pair_equal("a", "b", x, equality) + " AS x", pair_equal("s", "t", s, equality) + " AS s"
    ).collect()
    for (a, b, u, w), row in zip(pairs, got, strict=True):
        assert row["x"] == equality.equal({"x": a}, {"x": b}), (a, b)
        assert row["s"] == equality.equal({"s": u}, {"s": w}), (u, w)


def test_trim_strips_what_python_strips(spark: SparkSession) -> None:
    texts = ["\u2003 a b\t\n", "\x1c\x1fx\x85", "\u200ba\u200b", "  ", ""]
    rows = (
        spark.createDataFrame([(t,) for t in texts], "t string")
        .selectExpr(f"regexp_replace(t, {literal(TRIM_PATTERN)}, '') AS t")
        .collect()
    )
    assert [r["t"] for r in rows] == [t.strip() for t in texts]


def test_sql_literals() -> None:
    assert literal("it's a \\ test") == "'it\\'s a \\\\ test'"
    assert [literal(v) for v in (None, True, 3, 0.5, math.inf)] == [
        "NULL",
        "TRUE",
        "3",
        "0.5D",
        "CAST('Infinity' AS DOUBLE)",
    ]


# ---------------------------------------------------------------------------------------------
# Coarse keys for the per-partition path


def test_a_predicate_with_a_coarse_key(spark: SparkSession) -> None:
    dependence = predicate(near, columns=["g", "v"])
    reference = [{"g": g, "v": v} for v in range(4) for g in range(3)]
    candidate = [reference[i] for i in (1, 0, 2, 4, 3, 5, 6, 8, 9, 10, 11)] + [{"g": 1, "v": 7}]
    verdict = on_spark(spark, "g long, v long", reference, candidate, dependence, coarse_key="g")
    assert verdict.warnings == ()
    # (1, 2) became (1, 7): v is a column the dependence reads, so it is not the same
    # event altered but one lost and another extra, as the core says
    assert dict(verdict.counts) == {**ZERO, "loss": 1, "duplication": 1}


def test_a_coarse_key_that_does_not_split_the_stream_is_refused(spark: SparkSession) -> None:
    dependence = punctuation(column_equals("kind", "P"), "ts", columns=["kind"])
    events = [{"kind": "E", "ts": 1, "src": "a"}, {"kind": "P", "ts": 2, "src": "b"}]
    frames = stream_frames(spark, "kind string, ts long, src string", events, events)
    with pytest.raises(InputError) as info:
        compare_dataframes(*frames, dependence, coarse_key="src")
    assert str(info.value).startswith(
        "coarse key src does not split the streams into independent parts: reference event #"
    )


def test_a_coarse_key_the_equality_loosens_is_refused(spark: SparkSession) -> None:
    dependence = predicate(near, columns=["g", "v"])
    frames = stream_frames(spark, "g long, v long, s string", [], [])
    with pytest.raises(InputError, match="coarse key s: the equality loosens 's'"):
        compare_dataframes(*frames, dependence, Equality(ignore=frozenset({"s"})), coarse_key="s")


def test_an_equality_function_matches_each_key_apart(spark: SparkSession) -> None:
    equality = Equality(function=lambda a, b: a["k"] == b["k"] and abs(a["v"] - b["v"]) < 5)
    candidate = [E(1, 12), E(2, 20), E(1, 11), E(2, 30), E(1, 12), E(2, 22), E(1, 13)]
    frames = stream_frames(spark, "k long, v long", R, candidate)
    comparison = SparkComparison(*frames, by_key("k"), equality)
    route = comparison.route(comparison.streams())
    assert (route.path, route.partition_by) == ("per-partition", ("`k`",))
    on_spark(spark, "k long, v long", R, candidate, by_key("k"), equality)


# ---------------------------------------------------------------------------------------------
# Many unmatched events


@pytest.mark.slow
@pytest.mark.parametrize("dependence", [by_key("k"), ordered()], ids=["by_key", "ordered"])
def test_a_long_diverged_key_resynchronises_like_the_core(
    spark: SparkSession, dependence: Dependence
) -> None:
    reference = [E(1 + i % 2, i) for i in range(300)]
    candidate = [e for i, e in enumerate(reference) if i not in (10, 150)]
    candidate[200] = E(candidate[200]["k"], -1)
    verdict = on_spark(spark, "k long, v long", reference, candidate, dependence)
    assert dict(verdict.counts) == {**ZERO, "loss": 2, "corruption": 1}
    assert verdict.matched_count == 297


@pytest.mark.slow
def test_too_many_unmatched_events_are_explained_key_by_key(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grouped_module, "PARTITION_CAP", 0)
    monkeypatch.setattr(grouped_module, "EXACT_LIMIT", 0)
    monkeypatch.setattr(grouped_module, "DRIVER_LIMIT", 0)
    candidate = R[:3] + R[4:6] + [E(1, 99)] + R[7:]
    frames = stream_frames(spark, "k long, v long", R, candidate)
    # a tolerance: not screened, so the grouped plan explains group by group
    equality = Equality(tolerance={"v": Tolerance(abs=0.5)})
    verdict = compare_dataframes(*frames, by_key("k"), equality)
    expected = compare(R, candidate, by_key("k"), equality)
    assert summary(verdict) == summary(expected)
    assert verdict.warnings == (
        "7 unmatched events were explained group by group: an event whose key changed, "
        "or that moved across a barrier, reads as a loss and a duplication",
    )


@pytest.mark.slow
def test_many_screened_events_are_explained_partition_by_partition(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(screen_module, "EXACT_LIMIT", 0)
    candidate = R[:3] + R[4:6] + [E(1, 99)] + R[7:]
    frames = stream_frames(spark, "k long, v long", R, candidate)
    verdict = compare_dataframes(*frames, by_key("k"))
    assert summary(verdict) == summary(compare(R, candidate, by_key("k")))
    assert verdict.warnings == (
        "15 events of 2 groups that differ were explained partition by partition: an event "
        "whose key changed reads as a loss and a duplication",
    )
