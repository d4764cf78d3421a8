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


def _report(spark: SparkSession, ref: str, shape: str = "dataframe", budget: int = 2) -> Any:
    samples = [ITEMS, RIGHT] if shape == "pair" else [ITEMS]
    subject = load_subject(ref, samples, ("key",), shape, session=lambda: spark)
    plan = Plan(parse_technique("pool"), budget, 0, subject.domains)
    return check_operator(Context(subject.operator, ("key",), random.Random(0)), plan, "pool")


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
