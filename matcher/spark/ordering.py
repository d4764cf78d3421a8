"""Stream order from ``order_by`` columns, without sorting the output before it is needed.

An output written by many tasks has no stream order of its own; the spec's ``order_by``
columns give it, ties broken by the natural order (files by name, rows in file order). Most
comparisons never need an event's *position* in that order: screening
(``matcher.spark.screen``) ranks each key's events by their order, and an equivalent
output is decided there. So the order is a column, ``__p_ord``: the struct of the
``order_by`` values and the natural order, which Spark compares field by field exactly as
``orderBy`` sorts (ascending, nulls first, NaN last, ``-0.0`` equal to ``0.0``), and
which a window ``ORDER BY __p_ord`` within a key sorts without a global sort.

The dense position, ``__pos``, is computed only by a plan that reads it. It needs no driver
work while the plan is built, so reading an output runs no job for it:

* *bounds*: a scalar subquery (``DataFrame.scalar``), which Spark runs once per query and
  only in a plan that reads positions: it counts the rows, samples the order's key
  (``SAMPLE_PER_BUCKET`` keys a bucket of ``ROWS_PER_BUCKET`` rows) and keeps every k-th
  sampled key, sorted. Each row's *bucket* is the number of bounds at or below its key, a
  binary search in SQL over a fixed number of slots (``_slots``: how many buckets the scan's
  size could need, from the optimizer's statistics; slots past the bounds are empty). An
  output of at most ``ROWS_PER_BUCKET`` rows is one bucket;
* the rows per bucket: an aggregation, prefix-summed over the buckets and joined back by
  broadcast, computed (like the rank) only by a plan that reads positions.

Then ``__pos`` = the bucket's first position + ``row_number() OVER (PARTITION BY bucket
ORDER BY __p_ord)`` - 1: a shuffle by bucket, done by whichever job reads positions (the
explanation of a divergence), never by screening, since Spark prunes what nothing reads.
Buckets are ranges of the order and ``__p_ord`` holds no ties, so the positions are the
dense ranks in that order whatever the sample gave: the same numbers every time the plan
runs (a sort's own range partitioning gives no such numbers, its partitions being what
its sample and adaptive execution made of them).

The key the bounds compare keeps the order: timestamps as microseconds, dates as days,
booleans as 0/1; integers, floats, decimals and strings as they are. An ``order_by`` column
of another type (``timestamp_ntz``, binary, arrays, structs) is ordered by the eager way
instead (``eager``): a range-partitioned sort materialised once.
"""

from __future__ import annotations

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
_BOUNDS = "__p_obounds"
#: sampled rows per bucket: bounds near the quantiles, so buckets stay near equal
SAMPLE_PER_BUCKET = 64
#: rows per bucket aimed at: a bucket is one task of the job that numbers the stream
ROWS_PER_BUCKET = 500_000
MAX_BUCKETS = 512
#: the fewest bytes a row takes in a scan's size: what bounds the number of buckets
ROW_BYTES_AT_LEAST = 4
_EXACT = (IntegralType, FloatType, DoubleType, DecimalType, StringType)


def order_keys(natural: DataFrame, order_by: Sequence[str]) -> list[Column] | None:
    """Each ``order_by`` column's key for the bounds, or ``None`` when one has no key whose
    values survive the driver exactly (the caller sorts eagerly instead)."""
    types = {f.name: f.dataType for f in natural.schema.fields}
    keys = [order_key(column(c), types[c]) for c in order_by]
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
    slots = _slots(natural)
    bounded = keyed.select(*[column(c) for c in data], ORD, _KEY, _bounds(keyed, slots))
    with_bucket = bounded.select(
        *[column(c) for c in data], ORD, F.expr(_search(0, slots)).alias(_BUCKET)
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


def order_key(value: Column, type_: DataType) -> Column | None:
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


def _slots(natural: DataFrame) -> int:
    """How many bounds the search has room for: the buckets of the most rows the scan can
    hold, from the size the optimizer gives it (a file listing: no job), at
    ``ROW_BYTES_AT_LEAST`` bytes a row. Fewer rows leave the last slots empty; more only
    make buckets larger."""
    size = int(str(natural._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    rows = size // ROW_BYTES_AT_LEAST
    return max(0, min(MAX_BUCKETS, -(-rows // ROWS_PER_BUCKET)) - 1)


def _bounds(keyed: DataFrame, slots: int) -> Column:
    """Up to ``slots`` keys near the quantiles of a sample, ascending (``_BOUNDS``): a scalar
    subquery, which Spark runs once, and only in a plan that reads positions. The stream's
    rows give the buckets, ``ROWS_PER_BUCKET`` rows each; the sample, ``SAMPLE_PER_BUCKET``
    keys a bucket, gives their bounds. ``null`` when one bucket holds every row."""
    if not slots:
        return F.lit(None).alias(_BOUNDS)
    # a deterministic sample, one key in ``period`` by its hash (a seeded ``rand`` would
    # make the subquery, and so every plan that reads it, nondeterministic to Spark)
    period = max(1, ROWS_PER_BUCKET // SAMPLE_PER_BUCKET)
    sampled = keyed.select(F.col(_KEY), F.expr(f"pmod(xxhash64({_KEY}), {period}) = 0").alias("s"))
    stats = sampled.agg(
        F.count(F.lit(1)).alias("n"),
        F.sort_array(F.collect_list(F.when(F.col("s"), F.col(_KEY)))).alias("k"),
    )
    buckets = f"least({slots + 1}, greatest(1, ceil(n / {ROWS_PER_BUCKET})))"
    picked = (
        f"CASE WHEN {buckets} > 1 THEN filter(transform(sequence(1, {buckets} - 1),"
        f" i -> try_element_at(k, CAST(floor(size(k) * i / {buckets}) AS INT) + 1)),"
        " b -> b IS NOT NULL) END"
    )
    return stats.select(F.expr(picked)).scalar().alias(_BOUNDS)


def _search(lo: int, hi: int) -> str:
    """SQL for how many of the bounds in slots ``lo`` to ``hi`` (ascending; an empty slot is
    above every key) are at or below the row's key, plus ``lo``: a binary search,
    ``log2(slots)`` comparisons per row."""
    if lo == hi:
        return str(lo)
    mid = (lo + hi) // 2
    below = f"coalesce({_KEY} < try_element_at({_BOUNDS}, {mid + 1}), true)"
    return f"CASE WHEN {below} THEN {_search(lo, mid)} ELSE {_search(mid + 1, hi)} END"


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
