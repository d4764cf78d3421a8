"""Positions without a sort when an output was written in its ``order_by`` order.

Under ``order_by`` an event's dense position is its rank in that order, ties kept in the
natural order (files by name, rows in file order): ``matcher.spark.ordering`` computes it
with a shuffle of every row by range of the order, sorted. Most jobs write their output
sorted (an ``orderBy`` before the write, or rows produced in order), and then the natural
order already *is* the stream order, and the natural position (a file's first row plus the
row's index in it, no shuffle) is the rank.

``natural_when_sorted`` finds out with one narrow job over each side's order values
(no shuffle, only the order's columns read): in each partition, the runs of rows along
which the natural order (the ``tie`` field of ``__p_ord``) rises, each run's first and
last order values and whether its order values rise (``_runs``). On the driver the runs,
put in natural order, must not overlap, and each run's last values must be at most the
next run's first: then every row's order values are at most the next row's, the natural
order is the stream order, and the stream's ``__pos`` becomes the natural one. Each side
is decided alone. Only screening's faulty path asks (an equivalent output needs no
position at all). Values are compared as the keys of ``ordering.order_key`` (a time as
its microseconds, a date as its day, a boolean as 0/1): exact in Arrow and on the driver,
where a ``Row``'s local time could put two instants of a daylight-saving fold out of order.

The check is conservative: a null or a NaN in an order column, an order column of a type
with no such key (or a collated string), or a natural order that is not dense per
file (a filtered stream) leaves the stream as it is, with its sorted positions. Ties of
the order are fine (the natural order breaks them, as ``ordering`` does).

The same runs say whether the order values rise *strictly* (``strictly_sorted``: no two
events share them), which screening by order values needs of the reference
(``matcher.spark.by_values``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from matcher.spark.ordering import order_key
from matcher.spark.schema import ORD, POS, ROW_BITS, Streams, column
from matcher.spark.session import arrow_batches

_TIE = "tie"


@dataclass(frozen=True, slots=True)
class Runs:
    """A side's runs (``_runs``, collected) and the names of its order values."""

    runs: list[Any]
    names: list[str]


def natural_streams(streams: Streams, reference_runs: Runs | None = None) -> Streams:
    """``streams`` with each side's ``__pos`` the natural one where that side's natural
    order is its ``order_by`` order (see the module docstring). ``reference_runs``: the
    reference's, when they were collected already (``side_runs``)."""
    reference = natural_when_sorted(streams.reference, reference_runs)
    candidate = natural_when_sorted(streams.candidate)
    return dataclasses.replace(streams, reference=reference, candidate=candidate)


def natural_when_sorted(stream: DataFrame, found: Runs | None = None) -> DataFrame:
    """``stream`` with ``__pos`` counted in its natural order, when that order is its
    ``order_by`` order; else ``stream`` itself. ``found``: its runs, when collected."""
    found = found or side_runs(stream)
    if found is None:
        return stream
    runs, names = found.runs, found.names
    offsets = _offsets(runs, names)
    if offsets is None:
        return stream
    mask = (1 << ROW_BITS) - 1
    tie = F.col(f"{ORD}.{_TIE}")
    first = F.element_at(
        F.array(*[F.lit(o) for o in offsets]), (F.shiftright(tie, ROW_BITS) + 1).cast("int")
    )
    position = (first + tie.bitwiseAND(F.lit(mask))).alias(POS)
    return stream.select(*[position if c == POS else column(c) for c in stream.columns])


def strictly_sorted(found: Runs | None) -> bool:
    """Whether the order values (the ``order_by`` columns, not the natural order that
    breaks their ties) of the side whose runs are ``found`` rise strictly along its
    natural order: the output was written in its ``order_by`` order and no two of its
    events share their order values, with no null or NaN among them."""
    if found is None:
        return False
    runs, names = found.runs, found.names
    if not runs or not all(r["ok"] and r["strict"] for r in runs):
        return False
    runs = sorted(runs, key=lambda r: r["first"])
    for before, after in itertools.pairwise(runs):
        last = tuple(before[f"z{n}"] for n in names)
        first = tuple(after[f"a{n}"] for n in names)
        if before["last"] >= after["first"] or not last < first:
            return False
    return True


def side_runs(stream: DataFrame) -> Runs | None:
    """The runs of ``stream``, by one narrow job over its order values, or ``None`` when
    its order is not one this module can check."""
    fields = _order_fields(stream)
    if fields is None:
        return None
    names = [f"o{i}" for i in range(len(fields))]
    keys = [order_key(F.col(f"{ORD}.{f.name}"), f.dataType) for f in fields]
    values = stream.select(
        *[k.alias(n) for k, n in zip(keys, names, strict=True) if k is not None],
        F.col(f"{ORD}.{_TIE}").alias(_TIE),
    )
    types = [values.schema[n].dataType for n in names]
    schema = StructType(
        [
            StructField("first", LongType()),
            StructField("last", LongType()),
            StructField("n", LongType()),
            StructField("ok", BooleanType()),
            StructField("strict", BooleanType()),
            *[StructField(f"a{n}", t) for n, t in zip(names, types, strict=True)],
            *[StructField(f"z{n}", t) for n, t in zip(names, types, strict=True)],
        ]
    )
    with arrow_batches(stream.sparkSession):
        return Runs(values.mapInArrow(_runs(names), schema).collect(), names)


def _order_fields(stream: DataFrame) -> list[StructField] | None:
    """The order's fields (``o0``... of ``__p_ord``), or ``None`` when this stream's order
    is not such a struct or holds a field this check cannot compare."""
    if ORD not in stream.columns or POS not in stream.columns:
        return None
    kind = stream.schema[ORD].dataType
    if not isinstance(kind, StructType) or not kind.fields:
        return None
    *fields, tie = kind.fields
    if tie.name != _TIE or not isinstance(tie.dataType, LongType) or not fields:
        return None
    if not all(_comparable(f.dataType) for f in fields):
        return None
    return fields


def _comparable(kind: DataType) -> bool:
    """Whether the order's key for ``kind`` (``ordering.order_key``: times as
    microseconds, dates as days, booleans as 0/1, numbers and strings as they are) compares
    in Arrow and in Python as Spark orders ``kind``: not a collated string."""
    if isinstance(kind, StringType):
        return kind == StringType()  # binary collation: Arrow and Python compare code points
    return order_key(F.lit(None), kind) is not None


def _runs(names: list[str]) -> Any:
    """The ``mapInArrow`` function: per batch, the runs along which ``tie`` rises, as rows
    ``(first tie, last tie, rows, order values rise, rise strictly, first values, last
    values)``."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                yield _batch_runs(batch, names)

    return run


def _batch_runs(batch: pa.RecordBatch, names: list[str]) -> pa.RecordBatch:
    tie = batch.column(_TIE).to_numpy(zero_copy_only=False)
    cols = [batch.column(n) for n in names]
    n = batch.num_rows
    files = tie >> ROW_BITS
    breaks = np.flatnonzero((tie[1:] <= tie[:-1]) | (files[1:] != files[:-1])) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [n]])
    if any(c.null_count for c in cols):
        ok = strict = np.zeros(len(starts), dtype=bool)
    else:
        below, same = _rises(cols)
        ok = _runs_without(~(below | same), starts, ends)
        strict = _runs_without(~below, starts, ends)
    arrays: list[pa.Array] = [
        pa.array(tie[starts], pa.int64()),
        pa.array(tie[ends - 1], pa.int64()),
        pa.array(ends - starts, pa.int64()),
        pa.array(ok, pa.bool_()),
        pa.array(strict, pa.bool_()),
        *[c.take(pa.array(starts, pa.int64())) for c in cols],
        *[c.take(pa.array(ends - 1, pa.int64())) for c in cols],
    ]
    ends_at = [*[f"a{x}" for x in names], *[f"z{x}" for x in names]]
    fields = ["first", "last", "n", "ok", "strict", *ends_at]
    return pa.RecordBatch.from_arrays(arrays, fields)


def _runs_without(wrong: Any, starts: Any, ends: Any) -> Any:
    """For each run (``starts`` to ``ends``), whether none of its pairs of consecutive rows
    is ``wrong`` (``wrong[i]``: the pair ``(i, i + 1)``)."""
    bad = np.concatenate([[0], np.cumsum(wrong)])
    return bad[ends - 1] == bad[starts]


def _rises(cols: list[pa.Array]) -> tuple[Any, Any]:
    """For each pair of consecutive rows, whether the first's values are below the
    second's, and whether they are the same, compared column after column (a NaN: neither)."""
    n = len(cols[0])
    below = np.zeros(n - 1, dtype=bool)
    same = np.ones(n - 1, dtype=bool)
    for c in cols:
        a, b = c.slice(0, n - 1), c.slice(1)
        less = pc.less(a, b).to_numpy(zero_copy_only=False)
        equal = pc.equal(a, b).to_numpy(zero_copy_only=False)
        below |= same & less
        same &= equal
    return below, same


def _offsets(runs: list[Any], names: list[str]) -> list[int] | None:
    """Each file's first natural position (by file index), when the runs show the natural
    order sorted and dense in each file; else ``None``."""
    if not runs or not all(r["ok"] for r in runs):
        return None
    runs = sorted(runs, key=lambda r: r["first"])
    for before, after in itertools.pairwise(runs):
        if before["last"] >= after["first"]:
            return None
        last = tuple(before[f"z{n}"] for n in names)
        first = tuple(after[f"a{n}"] for n in names)
        if not last <= first:
            return None
    mask = (1 << ROW_BITS) - 1
    rows: dict[int, int] = {}
    top: dict[int, int] = {}
    for r in runs:
        file = r["first"] >> ROW_BITS
        rows[file] = rows.get(file, 0) + r["n"]
        top[file] = max(top.get(file, -1), r["last"] & mask)
    if any(top[f] + 1 != rows[f] for f in rows):
        return None  # some rows of a file are not in the stream
    offsets, position = [], 0
    for file in range(max(rows) + 1):
        offsets.append(position)
        position += rows.get(file, 0)
    return offsets
