"""Topic per document (DiffStream, "Motivating examples" and §5.2 "Topic Count").

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        jobs/examples/topics.py --input data/captures/topics --output out/topics \\
        [--variant sequential|parallel|parallel_buggy] [--partitions 4]

Input (CSV with a header): ``offset, event_time, kind, word, file``, documents streamed word
by word (``kind=word``), each closed by an end-of-file marker (``kind=EOF``, ``file`` names
the document). A word does not know its document: only the markers delineate documents.

Output (CSV), per document, at its end-of-file: one ``topic_count`` row per topic of its
words (``file, kind, topic, count``), then one ``EOF`` row carrying the document's topic,
the most frequent one (ties: the first by name), and its count. The consumer (a topic model
updated per document) needs everything of a document before its ``EOF`` row and does not
care about the order of one document's counts: dependence ``unordered`` with ``EOF`` rows
as barriers. Words after the slice's last marker belong to no complete document and are
not reported.

* ``sequential`` (reference): the paper's sequential operator ``count_topics`` (topic per
  word, count per topic, emit on end-of-file, then max over topics) with parallelism 1.
* ``parallel``: the paper's correct parallel solution. First give every word the number of
  its document (the markers' offsets, one per document, are broadcast), then key by word
  for the topic look-ups (a broadcast join with the topic database), count per document
  and topic, take the max per document, and emit in document order.
* ``parallel_buggy``: the same sequential operator with parallelism N, words keyed by word:
  each end-of-file marker reaches one task only, so the other tasks never learn where a
  document ends and their words are never counted. Wrong counts on every run.
"""

from __future__ import annotations

import bisect
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from jobs.examples import common
from jobs.examples.topic_db import TOPIC_OF, UNKNOWN, topic_of

INPUT_SCHEMA = "offset BIGINT, event_time TIMESTAMP, kind STRING, word STRING, file STRING"
OUTPUT_SCHEMA = "file STRING, kind STRING, topic STRING, count BIGINT"
OUTPUT_COLUMNS = ("file", "kind", "topic", "count")
WORD, EOF, COUNT = "word", "EOF", "topic_count"


def emit(file: str, counts: Counter[str]) -> Iterator[tuple[Any, ...]]:
    """A document's output: its topic counts by topic name, then its EOF row (the topic)."""
    for topic in sorted(counts):
        yield (file, COUNT, topic, counts[topic])
    best = min(counts.items(), key=lambda item: (-item[1], item[0]), default=(None, 0))
    yield (file, EOF, best[0], best[1])


def count_topics(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
    """The sequential operator: rows (``kind, word, file``) in stream order."""
    counts: Counter[str] = Counter()
    for row in rows:
        if row.kind == EOF:
            yield from emit(row.file, counts)
            counts = Counter()
        elif row.kind == WORD:
            counts[topic_of(row.word)] += 1


def _operator(stream: DataFrame) -> DataFrame:
    rows = stream.select("kind", "word", "file").rdd.mapPartitions(count_topics)
    return common.rows_frame(stream, rows, OUTPUT_SCHEMA)


def sequential(events: DataFrame) -> DataFrame:
    return _operator(events.repartition(1).sortWithinPartitions("offset"))


def parallel_buggy(events: DataFrame, partitions: int) -> DataFrame:
    return _operator(events.repartition(partitions, "word").sortWithinPartitions("offset"))


def parallel(events: DataFrame, partitions: int) -> DataFrame:
    spark = events.sparkSession
    markers = events.where(F.col("kind") == EOF).select("offset", "file").orderBy("offset")
    ends = [(row.offset, row.file) for row in markers.collect()]  # one row per document
    docs = spark.createDataFrame(
        [(number, file) for number, (_, file) in enumerate(ends)], "doc BIGINT, file STRING"
    )
    stamped = common.rows_frame(
        events,
        events.where(F.col("kind") == WORD)
        .select("offset", "word")
        .rdd.mapPartitions(_stamper([offset for offset, _ in ends])),
        "doc BIGINT, word STRING",
    )
    database = spark.createDataFrame(sorted(TOPIC_OF.items()), "word STRING, topic STRING")
    topics = (
        stamped.repartition(partitions, "word")
        .join(F.broadcast(database), "word", "left")
        .select("doc", F.coalesce("topic", F.lit(UNKNOWN)).alias("topic"))
    )
    counts = topics.groupBy("doc", "topic").agg(F.count(F.lit(1)).alias("count"))
    first = Window.partitionBy("doc").orderBy(F.desc("count"), "topic")
    best = counts.withColumn("rank", F.row_number().over(first)).where("rank = 1")
    ends_rows = F.broadcast(docs).join(best.select("doc", "topic", "count"), "doc", "left")
    rows = [
        counts.join(F.broadcast(docs), "doc").select(
            "doc", "file", F.lit(COUNT).alias("kind"), "topic", "count", F.lit(0).alias("last")
        ),
        ends_rows.select(
            "doc",
            "file",
            F.lit(EOF).alias("kind"),
            "topic",
            F.coalesce("count", F.lit(0)).cast("bigint").alias("count"),
            F.lit(1).alias("last"),
        ),
    ]
    return rows[0].unionByName(rows[1]).orderBy("doc", "last").select(*OUTPUT_COLUMNS)


def _stamper(ends: list[int]) -> Any:
    """Each word's document: the number of end-of-file markers before it (words after the
    last marker belong to no complete document and are dropped)."""

    def stamp(rows: Iterable[Any]) -> Iterator[tuple[int, str]]:
        for row in rows:
            doc = bisect.bisect_left(ends, row.offset)
            if doc < len(ends):
                yield (doc, row.word)

    return stamp


APP = common.App(
    name="topics",
    description="The topic of each document of a word stream cut by end-of-file markers.",
    input_format="csv",
    input_schema=INPUT_SCHEMA,
    output_format="csv",
    variants=("sequential", "parallel", "parallel_buggy"),
    transform=common.by_variant(sequential, parallel, parallel_buggy),
)


if __name__ == "__main__":
    sys.exit(common.main(APP))
