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

The groups that disagree are explained by the core's loop when they are few
(``EXACT_LIMIT`` events); beyond, the chains of ``by_key`` are explained on the same
digests where the data is (``chain_events`` and ``matcher.spark.chains_run``: one more
shuffle, of those groups' events, and a few rows back), whatever the faults look like.
The digests' SQL is ``matcher.spark.digests``.

Under ``order_by``, when no two events of the reference share their order values,
``matcher.spark.by_values`` finds the agreeing groups without ranking them, by a hash
aggregate with no sort; ``screen`` ranks only the groups it leaves ambiguous, when they are
many (``ranked_screen``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, Row
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from matcher.dependence import Dependence
from matcher.errors import InputError
from matcher.spark import by_values
from matcher.spark.chains_run import (
    TALLY_SCHEMA,
    chain_counter,
    explain_chosen,
    read_tally,
)
from matcher.spark.differences import difference_table, write_table
from matcher.spark.digests import (
    DIGEST,
    GH,
    GH2,
    NAN,
    SALT,
    column_digests,
    digest_columns,
    group_hashes,
)
from matcher.spark.equality_sql import compared_fields, ident
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
from matcher.spark.presorted import Runs, natural_streams, strictly_sorted
from matcher.spark.result import Findings, SideStats, explain, findings_of
from matcher.spark.schema import ORD, POS, Streams, column
from matcher.spark.session import arrow_batches

_H1, _NAN, _RANK, _KIND = DIGEST, NAN, "__p_rank", "__p_kind"
_PAIR_OK, _CUT = "__p_pair_ok", "__p_cut"
_ORDER = "__p_o"
#: an event of a pair before its chain's cut (all matched)
_BEFORE = f"{_RANK} < {_CUT}"
_BAD, _BAD2 = "__p_bad_h", "__p_bad_h2"
_GH, _GH2 = GH, GH2
_SALT = SALT
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
    #: every group screened, those that agree too
    groups: int = 0
    #: groups (and their events) with the same events in another order of values
    #: (``matcher.spark.by_values``), among the ``bad``
    ambiguous: tuple[int, int] = (0, 0)
    #: the reference's runs, when screening collected them (``presorted.side_runs``)
    reference_runs: Runs | None = None

    def release(self) -> None:
        self.bad.unpersist()


def screenable(plan: GroupedPlan) -> bool:
    """Whether screening decides agreeing groups exactly as the full plan would."""
    layout = plan.layout
    if layout.has_barriers or layout.positional:
        return False
    compared = {f.name for f in compared_fields(plan.fields, plan.equality)}
    return not (compared & set(plan.equality.tolerance))


def screening_plan(
    plan: GroupedPlan,
    reference: DataFrame,
    candidate: DataFrame,
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """One row per group: its 128-bit hash, counts per side, the XORed digests, whether it
    agrees (``ok``). ``keep`` narrows the events (with their group's hashes) to some groups
    before the shuffle."""
    kind = plan.layout.type_column
    extra = [] if kind is None else [f"CAST({ident(kind)} AS STRING) AS {_KIND}", ORD]
    order = _order_fields(reference, candidate)
    # Only longs cross the shuffle: the group as two 64-bit hashes (Spark sorts on a long
    # prefix, where a struct key would be compared field by field) and the stream order.
    events = tagged_union(plan, reference, candidate).selectExpr(
        *group_hashes(),
        SIDE,
        *[f"{field} AS {name}" for name, field in order],
        KEYED,
        TYPE_OK,
        *extra,
        *digest_columns(plan.fields, plan.equality),
    )
    if keep is not None:
        events = keep(events)
    by = ", ".join(name for name, _ in order)
    ranked = events.repartition(_GH).selectExpr(
        "*",
        f"row_number() OVER (PARTITION BY {_GH}, {_GH2}, {SIDE} ORDER BY {by}) AS {_RANK}",
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


def _order_fields(reference: DataFrame, candidate: DataFrame) -> list[tuple[str, str]]:
    """The stream order as ``(name, SQL)`` columns to sort by: the fields of the order
    struct (``matcher.spark.ordering``) one by one, which cross a shuffle in fewer bytes
    than the struct and sort on a long's prefix, or the order itself when not a struct."""
    kind = reference.schema[ORD].dataType if ORD in reference.columns else None
    if not isinstance(kind, StructType):
        return [(_ORDER, ORD)]
    return [(f"{_ORDER}{i}", f"{ORD}.{ident(f.name)}") for i, f in enumerate(kind.fields)]


def screen(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> Screen:
    """Find the groups that agree: by their order values where that is exact
    (``matcher.spark.by_values``, no sort), ranking only the ambiguous groups when they
    are many; or by rank (``screening_plan``)."""
    runs = by_values.reference_runs(plan, reference, candidate)
    if not strictly_sorted(runs):
        return ranked_screen(plan, reference, candidate, runs=runs)
    agreement = by_values.agreement_plan(plan, reference, candidate)
    found = _observed(plan, reference, candidate, agreement, runs, "parity-screen-values")
    if not found.ambiguous[0] or found.ambiguous[1] <= by_values.AMBIGUOUS_LIMIT:
        return found
    try:
        if 2 * found.ambiguous[0] > found.groups:  # most groups: rank them all
            return ranked_screen(plan, reference, candidate, runs=runs)
        ambiguous = found.bad.where("ambiguous")

        def keep(events: DataFrame) -> DataFrame:
            return _in_groups(events, ambiguous, found.ambiguous[0])

        ranked = ranked_screen(plan, reference, candidate, keep, runs)
        try:
            certain = found.bad.where("NOT ambiguous").select(_GH, _GH2)
            bad = certain.unionByName(ranked.bad).persist(StorageLevel.MEMORY_AND_DISK)
            try:
                bad.count()
            except BaseException:
                bad.unpersist()
                raise
        finally:
            ranked.release()
    finally:
        found.release()
    return dataclasses.replace(
        ranked,
        rows=found.rows,
        keys=found.keys,
        agreed=found.agreed + ranked.agreed,
        n_bad=found.n_bad - found.ambiguous[0] + ranked.n_bad,
        bad_events=found.bad_events - found.ambiguous[1] + ranked.bad_events,
        bad=bad,
        groups=found.groups,
    )


def ranked_screen(
    plan: GroupedPlan,
    reference: DataFrame,
    candidate: DataFrame,
    keep: Callable[[DataFrame], DataFrame] | None = None,
    runs: Runs | None = None,
) -> Screen:
    """The screen of every group by rank (of those ``keep`` keeps: ``screening_plan``);
    ``runs``: the reference's, if collected, carried by the ``Screen``."""
    per_group = screening_plan(plan, reference, candidate, keep)
    return _observed(plan, reference, candidate, per_group, runs)


def _observed(
    plan: GroupedPlan,
    reference: DataFrame,
    candidate: DataFrame,
    per_group: DataFrame,
    runs: Runs | None = None,
    name: str = "parity-screen",
) -> Screen:
    """Run a plan of one row per group (``screening_plan``'s columns) once: the totals come
    back as the job's observed metrics (``name``: one per plan of a query), and only the
    groups that disagree are kept (persisted)."""
    totals = [
        "sum(nr) AS nr",
        "sum(nc) AS nc",
        "sum(CASE WHEN keyed AND nr > 0 THEN 1 ELSE 0 END) AS kr",
        "sum(CASE WHEN keyed AND nc > 0 THEN 1 ELSE 0 END) AS kc",
        "sum(CASE WHEN ok THEN nr ELSE 0 END) AS agreed",
        "sum(CASE WHEN ok THEN 0 ELSE 1 END) AS bad",
        "sum(CASE WHEN ok THEN 0 ELSE nr + nc END) AS bad_events",
        "count(1) AS groups",
    ]
    typed = "bad_type" in per_group.columns
    if typed:
        totals.append("min(bad_type) AS bad_type")
    kept = [_GH, _GH2]
    if "ambiguous" in per_group.columns:
        totals.append("sum(CASE WHEN ambiguous THEN 1 ELSE 0 END) AS ambiguous")
        totals.append("sum(CASE WHEN ambiguous THEN nr + nc ELSE 0 END) AS ambiguous_events")
        kept.append("ambiguous")
    observation = Observation(name)
    observed = per_group.observe(observation, *[F.expr(t) for t in totals])
    bad = observed.where("NOT ok").select(*kept).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        bad.count()
        row = observation.get
    except BaseException:
        bad.unpersist()
        raise
    if typed and row.get("bad_type") is not None:
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
        groups=row.get("groups") or 0,
        ambiguous=(row.get("ambiguous") or 0, row.get("ambiguous_events") or 0),
        reference_runs=runs,
    )


def _position(reference: DataFrame, candidate: DataFrame, found: Row) -> int:
    """The dense position of the event ``found`` names by its order and side."""
    stream = (reference, candidate)[found[1]]
    order = _literal(found[0]).cast(stream.schema[ORD].dataType)
    row = stream.where(F.col(ORD).eqNullSafe(order)).select(POS).limit(1).collect()
    if row:
        return int(row[0][0])
    return int(found[0]) if isinstance(found[0], int) else -1


def _literal(value: object) -> Column:
    """``value`` as a literal column; an order under ``order_by`` is a struct
    (``matcher.spark.ordering``), which ``F.lit`` does not take."""
    if isinstance(value, Row):
        return F.struct(*[_literal(v).alias(k) for k, v in value.asDict().items()])
    return F.lit(value)


def restrict(union: DataFrame, screened: Screen) -> DataFrame:
    """The events of the groups that disagree (a semi-join on the group's hashes, by
    broadcast when they fit; every event, when every group disagrees)."""
    hashed = union.selectExpr("*", *group_hashes())
    return _disagreeing(hashed, screened).drop(_GH, _GH2)


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


def chains_apply(plan: GroupedPlan) -> bool:
    """Whether ``matcher.spark.chains`` is the core's account: chains by key, nothing else."""
    layout = plan.layout
    return bool(layout.chain and layout.key) and not (
        layout.typed or layout.has_barriers or layout.positional
    )


def chain_events(
    plan: GroupedPlan, reference: DataFrame, candidate: DataFrame, screened: Screen
) -> DataFrame:
    """The small values of every event of the groups that disagree (``chains_run``'s
    input): group hashes, side, position, digest, NaN flag and one digest per compared
    column, partitioned by group and sorted by (group, position, side)."""
    hashed = tagged_union(plan, reference, candidate).selectExpr("*", *group_hashes())
    # the groups first: a digest is computed only for the events that are kept
    small = _disagreeing(hashed, screened).selectExpr(
        *[ident(name) for name in plan.names],
        _GH,
        _GH2,
        SIDE,
        POS,
        *digest_columns(plan.fields, plan.equality),
        *column_digests(plan.fields, plan.equality),
    )
    return small.repartition(_GH).sortWithinPartitions(_GH, _GH2, POS, SIDE)


def _disagreeing(hashed: DataFrame, screened: Screen) -> DataFrame:
    """The rows of ``hashed`` (with their group's hashes) in the groups that disagree: all
    of them, without a join, when every group does (a bug in every key, in every row)."""
    if screened.n_bad and screened.n_bad == screened.groups:
        return hashed
    return _in_groups(hashed, screened.bad, screened.n_bad)


def _in_groups(hashed: DataFrame, groups: DataFrame, n_groups: int) -> DataFrame:
    """The rows of ``hashed`` whose group hashes are among ``groups``' (by broadcast when
    they fit)."""
    wanted = groups.select(F.col(_GH).alias(_BAD), F.col(_GH2).alias(_BAD2))
    if n_groups <= BROADCAST_GROUPS:
        wanted = F.broadcast(wanted)
    on = (F.col(_GH) == F.col(_BAD)) & (F.col(_GH2) == F.col(_BAD2))
    return hashed.join(wanted, on, "left_semi")


def _groups_frame(union: DataFrame, groups: list[tuple[int, int]]) -> DataFrame:
    return union.sparkSession.createDataFrame(groups, f"{_GH} long, {_GH2} long")


def run_screened(
    streams: Streams,
    plan: GroupedPlan,
    dependence: Dependence,
    limit: int,
    differences: str | None = None,
) -> Outcome:
    """Screen, then explain the groups that disagree (and write every difference at
    ``differences``, when given: ``matcher.spark.differences``).

    Up to ``EXACT_LIMIT`` events in those groups, the core's loop matches them,
    partitioned by group (``matcher.spark.per_partition``), and what it leaves is explained
    on the driver, all together, as the core explains it. Beyond, chains by key are
    explained on digests where the data is (``run_chains``), and the core's loop takes
    only their keys with a NaN; other forms are explained partition by partition, and the
    verdict warns (an event whose key changed then reads as a loss and a duplication, not
    as a corruption of its key)."""
    screened = screen(plan, streams.reference, streams.candidate)
    if screened.n_bad:  # positions are read from here on: sort only what is not sorted
        streams = natural_streams(streams, screened.reference_runs)
    try:
        outcome = _explain_screened(streams, plan, dependence, limit, screened)
        if differences is not None:
            union = tagged_union(plan, streams.reference, streams.candidate)
            table = difference_table(
                restrict(union, screened),
                [GROUP],
                plan.names,
                streams.reference,
                streams.candidate,
                dependence,
                plan.equality,
                screened.rows,
            )
            write_table(table, differences)
        return outcome
    finally:
        screened.release()


def _explain_screened(
    streams: Streams, plan: GroupedPlan, dependence: Dependence, limit: int, screened: Screen
) -> Outcome:
    """``run_screened`` once the screen is made (see there)."""
    stats = SideStats(screened.rows, screened.keys, (0, 0))
    if screened.n_bad == 0:
        return Outcome(True, screened.rows[0], stats, Findings())
    here = screened.bad_events > EXACT_LIMIT
    warnings: tuple[str, ...] = ()
    if here:
        warnings = (
            f"{screened.bad_events} events of {screened.n_bad} groups that differ were "
            "explained partition by partition: an event whose key changed reads as a "
            "loss and a duplication",
        )
    if here and chains_apply(plan):
        return run_chains(streams, plan, dependence, limit, screened, stats, warnings)
    union = tagged_union(plan, streams.reference, streams.candidate)
    grouped = restrict(union, screened).repartition(GROUP)
    prefix = None
    if plan.layout.chain and not plan.layout.typed:
        grouped, prefix = without_agreeing_prefix(grouped, plan)
    partitioned = grouped.select(*[column(c) for c in plan.names], POS, SIDE)
    results = match_partitions(
        partitioned.sortWithinPartitions(POS, SIDE),
        dependence,
        plan.equality,
        plan.names,
        (screened.rows, limit) if here else None,
    )
    matched = screened.agreed + results.total("matched")
    if prefix is not None:
        matched += prefix.get.get("matched") or 0
    if here:
        findings = results.findings
        return Outcome(not findings.counts, matched, stats, findings, warnings)
    if not results.events and not results.settled:
        return Outcome(True, matched, stats, Findings())
    found, _ = explain(
        dependence, plan.equality, screened.rows, results.events, False, settled=results.settled
    )
    return Outcome(False, matched, stats, findings_of(found, limit))


def run_chains(
    streams: Streams,
    plan: GroupedPlan,
    dependence: Dependence,
    limit: int,
    screened: Screen,
    stats: SideStats,
    warnings: tuple[str, ...],
) -> Outcome:
    """The disagreeing chains explained on digests by ``matcher.spark.chains_run`` (one job,
    which also sends back the events of the keys that hold the earliest divergences), the
    keys with a NaN by the core's loop, and the witnesses by the core's classifier from
    the chosen keys' events."""
    equality = plan.equality
    fast = equality.is_plain or equality.exact_but_ignored
    events = chain_events(plan, streams.reference, streams.candidate, screened)
    compared = [f.name for f in compared_fields(plan.fields, equality)]
    counter = chain_counter(screened.rows, fast, limit, plan.names, compared)
    with arrow_batches(events.sparkSession):
        table = events.mapInArrow(counter, TALLY_SCHEMA).toArrow()
    tally = read_tally(table, compared, limit)
    union = tagged_union(plan, streams.reference, streams.candidate)
    hashed = union.selectExpr("*", *group_hashes())
    if tally.nan:
        with_nan = _in_groups(hashed, _groups_frame(union, tally.nan), len(tally.nan))
    else:
        with_nan = hashed.where("FALSE")
    partitioned = with_nan.repartition(GROUP).select(*[column(c) for c in plan.names], POS, SIDE)
    results = match_partitions(
        partitioned.sortWithinPartitions(POS, SIDE),
        dependence,
        equality,
        plan.names,
        (screened.rows, limit),
    )
    witnesses = explain_chosen(tally.chosen, dependence, equality, screened.rows, limit)
    findings = Findings(tuple(witnesses), tally.kinds, tally.columns, profile=tally.profile).merge(
        results.findings, limit
    )
    matched = screened.agreed + tally.matched + results.total("matched")
    return Outcome(not findings.counts, matched, stats, findings, warnings)
