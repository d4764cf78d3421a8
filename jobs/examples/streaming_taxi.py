"""Taxi distance as a Structured Streaming job: the replayed slice read as a stream of files.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        jobs/examples/streaming_taxi.py --input RUN/slice --output RUN/candidate \\
        --checkpoint RUN/checkpoint [--files-per-batch 1] [--partitions 4]

The streaming candidate of the taxi example (``jobs/examples/taxi.py`` is the batch one; same
input, same output columns, same tracker). The slice job writes the slice as files named in
stream order (and, on a local file system, with modification times in that order), so a
file source with ``maxFilesPerTrigger`` replays the stream micro-batch by micro-batch. Each
taxi's last position and distance is the group state of ``applyInPandasWithState``; inside
a micro-batch a taxi's positions are taken in ``(event_time, offset)`` order.

Output order comes from the micro-batch id and the row's position: each batch is written
(``foreachBatch``) as ``part-<batch>-<partition>.parquet``, and a taxi's rows of one batch
sit in one partition in the order they were emitted. The matcher reads files in name order
and rows in file order, so each taxi's rows are in order; taxis interleave differently from
the sequential reference, which the dependence ``key: [taxi_id]`` allows.

A restart resumes from the checkpoint, as a streaming job should: the batches Spark did not
commit are run again, and a batch's files replace whatever an earlier attempt of the same
batch left (staged under ``_batch-<batch>``, the old ``part-<batch>-*`` removed, then
renamed in), so the output is exactly once (``parity recovery`` checks it: see
``dags/validations/taxi_streaming_recovery.yaml``). Delete the output and the checkpoint
together to start over.

Exit 0 on success, 2 with one line ``streaming_taxi: error: ...`` on a user error.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jobs.examples.taxi import INPUT_SCHEMA, OUTPUT_COLUMNS, haversine_km
from matcher import uris

OUTPUT_SCHEMA = (
    "taxi_id STRING, seq BIGINT, event_time TIMESTAMP, lat DOUBLE, lon DOUBLE, "
    "leg_km DOUBLE, distance_km DOUBLE"
)
STATE_SCHEMA = "seq BIGINT, lat DOUBLE, lon DOUBLE, km DOUBLE"


def track_group(key: tuple[str], batches: Iterator[Any], state: Any) -> Iterator[Any]:
    """One taxi's positions of one micro-batch, in order, continuing from its state."""
    import pandas as pd  # type: ignore[import-untyped]

    (taxi,) = key
    rows = pd.concat(list(batches)).sort_values(["event_time", "offset"], kind="stable")
    seq, lat, lon, km = state.get if state.exists else (0, 0.0, 0.0, 0.0)
    out = []
    for row in rows.itertuples(index=False):
        leg = haversine_km(lat, lon, row.lat, row.lon) if seq else 0.0
        seq, lat, lon, km = seq + 1, row.lat, row.lon, km + leg
        out.append((taxi, seq, row.event_time, row.lat, row.lon, leg, km))
    state.update((seq, lat, lon, km))
    yield pd.DataFrame(out, columns=list(OUTPUT_COLUMNS))


def write_batch(output: Path) -> Any:
    """``foreachBatch``: the batch's part files as ``part-<batch>-<partition>.parquet``."""

    def write(batch: Any, batch_id: int) -> None:
        staging = output / f"_batch-{batch_id:06d}"
        batch.write.mode("overwrite").parquet(str(staging))
        parts = sorted(p for p in staging.glob("part-*.parquet"))
        for old in output.glob(f"part-{batch_id:06d}-*.parquet"):  # a replayed batch
            old.unlink()
        for n, part in enumerate(parts):
            part.rename(output / f"part-{batch_id:06d}-{n:05d}.parquet")
        shutil.rmtree(staging)

    return write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="streaming_taxi", description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="the slice directory (JSON lines)")
    parser.add_argument("--output", required=True, help="the output directory")
    parser.add_argument("--checkpoint", required=True, help="the stream's checkpoint directory")
    parser.add_argument("--files-per-batch", type=int, default=1, help="maxFilesPerTrigger")
    parser.add_argument("--partitions", type=int, default=4, help="state store partitions")
    args = parser.parse_args(argv)
    if args.files_per_batch < 1:
        parser.error("--files-per-batch must be at least 1")
    output, checkpoint = uris.local_path(args.output), args.checkpoint
    if output is None:  # foreachBatch renames its part files with the local file system
        print(f"streaming_taxi: error: {args.output}: the output must be local", file=sys.stderr)
        return 2
    source = uris.local_path(args.input)
    if source is None or not source.is_dir():
        print(f"streaming_taxi: error: {args.input}: no such slice directory", file=sys.stderr)
        return 2
    output.mkdir(parents=True, exist_ok=True)  # with the checkpoint: resumed where it stopped

    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.state import GroupStateTimeout

    spark = SparkSession.builder.appName("streaming_taxi").getOrCreate()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    # The stateful operator's partitions (fixed by the first checkpoint).
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    events = (
        spark.readStream.schema(INPUT_SCHEMA)
        .option("maxFilesPerTrigger", args.files_per_batch)
        .json(args.input)
        .select("offset", "event_time", "taxi_id", "lat", "lon")
    )
    tracked = events.groupBy("taxi_id").applyInPandasWithState(
        track_group, OUTPUT_SCHEMA, STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout
    )
    query = (
        tracked.writeStream.foreachBatch(write_batch(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = len({p.name.split("-")[1] for p in output.glob("part-*.parquet")})
    print(f"streaming_taxi: {batches} micro-batches -> {output}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
