"""The slice job: materialise the replayed input slice from a production capture.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        --conf spark.sql.session.timeZone=UTC jobs/slice.py \\
        --capture data/captures/taxi --format parquet --out RUN/slice \\
        [--column event_time --start 2024-05-01T00:00:00+00:00 --end 2024-05-02T00:00:00+00:00] \\
        [--sample 0.25 --key taxi_id] [--files 4] [--summary-json RUN/slice.json]

Reads the capture (Parquet, JSON lines or CSV) in stream order (files by name, rows in file
order), keeps the rows whose ``--column`` lies in ``[start, end)`` and, with ``--sample``,
the rows whose key hashes below the fraction (``xxhash64`` of the ``--key`` columns: the
same keys on every run, whole key histories kept), and writes them to ``--out`` in the
capture's format as ``--files`` files whose name order is the stream order. Both versions
of the pipeline then read identical bytes.

A Structured Streaming candidate reads the slice as a file stream, one file per
micro-batch::

    schema = spark.read.parquet(slice_dir).schema
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(slice_dir)

A file stream takes files in modification-time order, so on a local file system the job
also stamps the files with increasing modification times in name order.

Time column: a timestamp or date; a string in ISO 8601 (``2024-05-01T08:00:00Z``); or a
number of seconds since the epoch. Times without a zone are UTC (the session time zone).

Exit codes: 0 written, 2 error (an empty slice is an error: comparing two empty outputs
proves nothing). A user's error is one line on stderr, ``slice: error: ...``, and leaves
no slice behind.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from jobs.entry import run_job, session
from matcher import uris
from matcher.errors import InputError
from matcher.files import locations
from matcher.formats import FORMATS, format_of_path, spark_format

EXIT_OK, EXIT_ERROR = 0, 2
#: Sample buckets: a key is kept when its hash falls in the first ``fraction * BUCKETS``.
BUCKETS = 1_000_000


class SliceError(InputError):
    """A user's error: a missing column, an unparsable time, an empty slice."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slice", description=__doc__.splitlines()[0])
    parser.add_argument("--capture", required=True, help="the production capture (file or dir)")
    parser.add_argument("--out", required=True, help="the slice directory (overwritten)")
    parser.add_argument("--format", choices=sorted(FORMATS), help="the capture's format")
    parser.add_argument("--column", help="the time column the window applies to")
    parser.add_argument("--start", type=_instant, help="window start (inclusive, ISO 8601)")
    parser.add_argument("--end", type=_instant, help="window end (exclusive, ISO 8601)")
    parser.add_argument("--sample", type=float, help="fraction of keys to keep, 0 < x <= 1")
    parser.add_argument("--key", help="comma-separated key columns the sample hashes")
    parser.add_argument("--files", type=int, default=4, help="number of files (default 4)")
    parser.add_argument("--summary-json", metavar="PATH", help="write what was sliced here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = _check_args(args)
    if problem:
        parser.error(problem)
    return run_job("slice", lambda: write_slice(args))


def write_slice(args: argparse.Namespace) -> int:
    """Write the slice ``args`` ask for and its summary; raises on failure, leaving no slice."""
    from matcher.spark.session import fit_shuffle_partitions
    from matcher.spark.streams import read_stream

    out = args.out
    try:
        spark = session("slice", conf={"spark.sql.session.timeZone": "UTC"})  # zone-less: UTC
        fit_shuffle_partitions(spark, [args.capture])  # a small capture: few shuffle tasks
        # the capture's values as Spark infers them: they are written back, not compared
        capture = read_stream(
            spark, args.capture, format=args.format, keep_kinds=False, typed=False
        )
        key = [k for k in (args.key or "").split(",") if k]
        chosen = select_slice(capture, args.column, args.start, args.end, args.sample, key)
        kind = args.format or format_of_path(args.capture)
        rows, files = write_ordered(chosen, out, kind, args.files)
        if rows == 0:
            raise SliceError(_empty(capture, args))
    except BaseException:
        with contextlib.suppress(OSError, InputError):  # no half-written slice
            locations.remove_tree(out)
        raise

    summary = {
        "capture": args.capture,
        "format": kind,
        "column": args.column,
        "start": None if args.start is None else args.start.isoformat(),
        "end": None if args.end is None else args.end.isoformat(),
        "sample": args.sample,
        "key": key or None,
        "rows": rows,
        "files": files,
    }
    if args.summary_json:
        locations.write_text(args.summary_json, json.dumps(summary, indent=2) + "\n")
    window = (
        "the whole capture" if args.start is None else f"[{summary['start']}, {summary['end']})"
    )
    sample = "" if args.sample is None else f", keys sampled at {args.sample:g}"
    print(f"slice: {rows} rows of {window}{sample} in {len(files)} files -> {out}")
    return EXIT_OK


def select_slice(
    capture: Any,
    column: str | None,
    start: dt.datetime | None,
    end: dt.datetime | None,
    sample: float | None,
    key: Sequence[str],
) -> Any:
    """The rows of ``capture`` (a stream with ``__pos``) in ``[start, end)`` on ``column``
    whose key hashes into the sample; ``__pos`` kept for ordering."""
    from pyspark.sql import functions as F

    df = capture
    if column is not None and start is not None and end is not None:
        _require(df, [column], "--column")
        at = time_of(df, column)
        df = df.where((at >= F.lit(start)) & (at < F.lit(end)))
    if sample is not None:
        _require(df, key, "--key")
        bucket = F.pmod(F.xxhash64(*[F.col(f"`{k}`") for k in key]), F.lit(BUCKETS))
        df = df.where(bucket < F.lit(round(sample * BUCKETS)))
    return df


def time_of(df: Any, column: str) -> Any:
    """``column`` as a timestamp: strings parsed as ISO 8601 (an unparsable one is an
    error), numbers read as seconds since the epoch."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    kind = df.schema[column].dataType
    col = F.col(f"`{column}`")
    if isinstance(kind, T.TimestampType | T.TimestampNTZType | T.DateType):
        return col.cast("timestamp")
    if isinstance(kind, T.StringType):
        bad = df.where(col.isNotNull() & F.try_to_timestamp(col).isNull()).select(column)
        sample = bad.limit(1).collect()
        if sample:
            raise SliceError(
                f"time column {column!r}: {sample[0][0]!r} is not an ISO 8601 date-time"
            )
        return F.try_to_timestamp(col)
    if isinstance(kind, T.NumericType):
        return F.timestamp_seconds(col)
    raise SliceError(
        f"time column {column!r} is {kind.simpleString()}: expected a timestamp, a date, an "
        "ISO 8601 string or seconds since the epoch"
    )


def write_ordered(df: Any, out: str, kind: str, files: int) -> tuple[int, list[str]]:
    """Write ``df`` (with ``__pos``) as up to ``files`` files in stream order: range
    partitions of ``__pos``, each sorted, are part files named in partition order. The
    row count and the files' names."""
    ordered = (
        df.repartitionByRange(files, "__pos")
        .sortWithinPartitions("__pos")
        .drop("__pos", "__p_ord")  # the stream's position and order (``read_stream``)
    )
    writer = ordered.write.mode("overwrite")
    if kind == "csv":
        writer = writer.option("header", True)
    if spark_format(kind) == "json":
        writer = writer.option("ignoreNullFields", False)  # keep all-null columns in the schema
    writer.format(spark_format(kind)).save(out)
    names = locations.data_files(out)
    rows = df.sparkSession.read.format(spark_format(kind)).option("header", True).load(out).count()
    _stamp_in_order(out, names)
    return rows, names


def _stamp_in_order(out: str, names: Sequence[str]) -> None:
    """Increasing modification times in name order: a file stream source reads files in
    modification-time order (ties in listing order). A store whose times cannot be set
    (``hdfs://``, ``s3a://``: a file's time is its upload's) keeps them, and says so."""
    folder = uris.local_path(out)
    if folder is None:
        print(
            f"slice: note: {out}: modification times are the store's; a file stream source "
            "with maxFilesPerTrigger may read the slice's files out of name order"
        )
        return
    base = time.time() - len(names) - 1
    for n, name in enumerate(names):
        os.utime(folder / name, (base + n, base + n))


def _empty(capture: Any, args: argparse.Namespace) -> str:
    from pyspark.sql import functions as F

    if args.column is None or args.start is None:
        what = "keys in the sample" if args.sample is not None else "rows"
        return f"the slice is empty: {args.capture} has no {what}"
    at = time_of(capture, args.column)
    low, high = capture.select(F.min(at), F.max(at)).first()
    span = "no times" if low is None else f"times from {_iso(low)} to {_iso(high)}"
    return (
        f"the slice is empty: no row of {args.capture} has {args.column} in "
        f"[{args.start.isoformat()}, {args.end.isoformat()})"
        + (" in the key sample" if args.sample is not None else "")
        + f" (the capture has {span})"
    )


def _iso(value: dt.datetime) -> str:
    # Spark returns naive local datetimes for timestamps; the session runs in UTC.
    return value.replace(tzinfo=dt.UTC).isoformat() if value.tzinfo is None else value.isoformat()


def _require(df: Any, columns: Sequence[str], option: str) -> None:
    for name in columns:
        if name not in df.columns:
            shown = ", ".join(c for c in df.columns if not c.startswith("__"))
            raise SliceError(f"{option}: no column {name!r} in the capture (columns: {shown})")


def _check_args(args: argparse.Namespace) -> str | None:
    if (args.start is None) != (args.end is None):
        return "--start and --end go together"
    if args.start is not None and args.column is None:
        return "--start and --end need --column"
    if args.start is not None and args.start >= args.end:
        return "--start must be before --end"
    if args.sample is not None and not 0 < args.sample <= 1:
        return "--sample must be in (0, 1]"
    if args.sample is not None and not args.key:
        return "--sample needs --key"
    if args.files < 1:
        return "--files must be at least 1"
    return None


def _instant(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


if __name__ == "__main__":
    sys.exit(main())
