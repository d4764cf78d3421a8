"""``parity properties`` on DataFrame operators, on the shared local SparkSession."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from parity.properties.generation import parse_technique
from parity.properties.loading import load_subject
from parity.properties.properties import Context
from parity.properties.runner import Plan, check_operator

pytest_plugins = ("tests.spark_fixtures",)
pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
ITEMS = str(ROOT / "jobs/examples/operators/items.jsonl")
RIGHT = str(ROOT / "jobs/examples/operators/right.jsonl")


def _report(
    spark: SparkSession,
    ref: str,
    shape: str = "dataframe",
    budget: int = 2,
    technique: str = "pool",
) -> Any:
    samples = [ITEMS, RIGHT] if shape == "pair" else [ITEMS]
    subject = load_subject(ref, samples, ("key",), shape, session=lambda: spark)
    plan = Plan(parse_technique(technique), budget, 0, subject.domains)
    context = Context(subject.operator, ("key",), random.Random(0))
    return check_operator(context, plan, technique)


def test_a_projection_is_deterministic_one_to_one_and_stateless(spark: SparkSession) -> None:
    props = _report(spark, "jobs.examples.operators.frames:select").properties
    assert props["nondeterminism"].found is False
    assert props["selectivity"].extra["class"] == "one_to_one"
    assert props["statefulness"].found is False


def test_drop_duplicates_by_key_is_non_deterministic(spark: SparkSession) -> None:
    props = _report(
        spark, "jobs.examples.operators.frames:drop_duplicates_by_key", budget=8
    ).properties
    assert props["nondeterminism"].found is True
    runs = props["nondeterminism"].evidence["runs"]
    assert runs[0]["output"] != runs[1]["output"]
    assert "undetermined" in props["statefulness"].extra


def test_sum_per_key_is_stateful_commutative_and_isolated(spark: SparkSession) -> None:
    props = _report(spark, "jobs.examples.operators.frames:sum_per_key").properties
    assert props["nondeterminism"].found is False
    assert props["statefulness"].found is True
    evidence = props["statefulness"].evidence
    assert len(evidence["input"]) == 2  # shrunk: two rows of one key
    assert props["non_commutativity"].found is False
    assert props["partition_interference"].found is False


def test_an_inner_join_blocks_and_a_union_does_not(spark: SparkSession) -> None:
    join = _report(spark, "jobs.examples.operators.pairs:inner_join", "pair", budget=8).properties
    assert join["blocking"].found is True
    assert join["blocking"].evidence["output_alone"] == []
    union = _report(spark, "jobs.examples.operators.pairs:union", "pair", budget=1).properties
    assert union["blocking"].found is False


def test_a_session_window_shows_its_state_on_one_keys_rows(spark: SparkSession) -> None:
    """Random values rarely give two rows one key: DataFrame statefulness tests draw a list of
    one key's rows (Spark keeps state per group), so even random testing finds a session
    window's state, with a gap between two rows of one key as the evidence."""
    props = _report(
        spark, "jobs.examples.operators.frames:sessions", budget=3, technique="random"
    ).properties
    assert props["nondeterminism"].found is False
    assert props["statefulness"].found is True
    rows = [e["item"] for e in props["statefulness"].evidence["input"]]
    assert len(rows) == 2 and rows[0]["key"] == rows[1]["key"]
    assert abs(rows[0]["x"] - rows[1]["x"]) > 2


def test_test_frames_through_arrow_equal_frames_from_python_rows(spark: SparkSession) -> None:
    """Test inputs become DataFrames through Arrow (no Python worker per job): the same rows
    and types as Spark's own conversion of Python rows, times, NaN, nulls and nesting too."""
    import datetime as dt

    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    from parity.properties.frames import FrameOperator

    schema = StructType(
        [
            StructField("key", StringType()),
            StructField("n", LongType()),
            StructField("x", DoubleType()),
            StructField("t", TimestampType()),
            StructField("m", StructType([StructField("a", LongType())])),
            StructField("l", ArrayType(StringType())),
        ]
    )
    rows = [
        ("é<b>", 1, 1.5, dt.datetime(2024, 5, 1, 6, 30), {"a": 1}, ["x", None]),
        (None, None, float("nan"), None, None, None),
    ]
    operator = FrameOperator("t:f", "dataframe", lambda df: df, spark, (schema,))
    through_arrow = operator._local(list(rows), schema)
    assert through_arrow.schema == schema
    assert repr(through_arrow.collect()) == repr(spark.createDataFrame(rows, schema).collect())


def pivot_by_key(df: Any) -> Any:
    """A schema that depends on the input: a column per key value (a run of its own)."""
    return df.groupBy().pivot("key").sum("x")


@pytest.mark.parametrize(
    "name",
    [
        "frames:where_positive",
        "frames:sum_per_key",
        "frames:with_id",
        "frames:with_rand",
        "frames:last_x_global",
        "pairs:inner_join",
        "pivot",
    ],
)
def test_runs_in_one_job_equal_runs_one_at_a_time(spark: SparkSession, name: str) -> None:
    """Batching shares a Spark job, never an input: every run of a batch (one partition in
    order, and scattered over 2, 3 or 5 with other shuffle partitions) gives exactly what it
    gives in a job of its own, for operators that filter, aggregate, number rows by
    partition, draw random numbers per partition, take the last row of a coalesced input,
    join, or change their schema with the input."""
    from parity.properties.deadline import NO_DEADLINE
    from parity.properties.generation import ALL, Generator
    from parity.properties.operators import CANONICAL, Physical

    shape = "pair" if name.startswith("pairs:") else "dataframe"
    ref = (
        "tests.test_properties_spark:pivot_by_key"
        if name == "pivot"
        else f"jobs.examples.operators.{name}"
    )
    samples = [ITEMS, RIGHT] if shape == "pair" else [ITEMS]
    subject = load_subject(ref, samples, ("key",), shape, session=lambda: spark)
    generator = Generator(ALL[1], subject.domains, random.Random(7))
    physicals = [CANONICAL, Physical(2, 1), Physical(3, 3), Physical(5, 5)]
    requests = [(generator.base(2 + n % 5), physicals[n % 4]) for n in range(12)]
    together = subject.operator.run_batch(requests, NO_DEADLINE)
    alone = [subject.operator.run(test, physical) for test, physical in requests]
    assert together == alone
    assert sum(len(run.output) for run in together) > 0
