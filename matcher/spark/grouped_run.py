"""Running the grouped SQL plan and reading off what the core would leave unmatched.

Every row of the plan (``matcher.spark.grouped_sql``) knows its unit, group, rank and its group's
matched prefix; per unit, a small aggregation counts events, differing groups and what
would be left. Without barriers (one unit) the unmatched events are known row by row, so
one pass collects them and gets the counts as observed metrics. With barriers, or for the
single chain of ``ordered``, the plan is cached and read twice: the counts per unit first,
to find the first unit that differs, then the unmatched events. Those go to the core's
classifier.

Why the unmatched set is exactly the core's. Until the first unit with a difference
(``e*``), the core matches everything: pairs meet as soon as both have arrived, barriers
once everything before them has. In unit ``e*`` each chain matches its common prefix (the
heads of a key's queues meet in order), each multiset bucket the smaller count, first
come first served; the barrier that closes ``e*`` then stays unmatched on each side, and
blocks every later event of its side. So: units before ``e*``, matched; unit ``e*``, all
but its ``L_online`` prefixes; after it, nothing. When ``e*`` lies after a barrier that
differs, only that barrier's epoch counts as matched prefix (``L_online`` takes the counts
of the unit's first epoch), because the core compares by barrier, not by unit.

Three ways to explain them, by how many there are:

* ``exact``: the core's whole unmatched set, on the driver (the core's classification);
* ``trimmed``: only the groups that differ, on the driver (groups that agree add nothing
  but matched pairs; only the partner named by a reordering may differ from the core's);
* ``distributed``: group by group on executors (see ``matcher.spark.result``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from matcher.dependence import Dependence
from matcher.equality import Equality, Event
from matcher.errors import InputError
from matcher.spark.barriers import barrier_test, collect_barriers
from matcher.spark.equality_sql import ident
from matcher.spark.events import collect_tagged
from matcher.spark.forms import Layout
from matcher.spark.grouped_sql import (
    FIRST,
    FIRST_KEY,
    GROUP,
    L_ONLINE,
    PAIR_OK,
    RANK,
    SIDE,
    TYPE_OK,
    UNIT,
    GroupedPlan,
    L,
    matching_plan,
)
from matcher.spark.result import (
    DIVERGENCE_SCHEMA,
    Findings,
    SideStats,
    explain,
    findings_from_rows,
    findings_of,
    group_explainer,
)
from matcher.spark.schema import POS, Streams, column

#: unmatched events the driver classifies as the core would (all of them)
EXACT_LIMIT = 200_000
#: unmatched events of differing groups the driver still classifies at once
DRIVER_LIMIT = 1_000_000
#: unmatched events per partition that the one-pass plan collects with its counts
PARTITION_CAP = 20_000
_PARTITION_MASK = (1 << 33) - 1  # monotonically_increasing_id: the row's index in its partition
_INDEX = "__p_index"


@dataclass(frozen=True, slots=True)
class UnitStats:
    """One unit's counts from the aggregation (see the module docstring)."""

    unit: int
    rows: tuple[int, int]
    unclean: bool
    online_left: int
    online_matched: int
    trimmed: int
    keys: tuple[int, int] = (0, 0)
    first_bad: int | None = None  # positional: the first rank whose pair differs


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a matching path found: the verdict's inputs."""

    equivalent: bool
    matched: int
    stats: SideStats
    findings: Findings
    warnings: tuple[str, ...] = ()


def grouped_plan(streams: Streams, layout: Layout, equality: Equality) -> GroupedPlan:
    """Collect and align the barriers (if any) and describe the plan."""
    test = None
    barriers = None
    if layout.has_barriers:
        fields = {f.name: f for f in streams.fields}
        test = barrier_test(fields[layout.barrier_column or ""], layout.barrier_values)
        assert test is not None, "SparkComparison.route sends such barriers elsewhere"
        barriers = collect_barriers(
            streams.reference, streams.candidate, test, streams.columns, equality
        )
    return GroupedPlan(streams.fields, layout, equality, barriers, test)


def run_grouped(streams: Streams, plan: GroupedPlan, dependence: Dependence, limit: int) -> Outcome:
    """Run the plan: one pass when the form has neither barriers nor a single chain (the
    counts come along with the unmatched events, as observed metrics), else two over the
    cached plan (counts per unit first, to find ``e*``)."""
    df = matching_plan(plan, streams.reference, streams.candidate)
    if plan.barriers is None and not plan.layout.positional:
        return _one_pass(df, plan, dependence, limit)
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        units = _unit_stats(df, plan)
        return _conclude(df, plan, dependence, limit, units, None)
    finally:
        df.unpersist()


def _one_pass(df: DataFrame, plan: GroupedPlan, dependence: Dependence, limit: int) -> Outcome:
    """Without barriers everything is unit 0 and ``e*`` is 0: the unmatched events are known
    per row. At most ``PARTITION_CAP`` per partition are collected with the counts; when
    there are more, ``_conclude`` reads them again (or explains them on executors)."""
    observation = Observation("parity-unit-counts")
    observed = df.observe(observation, *_aggregates(plan))
    unmatched = observed.where(f"{RANK} >= {L_ONLINE}").selectExpr(
        "*", f"monotonically_increasing_id() & {_PARTITION_MASK} AS {_INDEX}"
    )
    capped = unmatched.where(f"{_INDEX} < {PARTITION_CAP}")
    events = [(t[0], t[1], e) for t, e in collect_tagged(capped, plan.names, [POS, SIDE])]
    metrics = observation.get
    units = [_unit_of(0, metrics, plan)] if metrics.get("nr") is not None else []
    complete = not units or len(events) == units[0].online_left
    return _conclude(df, plan, dependence, limit, units, events if complete else None)


def _conclude(
    df: DataFrame,
    plan: GroupedPlan,
    dependence: Dependence,
    limit: int,
    unit_list: list[UnitStats],
    events: list[tuple[int, int, Event]] | None,
) -> Outcome:
    """The outcome from the per-unit counts; ``events``: the core's unmatched events if
    already collected, else they are read from ``df`` here."""
    units = {u.unit: u for u in unit_list}
    bars = plan.barriers
    n_bars = (bars.count(0), bars.count(1)) if bars else (0, 0)
    rows = tuple(sum(u.rows[s] for u in units.values()) + n_bars[s] for s in (0, 1))
    stats = SideStats(
        (rows[0], rows[1]),
        (sum(u.keys[0] for u in units.values()), sum(u.keys[1] for u in units.values())),
        n_bars,
    )
    unclean = [u.unit for u in units.values() if u.unclean]
    if bars is not None and not bars.identical:
        unclean.append(bars.start)
    if not unclean:
        return Outcome(True, rows[0], stats, Findings())
    first = min(unclean)
    here = units.get(first)
    matched = sum(u.rows[0] for u in units.values() if u.unit < first)
    matched += (here.online_matched if here else 0) + (first if bars else 0)
    later = sum(sum(u.rows) for u in units.values() if u.unit > first)
    spare_bars = [entries[first:] for entries in bars.entries] if bars else [(), ()]
    n_spare = len(spare_bars[0]) + len(spare_bars[1])
    exact = (here.online_left if here else 0) + later + n_spare
    trimmed = sum(u.trimmed for u in units.values() if u.unit >= first) + n_spare
    replay, lengths, positional = plan.layout.keyed_pool, list(rows), plan.layout.positional
    if events is None and (exact <= EXACT_LIMIT or trimmed <= DRIVER_LIMIT):
        if exact <= EXACT_LIMIT:
            where = exact_filter(positional, first, here)
        else:
            where = trimmed_filter(positional, first, units)
        tagged = collect_tagged(df.where(where), plan.names, [POS, SIDE])
        events = [(t[0], t[1], e) for t, e in tagged]
    if events is not None:
        found, replayed = explain(dependence, plan.equality, lengths, events, replay, spare_bars)
        return Outcome(False, matched, stats, findings_of(found, limit, replayed))
    by = [UNIT] if positional else [GROUP, UNIT]
    rows_df = (
        df.where(trimmed_filter(positional, first, units))
        .select(*[column(c) for c in plan.names], POS, SIDE, *by)
        .groupBy(*by)
        .applyInArrow(
            group_explainer(dependence, plan.equality, lengths, plan.names, replay),
            DIVERGENCE_SCHEMA,
        )
    )
    findings = findings_from_rows(rows_df, limit)
    if n_spare:
        found, _ = explain(dependence, plan.equality, lengths, [], False, spare_bars)
        findings = findings.merge(findings_of(found, limit), limit)
    warning = (
        f"{trimmed} unmatched events were explained group by group: an event whose key "
        "changed, or that moved across a barrier, reads as a loss and a duplication"
    )
    return Outcome(False, matched, stats, findings, (warning,))


def exact_filter(positional: bool, first: int, here: UnitStats | None) -> str:
    """SQL selecting the events the core leaves unmatched, when ``first`` is ``e*``."""
    online = str(here.online_matched if here else 0) if positional else L_ONLINE
    return f"({UNIT} = {first} AND {RANK} >= {online}) OR {UNIT} > {first}"


def trimmed_filter(positional: bool, first: int, units: dict[int, UnitStats]) -> str:
    """SQL selecting the unmatched events of the groups that differ, from ``e*`` on."""
    if not positional:
        return f"{UNIT} >= {first} AND {L} IS NOT NULL AND {RANK} >= {L}"
    bad = sorted(
        (u.unit, u.first_bad) for u in units.values() if u.unit >= first and u.first_bad is not None
    )
    if not bad:
        return "FALSE"
    cases = " ".join(f"WHEN {unit} THEN {rank}" for unit, rank in bad)
    return f"coalesce({RANK} >= (CASE {UNIT} {cases} END), FALSE)"


def _count(condition: str) -> Column:
    return F.expr(f"sum(CASE WHEN {condition} THEN 1 ELSE 0 END)")


def _aggregates(plan: GroupedPlan) -> list[Column]:
    """The counts of a unit (see ``UnitStats``), as aggregate expressions."""
    if plan.layout.positional:
        return [
            _count(f"{SIDE} = 0").alias("nr"),
            _count(f"{SIDE} = 1").alias("nc"),
            _count(f"{SIDE} = 0 AND {FIRST}").alias("nfr"),
            _count(f"{SIDE} = 1 AND {FIRST}").alias("nfc"),
            F.expr(f"min(CASE WHEN NOT {PAIR_OK} THEN {RANK} END)").alias("bad"),
        ]
    aggregates = [
        _count(f"{SIDE} = 0").alias("nr"),
        _count(f"{SIDE} = 1").alias("nc"),
        F.expr(f"max({L} IS NOT NULL)").alias("unclean"),
        _count(f"{RANK} >= {L_ONLINE}").alias("online_left"),
        _count(f"{SIDE} = 0 AND {RANK} < {L_ONLINE}").alias("online_matched"),
        _count(f"{L} IS NOT NULL AND {RANK} >= {L}").alias("trimmed"),
        _count(f"{SIDE} = 0 AND {FIRST_KEY}").alias("kr"),
        _count(f"{SIDE} = 1 AND {FIRST_KEY}").alias("kc"),
    ]
    if plan.layout.typed:
        kind = ident(plan.layout.type_column or "")
        undeclared = f"struct({POS}, {SIDE}, CAST({kind} AS STRING))"
        first_undeclared = f"min(CASE WHEN NOT {TYPE_OK} THEN {undeclared} END)"
        aggregates.append(F.expr(first_undeclared).alias("bad_type"))
    return aggregates


def _unit_stats(df: DataFrame, plan: GroupedPlan) -> list[UnitStats]:
    rows = df.groupBy(UNIT).agg(*_aggregates(plan)).collect()
    if plan.layout.typed:
        found = [r["bad_type"] for r in rows if r["bad_type"] is not None]
        if found:
            _undeclared(min(found))
    return [_unit_of(r[UNIT], r.asDict(), plan) for r in rows]


def _unit_of(unit: int, r: Mapping[str, Any], plan: GroupedPlan) -> UnitStats:
    if plan.layout.positional:
        return _positional_unit(unit, r)
    if plan.layout.typed and r["bad_type"] is not None:
        _undeclared(r["bad_type"])
    return UnitStats(
        unit,
        (r["nr"], r["nc"]),
        bool(r["unclean"]),
        r["online_left"],
        r["online_matched"],
        r["trimmed"],
        (r["kr"], r["kc"]),
    )


def _undeclared(bad: Any) -> None:
    side = ("reference", "candidate")[bad[1]]
    raise InputError(
        f"{side} event #{bad[0]}: typed dependence: event type {bad[2]!r} is not declared in types"
    )


def _positional_unit(unit: int, r: Mapping[str, Any]) -> UnitStats:
    nr, nc, bad = r["nr"], r["nc"], r["bad"]
    online = min(bad if bad is not None else min(nr, nc), r["nfr"], r["nfc"])
    return UnitStats(
        unit,
        (nr, nc),
        bad is not None,
        nr + nc - 2 * online,
        online,
        0 if bad is None else nr + nc - 2 * bad,
        first_bad=bad,
    )
