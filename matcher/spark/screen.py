"""Screening: which groups agree, decided by one sort of small rows instead of the full plan.

Most nightly comparisons are equivalent, and in a divergent one most keys still agree. The
grouped plan (``matcher.spark.keyed``) carries every column through several windows; this
plan carries four numbers per event and decides, per group, whether the two sides agree:

* per event, two 64-bit digests of its *canonical* compared values (``Equality.canonical``
  said in SQL: normalised strings, folded NaN and -0.0, ignored columns left out, and the
  null mask hashed too, because Spark's ``xxhash64`` skips nulls);
* per event, its rank within its (group, side) by stream position: the plan's one sort,
  after its one shuffle by (a 64-bit hash of) the group;
* per group and side, the XOR of ``xxhash64(digest, rank)`` over its events, and the count.

A group agrees when both sides have as many events and the same two XORs: the same
canonical events in the same order (for a chain), or the same number of equal events (for
a multiset, whose events share their canonical value by construction). Equal canonical
values are equal under the equality, so an agreeing group is one the full plan would
match entirely; a group that does not agree goes to the full plan, which decides and
explains it exactly. The only way to be wrong is two different sequences with the same
128 bits of XORed digests, about one chance in 2^128 per group.

Screening needs every compared column to be exact: a tolerance cannot be hashed, so an
equality with tolerances, and forms with barriers or one positional chain (``ordered``),
take the full plan directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructField, StructType

from matcher.dependence import Dependence
from matcher.equality import Equality
from matcher.errors import InputError
from matcher.spark.equality_sql import canonical_value, compared_fields, ident, is_nan
from matcher.spark.general import match_partitions
from matcher.spark.grouped import EXACT_LIMIT, Outcome
from matcher.spark.keyed import (
    GROUP,
    KEYED,
    SIDE,
    TYPE_OK,
    GroupedPlan,
    tagged_union,
)
from matcher.spark.result import Findings, SideStats, explain, findings_of
from matcher.spark.schema import POS, Streams, column

_H1, _H2, _NAN, _RANK, _KIND = "__p_h1", "__p_h2", "__p_nan", "__p_rank", "__p_kind"
_BAD = "__p_bad_g"
_GH = "__p_gh"
#: the second digest is the first with this prefix hashed in: another seed
_SALT = "'parity-screen'"
#: groups that disagree are joined back by broadcast up to this many
BROADCAST_GROUPS = 2_000_000


@dataclass(frozen=True, slots=True)
class Screen:
    """What screening found: per side rows and keys, the reference events of the groups
    that agree (all matched), and the groups that do not (``bad``, a persisted DataFrame of
    ``__p_g``; ``release()`` it)."""

    rows: tuple[int, int]
    keys: tuple[int, int]
    agreed: int
    n_bad: int
    bad_events: int
    bad: DataFrame
    per_group: DataFrame

    def release(self) -> None:
        self.per_group.unpersist()


def screenable(plan: GroupedPlan) -> bool:
    """Whether screening decides agreeing groups exactly as the full plan would."""
    layout = plan.layout
    if layout.has_barriers or layout.positional:
        return False
    compared = {f.name for f in compared_fields(plan.fields, plan.equality)}
    return not (compared & set(plan.equality.tolerance))


def digest_columns(fields: tuple[StructField, ...], equality: Equality) -> list[str]:
    """SQL for an event's two digests and its NaN flag (a NaN equals nothing when
    ``nan_equal`` is off, so its group always goes to the full plan)."""
    compared = compared_fields(fields, equality)
    values = [_hashable(canonical_value(ident(f.name), f, equality), f) for f in compared]
    nulls = [f"{ident(f.name)} IS NULL" for f in compared]
    inputs = ", ".join([*values, *nulls]) or "0"
    if equality.nan_equal:
        nan = "FALSE"
    else:
        nan = " OR ".join(is_nan(ident(f.name), f.dataType) for f in compared) or "FALSE"
    return [
        f"xxhash64({inputs}) AS {_H1}",
        f"xxhash64({_SALT}, {inputs}) AS {_H2}",
        f"{nan} AS {_NAN}",
    ]


def _hashable(expr: str, field: StructField) -> str:
    """A nested value as JSON text: ``xxhash64`` skips null elements and fields, so
    ``[null, 1]`` and ``[1, null]`` would hash alike."""
    nested = isinstance(field.dataType, (ArrayType, MapType, StructType))
    if nested and not expr.startswith("to_json("):  # ``key_value`` may have made it JSON
        return f"to_json({expr})"
    return expr


def screening_plan(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> DataFrame:
    """One row per group: counts per side, the XORed digests, whether it agrees (``ok``)."""
    kind = plan.layout.type_column
    extra = [] if kind is None else [f"CAST({ident(kind)} AS STRING) AS {_KIND}"]
    events = tagged_union(plan, reference, candidate).selectExpr(
        GROUP, SIDE, POS, KEYED, TYPE_OK, *extra, *digest_columns(plan.fields, plan.equality)
    )
    # Shuffled and sorted by a 64-bit hash of the group first: Spark sorts on a long
    # prefix, where a struct key would be compared field by field (a third slower here).
    ranked = (
        events.selectExpr("*", f"xxhash64({GROUP}) AS {_GH}")
        .repartition(_GH)
        .selectExpr(
            "*",
            f"row_number() OVER (PARTITION BY {_GH}, {GROUP}, {SIDE} ORDER BY {POS}) AS {_RANK}",
        )
    )

    def xor(side: int, digest: str) -> str:
        return f"bit_xor(CASE WHEN {SIDE} = {side} THEN xxhash64({digest}, {_RANK}) END)"

    aggregates = [
        f"sum(CASE WHEN {SIDE} = 0 THEN 1 ELSE 0 END) AS nr",
        f"sum(CASE WHEN {SIDE} = 1 THEN 1 ELSE 0 END) AS nc",
        f"{xor(0, _H1)} AS r1",
        f"{xor(1, _H1)} AS c1",
        f"{xor(0, _H2)} AS r2",
        f"{xor(1, _H2)} AS c2",
        f"max({_NAN}) AS nan",
        f"max({KEYED}) AS keyed",
    ]
    if plan.layout.typed:
        undeclared = f"struct({POS}, {SIDE}, {_KIND})"
        aggregates.append(f"min(CASE WHEN NOT {TYPE_OK} THEN {undeclared} END) AS bad_type")
    per_group = ranked.groupBy(_GH, GROUP).agg(*[F.expr(a) for a in aggregates])
    ok = "nr = nc AND r1 <=> c1 AND r2 <=> c2 AND NOT nan"
    return per_group.selectExpr("*", f"{ok} AS ok")


def screen(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> Screen:
    """Run the screening plan once; the per-group rows stay persisted for the full plan."""
    per_group = screening_plan(plan, reference, candidate).persist(StorageLevel.MEMORY_AND_DISK)
    totals = [
        "sum(nr) AS nr",
        "sum(nc) AS nc",
        "sum(CASE WHEN keyed AND nr > 0 THEN 1 ELSE 0 END) AS kr",
        "sum(CASE WHEN keyed AND nc > 0 THEN 1 ELSE 0 END) AS kc",
        "sum(CASE WHEN ok THEN nr ELSE 0 END) AS agreed",
        "sum(CASE WHEN ok THEN 0 ELSE 1 END) AS bad",
        "sum(CASE WHEN ok THEN 0 ELSE nr + nc END) AS bad_events",
    ]
    if plan.layout.typed:
        totals.append("min(bad_type) AS bad_type")
    try:
        row = per_group.agg(*[F.expr(t) for t in totals]).collect()[0]
    except BaseException:
        per_group.unpersist()
        raise
    if plan.layout.typed and row["bad_type"] is not None:
        per_group.unpersist()
        bad = row["bad_type"]
        side = ("reference", "candidate")[bad[1]]
        raise InputError(
            f"{side} event #{bad[0]}: typed dependence: event type {bad[2]!r} is not "
            "declared in types"
        )
    return Screen(
        rows=(row["nr"] or 0, row["nc"] or 0),
        keys=(row["kr"] or 0, row["kc"] or 0),
        agreed=row["agreed"] or 0,
        n_bad=row["bad"] or 0,
        bad_events=row["bad_events"] or 0,
        bad=per_group.where("NOT ok").select(GROUP),
        per_group=per_group,
    )


def restrict(union: DataFrame, screened: Screen) -> DataFrame:
    """The events of the groups that disagree (a semi-join, by broadcast when they fit)."""
    bad = screened.bad.select(F.col(GROUP).alias(_BAD))
    if screened.n_bad <= BROADCAST_GROUPS:
        bad = F.broadcast(bad)
    # null-safe: a key column may hold nulls, and the group is a struct of key values
    return union.join(bad, F.col(GROUP).eqNullSafe(F.col(_BAD)), "left_semi")


def run_screened(
    streams: Streams, plan: GroupedPlan, dependence: Dependence, limit: int
) -> Outcome:
    """Screen, then match the groups that disagree with the core's loop, partitioned by
    group (``matcher.spark.general``): they hold every event the core leaves unmatched.

    Up to ``EXACT_LIMIT`` events in those groups, what the loops leave is explained on the
    driver, all together, as the core explains it; beyond, each partition explains its own
    and the verdict warns (an event whose key changed then reads as a loss and a
    duplication, not as a corruption of its key)."""
    screened = screen(plan, streams.reference, streams.candidate)
    try:
        stats = SideStats(screened.rows, screened.keys, (0, 0))
        if screened.n_bad == 0:
            return Outcome(True, screened.rows[0], stats, Findings())
        union = tagged_union(plan, streams.reference, streams.candidate)
        partitioned = (
            restrict(union, screened)
            .repartition(GROUP)
            .select(*[column(c) for c in plan.names], POS, SIDE)
            .sortWithinPartitions(POS, SIDE)
        )
        here = screened.bad_events > EXACT_LIMIT
        results = match_partitions(
            partitioned,
            dependence,
            plan.equality,
            plan.names,
            (screened.rows, limit) if here else None,
        )
        matched = screened.agreed + results.total("matched")
        if here:
            warning = (
                f"{screened.bad_events} events of {screened.n_bad} groups that differ were "
                "explained partition by partition: an event whose key changed reads as a "
                "loss and a duplication"
            )
            findings = results.findings
            return Outcome(not findings.counts, matched, stats, findings, (warning,))
        if not results.events and not results.settled:
            return Outcome(True, matched, stats, Findings())
        found, _ = explain(
            dependence, plan.equality, screened.rows, results.events, False, settled=results.settled
        )
        return Outcome(False, matched, stats, findings_of(found, limit))
    finally:
        screened.release()
