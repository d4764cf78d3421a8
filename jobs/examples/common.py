"""What every example application shares: its command line, reading the replayed slice,
writing the output, and one-line errors.

Every example is run the same way (``APP`` is ``taxi``, ``topics`` or ``reducers``)::

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        jobs/examples/APP.py --input IN_DIR --output OUT_DIR [--variant V] [--partitions N]

It reads the slice at IN_DIR in the application's input format with an explicit schema (a
slice with no rows is a valid, empty input), applies the variant's transform (DataFrame in,
DataFrame out) and overwrites OUT_DIR. Exit 0 on success; 2 with one line
``APP: error: ...`` on a user error (bad arguments, missing or malformed input).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from matcher.arguments import whole_number
from matcher.failures import first_line

EXIT_OK, EXIT_ERROR = 0, 2
FORMATS = ("json", "csv", "parquet")

Transform = Callable[[DataFrame, argparse.Namespace], DataFrame]


class UsageError(Exception):
    """A user error: bad arguments, a missing input, an input that does not fit the schema."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting: errors are one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass(frozen=True, slots=True)
class App:
    """One example application: its formats, input schema, variants and transform."""

    name: str
    description: str
    input_format: str
    input_schema: str
    output_format: str
    variants: tuple[str, ...]
    transform: Transform
    options: Callable[[argparse.ArgumentParser], None] | None = None

    def parser(self) -> argparse.ArgumentParser:
        parser = _Parser(prog=self.name, description=self.description)
        parser.add_argument("--input", required=True, metavar="IN_DIR", help="the input slice")
        parser.add_argument("--output", required=True, metavar="OUT_DIR", help="overwritten")
        parser.add_argument("--variant", choices=self.variants, default=self.variants[0])
        parser.add_argument(
            "--partitions", type=whole_number(1), default=4, help="parallelism of the candidates"
        )
        if self.options is not None:
            self.options(parser)
        return parser


def by_variant(
    sequential: Callable[[DataFrame], DataFrame],
    parallel: Callable[[DataFrame, int], DataFrame],
    parallel_buggy: Callable[[DataFrame, int], DataFrame],
) -> Transform:
    """The transform of an application with the three usual variants: the sequential
    reference, and a parallel candidate (correct or buggy) on ``--partitions`` partitions."""

    def transform(events: DataFrame, args: argparse.Namespace) -> DataFrame:
        if args.variant == "parallel":
            return parallel(events, args.partitions)
        if args.variant == "parallel_buggy":
            return parallel_buggy(events, args.partitions)
        return sequential(events)

    return transform


def read_input(spark: SparkSession, app: App, path: str) -> DataFrame:
    """The slice at ``path`` with the application's schema; a malformed row fails the read."""
    reader = spark.read.schema(app.input_schema)
    if app.input_format == "json":
        return reader.option("mode", "FAILFAST").json(path)
    if app.input_format == "csv":
        # enforceSchema off: the header must name the schema's columns, not merely count them
        df = (
            reader.option("header", True)
            .option("enforceSchema", False)
            .option("mode", "FAILFAST")
            .csv(path)
        )
        # An empty field is null whether it was written bare or quoted ("" is how Spark
        # writes an empty string, e.g. when a slice is re-written from a capture).
        return df.select(
            *[
                F.when(F.col(f.name) != "", F.col(f.name)).alias(f.name)
                if isinstance(f.dataType, StringType)
                else F.col(f.name)
                for f in df.schema.fields
            ]
        )
    return reader.parquet(path)


def write_output(df: DataFrame, format: str, path: str) -> None:
    writer = df.write.mode("overwrite")
    if format == "csv":
        writer.option("header", True).csv(path)
    elif format == "json":
        writer.json(path)
    else:
        writer.parquet(path)


def execute(spark: SparkSession, app: App, args: argparse.Namespace) -> None:
    """Extract, transform, load: what ``main`` runs once arguments and session are ready."""
    output = app.transform(read_input(spark, app, args.input), args)
    write_output(output, app.output_format, args.output)


def main(app: App, argv: Sequence[str] | None = None) -> int:
    try:
        args = app.parser().parse_args(argv)
        _check_input(args.input)
    except UsageError as exc:
        return _fail(app, str(exc))
    spark = SparkSession.builder.appName(f"parity-example-{app.name}").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        execute(spark, app, args)
    except Exception as exc:  # Spark's errors for unreadable input: translate at the boundary
        _remove_output(args.output)  # overwritten anyway: leave nothing half-written
        problem = input_problem(exc)
        if problem is None:
            raise
        return _fail(app, f"input {args.input}: {problem}")
    print(f"{app.name}: {args.variant}: wrote {args.output}")
    return EXIT_OK


def _check_input(path: str) -> None:
    if "://" in path:  # a cluster file system: Spark says whether it exists
        return
    if not Path(path).exists():
        raise UsageError(f"input {path} does not exist")


def _remove_output(path: str) -> None:
    if "://" not in path and Path(path).is_dir():
        shutil.rmtree(path, ignore_errors=True)


def input_problem(exc: BaseException) -> str | None:
    """One line saying what is wrong with the input when Spark failed on it, else ``None``
    (a failure that is not about the input, which keeps its traceback).

    Spark reports a bad path or schema as an ``AnalysisException``; a row that does not
    parse (``FAILFAST``), a CSV header that does not name the schema's columns or a file
    that is not Parquet fail the job, as ``[FAILED_READ_FILE]`` naming the file, caused by
    the actual problem at the end of the Java exception chain.
    """
    if type(exc).__name__ in ("AnalysisException", "IllegalArgumentException"):
        return first_line(exc)
    messages: list[str] = []
    cause = getattr(exc, "java_exception", None)
    while cause is not None and len(messages) < 20:
        messages.append(" ".join(str(cause.getMessage()).split()))
        cause = cause.getCause()
    if not messages or not messages[0].startswith("[FAILED_READ_FILE"):
        return None
    file = re.search(r"reading file (\S+?)\.?(\s|$)", messages[0])
    reason = re.sub(r"\s*SQLSTATE: \w+\s*$", "", messages[-1])
    if reason.startswith("["):  # an error class: its first sentence says it, advice follows
        reason = reason.split(". ", 1)[0]
    where = file.group(1) if file else "a file"
    return f"cannot read {where}: {reason[:300]}"


def _fail(app: App, message: str) -> int:
    print(f"{app.name}: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_ERROR


def rows_frame(df: DataFrame, rows: Any, schema: str) -> DataFrame:
    """A DataFrame from an RDD of tuples produced from ``df``'s partitions, keeping them."""
    return df.sparkSession.createDataFrame(rows, schema, verifySchema=False)
