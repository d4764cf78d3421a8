"""Screening: which groups agree, decided by one sort of small rows instead of the full plan.

Most nightly comparisons are equivalent, and in a divergent one most keys still agree. The
grouped plan (``matcher.spark.grouped_sql``) carries every column through several windows; this
plan carries five longs per event and decides, per group, whether the two sides agree:

* per event, a 64-bit digest of its *canonical* compared values (``Equality.canonical``
  said in SQL: normalised strings, folded NaN and -0.0, ignored columns left out, and the
  null mask hashed too, because Spark's ``xxhash64`` skips nulls);
* per event, its group as two 64-bit hashes and its rank within its (group, side) by
  stream order (``__p_ord``, which for Parquet needs no counting job): the plan's one
  sort, after its one shuffle;
* per group and side, two XORs of ``xxhash64(digest, rank)`` (the second salted) over its
  events, and the count.

A group agrees when both sides have as many events and the same XORs: the same canonical
events in the same order (for a chain), or the same number of equal events (for a
multiset, whose events share their canonical value by construction). Equal canonical
values are equal under the equality, so an agreeing group is one the full plan would
match entirely; a group that does not agree goes to the full plan, which decides and
explains it exactly. The only ways to be wrong are two different events with the same
64-bit digest at the same rank (about one chance in 2^64 for each event that differs) or
two different sequences whose 128 bits of XORs agree (one in 2^128 per group).

Screening needs every compared column to be exact: a tolerance cannot be hashed, so an
equality with tolerances, and forms with barriers or one positional chain (``ordered``),
take the full plan directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, Row
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    FloatType,
    MapType,
    StructField,
    StructType,
)

from matcher.dependence import Dependence
from matcher.equality import Equality
from matcher.errors import InputError
from matcher.spark.equality_sql import canonical_value, compared_fields, ident, is_nan
from matcher.spark.grouped_run import EXACT_LIMIT, Outcome
from matcher.spark.grouped_sql import (
    GROUP,
    KEYED,
    SIDE,
    TYPE_OK,
    GroupedPlan,
    tagged_union,
)
from matcher.spark.per_partition import match_partitions
from matcher.spark.result import Findings, SideStats, explain, findings_of
from matcher.spark.schema import ORD, POS, Streams, column
from matcher.spark.shapes import PREFIX, SHAPE, Q, explain_shapes, shapes_apply, with_shapes

_H1, _NAN, _RANK, _KIND = "__p_h1", "__p_nan", "__p_rank", "__p_kind"
_PAIR_OK, _CUT = "__p_pair_ok", "__p_cut"
#: an event of a pair before its chain's cut (all matched)
_BEFORE = f"{_RANK} < {_CUT}"
_BAD, _BAD2 = "__p_bad_h", "__p_bad_h2"
_GH, _GH2 = "__p_gh", "__p_gh2"
#: hashed in first, a second seed: for the group's second hash and the second XOR
_SALT = "'parity-screen'"
#: groups that disagree are joined back by broadcast up to this many
BROADCAST_GROUPS = 2_000_000


@dataclass(frozen=True, slots=True)
class Screen:
    """What screening found: per side rows and keys, the reference events of the groups
    that agree (all matched), and the groups that do not (``bad``, a persisted DataFrame of
    the groups' hashes; ``release()`` it)."""

    rows: tuple[int, int]
    keys: tuple[int, int]
    agreed: int
    n_bad: int
    bad_events: int
    bad: DataFrame

    def release(self) -> None:
        self.bad.unpersist()


def screenable(plan: GroupedPlan) -> bool:
    """Whether screening decides agreeing groups exactly as the full plan would."""
    layout = plan.layout
    if layout.has_barriers or layout.positional:
        return False
    compared = {f.name for f in compared_fields(plan.fields, plan.equality)}
    return not (compared & set(plan.equality.tolerance))


def digest_columns(fields: tuple[StructField, ...], equality: Equality) -> list[str]:
    """SQL for an event's digest and its NaN flag (a NaN equals nothing when
    ``nan_equal`` is off, so its group always goes to the full plan)."""
    compared = compared_fields(fields, equality)
    values = [_hashable(ident(f.name), f, equality) for f in compared]
    nulls = [f"{ident(f.name)} IS NULL" for f in compared]
    inputs = ", ".join([*values, *nulls]) or "0"
    if equality.nan_equal:
        nan = "FALSE"
    else:
        nan = " OR ".join(is_nan(ident(f.name), f.dataType) for f in compared) or "FALSE"
    return [f"xxhash64({inputs}) AS {_H1}", f"{nan} AS {_NAN}"]


def _hashable(expr: str, field: StructField, equality: Equality) -> str:
    """The canonical value of a column, as ``xxhash64`` should see it.

    A top-level float stays a number, NaN and -0.0 folded (``xxhash64`` hashes a double's
    bits, and every NaN has the same bits once folded): cheaper than the text that
    ``canonical_value`` makes of it for grouping. A nested value is JSON text: ``xxhash64``
    skips null elements and fields, so ``[null, 1]`` and ``[1, null]`` would hash alike."""
    dtype = field.dataType
    if isinstance(dtype, (DoubleType, FloatType)):
        zero = "CAST(0 AS FLOAT)" if isinstance(dtype, FloatType) else "0.0D"
        nan = "CAST('NaN' AS FLOAT)" if isinstance(dtype, FloatType) else "CAST('NaN' AS DOUBLE)"
        return f"(CASE WHEN isnan({expr}) THEN {nan} WHEN {expr} = 0 THEN {zero} ELSE {expr} END)"
    canonical = canonical_value(expr, field, equality)
    nested = isinstance(dtype, (ArrayType, MapType, StructType))
    if nested and not canonical.startswith("to_json("):  # ``key_value`` may have made it JSON
        return f"to_json({canonical})"
    return canonical


def screening_plan(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> DataFrame:
    """One row per group: its 128-bit hash, counts per side, the XORed digests, whether it
    agrees (``ok``)."""
    kind = plan.layout.type_column
    extra = [] if kind is None else [f"CAST({ident(kind)} AS STRING) AS {_KIND}"]
    # Only longs cross the shuffle: the group as two 64-bit hashes (Spark sorts on a long
    # prefix, where a struct key would be compared field by field) and the stream order.
    events = tagged_union(plan, reference, candidate).selectExpr(
        *group_hashes(),
        SIDE,
        ORD,
        KEYED,
        TYPE_OK,
        *extra,
        *digest_columns(plan.fields, plan.equality),
    )
    ranked = events.repartition(_GH).selectExpr(
        "*",
        f"row_number() OVER (PARTITION BY {_GH}, {_GH2}, {SIDE} ORDER BY {ORD}) AS {_RANK}",
    )

    def xor(side: int, salt: str) -> str:
        mixed = f"xxhash64({salt}{_H1}, {_RANK})"
        return f"bit_xor(CASE WHEN {SIDE} = {side} THEN {mixed} END)"

    aggregates = [
        f"sum(CASE WHEN {SIDE} = 0 THEN 1 ELSE 0 END) AS nr",
        f"sum(CASE WHEN {SIDE} = 1 THEN 1 ELSE 0 END) AS nc",
        f"{xor(0, '')} AS r1",
        f"{xor(1, '')} AS c1",
        f"{xor(0, _SALT + ', ')} AS r2",
        f"{xor(1, _SALT + ', ')} AS c2",
        f"max({_NAN}) AS nan",
        f"max({KEYED}) AS keyed",
    ]
    if plan.layout.typed:
        undeclared = f"struct({ORD}, {SIDE}, {_KIND})"
        aggregates.append(f"min(CASE WHEN NOT {TYPE_OK} THEN {undeclared} END) AS bad_type")
    per_group = ranked.groupBy(_GH, _GH2).agg(*[F.expr(a) for a in aggregates])
    ok = "nr = nc AND r1 <=> c1 AND r2 <=> c2 AND NOT nan"
    return per_group.selectExpr("*", f"{ok} AS ok")


def group_hashes() -> list[str]:
    """SQL for the group's two 64-bit hashes. Two groups with the same 128 bits would be
    screened as one (about one chance in 2^64 for a billion groups): their events would
    be ranked together, and since the digests hash the key's values too, the merged group
    agrees only if each of them does."""
    return [f"xxhash64({GROUP}) AS {_GH}", f"xxhash64({_SALT}, {GROUP}) AS {_GH2}"]


def screen(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> Screen:
    """Run the screening plan once: the totals come back as the job's observed metrics,
    and only the groups that disagree are kept (persisted) for the full plan."""
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
    observation = Observation("parity-screen")
    per_group = screening_plan(plan, reference, candidate).observe(
        observation, *[F.expr(t) for t in totals]
    )
    bad = per_group.where("NOT ok").select(_GH, _GH2).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        bad.count()
        row = observation.get
    except BaseException:
        bad.unpersist()
        raise
    if plan.layout.typed and row.get("bad_type") is not None:
        bad.unpersist()
        undeclared = row["bad_type"]
        side = ("reference", "candidate")[undeclared[1]]
        raise InputError(
            f"{side} event #{_position(reference, candidate, undeclared)}: typed dependence: "
            f"event type {undeclared[2]!r} is not declared in types"
        )
    return Screen(
        rows=(row.get("nr") or 0, row.get("nc") or 0),
        keys=(row.get("kr") or 0, row.get("kc") or 0),
        agreed=row.get("agreed") or 0,
        n_bad=row.get("bad") or 0,
        bad_events=row.get("bad_events") or 0,
        bad=bad,
    )


def _position(reference: DataFrame, candidate: DataFrame, found: Row) -> int:
    """The dense position of the event ``found`` names by its order and side."""
    stream = (reference, candidate)[found[1]]
    row = stream.where(F.col(ORD) == F.lit(found[0])).select(POS).limit(1).collect()
    return int(row[0][0]) if row else int(found[0])


def restrict(union: DataFrame, screened: Screen) -> DataFrame:
    """The events of the groups that disagree (a semi-join on the group's hashes, by
    broadcast when they fit)."""
    bad = screened.bad.select(F.col(_GH).alias(_BAD), F.col(_GH2).alias(_BAD2))
    if screened.n_bad <= BROADCAST_GROUPS:
        bad = F.broadcast(bad)
    hashed = union.selectExpr("*", *group_hashes())
    on = (F.col(_GH) == F.col(_BAD)) & (F.col(_GH2) == F.col(_BAD2))
    return hashed.join(bad, on, "left_semi").drop(_GH, _GH2)


def without_agreeing_prefix(grouped: DataFrame, plan: GroupedPlan) -> tuple[DataFrame, Observation]:
    """The events of disagreeing chains (``grouped``, partitioned by group) from each
    chain's first differing rank on, and an observation of how many pairs came before.

    The core matches a key's events pairwise, in order, while both sides agree: before the
    first rank where they differ, an event's own queue holds only events of its side still
    waiting for their equal partner, so it is matched or waits, never sets off detection or
    resynchronisation; after it, the queues hold exactly the events from that rank on.
    So the loop reaches the same state, and leaves the same events, without the prefix.
    Equal digests stand for equal events here as they do in screening."""
    cut = _cut(grouped, plan)
    observation = Observation("parity-prefix")
    counted = cut.observe(
        observation,
        F.expr(f"sum(CASE WHEN {SIDE} = 0 AND {_BEFORE} THEN 1 ELSE 0 END)").alias("matched"),
    )
    kept = counted.where(f"NOT ({_BEFORE})")
    return kept.drop(_H1, _NAN, _RANK, _PAIR_OK, _CUT), observation


def from_cut_with_digests(grouped: DataFrame, plan: GroupedPlan) -> DataFrame:
    """``without_agreeing_prefix`` for ``matcher.spark.shapes``: each event with its digest,
    NaN flag, rank from the cut (``Q``) and the chain's pairs before the cut (``PREFIX``),
    which ``explain_shapes`` counts from the cached events rather than by an observation."""
    cut = _cut(grouped, plan)
    kept = cut.where(f"NOT ({_BEFORE})").selectExpr(
        "*", f"{_RANK} - greatest({_CUT}, 1) AS {Q}", f"greatest({_CUT} - 1, 0) AS {PREFIX}"
    )
    return kept.drop(_RANK, _PAIR_OK, _CUT)


def _cut(grouped: DataFrame, plan: GroupedPlan) -> DataFrame:
    """``grouped`` with each event's digest, NaN flag and rank in its chain, and its chain's
    cut: the first rank whose pair differs (0: none)."""
    digest, nan = digest_columns(plan.fields, plan.equality)
    chain = f"PARTITION BY {GROUP}, {SIDE} ORDER BY {ORD}"
    ranked = grouped.selectExpr("*", digest, nan, f"row_number() OVER ({chain}) AS {_RANK}")
    pair = f"PARTITION BY {GROUP}, {_RANK}"
    paired = ranked.selectExpr(
        "*",
        f"count(1) OVER ({pair}) = 2 AND min({_H1}) OVER ({pair}) = max({_H1}) OVER ({pair})"
        f" AND NOT max({_NAN}) OVER ({pair}) AS {_PAIR_OK}",
    )
    first_bad = f"min(CASE WHEN NOT {_PAIR_OK} THEN {_RANK} END) OVER (PARTITION BY {GROUP})"
    return paired.selectExpr("*", f"coalesce({first_bad}, 0) AS {_CUT}")


def run_screened(
    streams: Streams, plan: GroupedPlan, dependence: Dependence, limit: int
) -> Outcome:
    """Screen, then match the groups that disagree with the core's loop, partitioned by
    group (``matcher.spark.per_partition``): they hold every event the core leaves unmatched.

    Up to ``EXACT_LIMIT`` events in those groups, what the loops leave is explained on the
    driver, all together, as the core explains it; beyond, each partition explains its own
    and the verdict warns (an event whose key changed then reads as a loss and a
    duplication, not as a corruption of its key). Beyond, too, the keys of ``by_key`` whose
    difference has a simple shape (one lost, extra, altered or swapped event) are
    classified in SQL (``matcher.spark.shapes``) and only the others reach the loop."""
    screened = screen(plan, streams.reference, streams.candidate)
    cached: list[DataFrame] = []
    try:
        stats = SideStats(screened.rows, screened.keys, (0, 0))
        if screened.n_bad == 0:
            return Outcome(True, screened.rows[0], stats, Findings())
        union = tagged_union(plan, streams.reference, streams.candidate)
        grouped = restrict(union, screened).repartition(GROUP)
        prefix = None
        here = screened.bad_events > EXACT_LIMIT
        simple, matched = None, screened.agreed
        if here and shapes_apply(plan):
            grouped = with_shapes(from_cut_with_digests(grouped, plan), _H1, _NAN, screened.rows)
            grouped = grouped.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(grouped)
            simple, before = explain_shapes(grouped, plan, dependence, screened.rows, limit)
            grouped = grouped.where(f"{SHAPE} IS NULL")
            matched += before
        elif plan.layout.chain and not plan.layout.typed:
            grouped, prefix = without_agreeing_prefix(grouped, plan)
        partitioned = grouped.select(*[column(c) for c in plan.names], POS, SIDE)
        results = match_partitions(
            partitioned.sortWithinPartitions(POS, SIDE),
            dependence,
            plan.equality,
            plan.names,
            (screened.rows, limit) if here else None,
        )
        matched += results.total("matched")
        if prefix is not None:
            matched += prefix.get.get("matched") or 0
        if here:
            warning = (
                f"{screened.bad_events} events of {screened.n_bad} groups that differ were "
                "explained partition by partition: an event whose key changed reads as a "
                "loss and a duplication"
            )
            findings = results.findings
            if simple is not None:
                findings = findings.merge(simple, limit)
            return Outcome(not findings.counts, matched, stats, findings, (warning,))
        if not results.events and not results.settled:
            return Outcome(True, matched, stats, Findings())
        found, _ = explain(
            dependence, plan.equality, screened.rows, results.events, False, settled=results.settled
        )
        return Outcome(False, matched, stats, findings_of(found, limit))
    finally:
        screened.release()
        for df in cached:
            df.unpersist()
