"""``parity.testing.assert_equivalent``: the cases chispa's and pyspark's DataFrame
assertions are used for (equal rows, row order, a changed value, a missing row, approximate
numbers, schemas), on lists of rows with the core and on Spark DataFrames with Spark, each
passing and failing, with the failure message checked."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import Row, SparkSession

from matcher.dependence import by_key
from matcher.equality import Equality, Tolerance
from matcher.errors import SpecError
from parity.testing import assert_equivalent

pytest_plugins = ("tests.spark_fixtures",)

TRIPS: list[dict[str, Any]] = [
    {"taxi": "a", "seq": 1, "fare": 10.0},
    {"taxi": "b", "seq": 1, "fare": 7.5},
    {"taxi": "a", "seq": 2, "fare": 12.25},
    {"taxi": "b", "seq": 2, "fare": 3.0},
]


def failure(*args: object, **kwargs: object) -> str:
    with pytest.raises(AssertionError) as caught:
        assert_equivalent(*args, **kwargs)  # type: ignore[arg-type]
    return str(caught.value)


def test_the_same_rows_pass_and_the_verdict_is_returned() -> None:
    verdict = assert_equivalent(TRIPS, list(TRIPS), dependence={"key": ["taxi"]})
    assert verdict.equivalent and verdict.matched_count == 4


def test_keys_may_interleave_but_a_key_keeps_its_order() -> None:
    interleaved = [TRIPS[1], TRIPS[3], TRIPS[0], TRIPS[2]]  # b, b, a, a
    assert_equivalent(TRIPS, interleaved, dependence={"key": ["taxi"]})
    swapped = [TRIPS[2], TRIPS[1], TRIPS[0], TRIPS[3]]  # a's two trips swapped
    message = failure(TRIPS, swapped, dependence={"key": ["taxi"]})
    assert message.splitlines()[0] == (
        "the candidate is not equivalent to the reference under by_key(taxi), equality exact"
    )
    assert "verdict: divergent" in message
    assert "counts: loss 0, duplication 0, reordering 1, corruption 0" in message
    assert "reordering, key 'a'" in message


def test_any_order_and_one_order() -> None:
    reversed_rows = TRIPS[::-1]
    assert_equivalent(TRIPS, reversed_rows, dependence="unordered")
    message = failure(TRIPS, reversed_rows, dependence="ordered")
    assert "reordering" in message


def test_a_changed_value_shows_its_column_in_a_table() -> None:
    changed = [dict(r) for r in TRIPS]
    changed[2]["fare"] = 99.0
    message = failure(TRIPS, changed, dependence={"key": ["taxi"]})
    assert "counts: loss 0, duplication 0, reordering 0, corruption 1" in message
    assert "corrupted columns: fare 1" in message
    assert "divergence 1 of 1: corruption, key 'a', reference #2, candidate #2" in message
    table = [line for line in message.splitlines() if "fare" in line and "|" in line]
    assert table == ["  * fare   | 12.25     | 99.0"]


def test_a_missing_row_is_a_loss_and_the_message_says_how_many_are_hidden() -> None:
    many = [{"k": i % 3, "v": i} for i in range(30)]
    message = failure(many, many[:20], dependence={"key": ["k"]}, limit=2)
    assert "counts: loss 10, duplication 0, reordering 0, corruption 0" in message
    assert message.count("divergence ") == 2
    assert "... and 8 more (pass a higher limit= to see their witnesses)" in message


def test_approximate_numbers_within_a_declared_tolerance() -> None:
    close = [dict(r, fare=r["fare"] * (1 + 1e-12)) for r in TRIPS]
    assert_equivalent(
        TRIPS, close, dependence={"key": ["taxi"]}, equality={"tolerance": {"fare": {"rel": 1e-9}}}
    )
    message = failure(TRIPS, close, dependence={"key": ["taxi"]})
    assert "corrupted columns: fare 4" in message
    tolerant = Equality(tolerance={"fare": Tolerance(rel=1e-9)})
    assert_equivalent(TRIPS, close, dependence=by_key("taxi"), equality=tolerant)
    message = failure(TRIPS, close, dependence=by_key("taxi"), equality={"ignore": ["seq"]})
    assert "equality ignore seq" in message.splitlines()[0]


def test_rows_as_spark_rows_and_pandas(spark: SparkSession) -> None:
    rows = [Row(**r) for r in TRIPS]
    assert_equivalent(rows, pd.DataFrame(TRIPS), dependence={"key": ["taxi"]})
    frame = spark.createDataFrame(TRIPS)
    assert_equivalent(TRIPS, frame, dependence={"key": ["taxi"]})  # collected


def test_spark_dataframes_are_compared_on_spark(spark: SparkSession) -> None:
    reference = spark.createDataFrame(TRIPS)
    interleaved = spark.createDataFrame([TRIPS[1], TRIPS[0], TRIPS[3], TRIPS[2]])
    verdict = assert_equivalent(reference, interleaved, dependence={"key": ["taxi"]})
    assert verdict.matched_count == 4
    changed = spark.createDataFrame([dict(r, fare=r["fare"] + 1) for r in TRIPS])
    message = failure(reference, changed, dependence={"key": ["taxi"]}, limit=1)
    assert "counts: loss 0, duplication 0, reordering 0, corruption 4" in message
    assert "corrupted columns: fare 4" in message
    assert "... and 3 more" in message


def test_order_by_gives_spark_dataframes_their_order(spark: SparkSession) -> None:
    reference = spark.createDataFrame(TRIPS)
    shuffled = spark.createDataFrame(TRIPS[::-1])
    failure(reference, shuffled, dependence="ordered")
    assert_equivalent(reference, shuffled, dependence="ordered", order_by=["taxi", "seq"])


def test_a_schema_change_fails_under_a_strict_spec(spark: SparkSession) -> None:
    reference = spark.createDataFrame(TRIPS)
    retyped = reference.selectExpr("taxi", "seq", "CAST(fare AS STRING) AS fare")
    spec = {"dependence": {"key": ["taxi"]}, "schema": {"mode": "strict"}}
    message = failure(reference, retyped, spec=spec)
    assert "schema:" in message and "fare" in message


def test_a_spec_file(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("dependence:\n  key: [taxi]\nequality:\n  ignore: [fare]\n", "utf-8")
    changed = [dict(r, fare=0.0) for r in TRIPS]
    assert_equivalent(TRIPS, changed, spec=str(path))


def test_a_test_set_up_wrong_is_not_an_assertion() -> None:
    with pytest.raises(
        SpecError, match=r"dependence.key: unknown column 'driver' in the reference"
    ):
        assert_equivalent(TRIPS, TRIPS, spec={"dependence": {"key": ["driver"]}})
    with pytest.raises(SpecError, match=r"dependence\.kee: unknown key"):
        assert_equivalent(TRIPS, TRIPS, dependence={"kee": ["taxi"]})
    with pytest.raises(TypeError, match="give spec= or dependence="):
        assert_equivalent(TRIPS, TRIPS)
    with pytest.raises(TypeError, match="not both"):
        assert_equivalent(TRIPS, TRIPS, spec={"dependence": "ordered"}, dependence="ordered")
    with pytest.raises(TypeError, match="a row is a mapping"):
        assert_equivalent([1, 2], [1, 2], dependence="ordered")


def test_hostile_values_are_escaped_in_the_message() -> None:
    changed = [dict(r) for r in TRIPS]
    changed[0]["taxi"] = "a\x1b[2J"
    message = failure(TRIPS, changed, dependence="ordered")
    assert "\x1b" not in message
    assert "\\x1b[2J" in message


def test_spark_timestamps_print_in_iso(spark: SparkSession) -> None:
    rows = [{"k": "a", "at": dt.datetime(2024, 5, 1, 6, 0), "v": 1}]
    moved = [dict(rows[0], v=2)]
    message = failure(
        spark.createDataFrame(rows), spark.createDataFrame(moved), dependence="ordered"
    )
    assert "2024-05-01T06:00:00" in message
    assert "datetime.datetime" not in message
