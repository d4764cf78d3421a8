"""Tolerant pairing on Spark (issue 10, item 1): the verdict is the core's, whose pairing
rule ``tests/test_tolerant_pairing.py`` proves against the oracle.

Under a tolerance, multisets take the per-partition path (partitions by the exact columns,
which every pairing keeps together) and run the core's loop, ``settle`` included; chains
take the grouped plan, rank by rank, which is the only order-keeping pairing.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from matcher import Equality, Tolerance, Verdict, compare
from matcher.dependence import Dependence, column_equals, ordered, unordered, with_barriers
from matcher.serialize import json_safe
from matcher.spark import compare_dataframes
from tests.spark_fixtures import stream_frames

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = pytest.mark.spark

EQ = Equality(tolerance={"n": Tolerance(abs=0.1)})
BARRIERS = with_barriers(unordered(), column_equals("kind", "B"), columns=["kind"])


def E(n: float, v: int = 0, kind: str = "E") -> dict[str, Any]:
    return {"kind": kind, "v": v, "n": n}


def summary(verdict: Verdict) -> dict[str, Any]:
    result = verdict.to_dict()
    for key in ("peak_unmatched", "detected_at", "side_stats", "warnings"):
        result.pop(key)
    result.pop("schema", None)  # schema findings: compared apart from the events
    return json_safe(result)


@pytest.mark.parametrize(
    ("dependence", "reference", "candidate", "expected"),
    [
        # the example, with a second exact class (v = 1) in another partition
        (
            unordered(),
            [E(1.0), E(1.1), E(2.0, 1)],
            [E(1.05), E(1.0), E(2.05, 1)],
            (True, 3, 0),
        ),
        # the maximum matching leaves one pair: one corruption, not two
        (unordered(), [E(1.0), E(1.1), E(0.7)], [E(1.05), E(1.3), E(1.0)], (False, 2, 1)),
        (
            BARRIERS,
            [E(1.0), E(1.1), E(0.0, kind="B"), E(2.0)],
            [E(1.05), E(1.0), E(0.0, kind="B"), E(2.0)],
            (True, 4, 0),
        ),
        # a chain pairs rank by rank: 1.1 against 1.0
        (ordered(), [E(1.0), E(1.1)], [E(1.05), E(1.0)], (False, 1, 1)),
    ],
    ids=["unordered", "unordered_divergent", "barriers", "ordered"],
)
def test_spark_pairs_within_tolerance_as_the_core_does(
    spark: SparkSession,
    dependence: Dependence,
    reference: list[dict[str, Any]],
    candidate: list[dict[str, Any]],
    expected: tuple[bool, int, int],
) -> None:
    frames = stream_frames(spark, "kind string, v long, n double", reference, candidate)
    verdict = compare_dataframes(*frames, dependence, EQ)
    core = compare(reference, candidate, dependence, EQ)
    assert summary(verdict) == summary(core)
    assert (verdict.equivalent, verdict.matched_count, sum(verdict.counts.values())) == expected
    assert core.warnings == ()
