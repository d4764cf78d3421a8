"""Disagreeing chains of simple shape, classified in SQL instead of the core's loop.

Screening (``matcher.spark.screen``) leaves the groups that disagree, and
``from_cut_with_digests`` cuts each chain (a key of ``by_key``) at its first differing
rank: what is left is exactly what the core's loop leaves unmatched for that key, ``R'`` on
the reference side and ``C'`` on the candidate side, unless the key resynchronises (its
queues reach ``RESYNC_START`` events). In a divergent nightly run most such keys hold a
single fault, and for four shapes the core's classification (``matcher.classify``: the
chain's alignment, then moved, corrupted, lost and extra events) is known without running
it:

* ``loss``: ``R'[1:] == C'``: the common suffix takes all of ``C'``, ``R'[0]`` is lost,
  expected where ``C'[0]`` stands (or at the candidate's end);
* ``duplication``: ``C'[1:] == R'``, symmetrically;
* ``corruption``: ``R'[1:] == C'[1:]`` and ``R'[0] != C'[0]``: one substitution, paired at
  the same place (same key, so the key columns agree), with the columns that differ;
* ``reordering``: ``R' = [m, n] + T`` and ``C' = [n, m] + T``: the alignment deletes ``m``
  and matches ``n`` (``matcher.diff``), and the unmatched ``m`` on both sides is one moved
  event.

Sequence equality is tested as screening tests it: XORs of each event's 64-bit digest
mixed with its rank (shifted by one where the shape shifts). Every other key, a key with a
NaN that equals nothing, and a key of ``RESYNC_START`` or more events go to the core's
loop as before. Each simple key has exactly one divergence, whose sort key SQL computes:
the earliest ``limit`` of them are explained again by the core's classifier on the driver,
for their witnesses; the counts (and the columns of corruptions) come from aggregates.
Those few chains are classified together, so a reordering names its partner (the core
names none once its classification holds more than ``MAX_ORDER_CHECK`` pairs), as the
partition-by-partition explanation this replaces named it for a partition's chains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField

from matcher.dependence import Dependence
from matcher.equality import Equality
from matcher.online import RESYNC_START
from matcher.spark.equality_sql import compared_fields, ident, pair_equal
from matcher.spark.events import collect_tagged
from matcher.spark.grouped_sql import GROUP, SIDE, GroupedPlan
from matcher.spark.result import Findings, explain, findings_of
from matcher.spark.schema import POS

SHAPE = "__p_shape"
#: the pairs of a chain before its cut (all matched), on every event of the chain
PREFIX = "__p_prefix"
#: the rank of an event from its chain's cut (the first rank whose pair differs)
Q = "__p_q"
_DESIGNATED = "__p_designated"
_WPOS, _WREF = "__p_wpos", "__p_wref"
_WHOLE = f"PARTITION BY {GROUP}"


def shapes_apply(plan: GroupedPlan) -> bool:
    """Whether the shapes are the core's classification: chains by key, nothing else."""
    layout = plan.layout
    return bool(layout.chain and layout.key) and not (
        layout.typed or layout.has_barriers or layout.positional
    )


def with_shapes(kept: DataFrame, digest: str, nan: str, lengths: Sequence[int]) -> DataFrame:
    """``kept`` (the events of disagreeing chains from their cut on, partitioned by group,
    with their digest ``digest``, NaN flag ``nan`` and rank from the cut ``Q``) with each
    group's shape (null: the core's loop decides) and, on one designated row per group,
    the sort key of its divergence (``Divergence.sort_key``)."""

    def over(expr: str) -> str:
        return f"{expr} OVER ({_WHOLE})"

    def mixed(side: int, since: int, shift: int) -> str:
        rank = f"{Q} - {shift}" if shift else Q
        when = f"{SIDE} = {side} AND {Q} >= {since}"
        return over(f"bit_xor(CASE WHEN {when} THEN xxhash64({digest}, {rank}) END)")

    def at(side: int, rank: int, value: str) -> str:
        return over(f"max(CASE WHEN {SIDE} = {side} AND {Q} = {rank} THEN {value} END)")

    nr = over(f"sum(CASE WHEN {SIDE} = 0 THEN 1 ELSE 0 END)")
    nc = over(f"sum(CASE WHEN {SIDE} = 1 THEN 1 ELSE 0 END)")
    columns = {
        "__p_nr": nr,
        "__p_nc": nc,
        "__p_gnan": over(f"max({nan})"),
        "__p_xr": mixed(0, 0, 0),
        "__p_xc": mixed(1, 0, 0),
        "__p_xrs": mixed(0, 1, 1),
        "__p_xcs": mixed(1, 1, 1),
        "__p_xrt": mixed(0, 1, 0),
        "__p_xct": mixed(1, 1, 0),
        "__p_xrt2": mixed(0, 2, 0),
        "__p_xct2": mixed(1, 2, 0),
        "__p_dr0": at(0, 0, digest),
        "__p_dr1": at(0, 1, digest),
        "__p_dc0": at(1, 0, digest),
        "__p_dc1": at(1, 1, digest),
        "__p_pr0": at(0, 0, POS),
        "__p_pc0": at(1, 0, POS),
        "__p_pc1": at(1, 1, POS),
    }
    stats = kept.selectExpr("*", *[f"{expr} AS {name}" for name, expr in columns.items()])
    shape = (
        f"CASE WHEN __p_gnan OR __p_nr + __p_nc >= {RESYNC_START} THEN NULL"
        " WHEN __p_nr = __p_nc + 1 AND __p_xrs <=> __p_xc THEN 'loss'"
        " WHEN __p_nc = __p_nr + 1 AND __p_xcs <=> __p_xr THEN 'duplication'"
        " WHEN __p_nr = __p_nc AND __p_xrt <=> __p_xct THEN 'corruption'"
        " WHEN __p_nr = __p_nc AND __p_nr >= 2 AND __p_dr0 = __p_dc1 AND __p_dr1 = __p_dc0"
        " AND __p_xrt2 <=> __p_xct2 THEN 'reordering' END"
    )
    # (reference position, candidate position) of the shape's one divergence
    ref = f"CASE {SHAPE} WHEN 'duplication' THEN coalesce(__p_pr0, {lengths[0]}) ELSE __p_pr0 END"
    cand = (
        f"CASE {SHAPE} WHEN 'loss' THEN coalesce(__p_pc0, {lengths[1]})"
        f" WHEN 'reordering' THEN __p_pc1 ELSE __p_pc0 END"
    )
    designated = f"{Q} = 0 AND {SIDE} = (CASE WHEN __p_nr > 0 THEN 0 ELSE 1 END)"
    shaped = stats.selectExpr("*", f"{shape} AS {SHAPE}", f"{designated} AS {_DESIGNATED}")
    return shaped.selectExpr(
        *[c for c in shaped.columns if c not in columns],
        f"least({ref}, {cand}) AS {_WPOS}",
        f"{ref} AS {_WREF}",
    )


def explain_shapes(
    shaped: DataFrame,
    plan: GroupedPlan,
    dependence: Dependence,
    lengths: Sequence[int],
    limit: int,
) -> tuple[Findings, int]:
    """Counts by kind and column of the simple chains (aggregates), and the witnesses of
    the earliest ``limit`` (their events explained by the core's classifier); and the pairs
    matched before the cut, over every chain of ``shaped``."""
    simple = shaped.where(f"{SHAPE} IS NOT NULL")
    per_shape = shaped.where(_DESIGNATED).groupBy(SHAPE)
    rows = per_shape.agg(F.count(F.lit(1)).alias("n"), F.sum(PREFIX).alias("m")).collect()
    counts: Counter[str] = Counter({r[SHAPE]: r["n"] for r in rows if r[SHAPE] is not None})
    before = sum(r["m"] or 0 for r in rows)
    if not counts:
        return Findings(), before
    columns = _corrupted_columns(simple, plan.fields, plan.equality) if counts["corruption"] else {}
    top = (
        simple.where(_DESIGNATED)
        .orderBy(_WPOS, _WREF)
        .limit(limit)
        .select(F.col(GROUP).alias("__p_top"))
    )
    chosen = simple.join(F.broadcast(top), F.col(GROUP).eqNullSafe(F.col("__p_top")), "left_semi")
    events = [(t[0], t[1], e) for t, e in collect_tagged(chosen, plan.names, [POS, SIDE])]
    found, _ = explain(dependence, plan.equality, lengths, events, False)
    return Findings(findings_of(found, limit).divergences, counts, Counter(columns)), before


def _corrupted_columns(
    simple: DataFrame, fields: Sequence[StructField], equality: Equality
) -> dict[str, int]:
    """How many simple corruptions each compared column differs in."""
    compared = compared_fields(fields, equality)
    values = ", ".join(f"{ident(f.name)} AS c{i}" for i, f in enumerate(compared)) or "0 AS none"
    pairs = (
        simple.where(f"{SHAPE} = 'corruption' AND {Q} = 0")
        .groupBy(GROUP)
        .agg(
            F.expr(f"first(CASE WHEN {SIDE} = 0 THEN struct({values}) END, TRUE)").alias("a"),
            F.expr(f"first(CASE WHEN {SIDE} = 1 THEN struct({values}) END, TRUE)").alias("b"),
        )
    )
    differ = [
        F.expr(
            f"sum(CASE WHEN {pair_equal(f'a.c{i}', f'b.c{i}', f, equality)} THEN 0 ELSE 1 END)"
        ).alias(f"c{i}")
        for i, f in enumerate(compared)
    ]
    if not differ:
        return {}
    row = pairs.agg(*differ).collect()[0]
    return {f.name: row[f"c{i}"] for i, f in enumerate(compared) if row[f"c{i}"]}
