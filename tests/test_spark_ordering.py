"""``order_by`` on Spark without a sort before it is needed (``matcher.spark.ordering``).

The position a lazy ``order_by`` gives every row equals the one an eager sort gives (the
rank by ``orderBy(*order_by, natural order)``), for every type it takes, with nulls, NaN,
``-0.0``, ties and several buckets; a plan that reads no position sorts nothing; the
screening ranks by the order struct exactly as by the position; and types whose values do
not survive the driver exactly take the eager sort.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from matcher.dependence import by_key, typed
from matcher.equality import Equality
from matcher.errors import InputError
from matcher.spark import compare_dataframes, ordering, read_stream
from matcher.spark.schema import ORD, POS

pytest_plugins = ("tests.spark_fixtures",)

ROWS = 6_000


@pytest.fixture
def small_buckets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Buckets of 700 rows: several bounds, as at scale."""
    monkeypatch.setattr(ordering, "ROWS_PER_BUCKET", 700)
    yield


@pytest.fixture(scope="module")
def output(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Rows of every key type the lazy order takes, with nulls, NaN, -0.0 and many ties,
    in four files in an order unrelated to any column."""
    path = tmp_path_factory.mktemp("ordering") / "out"
    spark.range(ROWS).selectExpr(
        "id",
        "CASE WHEN id % 7 = 0 THEN NULL ELSE (id * 31) % 50 END AS i",
        "CASE WHEN id % 11 = 0 THEN CAST('NaN' AS DOUBLE) WHEN id % 13 = 0 THEN -0.0"
        " WHEN id % 17 = 0 THEN 0.0 WHEN id % 19 = 0 THEN NULL ELSE (id % 9) / 3.0 END AS d",
        "CAST((id % 23) / 7 AS DECIMAL(10, 3)) AS m",
        "timestamp_micros((id % 100) * 1000000) AS ts",
        "date_add(DATE'2020-01-01', CAST(id % 3 AS INT)) AS dt",
        "CASE WHEN id % 5 = 0 THEN NULL"
        " ELSE substr('zéa\u00e9\u4e2dbc', CAST(id % 6 AS INT), 2) END AS s",
        "id % 4 = 0 AS b",
        "CAST(id % 9 AS FLOAT) / 2 AS f",
    ).repartition(4).write.parquet(str(path))
    return str(path)


def eager_positions(spark: SparkSession, path: str, order_by: list[str]) -> dict[int, int]:
    """Each row's rank by ``orderBy(*order_by, natural order)``, as one sort gives it."""
    natural = read_stream(spark, path, format="parquet")
    ranked = natural.orderBy(*order_by, POS).select("id").collect()
    return {row["id"]: index for index, row in enumerate(ranked)}


def lazy_positions(stream: DataFrame) -> dict[int, int]:
    return {row[0]: row[1] for row in stream.select("id", POS).collect()}


@pytest.mark.parametrize(
    "order_by",
    [["i"], ["d", "i"], ["ts", "s"], ["dt", "m", "s"], ["b", "f"], ["s"], ["id"]],
)
def test_lazy_positions_equal_the_eager_sort(
    spark: SparkSession, output: str, small_buckets: None, order_by: list[str]
) -> None:
    stream = read_stream(spark, output, format="parquet", order_by=order_by)
    assert stream.schema[ORD].dataType.typeName() == "struct"
    assert lazy_positions(stream) == eager_positions(spark, output, order_by)
    # the order struct sorts as the positions do (what screening ranks by)
    ranked = stream.selectExpr("id", f"row_number() OVER (ORDER BY {ORD}) - 1 AS r").collect()
    positions = lazy_positions(stream)
    assert all(positions[row["id"]] == row["r"] for row in ranked)


def test_a_plan_that_reads_no_position_sorts_nothing(
    spark: SparkSession, output: str, small_buckets: None
) -> None:
    tracker = spark.sparkContext.statusTracker()
    jobs = []
    for order_by in (None, ["i"]):
        before = set(tracker.getJobIdsForGroup())
        stream = read_stream(spark, output, format="parquet", order_by=order_by)
        jobs.append(len(set(tracker.getJobIdsForGroup()) - before))
    assert jobs[0] == jobs[1]  # the order adds no job: no count, no sample
    unread = stream.select("id", ORD)._jdf.queryExecution().optimizedPlan().toString()
    assert "Window" not in unread and "Join" not in unread and "subquery" not in unread
    read = stream.select("id", POS)._jdf.queryExecution().optimizedPlan().toString()
    assert "Window" in read and "scalar-subquery" in read


def test_an_output_of_one_bucket_samples_nothing(spark: SparkSession, output: str) -> None:
    stream = read_stream(spark, output, format="parquet", order_by=["d", "i"])
    assert lazy_positions(stream) == eager_positions(spark, output, ["d", "i"])


def test_types_without_an_exact_key_take_the_eager_sort(
    spark: SparkSession, tmp_path: Path
) -> None:
    frame = spark.range(50).selectExpr("id", "array(id % 3, id % 2) AS a")
    frame.write.parquet(str(tmp_path / "out"))
    natural = read_stream(spark, str(tmp_path / "out"), format="parquet")
    assert ordering.order_keys(natural, ["a"]) is None
    stream = read_stream(spark, str(tmp_path / "out"), format="parquet", order_by=["a"])
    assert ORD not in stream.columns  # the eager sort numbers a checkpoint
    assert sorted(lazy_positions(stream).values()) == list(range(50))


def test_a_divergence_under_a_lazy_order_is_witnessed_at_its_position(
    spark: SparkSession, tmp_path: Path, small_buckets: None
) -> None:
    rows = spark.range(3_000).selectExpr("id % 97 AS k", "id AS seq", "id * 2 AS v")
    rows.repartition(3).write.parquet(str(tmp_path / "ref"))
    altered = rows.withColumn("v", F.when(F.col("seq") == 2_500, -1).otherwise(F.col("v")))
    altered.repartition(2).write.parquet(str(tmp_path / "cand"))
    reference, candidate = (
        read_stream(spark, str(tmp_path / side), format="parquet", order_by=["seq"])
        for side in ("ref", "cand")
    )
    verdict = compare_dataframes(reference, candidate, by_key("k"))
    assert verdict.counts["corruption"] == 1
    (witness,) = verdict.divergences
    assert (witness.reference_position, witness.candidate_position) == (2_500, 2_500)


def test_an_order_column_retyped_between_the_sides_ranks_each_side_by_its_own_order(
    spark: SparkSession, tmp_path: Path
) -> None:
    # seq is a long in the reference and a string in the candidate: as strings, "10" < "9"
    rows = spark.range(40).selectExpr("id % 3 AS k", "id AS seq", "id * 2 AS v")
    rows.write.parquet(str(tmp_path / "ref"))
    rows.withColumn("seq", F.col("seq").cast("string")).write.parquet(str(tmp_path / "cand"))
    reference, candidate = (
        read_stream(spark, str(tmp_path / side), format="parquet", order_by=["seq"])
        for side in ("ref", "cand")
    )
    ignore_seq = Equality(ignore=frozenset({"seq"}))
    verdict = compare_dataframes(reference, candidate, by_key("k"), ignore_seq)
    # the candidate's own order is by text: "10" comes before "2", a reordering per key
    eager = [
        read_stream(spark, str(tmp_path / side), format="parquet")
        .orderBy("seq", POS)
        .drop(POS, ORD)
        for side in ("ref", "cand")
    ]
    assert verdict.counts["reordering"] > 0, verdict.counts
    assert (
        verdict.counts
        == compare_dataframes(
            read_stream(spark, eager[0], order_by=None),
            read_stream(spark, eager[1], order_by=None),
            by_key("k"),
            ignore_seq,
        ).counts
    )


def test_an_undeclared_type_under_order_by_names_its_position(
    spark: SparkSession, tmp_path: Path
) -> None:
    taxi = typed("kind", {"taxi": ["taxi_id"]}, [("taxi", "taxi")])
    rows = [("taxi", 1, 3), ("bus", 2, 1), ("taxi", 1, 2)]
    frame = spark.createDataFrame(rows, "kind string, taxi_id long, seq long")
    frame.write.parquet(str(tmp_path / "out"))
    streams = [
        read_stream(spark, str(tmp_path / "out"), format="parquet", order_by=["seq"])
        for _ in range(2)
    ]
    # ordered by seq, the bus is the first event
    with pytest.raises(InputError, match=r"^reference event #0: .* 'bus' is not declared"):
        compare_dataframes(*streams, taxi)
