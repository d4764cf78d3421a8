"""Stream order from ``order_by`` columns, without sorting the output before it is needed.

An output written by many tasks has no stream order of its own; the spec's ``order_by``
columns give it, ties broken by the natural order (files by name, rows in file order). Most
comparisons never need an event's *position* in that order: screening
(``matcher.spark.screen``) ranks each key's events by their order, and an equivalent
output is decided there. So the order is a column, ``__p_ord``: the struct of the
``order_by`` values and the natural order, which Spark compares field by field exactly as
``orderBy`` sorts (ascending, nulls first, NaN last, ``-0.0`` equal to ``0.0``), and
which a window ``ORDER BY __p_ord`` within a key sorts without a global sort.

The dense position, ``__pos``, is computed only by a plan that reads it, in SQL that gives
the same numbers every time the plan runs (a sort's own range partitioning does not: its
bounds come from a random sample each execution, and adaptive execution coalesces its
partitions by the bytes it saw). Its pieces are fixed once, on the driver:

* *bounds*: a sample of the order's key, sorted on the driver in Spark's order, every k-th
  value kept; each row's *bucket* is the number of bounds at or below its key (a binary
  search in SQL over the bounds as literals). Buckets are ranges of the order, so a row's
  position is the rows of the buckets before its own plus its rank within its bucket. An
  output of at most ``ROWS_PER_BUCKET`` rows is one bucket and samples nothing;
* the rows per bucket: an aggregation, prefix-summed over the buckets and joined back by
  broadcast, computed (like the rank) only by a plan that reads positions.

Then ``__pos`` = the bucket's first position + ``row_number() OVER (PARTITION BY bucket
ORDER BY __p_ord)`` - 1: a shuffle by bucket, done by whichever job reads positions (the
explanation of a divergence), never by screening, since Spark prunes a window nothing reads.

The key the bounds compare is the order with each value made exact as a Python literal and
back: timestamps as microseconds, dates as days, booleans as 0/1; integers, floats,
decimals and strings as they are. An ``order_by`` column of another type (``timestamp_ntz``,
binary, arrays, structs) is ordered by the eager way instead (``eager``): a range-partitioned
sort materialised once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    StringType,
    TimestampType,
)
from pyspark.sql.window import Window

from matcher.spark.schema import ORD, POS, column

_BUCKET = "__p_bucket"
_KEY = "__p_okey"
_RANK = "__p_orank"
_FIRST = "__p_ofirst"
#: sampled rows per bucket: bounds near the quantiles, so buckets stay near equal
SAMPLE_PER_BUCKET = 64
#: rows per bucket aimed at: a bucket is one task of the job that numbers the stream
ROWS_PER_BUCKET = 500_000
MAX_BUCKETS = 512
_EXACT = (IntegralType, FloatType, DoubleType, DecimalType, StringType)


def order_keys(natural: DataFrame, order_by: Sequence[str]) -> list[Column] | None:
    """Each ``order_by`` column's key for the bounds, or ``None`` when one has no key whose
    values survive the driver exactly (the caller sorts eagerly instead)."""
    types = {f.name: f.dataType for f in natural.schema.fields}
    keys = [_key_of(column(c), types[c]) for c in order_by]
    return None if any(k is None for k in keys) else [k for k in keys if k is not None]


def number_by_order(
    natural: DataFrame, order_by: Sequence[str], keys: Sequence[Column]
) -> DataFrame:
    """``natural`` (with ``__pos``, and maybe ``__p_ord``, in its natural order) with
    ``__p_ord`` the struct of ``order_by`` and the natural order, and ``__pos`` the dense
    position in that order, computed only where read (see the module docstring).
    ``keys``: ``order_keys(natural, order_by)``."""
    tie = ORD if ORD in natural.columns else POS
    data = [c for c in natural.columns if c not in (POS, ORD)]
    order = F.struct(
        *[column(c).alias(f"o{i}") for i, c in enumerate(order_by)], F.col(tie).alias("tie")
    )
    key = F.struct(*[k.alias(f"o{i}") for i, k in enumerate(keys)], F.col(tie).alias("tie"))
    keyed = natural.select(*[column(c) for c in data], order.alias(ORD), key.alias(_KEY))
    rows = natural.count()
    buckets = max(1, min(MAX_BUCKETS, -(-rows // ROWS_PER_BUCKET)))
    bounds = _bounds(keyed, rows, buckets)
    with_bucket = keyed.select(
        *[column(c) for c in data], ORD, _search(F.col(_KEY), bounds, 0, len(bounds)).alias(_BUCKET)
    )
    rank = F.row_number().over(Window.partitionBy(_BUCKET).orderBy(ORD))
    positions = with_bucket.select(*[column(c) for c in data], ORD, _BUCKET, rank.alias(_RANK))
    return positions.join(F.broadcast(_firsts(with_bucket)), _BUCKET, "left").select(
        *[column(c) for c in data], (F.col(_FIRST) + F.col(_RANK) - 1).alias(POS), ORD
    )


def _firsts(with_bucket: DataFrame) -> DataFrame:
    """Each bucket's first position: the rows of the buckets before it. One row per
    bucket, as the optimizer can see (a grouped table), so that a plan that reads no
    position drops the join."""
    return (
        with_bucket.groupBy(_BUCKET)
        .agg(F.count(F.lit(1)).alias("n"))
        .selectExpr(
            _BUCKET,
            f"sum(n) OVER (ORDER BY {_BUCKET} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
            f" - n AS {_FIRST}",
        )
        .groupBy(_BUCKET)
        .agg(F.max(_FIRST).alias(_FIRST))
    )


def _key_of(value: Column, type_: DataType) -> Column | None:
    """An order-preserving key whose values round-trip through Python exactly (None: none)."""
    if isinstance(type_, _EXACT):
        return value
    if isinstance(type_, BooleanType):
        return value.cast("int")
    if isinstance(type_, DateType):
        return F.unix_date(value)
    if isinstance(type_, TimestampType):
        return F.unix_micros(value)
    return None


def _bounds(keyed: DataFrame, rows: int, buckets: int) -> list[Column]:
    """Up to ``buckets - 1`` distinct keys near the quantiles of a sample, ascending, as
    literals of the key's own type."""
    if buckets <= 1 or rows == 0:
        return []
    fraction = min(1.0, SAMPLE_PER_BUCKET * buckets / rows)
    sample = sorted(
        (tuple(row[0]) for row in keyed.select(_KEY).sample(False, fraction, seed=17).collect()),
        key=_sort_key,
    )
    picked: list[tuple[object, ...]] = []
    for index in range(1, buckets):
        row = sample[len(sample) * index // buckets] if sample else None
        if row is not None and (not picked or _sort_key(picked[-1]) != _sort_key(row)):
            picked.append(row)
    key_type = keyed.schema[_KEY].dataType
    return [
        F.struct(
            *[
                F.lit(value).cast(field.dataType).alias(field.name)
                for value, field in zip(row, key_type.fields, strict=True)  # type: ignore[attr-defined]
            ]
        )
        for row in picked
    ]


def _sort_key(values: tuple[object, ...]) -> tuple[tuple[object, ...], ...]:
    """Spark's ascending order of a key's values, in Python: nulls first, NaN after every
    number (``-0.0`` and ``0.0`` are equal in both), strings by code point (UTF-8's byte
    order, which Spark compares)."""
    return tuple(
        (0,) if v is None else (2,) if isinstance(v, float) and math.isnan(v) else (1, v)
        for v in values
    )


def _search(key: Column, bounds: Sequence[Column], lo: int, hi: int) -> Column:
    """How many of ``bounds[lo:hi]`` (ascending) are at or below ``key``, plus ``lo``: a
    binary search, ``log2(len(bounds))`` comparisons per row."""
    if lo == hi:
        return F.lit(lo)
    mid = (lo + hi) // 2
    return F.when(key < bounds[mid], _search(key, bounds, lo, mid)).otherwise(
        _search(key, bounds, mid + 1, hi)
    )


def aligned_orders(reference: DataFrame, candidate: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Both streams with orders that one plan can rank together: a plan unions the two
    sides, which casts each side's ``__p_ord`` to a common type, and a common type of two
    order structs (a column retyped from ``bigint`` to ``string``) need not sort as either
    side did. When the two ``__p_ord`` are not of one type, both are dropped, so that the
    plans rank by the dense position (``__pos``) instead, which is a long on both sides."""
    types = [
        df.schema[ORD].dataType if ORD in df.columns else None for df in (reference, candidate)
    ]
    if types[0] == types[1]:
        return reference, candidate
    return reference.drop(ORD), candidate.drop(ORD)
