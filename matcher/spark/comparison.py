"""``SparkComparison``: two streams, a dependence, an equality; ``run()`` gives the core's
``Verdict``.

It picks one of two paths, and says which and why (``route``):

* ``grouped``: the SQL plan of ``matcher.spark.grouped_sql``, one shuffle by the dependence key,
  for ``unordered``, ``ordered``, ``by_key``, barriers over those, and typed graphs whose
  non-barrier types only depend on themselves, with an equality SQL can say;
* ``per-partition``: the core's matcher inside each partition (``matcher.spark.per_partition``),
  for everything else. Partitions are cut by the user's coarse key (checked on a sample),
  or, without one, by what the form makes independent (the key of ``by_key`` under a
  Python equality, the canonical value of ``unordered`` under a tolerance); failing both,
  everything is one partition and the verdict warns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from matcher.dependence import Dependence
from matcher.equality import PLAIN, Equality
from matcher.errors import InputError
from matcher.online import DEFAULT_LIMIT
from matcher.schema import DEFAULT_MODE, Mode, judge
from matcher.spark.barriers import barrier_test
from matcher.spark.equality_sql import (
    canonical_value,
    compared_fields,
    ident,
    key_value,
    sql_unsupported,
)
from matcher.spark.forms import Layout, layout_of
from matcher.spark.grouped_run import grouped_plan, run_grouped
from matcher.spark.grouped_sql import matching_plan
from matcher.spark.ordering import aligned_orders
from matcher.spark.per_partition import check_coarse_key, partitioned_union, run_per_partition
from matcher.spark.result import build_verdict
from matcher.spark.schema import Streams, reconcile, require_columns
from matcher.spark.screen import chains_apply, run_screened, screenable, screening_plan
from matcher.verdict import Verdict


@dataclass(frozen=True, slots=True)
class Route:
    """The path a comparison takes: ``grouped`` (with its layout) or ``per-partition``,
    with the reason SQL could not be used and what the partitions are cut by (SQL
    expressions: the user's coarse key, checked; or what the form guarantees independent,
    the key of ``by_key`` or the canonical value of ``unordered``; none: one partition)."""

    path: str
    layout: Layout | None = None
    reason: str = ""
    partition_by: tuple[str, ...] = ()
    checked_coarse_key: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SparkComparison:
    """A comparison of two streams (DataFrames with ``__pos``, from ``read_stream``).

    ``coarse_key``: columns that split the streams into independent parts for the
    per-partition path (checked); ``schema_mode``: how schema differences weigh
    (``matcher.schema``; they are findings of the verdict, and the values are compared on
    the columns both sides share); ``nullability``: each side's columns' nullability as its
    files declare it (``schema.parquet_nullability``), ``None``: the DataFrame's own;
    ``common_columns``: kept for callers, a no-op (schemas never fail a comparison now).
    """

    reference: DataFrame
    candidate: DataFrame
    dependence: Dependence
    equality: Equality = PLAIN
    limit: int = DEFAULT_LIMIT
    common_columns: bool = False
    coarse_key: tuple[str, ...] | None = None
    schema_mode: Mode = DEFAULT_MODE
    nullability: tuple[Mapping[str, bool] | None, Mapping[str, bool] | None] = (None, None)
    #: where to write every difference (``matcher.spark.differences``); ``None``: nowhere
    differences: str | None = None

    def streams(self) -> Streams:
        """Both streams over the same columns, checked against what the spec reads."""
        self.equality.check_compatible(self.dependence.columns)
        streams = reconcile(
            *aligned_orders(self.reference, self.candidate),
            self.schema_mode,
            self.equality.ignore,
            self.nullability,
            tolerant=self.equality.tolerance,
        )
        # a column the dependence reads needs a common type; the equality's are compared as read
        needed = [("the dependence", c, True) for c in sorted(self.dependence.columns or ())]
        needed += [("the equality's tolerance", c, False) for c in sorted(self.equality.tolerance)]
        needed += [
            ("the equality's normalisation", c, False)
            for c in sorted(self.equality.normalize)
            if c != "*"
        ]
        needed += [("the coarse key", c, True) for c in self.coarse_key or ()]
        layout = layout_of(self.dependence)
        if isinstance(layout, Layout):
            needed += [(what, c, True) for what, c in layout.needed_columns()]
        schemas = (self.reference.schema, self.candidate.schema)
        require_columns(streams.columns, needed, schemas, streams.uncommon)
        return streams

    def route(self, streams: Streams) -> Route:
        layout = layout_of(self.dependence)
        if isinstance(layout, Layout):
            reason = sql_unsupported(self.equality) or _unsupported(layout, self.equality, streams)
            if reason is None:
                return Route("grouped", layout)
        else:
            reason = layout
        fields = {f.name: f for f in streams.fields}
        if self.coarse_key:
            keys = tuple(key_value(ident(c), fields[c].dataType) for c in self.coarse_key)
            return Route("per-partition", None, reason, keys, self.coarse_key)
        if not isinstance(layout, Layout) or layout.typed or layout.has_barriers:
            return Route("per-partition", None, reason)
        if layout.chain and layout.key:  # by_key: keys are independent by definition
            keys = tuple(key_value(ident(c), fields[c].dataType) for c in layout.key)
            return Route("per-partition", layout, reason, keys)
        if not layout.chain and sql_unsupported(self.equality) is None:
            # unordered: only events with the same canonical value can match each other
            compared = compared_fields(streams.fields, self.equality)
            core_only = {name for name, _ in streams.core_only}
            canonical = tuple(
                canonical_value(ident(f.name), f, self.equality)
                for f in compared
                if f.name not in self.equality.tolerance and f.name not in core_only
            )
            return Route("per-partition", layout, reason, canonical)
        return Route("per-partition", layout, reason)

    def matching_plan(self) -> DataFrame:
        """The DataFrame whose plan matches the streams (``explain()`` it): the grouped
        plan, or the union partitioned for the per-partition path."""
        streams = self.streams()
        route = self.route(streams)
        if route.path == "grouped" and route.layout is not None:
            plan = grouped_plan(streams, route.layout, self.equality)
            return matching_plan(plan, streams.reference, streams.candidate)
        return partitioned_union(streams, route.partition_by)

    def screening_plan(self) -> DataFrame | None:
        """The plan that settles agreeing groups by digest before the matching plan runs on
        the rest (``matcher.spark.screen``), or ``None`` when this comparison is not
        screened (barriers, ``ordered``, tolerances, the per-partition path)."""
        streams = self.streams()
        route = self.route(streams)
        if route.path != "grouped" or route.layout is None:
            return None
        plan = grouped_plan(streams, route.layout, self.equality)
        if not screenable(plan):
            return None
        return screening_plan(plan, streams.reference, streams.candidate)

    def run(self) -> Verdict:
        streams = self.streams()
        route = self.route(streams)
        if route.path == "grouped" and route.layout is not None:
            plan = grouped_plan(streams, route.layout, self.equality)
            if screenable(plan):
                if self.differences is not None and not chains_apply(plan):
                    raise InputError(_no_differences_message(self.dependence))
                outcome = run_screened(streams, plan, self.dependence, self.limit, self.differences)
            else:
                if self.differences is not None:
                    raise InputError(_no_differences_message(self.dependence))
                outcome = run_grouped(streams, plan, self.dependence, self.limit)
        else:
            if self.differences is not None:
                raise InputError(_no_differences_message(self.dependence))
            notes = []
            if not route.partition_by:
                notes.append(f"{route.reason}: with no coarse key, matched in a single partition")
            if route.checked_coarse_key:
                lengths = _lengths(streams)
                check_coarse_key(
                    streams, route.checked_coarse_key, self.dependence, self.equality, lengths
                )
            outcome = run_per_partition(
                streams, self.dependence, self.equality, route.partition_by, self.limit, notes
            )
        verdict = build_verdict(
            equivalent=outcome.equivalent,
            findings=outcome.findings,
            matched=outcome.matched,
            stats=outcome.stats,
            dependence=self.dependence,
            warnings=[*streams.warnings, *outcome.warnings],
        )
        return judge(verdict, streams.schema)


def _no_differences_message(dependence: Dependence) -> str:
    return (
        "output.differences: on Spark, the table of every difference is written for a "
        f"dependence by key, without barriers, tolerances or types; this one is "
        f"{dependence.describe()!r}: compare with the core engine (--engine core), "
        "which writes it for every dependence"
    )


def _unsupported(layout: Layout, equality: Equality, streams: Streams) -> str | None:
    """Why the grouped plan cannot take this layout with this equality and these columns."""
    for name, why in streams.core_only:
        if name not in equality.ignore:
            return f"column {name!r} {why}: compared by the core's rule"
    multisets = (not layout.typed and not layout.chain) or any(not t.chain for t in layout.types)
    if multisets and equality.tolerance:
        return "under a tolerance, pairing multisets is a matching problem (matcher.pairing)"
    if layout.has_barriers:
        field = next(f for f in streams.fields if f.name == layout.barrier_column)
        if barrier_test(field, layout.barrier_values) is None:
            return f"barrier values of column {field.name!r} cannot be compared in SQL"
    return None


def _lengths(streams: Streams) -> tuple[int, int]:
    counts = [
        df.agg(F.count(F.lit(1)).alias("n")).collect()[0]["n"]
        for df in (streams.reference, streams.candidate)
    ]
    return counts[0], counts[1]


def compare_dataframes(
    reference: DataFrame,
    candidate: DataFrame,
    dependence: Dependence,
    equality: Equality | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    common_columns: bool = False,
    coarse_key: str | Sequence[str] | None = None,
    schema_mode: Mode = DEFAULT_MODE,
    nullability: tuple[Mapping[str, bool] | None, Mapping[str, bool] | None] = (None, None),
    differences: str | None = None,
) -> Verdict:
    """Decide whether two streams (from ``read_stream``) are equivalent, on Spark; the
    ``Verdict`` is the one ``matcher.compare`` gives on the same events (see
    ``matcher.spark`` for what differs). ``differences``: a directory to write every
    difference to, as Parquet (``matcher.files.differences``)."""
    coarse = (coarse_key,) if isinstance(coarse_key, str) else coarse_key
    return SparkComparison(
        reference,
        candidate,
        dependence,
        PLAIN if equality is None else equality,
        limit,
        common_columns,
        None if coarse is None else tuple(coarse),
        schema_mode,
        nullability,
        differences,
    ).run()
