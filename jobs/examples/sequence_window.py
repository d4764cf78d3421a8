"""Wallaroo's sequence-window detector as a Structured Streaming job, and buggy variants of it.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' \\
        jobs/examples/sequence_window.py --input IN --output OUT --checkpoint CKPT \\
        [--files-per-batch 1] [--depth 1] [--sink file|db] [--sink-url URL] \\
        [--variant correct|at_least_once_sink|driver_state|state_timeout] [--partitions 4] \\
        [--state-timeout 6]

The input (``jobs/examples/sequence_input.py``) is per key the natural numbers 1..N, read as
a file stream, ``--files-per-batch`` files per micro-batch (``maxFilesPerTrigger``, explicit
schema, so a restart re-reads from the checkpointed offsets). Per key the job keeps a ring of
the last 4 values in Spark's state store and, for every input value in the key's order (a
micro-batch's rows of a key sorted by ``offset``), pushes it and emits
``{"key": k, "window": [a, b, c, d]}``, oldest first, zeros while fewer than 4 values were
seen: key ``k``'s i-th window is ``[max(0, i-3), .., i]``. A lost, duplicated, reordered or
corrupted state update shows in the windows that follow it (Wallaroo, "Measuring correctness
of state in a distributed system").

``--depth D`` repeats key_by -> state as Wallaroo's multi_partition_detector does: stage i+1
re-keys stage i's output by key and keeps a ring of its own, pushing the tail of the incoming
window; the last stage's windows are the output (equal to depth 1's when recovery is right).
The stages are real chained stateful operators, one ``transformWithStateInPandas`` each
(state on RocksDB, which that operator requires). ``applyInPandasWithState`` cannot chain:
Spark refuses the query with ``Multiple applyInPandasWithStates are not supported on a
streaming DataFrames/Datasets``.

The query runs with ``trigger(availableNow=True)``: it processes what the checkpoint has not
committed and stops, so a restart after a crash finishes the input and a restart after the
end does nothing. The output and the checkpoint belong together: delete both to start over.

Sinks:

* ``file`` (default): Spark's file sink, JSON lines, exactly-once through its
  ``OUT/_spark_metadata`` log. Readers take only the files the log lists, in batch order
  (a killed batch can leave orphan part files); a key's rows of a batch sit in one file, in
  order. ``read_windows`` does that (``matcher.files.sink_log``).
* ``db``: ``foreachBatch`` into the table ``sequence_windows(batch_id, ordinal, key, window)``
  (``window`` a JSON array) of the SQLAlchemy URL ``--sink-url`` (created if missing). One
  transaction deletes the batch id's rows and inserts the batch's, ``ordinal`` the record's
  place in the batch: a batch replayed after a crash replaces itself, exactly-once. After the
  query stops the table is exported in ``(batch_id, ordinal)`` order to ``OUT/windows.jsonl``
  (``export_windows``).

Variants (``correct`` is the detector; each other one is a real mistake, invisible without a
crash):

* ``at_least_once_sink`` (db sink only): appends each batch, ``ordinal`` continuing from the
  table's largest, without deleting the batch id's rows first. A batch replayed after a crash
  (the kill landed after the sink wrote but before Spark committed) is in the table twice:
  **duplication**.
* ``driver_state``: the rings live in a Python dict in the driver (``foreachBatch`` computes
  the windows from the collected batch) instead of the state store. With the file sink each
  batch is written idempotently as ``OUT/batch-NNNNNN.jsonl`` (temp file + rename), with the
  db sink as ``correct`` writes it, so the only bug is the state: after a restart the dict is
  empty, the windows start over from zeros: **loss**.
* ``state_timeout``: the rings are in the state store, but a ring not updated for
  ``--state-timeout`` seconds (default 6) of processing time, the processor's clock, has
  expired and starts over: a plausible "forget idle keys" rule. Within a run a key waits a
  batch or two between updates (at most 0.9-3 s measured on two busy cores, load 3.5-6), so
  nothing expires; a restart takes a new JVM, query planning and Python workers (18-23 s
  from a key's last committed update at that load), so every key's ring expires: **loss**.
  Spark's own expiry makes no reliable detector here: ``GroupStateTimeout``'s
  ``ProcessingTimeTimeout`` never times out a key with data in the batch (after a restart
  only the keys missing from its first batch lose state); it and the state TTL of
  ``transformWithStateInPandas`` count time between batch timestamps, and a healthy first
  batch (5-14 s: Python workers, planning) is as long as a restart; and with either,
  every batch asks for another, so ``availableNow`` never stops.

Exit 0 on success (also when nothing is left to do), 2 with one line
``sequence_window: error: ...`` on a user error. One line on stdout says what the run did.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import sqlalchemy as sa
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import TimerValues

from matcher.arguments import whole_number
from matcher.files.windows_output import read_windows as read_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

EXIT_OK, EXIT_ERROR = 0, 2
VARIANTS = ("correct", "at_least_once_sink", "driver_state", "state_timeout")
INPUT_SCHEMA = "key STRING, value BIGINT, offset BIGINT"
STAGE_SCHEMA = "key STRING, window ARRAY<BIGINT>, offset BIGINT"
RING_SCHEMA = "w0 BIGINT, w1 BIGINT, w2 BIGINT, w3 BIGINT, updated_ms BIGINT"  # epoch ms
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE_TIMEOUT_S = 6.0
SHUFFLE_PARTITIONS, DEFAULT_PARTITIONS = "spark.sql.shuffle.partitions", 4
WIDTH = 4
Ring = tuple[int, ...]
EMPTY: Ring = (0,) * WIDTH


# --- the detector's state, on plain values -------------------------------------------------


def push(ring: Ring, value: int) -> Ring:
    """The ring after ``value`` arrived: the oldest value out, ``value`` at the end."""
    return (*ring[1:], value)


def cascade(rings: Sequence[Ring], value: int) -> tuple[Ring, ...]:
    """Every stage's ring after ``value`` entered the first: each stage pushes the tail of
    the window the stage before it emitted."""
    out = []
    for ring in rings:
        value = (ring := push(ring, value))[-1]
        out.append(ring)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class WindowRecord:
    """One output record: ``key``'s window after one of its values."""

    key: str
    window: tuple[int, ...]

    def to_json(self) -> str:
        return json.dumps({"key": self.key, "window": list(self.window)})

    @classmethod
    def from_json(cls, line: str) -> WindowRecord:
        row = json.loads(line)
        return cls(row["key"], tuple(row["window"]))


# --- the Spark side -------------------------------------------------------------------------


class RingStage(StatefulProcessor):
    """One key_by -> state stage: a key's ring in the state store, pushed with every
    ``value`` of the key in ``offset`` order; with ``idle_ms`` (``state_timeout``), a ring
    not updated for that long starts over."""

    def __init__(self, idle_ms: int | None = None) -> None:
        self.idle_ms = idle_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("ring", RING_SCHEMA)

    def handleInputRows(self, key: Any, rows: Any, timerValues: TimerValues) -> Iterator[Any]:
        import pandas as pd  # type: ignore[import-untyped]

        batch = pd.concat(list(rows)).sort_values("offset", kind="stable")
        stored = self.state.get() if self.state.exists() else None
        ring = EMPTY if stored is None else tuple(int(v) for v in stored[:WIDTH])
        if stored is not None and self.idle_ms and _now_ms() - stored[WIDTH] > self.idle_ms:
            ring = EMPTY  # the state_timeout bug: idle for too long, forgotten
        windows = []
        for value in batch["value"]:
            ring = push(ring, int(value))
            windows.append(list(ring))
        self.state.update((*ring, _now_ms()))
        yield pd.DataFrame({"key": key[0], "window": windows, "offset": batch["offset"]})

    def close(self) -> None:
        pass


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def detector(events: DataFrame, depth: int, idle_ms: int | None = None) -> DataFrame:
    """``depth`` chained stateful stages over ``key, value, offset``: ``key, window, offset``."""
    from pyspark.sql import functions as F

    stream = events.select("key", "value", "offset")
    for stage in range(depth):
        if stage:  # re-key the previous stage's output; its windows' tails are the values
            stream = stream.select("key", F.element_at("window", -1).alias("value"), "offset")
        stream = stream.groupBy("key").transformWithStateInPandas(
            RingStage(idle_ms), STAGE_SCHEMA, "append", "None"
        )
    return stream


# --- sinks: one narrow interface -----------------------------------------------------------


class WindowSink(Protocol):
    def write(self, batch_id: int, records: Sequence[WindowRecord]) -> None: ...


_METADATA = sa.MetaData()
WINDOWS = sa.Table(
    "sequence_windows",
    _METADATA,
    sa.Column("batch_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("ordinal", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("key", sa.Text, nullable=False),
    sa.Column("window", sa.Text, nullable=False),  # a JSON array
)


def _rows(batch_id: int, first: int, records: Sequence[WindowRecord]) -> list[dict[str, Any]]:
    return [
        {"batch_id": batch_id, "ordinal": first + n, "key": r.key, "window": json.dumps(r.window)}
        for n, r in enumerate(records)
    ]


@dataclass(frozen=True, slots=True)
class IdempotentTable:
    """Exactly-once: a batch's rows replace whatever that batch id wrote before."""

    engine: sa.Engine

    def write(self, batch_id: int, records: Sequence[WindowRecord]) -> None:
        with self.engine.begin() as connection:
            connection.execute(sa.delete(WINDOWS).where(WINDOWS.c.batch_id == batch_id))
            if records:
                connection.execute(sa.insert(WINDOWS), _rows(batch_id, 0, records))


@dataclass(frozen=True, slots=True)
class AppendingTable:
    """The ``at_least_once_sink`` bug: appends, numbering on from the table's last ordinal."""

    engine: sa.Engine

    def write(self, batch_id: int, records: Sequence[WindowRecord]) -> None:
        with self.engine.begin() as connection:
            last = connection.execute(sa.select(sa.func.max(WINDOWS.c.ordinal))).scalar_one()
            if records:
                first = 0 if last is None else last + 1
                connection.execute(sa.insert(WINDOWS), _rows(batch_id, first, records))


@dataclass(frozen=True, slots=True)
class BatchFiles:
    """Each batch as ``batch-NNNNNN.jsonl``, replaced atomically when the batch is replayed."""

    directory: Path

    def write(self, batch_id: int, records: Sequence[WindowRecord]) -> None:
        write_jsonl(self.directory / f"batch-{batch_id:06d}.jsonl", records)


def write_jsonl(path: Path, records: Sequence[WindowRecord]) -> None:
    """``records`` as JSON lines at ``path``, replacing it atomically (temp file + rename)."""
    staging = path.with_name(f".{path.name}.tmp")  # hidden: no reader takes it
    staging.write_text("".join(record.to_json() + "\n" for record in records))
    staging.replace(path)


def open_table(url: str) -> sa.Engine:
    """The sink's database, its table created if missing."""
    engine = sa.create_engine(url)
    _METADATA.create_all(engine)
    return engine


def export_windows(url: str, path: Path | str) -> int:
    """The table's records in ``(batch_id, ordinal)`` order as JSON lines at ``path``
    (replaced atomically); returns how many."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.select(WINDOWS.c.key, WINDOWS.c.window).order_by(
                    WINDOWS.c.batch_id, WINDOWS.c.ordinal
                )
            ).all()
    finally:
        engine.dispose()
    write_jsonl(Path(path), [WindowRecord(key, tuple(json.loads(w))) for key, w in rows])
    return len(rows)


def read_windows(output: Path | str) -> list[WindowRecord]:
    """A run's records in output order, whichever way it wrote them: Spark's file sink (the
    files its ``_spark_metadata`` log lists, batch by batch), the db sink's export
    (``windows.jsonl``), or ``driver_state``'s ``batch-NNNNNN.jsonl`` files, in name order
    (``matcher.files.windows_output``, what ``parity windows`` reads)."""
    return [WindowRecord(key, tuple(window)) for key, window in read_records(output)]


def driver_state_batches(sink: WindowSink, depth: int) -> Callable[[DataFrame, int], None]:
    """``foreachBatch`` of ``driver_state``: the rings in this dict, not in the state store."""
    rings: dict[str, tuple[Ring, ...]] = {}

    def process(batch: DataFrame, batch_id: int) -> None:
        records = []
        for row in sorted(batch.collect(), key=lambda row: row["offset"]):
            rings[row["key"]] = cascade(rings.get(row["key"], (EMPTY,) * depth), row["value"])
            records.append(WindowRecord(row["key"], rings[row["key"]][-1]))
        sink.write(batch_id, records)

    return process


def table_batches(sink: WindowSink) -> Callable[[DataFrame, int], None]:
    """``foreachBatch`` of the db sink: the batch's records in partition and row order."""

    def process(batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("key", "window").collect()
        sink.write(batch_id, [WindowRecord(r["key"], tuple(r["window"])) for r in rows])

    return process


# --- the command line -----------------------------------------------------------------------


class UsageError(Exception):
    """Bad arguments or a missing input: one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass(frozen=True, slots=True)
class Options:
    input: Path
    output: Path
    checkpoint: Path
    files_per_batch: int
    depth: int
    sink: str
    sink_url: str | None
    variant: str
    partitions: int | None
    state_timeout_s: float


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def parse_options(argv: Sequence[str] | None) -> Options:
    parser = _Parser(prog="sequence_window", description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, type=Path, help="the input directory")
    parser.add_argument("--output", required=True, type=Path, help="the output directory")
    parser.add_argument("--checkpoint", required=True, type=Path, help="the checkpoint")
    parser.add_argument("--files-per-batch", type=whole_number(1), default=1, help="default 1")
    parser.add_argument("--depth", type=whole_number(1), default=1, help="stateful stages")
    parser.add_argument("--sink", choices=("file", "db"), help="default file (db for a_l_o_s)")
    parser.add_argument("--sink-url", help="SQLAlchemy URL of the db sink")
    parser.add_argument("--variant", choices=VARIANTS, default="correct")
    parser.add_argument("--partitions", type=whole_number(1), help="state partitions (first run)")
    parser.add_argument("--state-timeout", type=_seconds, default=STATE_TIMEOUT_S)
    args = parser.parse_args(argv)
    sink = args.sink or ("db" if args.variant == "at_least_once_sink" else "file")
    if args.variant == "at_least_once_sink" and sink != "db":
        raise UsageError("--variant at_least_once_sink writes to a database: use --sink db")
    if sink == "db" and not args.sink_url:
        raise UsageError("--sink db needs --sink-url")
    if sink == "file" and args.sink_url:
        raise UsageError("--sink-url is for --sink db")
    if not args.input.is_dir():
        raise UsageError(f"input {args.input} is not a directory")
    return Options(
        args.input, args.output, args.checkpoint, args.files_per_batch, args.depth, sink,
        args.sink_url, args.variant, args.partitions, args.state_timeout,
    )  # fmt: skip


def start_query(spark: SparkSession, options: Options, sink: WindowSink | None) -> StreamingQuery:
    """The stream from ``options.input`` to the variant's sink (``sink`` for a db sink)."""
    events = (
        spark.readStream.schema(INPUT_SCHEMA)
        .option("maxFilesPerTrigger", options.files_per_batch)
        .json(str(options.input))
    )
    if options.variant == "driver_state":
        batches = BatchFiles(options.output) if sink is None else sink
        writer = events.writeStream.foreachBatch(driver_state_batches(batches, options.depth))
    else:
        timed = options.variant == "state_timeout"
        idle_ms = round(options.state_timeout_s * 1000)
        windows = detector(events, options.depth, idle_ms if timed else None)
        if sink is None:
            writer = windows.select("key", "window").writeStream.format("json")
            writer = writer.option("path", str(options.output))
        else:
            writer = windows.writeStream.foreachBatch(table_batches(sink))
    writer = writer.option("checkpointLocation", str(options.checkpoint))
    return writer.trigger(availableNow=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        options = parse_options(argv)
        options.output.mkdir(parents=True, exist_ok=True)  # the db sink may live in it
        engine = None if options.sink_url is None else open_table(options.sink_url)
    except (UsageError, OSError, sa.exc.SQLAlchemyError) as exc:
        print(f"sequence_window: error: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return EXIT_ERROR
    sink: WindowSink | None = None
    if engine is not None:
        buggy = options.variant == "at_least_once_sink"
        sink = AppendingTable(engine) if buggy else IdempotentTable(engine)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("sequence_window").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")  # count them all
    # The state's partitions (fixed by the first run): --partitions, else the submitted
    # spark.sql.shuffle.partitions, else 4 (Spark's 200 would mean 200 state stores a stage).
    partitions = options.partitions
    if partitions is None and not spark.sparkContext.getConf().contains(SHUFFLE_PARTITIONS):
        partitions = DEFAULT_PARTITIONS
    if partitions is not None:
        spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
    query = start_query(spark, options, sink)
    query.awaitTermination()
    # A restart with nothing left reports one idle trigger: count the batches that ran.
    progress = [p for p in query.recentProgress if "addBatch" in p.durationMs]
    records = sum(p.numInputRows for p in progress)
    spark.stop()
    done = f"sequence_window: {options.variant}: {len(progress)} batches, {records} records"
    if engine is None or options.sink_url is None:
        print(f"{done} -> {options.output}")
    else:
        engine.dispose()
        export = options.output / "windows.jsonl"
        exported = export_windows(options.sink_url, export)
        print(f"{done} -> the db sink, {exported} records exported to {export}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
