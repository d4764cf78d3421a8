"""Reading outputs as streams on Spark, and what the comparison checks before matching.

Positions must be the file-name-order, row-order index however Spark plans the scan: many
small files (packed into partitions by size, not name) and files bigger than a split (one
file read by several tasks). Then: ``order_by``, tables, schema differences,
``common_columns``, empty streams, null and NaN keys.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from matcher import InputError, compare
from matcher.dependence import by_key, unordered
from matcher.spark import compare_dataframes, read_stream
from matcher.spark import streams as streams_module
from tests.spark_fixtures import stream_frames

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = pytest.mark.spark


def positions(stream: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """``(columns...)`` of every row, in ``__pos`` order, after checking ``__pos`` is dense."""
    rows = sorted((r["__pos"], *(r[c] for c in columns)) for r in stream.collect())
    assert [r[0] for r in rows] == list(range(len(rows)))
    return [r[1:] for r in rows]


def write_json_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.slow
def test_many_small_files_in_name_order_whatever_their_sizes(
    spark: SparkSession, tmp_path: Path, tiny_splits: None
) -> None:
    expected = []
    for i in range(12):  # sizes go up and down, so size order is not name order
        rows = [
            {"f": i, "r": j, "pad": "x" * (9 * j % 17)} for j in range(12 - i if i % 2 else i + 1)
        ]
        write_json_lines(tmp_path / f"part-{i:05d}.json", rows)
        expected += [(i, j) for j in range(len(rows))]
    (tmp_path / "_SUCCESS").write_text("")
    stream = read_stream(spark, str(tmp_path))
    assert 1 < stream.rdd.getNumPartitions() < 12  # Spark did pack files together
    assert positions(stream, "f", "r") == expected


@pytest.mark.slow
def test_a_parquet_file_bigger_than_a_split(
    spark: SparkSession, tmp_path: Path, tiny_splits: None
) -> None:
    big = pa.table({"i": list(range(2000)), "s": [f"v{i:04d}" for i in range(2000)]})
    pq.write_table(big, tmp_path / "part-00000.parquet", row_group_size=100)
    pq.write_table(pa.table({"i": [-1, -2], "s": ["a", "b"]}), tmp_path / "part-00001.parquet")
    stream = read_stream(spark, str(tmp_path), format="parquet")
    assert stream.rdd.getNumPartitions() > 10  # the big file is read by many tasks
    assert positions(stream, "i") == [(i,) for i in [*range(2000), -1, -2]]


def test_parquet_is_ordered_from_its_listing_and_counted_only_when_positions_are_read(
    spark: SparkSession, tmp_path: Path, tiny_splits: None
) -> None:
    for i, n in enumerate([300, 5, 120]):  # a file split in many, a small one, another
        rows = pa.table({"f": [i] * n, "r": list(range(n))})
        pq.write_table(rows, tmp_path / f"part {i:05d}.parquet", row_group_size=40)
    stream = read_stream(spark, str(tmp_path), format="parquet")
    assert stream.columns == ["f", "r", "__pos", "__p_ord"]
    order = sorted((r["__p_ord"], r["f"], r["r"]) for r in stream.collect())
    expected = [(f, r) for f, n in enumerate([300, 5, 120]) for r in range(n)]
    assert [(f, r) for _, f, r in order] == expected
    assert positions(stream, "f", "r") == expected
    # a plan that reads only the order neither counts rows nor joins anything
    plan = stream.select("f", "__p_ord")._jdf.queryExecution().executedPlan().toString()
    assert "Aggregate" not in plan
    assert "Join" not in plan


@pytest.mark.parametrize("name", ["a=1,b+c~d", "sp ace%20x", "é中'q"])
def test_a_local_path_of_any_characters_is_ordered_from_its_listing(
    spark: SparkSession, tmp_path: Path, name: str
) -> None:
    """No job checks how Spark spells a local path (``_spark_path`` is the whole rule): a
    path spelled otherwise would fail the job, naming it."""
    path = tmp_path / name
    path.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"f": [i] * 4, "r": list(range(4))}), path / f"part-{i}.parquet")
    stream = read_stream(spark, str(path), format="parquet")
    assert "__p_ord" in stream.columns  # numbered from the listing and the row index
    assert positions(stream, "f", "r") == [(f, r) for f in range(3) for r in range(4)]


def test_file_index_finds_every_listed_path(spark: SparkSession) -> None:
    names = sorted(
        {
            f"file:/out/{c}{i}.parquet"
            for i, c in enumerate(["a", " b", "%", "#", "é", "'", "\\", "z"])
        }
        | {f"s3a://bucket/out/part-{i:05d}.parquet" for i in range(40)}
    )
    frame = spark.createDataFrame([(n,) for n in names], "__p_file string")
    found = frame.selectExpr("__p_file", f"{streams_module.file_index(names)} AS i").collect()
    assert {r["__p_file"]: r["i"] for r in found} == {n: i for i, n in enumerate(names)}


def test_a_parquet_row_from_a_file_not_listed_fails_naming_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    pq.write_table(pa.table({"i": [1, 2]}), tmp_path / "part-0.parquet")
    path = f"file:{tmp_path}/part-0.parquet"
    index = streams_module.file_index([path.replace("part-0", "part-1")])
    frame = spark.read.parquet(str(tmp_path)).selectExpr("_metadata.file_path AS __p_file")
    with pytest.raises(Exception, match=r"the listing of the output lacks: .*part-0"):
        frame.selectExpr(f"{index} AS i").collect()
    assert frame.selectExpr(f"{streams_module.file_index([path])} AS i").collect()[0]["i"] == 0


def test_a_listed_path_is_written_as_spark_writes_file_paths() -> None:
    assert streams_module._spark_path("file:///tmp/a%20b/part-0.parquet") == (
        "file:/tmp/a%20b/part-0.parquet"
    )
    assert streams_module._spark_path("s3a://bucket/out/part-0.parquet") == (
        "s3a://bucket/out/part-0.parquet"
    )


def test_a_json_file_bigger_than_a_split(
    spark: SparkSession, tmp_path: Path, tiny_splits: None
) -> None:
    write_json_lines(tmp_path / "out.jsonl", [{"i": i, "pad": "y" * 40} for i in range(300)])
    stream = read_stream(spark, str(tmp_path / "out.jsonl"))
    assert stream.rdd.getNumPartitions() > 5
    assert positions(stream, "i") == [(i,) for i in range(300)]


def test_order_by_sorts_and_breaks_ties_in_file_order(spark: SparkSession, tmp_path: Path) -> None:
    write_json_lines(tmp_path / "part-0.json", [{"t": 3, "i": 0}, {"t": 1, "i": 1}])
    write_json_lines(tmp_path / "part-1.json", [{"t": 1, "i": 2}, {"t": 2, "i": 3}])
    stream = read_stream(spark, str(tmp_path), order_by=["t"])
    assert positions(stream, "t", "i") == [(1, 1), (1, 2), (2, 3), (3, 0)]


@pytest.fixture(params=["fixed partitions", "adaptive coalescing"])
def sorts_that_vary(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[str]:
    """A sort whose partitions differ from one execution to the next, as at scale: range
    bounds from a sample (more rows per task than the sample takes), and either many fixed
    partitions or adaptive coalescing by the bytes a job reads, which depend on its
    columns."""
    conf = {
        "spark.sql.shuffle.partitions": "16",
        "spark.sql.adaptive.coalescePartitions.enabled": str(
            request.param == "adaptive coalescing"
        ).lower(),
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16k",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize": "1k",
    }
    old = {k: spark.conf.get(k, None) for k in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    yield str(request.param)
    for key, value in old.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


@pytest.mark.slow
def test_order_by_positions_do_not_depend_on_how_a_sort_partitions(
    spark: SparkSession, tmp_path: Path, sorts_that_vary: str
) -> None:
    # seq is the stream order; the files hold it shuffled, so the sort does the work
    n = 30_000
    rows = spark.range(n).selectExpr(
        "id % 1009 AS k", "(id * 7919) % 30000 AS seq", "sha2(CAST(id AS STRING), 256) AS pad"
    )
    rows.repartition(2).write.parquet(str(tmp_path / "ref"))
    rows.repartition(3).write.parquet(str(tmp_path / "cand"))
    for side in ("ref", "cand"):
        stream = read_stream(spark, str(tmp_path / side), format="parquet", order_by=["seq"])
        # three jobs: positions read alone, with every column, and counted per partition
        assert sorted(r["__pos"] for r in stream.select("__pos").collect()) == list(range(n))
        assert positions(stream, "seq") == [(i,) for i in range(n)]
        per_task = stream.groupBy(F.spark_partition_id()).count().collect()
        assert sum(r["count"] for r in per_task) == n
    reference, candidate = (
        read_stream(spark, str(tmp_path / side), format="parquet", order_by=["seq"])
        for side in ("ref", "cand")
    )
    verdict = compare_dataframes(reference, candidate, by_key("k"))
    assert (verdict.status, verdict.reference_count, verdict.candidate_count) == (
        "equivalent",
        n,
        n,
    )


def test_csv_values_are_typed_as_the_core_types_them(spark: SparkSession, tmp_path: Path) -> None:
    # inferred: a timestamp stays text; an unquoted empty field is null, a quoted one ""
    (tmp_path / "out.csv").write_text(
        'a,b,t\n1,x,2020-01-01T10:00:00\n"","",12:00\n,,\n', encoding="utf-8"
    )
    stream = read_stream(spark, str(tmp_path / "out.csv"))
    types = [f.dataType.simpleString() for f in stream.schema.fields[:3]]
    assert types == ["int", "string", "string"]  # a bare time would be today's: text
    assert positions(stream, "a", "b", "t") == [
        (1, "x", "2020-01-01T10:00:00"),
        (None, "", "12:00"),
        (None, None, None),
    ]
    # text for a job that writes values back (the slice); declared: read with its types
    text = read_stream(spark, str(tmp_path / "out.csv"), typed=False)
    assert positions(text, "a", "b") == [("1", "x"), ("", ""), (None, None)]
    (tmp_path / "declared.csv").write_text("a,b\n1,2020-1-2\n,\n", encoding="utf-8")
    declared = read_stream(
        spark, str(tmp_path / "declared.csv"), declared=[("a", "double"), ("b", "date")]
    )
    assert positions(declared, "a", "b") == [(1.0, dt.date(2020, 1, 2)), (None, None)]


def test_a_declared_csv_header_must_name_the_declared_columns(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "out.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_stream(spark, str(tmp_path / "out.csv"), declared=[("a", "int"), ("c", "int")])
    assert str(info.value) == (
        f"{tmp_path / 'out.csv'}: the header names a, b; output.schema declares a, c"
    )


def test_a_table_and_a_dataframe(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(5,), (6,), (7,)], "x long")
    frame.createOrReplaceTempView("parity_stream_test")
    assert positions(read_stream(spark, "parity_stream_test"), "x") == [(5,), (6,), (7,)]
    assert positions(read_stream(spark, frame), "x") == [(5,), (6,), (7,)]


def test_unreadable_outputs_are_input_errors(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_stream(spark, str(tmp_path / "missing"))
    with pytest.raises(InputError, match="unknown format 'xml'"):
        read_stream(spark, str(tmp_path), format="xml")
    write_json_lines(tmp_path / "a.json", [{"i": 1}])
    with pytest.raises(InputError, match="order_by column 'nope'"):
        read_stream(spark, str(tmp_path), order_by=["nope"])


# ---------------------------------------------------------------------------------------------
# What the comparison checks first


def frames(spark: SparkSession, ref_schema: str, cand_schema: str) -> tuple[DataFrame, DataFrame]:
    ref = spark.createDataFrame([], f"{ref_schema}, __pos long")
    cand = spark.createDataFrame([], f"{cand_schema}, __pos long")
    return ref, cand


def test_schema_differences_are_findings_not_errors(spark: SparkSession) -> None:
    ref, cand = frames(
        spark, "k long, a int, c int, d string", "k long, c bigint, b string, d string"
    )
    verdict = compare_dataframes(ref, cand, by_key("k"))
    assert verdict.equivalent is False
    assert verdict.schema is not None
    assert [f.explain() for f in verdict.schema.findings] == [
        "column 'a' (int) is missing from the candidate",
        "column 'c' changed type int -> bigint (widening; values compared as bigint)",
        "column 'b' (string) is new in the candidate",
    ]


def test_the_shared_columns_are_compared_at_their_common_type(spark: SparkSession) -> None:
    ref, cand = stream_frames(spark, "k long, a long, c long", [{"k": 1, "a": 1, "c": 1}], [])
    cand = spark.createDataFrame([(1, "z", 1, 0)], "k long, b string, c int, __pos long")
    verdict = compare_dataframes(ref, cand, by_key("k"), schema_mode="ignore")
    assert verdict.equivalent is True
    assert verdict.warnings == ()
    assert verdict.reference_count == verdict.candidate_count == verdict.matched_count == 1


def test_a_column_the_dependence_needs_must_exist(spark: SparkSession) -> None:
    ref, cand = frames(spark, "k long, v long", "k long, v long")
    with pytest.raises(InputError, match="the dependence needs column 'taxi_id'"):
        compare_dataframes(ref, cand, by_key("taxi_id"))
    ref, cand = frames(spark, "k long, v long", "v long")
    with pytest.raises(InputError, match="the dependence needs column 'k'"):
        compare_dataframes(ref, cand, by_key("k"), common_columns=True)


def test_a_stream_without_positions_is_refused(spark: SparkSession) -> None:
    ref, cand = frames(spark, "k long", "k long")
    with pytest.raises(InputError, match="candidate stream lacks the __pos column"):
        compare_dataframes(ref, cand.drop("__pos"), unordered())


def test_empty_streams(spark: SparkSession) -> None:
    events = [{"k": 1, "v": 1.0}, {"k": 2, "v": 2.0}]
    both_empty = compare_dataframes(*stream_frames(spark, "k long, v double", [], []), by_key("k"))
    assert both_empty.equivalent is True
    assert both_empty.reference_count == both_empty.candidate_count == 0
    one_empty = compare_dataframes(
        *stream_frames(spark, "k long, v double", events, []), by_key("k")
    )
    assert one_empty.equivalent is False
    assert dict(one_empty.counts) == {"loss": 2, "duplication": 0, "reordering": 0, "corruption": 0}
    assert [
        (d.kind, d.key, d.reference_position, d.candidate_position) for d in one_empty.divergences
    ] == [
        ("loss", 1, 0, 0),
        ("loss", 2, 1, 0),
    ]


def test_null_and_nan_keys_are_keys_like_any_other(spark: SparkSession) -> None:
    nan = math.nan
    reference = [{"k": None, "v": 1}, {"k": nan, "v": 2}, {"k": None, "v": 3}, {"k": 0.0, "v": 4}]
    candidate = [{"k": nan, "v": 2}, {"k": None, "v": 1}, {"k": -0.0, "v": 4}, {"k": None, "v": 5}]
    verdict = compare_dataframes(
        *stream_frames(spark, "k double, v long", reference, candidate), by_key("k")
    )
    expected = compare(reference, candidate, by_key("k"))
    assert verdict.equivalent is expected.equivalent is False
    [d] = verdict.divergences
    assert (d.kind, d.key, d.reference_position, d.candidate_position, d.columns) == (
        "corruption",
        None,
        2,
        3,
        ("v",),
    )
    assert [x.to_dict() for x in expected.divergences] == [d.to_dict()]


def typed_rows(spark: SparkSession, second_amount: str, second_map: str) -> DataFrame:
    """Two rows with a value of every kind of Spark type."""
    common = "TIMESTAMP'2024-03-01 10:00:00', DATE'2024-03-01'"
    nested = "named_struct('a', 1, 'b', 'x'), array(1.0D, 2.0D)"
    return spark.sql(
        "SELECT * FROM VALUES "
        f"(1L, {common}, CAST(1.5 AS DECIMAL(10, 2)), {nested}, map('p', 1, 'q', 2), X'00ff', 0L), "
        f"(2L, {common}, CAST({second_amount} AS DECIMAL(10, 2)), {nested}, {second_map}, "
        "X'00', 1L) "
        "AS rows(k, t, d, m, st, ar, mp, bn, __pos)"
    )


@pytest.mark.parametrize("dependence", [by_key("k"), unordered()], ids=["by_key", "unordered"])
def test_events_of_every_type_are_the_rows_spark_returns(
    spark: SparkSession, dependence: Any
) -> None:
    reference = typed_rows(spark, "2.5", "map('p', 1, 'q', 2)")
    candidate = typed_rows(spark, "9.99", "map('q', 2, 'p', 1)")  # the same map
    verdict = compare_dataframes(reference, candidate, dependence)

    def events(df: DataFrame) -> list[dict[str, Any]]:
        rows = sorted(df.collect(), key=lambda r: r["__pos"])
        return [{k: v for k, v in r.asDict(recursive=True).items() if k != "__pos"} for r in rows]

    expected = compare(events(reference), events(candidate), dependence)
    assert [d.to_dict() for d in verdict.divergences] == [d.to_dict() for d in expected.divergences]
    [corruption] = verdict.divergences
    assert (corruption.kind, corruption.columns) == ("corruption", ("m",))
