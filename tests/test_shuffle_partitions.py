"""Parity's own Spark jobs on small outputs use one shuffle partition per core instead of
Spark's 200 (issue 15): the size rule, and that a configured count is kept; the match lets
adaptive execution coalesce the partitions of the plans it persists, and reads larger Arrow
batches in the jobs that take whole partitions with numpy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from matcher.spark.session import (
    ARROW_ROWS,
    BATCH_ROWS,
    CACHED_PLAN_PARTITIONING,
    SMALL_OUTPUTS_BYTES,
    arrow_batches,
    fit_shuffle_partitions,
    let_cached_plans_coalesce,
    output_bytes,
    small_shuffle_partitions,
)

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture
SIZES = pa.schema([("n", pa.int64())])


def test_small_local_outputs_get_one_partition_per_core() -> None:
    assert small_shuffle_partitions(10_000, 2) == 2
    assert small_shuffle_partitions(SMALL_OUTPUTS_BYTES, 8) == 8
    assert small_shuffle_partitions(0, 0) == 1


def test_large_or_remote_outputs_keep_sparks_count() -> None:
    assert small_shuffle_partitions(SMALL_OUTPUTS_BYTES + 1, 2) is None
    assert small_shuffle_partitions(None, 2) is None


def test_output_bytes_counts_files_and_folders(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    (folder / "part=1").mkdir(parents=True)
    (folder / "part=1" / "a.parquet").write_bytes(b"x" * 10)
    (folder / "_SUCCESS").write_bytes(b"")
    single = tmp_path / "one.jsonl"
    single.write_bytes(b"y" * 5)
    assert output_bytes([str(folder), f"file://{single}"]) == 15
    assert output_bytes([str(folder), "nosuchscheme://bucket/out"]) is None
    assert output_bytes([str(tmp_path / "missing")]) is None
    assert output_bytes([str(folder), str(single)], limit=12) is None  # stops past the limit


@pytest.mark.spark
def test_a_configured_count_is_kept(spark: SparkSession, tmp_path: Path) -> None:
    """The shared session is built with spark.sql.shuffle.partitions 4 (as spark-defaults or
    --conf would set it): a job keeps what its configuration says, even on small outputs."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    assert fit_shuffle_partitions(spark, [str(tmp_path)]) is None
    assert spark.conf.get("spark.sql.shuffle.partitions") == before


@pytest.mark.spark
def test_cached_plans_may_coalesce_unless_configured(spark: SparkSession) -> None:
    """The shared session does not configure it: the match sets it (and the test puts
    Spark's default back for the other tests)."""
    assert not spark.sparkContext.getConf().contains(CACHED_PLAN_PARTITIONING)
    try:
        assert let_cached_plans_coalesce(spark) is True
        assert spark.conf.get(CACHED_PLAN_PARTITIONING) == "true"
    finally:
        spark.conf.unset(CACHED_PLAN_PARTITIONING)


@pytest.mark.spark
def test_arrow_batches_are_larger_inside_unless_the_session_sets_them(
    spark: SparkSession,
) -> None:
    """``arrow_batches`` sets ``BATCH_ROWS`` rows for the jobs inside and unsets it after,
    even when a job fails; a size the session sets is kept. A ``mapInArrow`` inside sees
    batches of that size."""

    def sizes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pa.RecordBatch.from_pylist([{"n": b.num_rows} for b in batches], SIZES)

    frame = spark.range(0, 30_000, numPartitions=1)
    assert spark.conf.get(ARROW_ROWS, None) is None
    with arrow_batches(spark):
        assert spark.conf.get(ARROW_ROWS) == str(BATCH_ROWS)
        assert [r.n for r in frame.mapInArrow(sizes, "n long").collect()] == [30_000]
    assert spark.conf.get(ARROW_ROWS, None) is None
    assert len(frame.mapInArrow(sizes, "n long").collect()) == 3  # Spark's 10,000
    with pytest.raises(ZeroDivisionError), arrow_batches(spark):
        _ = 1 // 0
    assert spark.conf.get(ARROW_ROWS, None) is None
    spark.conf.set(ARROW_ROWS, "7000")
    try:
        with arrow_batches(spark):
            assert spark.conf.get(ARROW_ROWS) == "7000"
        assert spark.conf.get(ARROW_ROWS) == "7000"
    finally:
        spark.conf.unset(ARROW_ROWS)
