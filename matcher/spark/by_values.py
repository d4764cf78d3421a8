"""Screening without a sort, when the reference's order values are all distinct.

Screening (``matcher.spark.screen``) ranks each group's events on each side by stream order
and hashes each digest with its rank: one shuffle of every event, sorted. Under ``order_by``
the stream order is the order values, ties broken by the natural order, and when no two
events of the reference share their order values (``presorted.strictly_sorted``: the
reference was written in its ``order_by`` order, each row's values above the last's, as an
output numbered by a sequence or an offset is), a group agrees exactly when both sides hold
the same multiset of (digest, order values) pairs. The candidate then holds the same
distinct order values, each with the same digest, so both sides' events in stream order
have the same digests in the same order (for a multiset, whose events share their canonical
value, the same number of equal events).

A multiset is compared by sums, not XORs (a pair held twice would cancel out): per group,
the reference's minus the candidate's sum of two 64-bit hashes of each pair (the second
salted), summed as 32-bit halves so that the sums are exact integers. Two different
multisets of as many pairs have equal sums of one hash with a chance of about 2^-64, like a
digest collision. The plan is a hash aggregate whose map side leaves one row per group and
task: no sort, and a shuffle of a few rows per group instead of every event.

A group whose pairs differ disagrees for certain when its digests differ too (as a multiset,
by a third sum: some canonical event is lost, added or changed). When only the pairs differ,
the group is *ambiguous*: the same events, paired with other order values, which can be a
reordering or order values that differ but keep the order (an order column the equality
ignores, a timestamp shifted for every event). Up to ``AMBIGUOUS_LIMIT`` events, such groups
go with the disagreeing ones to the full plan, which decides them exactly; beyond, the
screening's ranked plan decides them first (``matcher.spark.screen``). A typed layout
(which checks every event's type as it screens) is ranked directly.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from matcher.spark.digests import DIGEST, GH, GH2, NAN, SALT, digest_columns, group_hashes
from matcher.spark.equality_sql import ident
from matcher.spark.grouped_sql import KEYED, SIDE, GroupedPlan, tagged_union
from matcher.spark.presorted import Runs, side_runs
from matcher.spark.schema import ORD

_PAIR, _VALUE = "__p_pair", "__p_value"
_HALF = 4294967295
#: the events of ambiguous groups sent to the full plan without ranking them first
AMBIGUOUS_LIMIT = 100_000


def reference_runs(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> Runs | None:
    """The reference's runs (``presorted.side_runs``: one narrow job over its order
    values), when its order could let agreeing groups be found by their order values:
    an order struct of one type on both sides, no typed layout. They do when
    ``presorted.strictly_sorted`` holds of them."""
    if plan.layout.typed or ORD not in reference.columns or ORD not in candidate.columns:
        return None
    kind = reference.schema[ORD].dataType
    if kind != candidate.schema[ORD].dataType or not isinstance(kind, StructType):
        return None
    return side_runs(reference) if len(kind.fields) > 1 else None


def agreement_plan(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> DataFrame:
    """One row per group, as ``screen.screening_plan``'s but for its XORs: the group's
    hashes, ``nr``, ``nc``, ``nan``, ``keyed``, whether it agrees (``ok``) and whether it
    may agree all the same (``ambiguous``: the same digests, paired with other order
    values)."""
    kind = reference.schema[ORD].dataType
    assert isinstance(kind, StructType)
    *values, _tie = kind.fields
    order = [f"{_VALUE}{i}" for i in range(len(values))]
    inputs = ", ".join([DIGEST, *order, *[f"{o} IS NULL" for o in order]])
    events = tagged_union(plan, reference, candidate).selectExpr(
        *group_hashes(),
        SIDE,
        KEYED,
        *[f"{ORD}.{ident(f.name)} AS {o}" for f, o in zip(values, order, strict=True)],
        *digest_columns(plan.fields, plan.equality),
    )
    paired = events.selectExpr(
        "*", f"xxhash64({inputs}) AS {_PAIR}1", f"xxhash64({SALT}, {inputs}) AS {_PAIR}2"
    )
    pairs = [*_difference(f"{_PAIR}1"), *_difference(f"{_PAIR}2")]
    digests = _difference(DIGEST)
    aggregates = [
        f"sum(CASE WHEN {SIDE} = 0 THEN 1 ELSE 0 END) AS nr",
        f"sum(CASE WHEN {SIDE} = 1 THEN 1 ELSE 0 END) AS nc",
        *[f"{s} AS p{i}" for i, s in enumerate(pairs)],
        *[f"{s} AS d{i}" for i, s in enumerate(digests)],
        f"max({NAN}) AS nan",
        f"max({KEYED}) AS keyed",
    ]
    per_group = paired.groupBy(GH, GH2).agg(*[F.expr(a) for a in aggregates])
    same_pairs = " AND ".join(f"p{i} = 0" for i in range(len(pairs)))
    same_digests = " AND ".join(f"d{i} = 0" for i in range(len(digests)))
    return per_group.selectExpr(
        "*",
        f"nr = nc AND {same_pairs} AND NOT nan AS ok",
        f"nr = nc AND NOT ({same_pairs}) AND {same_digests} AND NOT nan AS ambiguous",
    )


def _difference(hashed: str) -> list[str]:
    """SQL for the reference's sum of a 64-bit hash minus the candidate's, as two exact
    sums of its 32-bit halves."""
    sign = f"(1 - 2 * {SIDE})"
    return [
        f"sum({sign} * ({hashed} & {_HALF}))",
        f"sum({sign} * shiftrightunsigned({hashed}, 32))",
    ]
