"""The five MapReduce reducer patterns of DiffStream's case study (§5.3, after Xiao et al.
2014), each a reducer over a key's items in the order they arrive.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        jobs/examples/reducers.py --reducer maxrow --input data/captures/reducers_arbitrary \\
        --output out/maxrow [--variant sequential|parallel] [--partitions 4]

Input (Parquet): items ``offset, event_time, key, x, y`` in ``(event_time, offset)`` order.
Output (JSON lines): what the reducer emits for each key (``key, x, y`` unless noted).

=================  ==========================================================  ==============
``--reducer``      emits, per key                                              deterministic
                                                                               when
=================  ==========================================================  ==============
singleitem         its first item                                              a key's items
                                                                               are all equal
indexvaluepair     ``dict[x] = y`` over its items, one row per ``x`` by ``x``  y depends on x
maxrow             the first item with the largest ``y``                       no tie on max
firstn             its first ``N`` = 3 items (listed by ``x, y``)                at most N items
strconcat          ``key, items``: the ``x`` of its items joined with ``@``    (never: order)
strconcat_stream   ``key, offset, x``: every item as it arrives (streaming)    (never: order)
=================  ==========================================================  ==============

* ``sequential`` (reference): parallelism 1, items in input order.
* ``parallel``: an identity map stage on a round-robin rebalanced stream (DiffStream
  shuffles each key's data with an identity map before the window), then key by ``key``:
  each reducer task receives a key's items mapper task by mapper task, not in input order.
  Whether that matters depends on the reducer and on the input, which is the point.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from jobs.examples import common
from jobs.examples.equalities import SEPARATOR

INPUT_SCHEMA = "offset BIGINT, event_time TIMESTAMP, key STRING, x BIGINT, y BIGINT"
FIRST_N = 3
ITEM_SCHEMA = "key STRING, x BIGINT, y BIGINT"

Item = tuple[int, int]  # (x, y)
Row = tuple[Any, ...]


def single_item(key: str, items: Sequence[Item]) -> list[Row]:
    return [(key, *items[0])]


def index_value_pair(key: str, items: Sequence[Item]) -> list[Row]:
    table: dict[int, int] = {}
    for x, y in items:
        table[x] = y
    return [(key, x, table[x]) for x in sorted(table)]


def max_row(key: str, items: Sequence[Item]) -> list[Row]:
    best = items[0]
    for item in items[1:]:
        if item[1] > best[1]:
            best = item
    return [(key, *best)]


def first_n(key: str, items: Sequence[Item]) -> list[Row]:
    return [(key, *item) for item in sorted(items[:FIRST_N])]


def str_concat(key: str, items: Sequence[Item]) -> list[Row]:
    return [(key, SEPARATOR.join(str(x) for x, _ in items))]


@dataclass(frozen=True, slots=True)
class Reducer:
    """A reducer pattern: what it emits for a key's items (grouped), or for each item as it
    arrives (``streaming``), and the schema of its output rows."""

    reduce: Callable[[str, Sequence[Item]], list[Row]] | None
    schema: str = ITEM_SCHEMA

    @property
    def streaming(self) -> bool:
        return self.reduce is None


REDUCERS: dict[str, Reducer] = {
    "singleitem": Reducer(single_item),
    "indexvaluepair": Reducer(index_value_pair),
    "maxrow": Reducer(max_row),
    "firstn": Reducer(first_n),
    "strconcat": Reducer(str_concat, "key STRING, items STRING"),
    "strconcat_stream": Reducer(None, "key STRING, offset BIGINT, x BIGINT"),
}


def run_reducer(reducer: Reducer, rows: Iterable[Any]) -> Iterator[Row]:
    """The reduce stage over one partition: rows (``key, offset, x, y``) in arrival order; emits
    each key's result at the end, keys by name (or each item at once, when streaming)."""
    if reducer.reduce is None:
        for row in rows:
            yield (row.key, row.offset, row.x)
        return
    groups: dict[str, list[Item]] = {}
    for row in rows:
        groups.setdefault(row.key, []).append((row.x, row.y))
    for key in sorted(groups):
        yield from reducer.reduce(key, groups[key])


def _reduced(reducer: Reducer, stream: DataFrame) -> DataFrame:
    rows = stream.select("key", "offset", "x", "y").rdd.mapPartitions(
        lambda part: run_reducer(reducer, part)
    )
    return common.rows_frame(stream, rows, reducer.schema)


def sequential(items: DataFrame, reducer: Reducer) -> DataFrame:
    return _reduced(reducer, items.repartition(1).sortWithinPartitions("event_time", "offset"))


def parallel(items: DataFrame, reducer: Reducer, partitions: int) -> DataFrame:
    mapped = items.repartition(partitions).select("key", "offset", "x", "y")  # identity map
    return _reduced(reducer, mapped.repartition(partitions, "key"))


def transform(items: DataFrame, args: argparse.Namespace) -> DataFrame:
    reducer = REDUCERS[args.reducer]
    if args.variant == "parallel":
        return parallel(items, reducer, args.partitions)
    return sequential(items, reducer)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reducer", required=True, choices=sorted(REDUCERS))


APP = common.App(
    name="reducers",
    description="The MapReduce reducer patterns of DiffStream's case study.",
    input_format="parquet",
    input_schema=INPUT_SCHEMA,
    output_format="json",
    variants=("sequential", "parallel"),
    transform=transform,
    options=_options,
)


if __name__ == "__main__":
    sys.exit(common.main(APP))
