"""Reading an output as a stream: a DataFrame with a dense 0-based position, ``__pos``.

Stream order is the spec's ``order_by`` columns or, without them, files in name order and
rows in file order, as ``matcher.files.readers`` reads the same output without Spark. Spark plans a
scan by size, not by name: it packs small files into one partition in any order and splits
a large file into several. So positions never come from partition order. Each row's file
and split come from the hidden ``_metadata`` column and its place inside the split from
``monotonically_increasing_id()``, which is consecutive within a partition (a split is read
by one task, front to back). One small aggregation counts the rows of every (file, split);
their prefix sums, computed on the driver (a row per split), are joined back by broadcast.

With ``order_by`` the order is a column, ``__p_ord``: the struct of those columns and the
file order above (ties keep it), and positions are computed only by a plan that reads them
(``matcher.spark.ordering``): screening an equivalent output sorts nothing. An ``order_by``
column of a type whose values cannot be bounds exactly (``timestamp_ntz``, binary, arrays)
is range-partitioned and sorted instead, materialised once (a local checkpoint: a sort's
partitions differ from one execution to the next), and the same counting is done per sorted
partition. No way sorts the stream into one partition or numbers it with a global
``row_number``.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from matcher.ddl import to_ddl
from matcher.errors import InputError
from matcher.files.csv_types import NULL_TEXT
from matcher.formats import check_format, format_of_path, spark_format
from matcher.spark.columns import check_column_names
from matcher.spark.equality_sql import literal
from matcher.spark.kinds import INFERRED_FROM_TEXT, keep_json_kinds
from matcher.spark.ordering import number_by_order, order_keys
from matcher.spark.schema import ORD, POS, ROW_BITS, column

_ID = "__p_id"
_FIRST = "__p_first_id"
_OFFSET = "__p_offset"
_FILE = "__p_file"
_BLOCK = "__p_block"
_PART = "__p_part"
_ROW = "__p_row"
_INDEX = "__p_file_index"
#: an output of more files is numbered by the counting job, not from its listing
LISTED_FILES = 1_000
_FILE_UNKNOWN = "Parity: a row from a file that the listing of the output lacks: "
#: a CSV output's declared columns: ``(name, type)`` (``matcher.ddl``)
Declared = Sequence[tuple[str, str]]
_MALFORMED = re.compile(r"Malformed records are detected in record parsing: (\[[^\n]*?\])\.")
_READING = re.compile(r"Encountered error while reading file (\S+?)\.?\s")


def read_stream(
    spark: SparkSession,
    path: str | Path | DataFrame,
    format: str | None = None,
    order_by: Sequence[str] | None = None,
    keep_kinds: bool = True,
    declared: Declared | None = None,
    typed: bool = True,
) -> DataFrame:
    """The output at ``path`` (a directory or file, a catalog table, or a DataFrame) with its
    stream position in the ``__pos`` column (int64, 0-based, dense).

    ``format``: ``parquet``, ``json`` (JSON lines), ``csv`` (a header, then values typed as
    the module's docstring says); ``None`` guesses from the file names. ``order_by``: the
    columns that give stream order. ``keep_kinds``: a JSON column that mixes kinds is read
    as JSON text, so that ``1`` and ``"1"`` stay apart (``matcher.spark.kinds``); ``False``
    reads it as Spark infers it. ``declared``: a CSV output's columns (``output.schema``).
    ``typed``: ``False`` reads CSV values as their text, for a job that writes them back
    (the slice), not one that compares them.
    """
    # names twice, or twice but for their case; the JSON schema it inferred is read with
    inferred = check_column_names(spark, path, format)
    df, kind = _open(spark, path, format, inferred, declared, typed)
    if POS in df.columns:
        if order_by is None:
            return df
        df = df.drop(POS)
    if order_by:
        missing = [c for c in order_by if c not in df.columns]
        if missing:
            raise InputError(f"order_by column {missing[0]!r} is not in the output {_name(path)}")
    if kind == "json" and keep_kinds:
        df = keep_json_kinds(spark, df, str(path))
    natural = _number_by_row_index(df) if kind == "parquet" else None
    if natural is None:
        try:
            natural = _number_by_files(df)
        except AnalysisException:  # not a file scan (a view, an in-memory DataFrame)
            natural = _number_by_partitions(df)
    if not order_by:
        return natural
    keys = order_keys(natural, order_by)
    if keys is not None:
        return number_by_order(natural, order_by, keys)
    # ties keep the natural order; __p_ord, where there is one, needs no counting job
    tie = ORD if ORD in natural.columns else POS
    ordered = natural.orderBy(*[column(c) for c in order_by], tie).drop(POS, ORD)
    return _number_by_partitions(ordered)


def _name(path: str | Path | DataFrame) -> str:
    return "(a DataFrame)" if isinstance(path, DataFrame) else str(path)


def load_output(
    spark: SparkSession,
    path: str | Path | DataFrame,
    format: str | None,
    declared: Declared | None = None,
) -> DataFrame:
    return _open(spark, path, format, declared=declared)[0]


def _open(
    spark: SparkSession,
    path: str | Path | DataFrame,
    format: str | None,
    inferred: StructType | None = None,
    declared: Declared | None = None,
    typed: bool = True,
) -> tuple[DataFrame, str | None]:
    """The output as a DataFrame, and the file format it was read in (``None``: a table or
    a DataFrame). ``inferred``: the JSON schema already inferred of it (no second pass)."""
    if isinstance(path, DataFrame):
        return path, None
    text = str(path)
    if not text:
        raise InputError("an output path is empty")
    check_format(format, text)
    try:
        if format is None and "/" not in text and spark.catalog.tableExists(text):
            return spark.table(text), None
        kind = spark_format(format) if format else format_of_path(text)
        if declared is not None and kind != "csv":
            raise InputError(
                f"{text}: output.schema declares a CSV output's columns; this output is {kind}"
            )
        if kind == "csv":
            return _csv(spark, text, declared, typed), kind
        reader = spark.read
        if kind == "json" and inferred is not None:
            reader = reader.schema(_from_text(inferred))
        return reader.format(kind).load(text), kind
    except AnalysisException as exc:
        raise InputError(f"{text}: {_first_line(exc)}") from exc


def _csv(spark: SparkSession, text: str, declared: Declared | None, typed: bool) -> DataFrame:
    """A CSV output read as the module's docstring says: one pass to infer its types
    (none when they are declared), then read with them."""
    reader = spark.read.format("csv").option("header", True).option("nullValue", NULL_TEXT)
    if not typed:
        return reader.load(text)
    if declared is not None:
        header = reader.load(text).columns  # the first line only
        wanted = [name for name, _ in declared]
        if header != wanted:
            raise InputError(
                f"{text}: the header names {', '.join(header)}; output.schema declares "
                f"{', '.join(wanted)}"
            )
        return (
            reader.schema(to_ddl(tuple(declared)))
            .option("enforceSchema", False)  # every file's header checked against it
            .option("mode", "FAILFAST")
            .load(text)
        )
    found = reader.option("inferSchema", True).load(text).schema
    as_text = StructType(
        [
            StructField(f.name, StringType(), True)
            if isinstance(f.dataType, TimestampType | TimestampNTZType)
            else f
            for f in found.fields
        ]
    )
    return reader.option("inferSchema", False).schema(_from_text(as_text)).load(text)


def malformed_csv_error(text: str) -> InputError | None:
    """The error of a job that failed on a CSV value not of the type ``output.schema``
    declares (read ``FAILFAST``), from the failure's text (``matcher.spark.failures``);
    ``None`` for any other failure. Spark says the file and the record as far as it read
    it (the value it refused is null there), not the line."""
    record = _MALFORMED.search(text)
    if record is None:
        return None
    found = _READING.search(text)
    where = urllib.parse.unquote(found[1]).removeprefix("file://") + ": " if found else ""
    return InputError(
        f"{where}a value is not of the type output.schema declares (Spark's reader refused "
        f"the record {record[1]})"
    )


def _from_text(schema: StructType) -> StructType:
    """``schema`` with every column marked as typed from text (``INFERRED_FROM_TEXT``)."""
    return StructType(
        [
            StructField(f.name, f.dataType, f.nullable, {**f.metadata, INFERRED_FROM_TEXT: True})
            for f in schema.fields
        ]
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _number_by_row_index(df: DataFrame) -> DataFrame | None:
    """Positions of a Parquet scan without running a job (``None``: it cannot say).

    Parquet gives each row its index in its file (``_metadata.row_index``) and the driver
    knows the files (``inputFiles()``), so the stream order is the long ``__p_ord``: the
    file's place in name order (``file_index``) times 2^40, plus the row's index. The dense
    ``__pos`` adds to the row's index the rows of the files before its own: a per-file count,
    joined back by broadcast, that Spark computes only in a plan that reads ``__pos``
    (the join is a left join on a grouped table, which the optimizer drops when nothing
    reads from it). Screening needs only the order, so an equivalent output never counts.

    A local file's path is spelled the same way in both but for ``file:///`` (``_spark_path``,
    whatever characters it holds: ``tests/test_spark_streams.py``); a path elsewhere is
    checked against one row's first, at the cost of a small job.
    """
    try:
        files = sorted(df.inputFiles(), key=urllib.parse.unquote)
        indexed = df.select(
            "*",
            F.col("_metadata.file_path").alias(_FILE),
            F.col("_metadata.row_index").alias(_ROW),
        )
    except AnalysisException:  # no row index: not Parquet, or not a file scan
        return None
    if not files or len(files) > LISTED_FILES:
        return None
    names = [_spark_path(f) for f in files]
    if not all(f.startswith("file:///") for f in files):  # a store may spell paths its way
        sample = indexed.select(_FILE).limit(1).collect()
        if sample and sample[0][_FILE] not in set(names):
            return None
    data = df.columns
    index = file_index(names)
    with_order = indexed.select(
        *[column(c) for c in data],
        _FILE,
        _ROW,
        F.expr(f"shiftleft({index}, {ROW_BITS}) + {_ROW}").alias(ORD),
    )
    counts = (
        df.select(F.col("_metadata.file_path").alias(_FILE))
        .groupBy(_FILE)
        .agg(F.count(F.lit(1)).alias("n"))
        .selectExpr(
            _FILE,
            "n",
            f"{index} AS {_INDEX}",
        )
        .selectExpr(
            _FILE,
            f"sum(n) OVER (ORDER BY {_INDEX} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
            f" - n AS {_OFFSET}",
        )
        .groupBy(_FILE)  # one row per file, as the optimizer can see
        .agg(F.max(_OFFSET).alias(_OFFSET))
    )
    return with_order.join(F.broadcast(counts), _FILE, "left").select(
        *[column(c) for c in data],
        (F.col(_OFFSET) + F.col(_ROW)).alias(POS),
        ORD,
    )


def file_index(names: Sequence[str]) -> str:
    """SQL for the place of ``__p_file`` in ``names`` (listed in stream order), by binary
    search over the paths in Spark's string order: a few comparisons per row, where a
    join would hash every row's path. A path not listed fails the job, naming it."""
    by_bytes = sorted(enumerate(names), key=lambda item: item[1].encode())

    def search(lo: int, hi: int) -> str:
        if hi - lo == 1:
            index, name = by_bytes[lo]
            return f"CASE WHEN {_FILE} = {literal(name)} THEN CAST({index} AS BIGINT) END"
        mid = (lo + hi) // 2
        return (
            f"CASE WHEN {_FILE} < {literal(by_bytes[mid][1])} THEN {search(lo, mid)}"
            f" ELSE {search(mid, hi)} END"
        )

    unknown = literal(_FILE_UNKNOWN)
    return f"coalesce({search(0, len(by_bytes))}, raise_error({unknown} || {_FILE}))"


def _spark_path(uri: str) -> str:
    """A path as ``inputFiles()`` gives it, written as ``_metadata.file_path`` writes it:
    ``file:///x`` is ``file:/x`` there."""
    return "file:/" + uri[len("file:///") :] if uri.startswith("file:///") else uri


def _number_by_files(df: DataFrame) -> DataFrame:
    """Positions in (file name, split, row) order."""
    chunk = [
        F.col("_metadata.file_path").alias(_FILE),
        F.col("_metadata.file_block_start").alias(_BLOCK),
    ]
    schema = [StructField(_FILE, StringType()), StructField(_BLOCK, LongType())]

    def order(row: Any) -> tuple[Any, ...]:
        return urllib.parse.unquote(row[_FILE]), row[_BLOCK]

    return _number(df, chunk, schema, order)


def _number_by_partitions(df: DataFrame) -> DataFrame:
    """Positions in (partition, row) order: for a sorted DataFrame, or one with no files.

    Partition ids are only stable within one execution of a plan: a sort's range bounds
    come from a random sample seeded by the RDD's id, and adaptive execution coalesces
    partitions by the bytes it saw, which depend on the columns a job reads. Counting in
    one job and numbering in another would then pair the counts of one partitioning with
    the rows of another (wrong positions, rows dropped by the join). So the rows are
    materialised once (a local checkpoint), and every job after reads the same partitions.
    A lost checkpoint block fails the job; it is never recomputed differently.
    """
    df = df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
    chunk = [F.spark_partition_id().cast("long").alias(_PART)]
    schema = [StructField(_PART, LongType())]

    def order(row: Any) -> tuple[Any, ...]:
        return (row[_PART],)

    return _number(df, chunk, schema, order)


def _number(
    df: DataFrame,
    chunk: list[Column],
    chunk_schema: list[StructField],
    order: Callable[[Any], tuple[Any, ...]],
) -> DataFrame:
    """``df`` with ``__pos``: rows of a chunk have consecutive ids; chunks are ordered by
    ``order``; a chunk's first position is the sum of the sizes of the chunks before it."""
    names = [field.name for field in chunk_schema]
    data = df.columns
    with_id = df.select("*", *chunk, F.monotonically_increasing_id().alias(_ID))
    counts = (
        with_id.groupBy(*names).agg(F.count(F.lit(1)).alias("n"), F.min(_ID).alias(_FIRST))
    ).collect()
    offsets = []
    position = 0
    for row in sorted(counts, key=order):
        offsets.append((*(row[n] for n in names), row[_FIRST], position))
        position += row["n"]
    table = df.sparkSession.createDataFrame(
        offsets,
        StructType(
            [*chunk_schema, StructField(_FIRST, LongType()), StructField(_OFFSET, LongType())]
        ),
    )
    joined = with_id.join(F.broadcast(table), names)
    return joined.select(
        *[column(c) for c in data],
        (F.col(_OFFSET) + F.col(_ID) - F.col(_FIRST)).alias(POS),
    )
