"""Taxi distance (DiffStream, "Motivating examples"): each taxi's running distance, emitted
for every new position.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        jobs/examples/taxi.py --input data/captures/taxi --output out/taxi \\
        [--variant sequential|parallel|parallel_buggy] [--partitions 4]

Input (JSON lines): ``offset, event_time, taxi_id, lat, lon, meta``, the position stream in
``(event_time, offset)`` order. Output (Parquet), one row per position: ``taxi_id, seq,
event_time, lat, lon, leg_km, distance_km``; ``seq`` counts the taxi's positions and
``distance_km`` is the distance driven so far, so each taxi's rows depend on the order its
positions are processed in. The consumer reads each taxi in order and does not care how
taxis interleave: dependence ``key: [taxi_id]``.

The stage that computes distances is a stateful stream operator (``track``): it sees its
partition's rows in arrival order and keeps each taxi's last position.

* ``sequential`` (reference): parallelism 1, the stream in order.
* ``parallel``: key by taxi first, then project, and restore each taxi's order inside its
  partition (keyBy-then-project of the paper, plus the sort Spark's shuffle makes necessary).
* ``parallel_buggy``: project on a round-robin rebalanced stream, then key by taxi (the
  paper's project-then-keyBy). Rebalancing deals consecutive positions of a taxi to
  different tasks, and the key shuffle hands them on task by task, so ``track`` sees most
  taxis' positions out of order on any input with more positions per taxi than tasks: the
  distances are wrong every run, not by chance.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.examples import common

INPUT_SCHEMA = (
    "offset BIGINT, event_time TIMESTAMP, taxi_id STRING, lat DOUBLE, lon DOUBLE, "
    "meta STRUCT<driver: STRING, fare_cents: BIGINT>"
)
_TRACK_SCHEMA = (
    "taxi_id STRING, seq BIGINT, t_us BIGINT, lat DOUBLE, lon DOUBLE, "
    "leg_km DOUBLE, distance_km DOUBLE"
)
OUTPUT_COLUMNS = ("taxi_id", "seq", "event_time", "lat", "lon", "leg_km", "distance_km")
EARTH_RADIUS_KM = 6371.0088


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance between two positions, in kilometres."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(a))


def track(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
    """The stateful operator: for each position, in arrival order, the taxi's running count
    and distance. Rows have ``taxi_id, t_us, lat, lon`` (by attribute)."""
    last: dict[str, tuple[int, float, float, float]] = {}  # taxi -> (seq, lat, lon, km)
    for row in rows:
        seq, lat, lon, km = last.get(row.taxi_id, (0, row.lat, row.lon, 0.0))
        leg = haversine_km(lat, lon, row.lat, row.lon) if seq else 0.0
        last[row.taxi_id] = (seq + 1, row.lat, row.lon, km + leg)
        yield (row.taxi_id, seq + 1, row.t_us, row.lat, row.lon, leg, km + leg)


def project(events: DataFrame) -> DataFrame:
    """Drop the metadata: what the tracker needs, with time as microseconds (exact in Python)."""
    return events.select(
        "offset", "event_time", "taxi_id", F.unix_micros("event_time").alias("t_us"), "lat", "lon"
    )


def _tracked(stream: DataFrame) -> DataFrame:
    rows = stream.select("taxi_id", "t_us", "lat", "lon").rdd.mapPartitions(track)
    tracked = common.rows_frame(stream, rows, _TRACK_SCHEMA)
    return tracked.withColumn("event_time", F.timestamp_micros("t_us")).select(*OUTPUT_COLUMNS)


def sequential(events: DataFrame) -> DataFrame:
    return _tracked(project(events).repartition(1).sortWithinPartitions("event_time", "offset"))


def parallel(events: DataFrame, partitions: int) -> DataFrame:
    keyed = project(events.repartition(partitions, "taxi_id"))
    return _tracked(keyed.sortWithinPartitions("taxi_id", "event_time", "offset"))


def parallel_buggy(events: DataFrame, partitions: int) -> DataFrame:
    projected = project(events.repartition(partitions))
    return _tracked(projected.repartition(partitions, "taxi_id"))


APP = common.App(
    name="taxi",
    description="Each taxi's running distance, per position.",
    input_format="json",
    input_schema=INPUT_SCHEMA,
    output_format="parquet",
    variants=("sequential", "parallel", "parallel_buggy"),
    transform=common.by_variant(sequential, parallel, parallel_buggy),
)


if __name__ == "__main__":
    sys.exit(common.main(APP))
