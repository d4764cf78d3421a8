"""The per-partition path: the core's online matcher run inside each partition.

For what SQL cannot say (punctuation, arbitrary predicates, typed graphs with edges between
non-barrier types, Python barrier tests or equalities), both streams are partitioned by a
*coarse key*, sorted by position within each partition (no global sort), and each partition
runs the core's matching loop (``matcher.spark.replay.PoolLoop``) over its events in the
core's interleaving. The events it leaves unmatched are explained together on the driver,
as the core would explain them.

This is the core's own run only if the partitions are independent: events with different
coarse keys must never depend on each other, and equal events must share their coarse key
(the equality may not loosen it). The first is checked on a sample of both streams, the
second on the equality; either failing is an ``InputError`` naming the coarse key. Without
a coarse key the partitions follow what the form makes independent, if anything
(``SparkComparison.route``); else everything is one partition, and the verdict says so.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from matcher.classify import MAX_SIMILARITY_PAIRS
from matcher.dependence import ByKey, Dependence, Typed, WithBarriers
from matcher.equality import Equality, Event, freeze
from matcher.errors import InputError
from matcher.profile import Profile
from matcher.spark.events import arrow_column, arrow_events, dumps, loads
from matcher.spark.grouped_run import DRIVER_LIMIT, Outcome
from matcher.spark.replay import PoolLoop
from matcher.spark.result import Findings, SideStats, explain, findings_of
from matcher.spark.schema import POS, Streams
from matcher.verdict import Divergence

SIDE = "__p_side"
SAMPLE_EVENTS = 200  # per side, for the coarse key's independence check
OUTPUT_SCHEMA = "kind string, side int, pos long, n long, blob binary"
_ARROW_OUTPUT = pa.schema(
    [
        ("kind", pa.string()),
        ("side", pa.int32()),
        ("pos", pa.int64()),
        ("n", pa.int64()),
        ("blob", pa.binary()),
    ]
)


def check_coarse_key(
    streams: Streams,
    coarse: Sequence[str],
    dependence: Dependence,
    equality: Equality,
    lengths: Sequence[int],
) -> None:
    """Fail unless ``coarse`` can partition the streams (see the module docstring)."""
    name = ", ".join(coarse)
    loosened = sorted(set(coarse) & equality.loosened_columns)
    if loosened:
        raise InputError(
            f"coarse key {name}: the equality loosens {loosened[0]!r}, so equal events "
            "could fall in different partitions"
        )
    sample = []
    for side, df, length in (
        (0, streams.reference, lengths[0]),
        (1, streams.candidate, lengths[1]),
    ):
        if length > SAMPLE_EVENTS:
            df = df.sample(fraction=min(1.0, 2.0 * SAMPLE_EVENTS / length), seed=17)
        table = df.limit(SAMPLE_EVENTS).toArrow()
        positions = arrow_column(table, POS)
        for pos, event in zip(positions, arrow_events(table, streams.columns), strict=True):
            sample.append((side, pos, event, freeze(tuple(event[c] for c in coarse))))
    for (sa, pa_, a, ka), (sb, pb, b, kb) in combinations(sample, 2):
        if ka != kb and dependence.depends(a, b):
            raise InputError(
                f"coarse key {name} does not split the streams into independent parts: "
                f"{_SIDES[sa]} event #{pa_} and {_SIDES[sb]} event #{pb} have different "
                f"coarse keys but depend on each other under {dependence.describe()}"
            )


_SIDES = ("reference", "candidate")


def key_counter(dependence: Dependence) -> Callable[[Event], Hashable | None]:
    """The key an event counts towards in ``side_stats`` (``None``: no key)."""
    if isinstance(dependence, ByKey):
        return dependence.chain
    if isinstance(dependence, WithBarriers):
        base = dependence.base

        def base_key(event: Event) -> Hashable | None:
            if not isinstance(base, ByKey) or dependence.is_barrier(event):
                return None
            return base.chain(event)

        return base_key
    if isinstance(dependence, Typed):

        def typed_key(event: Event) -> Hashable | None:
            if dependence.types[dependence.type_of(event)].key is None:
                return None
            return dependence.chain(event)

        return typed_key
    return _no_key


def _no_key(event: Event) -> Hashable | None:
    return None


def partition_matcher(
    dependence: Dependence,
    equality: Equality,
    columns: Sequence[str],
    explain_here: tuple[Sequence[int], int] | None = None,
    chainless_only: bool = False,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: match one partition's events (sorted by position, then
    side) and emit the partition's counts and either what is left and what was settled
    early (for the driver to explain together), or, with ``explain_here`` (the streams'
    lengths and the witness limit), the partition's own explanation: counts per kind and
    column, and its earliest witnesses (see ``match_partitions`` for events without a
    chain). ``chainless_only``: emit only the unmatched events without a chain."""
    names = list(columns)
    count_key = key_counter(dependence)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Millions of small live objects (events, entries) make every full collection
        # traverse them all, for no cycles to find: a third of the time here.
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield from match(batches)
        finally:
            if collecting:
                gc.enable()

    def match(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Resynchronised chunks end in matches, so their witnesses never need the streams'
        # lengths: the loop's classifier can do without them.
        loop = PoolLoop(dependence, equality, [0, 0])
        rows = [0, 0]
        barriers = [0, 0]
        keys: list[set[Any]] = [set(), set()]
        for batch in batches:
            sides = arrow_column(batch, SIDE)
            positions = arrow_column(batch, POS)
            for side, pos, event in zip(sides, positions, arrow_events(batch, names), strict=True):
                loop.push(side, pos, event)
                rows[side] += 1
                if dependence.has_barriers and dependence.is_barrier(event):
                    barriers[side] += 1
                key = count_key(event)
                if key is not None:
                    keys[side].add(key)
        if chainless_only:
            left = [(side, e) for side, es in enumerate(loop.leftovers()) for e in es]
            yield pa.RecordBatch.from_pylist(
                [
                    {"kind": "left", "side": side, "pos": e.pos, "blob": dumps(e.event)}
                    for side, e in left
                    if _chainless(dependence, e.event)
                ],
                schema=_ARROW_OUTPUT,
            )
            return
        out: list[dict[str, Any]] = []
        for side in (0, 1):
            out.append({"kind": "rows", "side": side, "n": rows[side]})
            out.append({"kind": "barriers", "side": side, "n": barriers[side]})
            out.append({"kind": "keys", "side": side, "n": len(keys[side])})
        leftovers = loop.leftovers()  # first: under a tolerance it settles the pairing
        out.append({"kind": "matched", "n": loop.matched})
        out.append({"kind": "detected", "n": int(loop.detected)})
        out.extend({"kind": "warning", "blob": w.encode()} for w in loop.warnings)
        out.append({"kind": "unmatched", "n": len(leftovers[0]) + len(leftovers[1])})
        if explain_here is None:
            for side, entries in enumerate(leftovers):
                out.extend(
                    {"kind": "left", "side": side, "pos": e.pos, "blob": dumps(e.event)}
                    for e in entries[:DRIVER_LIMIT]  # the driver refuses more anyway
                )
            out.extend({"kind": "settled", "blob": dumps(d)} for d in loop.settled)
        else:
            lengths, limit = explain_here
            events = [(e.pos, side, e.event) for side in (0, 1) for e in leftovers[side]]
            chained = [t for t in events if not _chainless(dependence, t[2])]
            found, _ = explain(dependence, equality, lengths, chained, False, settled=loop.settled)
            out.extend(_explained(findings_of(found, limit)))
            chainless = [t for t in events if _chainless(dependence, t[2])]
            if chainless:
                # Pairing these needs the whole unit's, which only the driver sees: counted,
                # and explained as if the unit were too large to pair any (see
                # ``match_partitions``).
                alone, _ = explain(
                    dependence, equality, lengths, chainless, False, similarity_pairs=0
                )
                out.extend(_explained(findings_of(alone, limit), CHAINLESS))
                for side in (0, 1):
                    n = sum(1 for t in chainless if t[1] == side)
                    out.append({"kind": "chainless", "side": side, "n": n})
        yield pa.RecordBatch.from_pylist(out, schema=_ARROW_OUTPUT)

    return run


CHAINLESS = "chainless "  # the prefix of output rows about events without a chain


def _chainless(dependence: Dependence, event: Event) -> bool:
    """Whether ``event`` belongs to no chain: the classifier pairs such events across the
    whole unit, by similarity, not within a chain's gap."""
    return dependence.chain(event) is None and not (
        dependence.has_barriers and dependence.is_barrier(event)
    )


def _explained(findings: Findings, prefix: str = "") -> Iterator[dict[str, Any]]:
    """A partition's findings as output rows: counts by kind and column, and witnesses."""
    for kind, n in findings.counts.items():
        yield {"kind": prefix + "count", "pos": None, "n": n, "blob": kind.encode()}
    for name, n in findings.columns.items():
        yield {"kind": prefix + "column", "n": n, "blob": name.encode()}
    if findings.profile.columns:
        yield {"kind": prefix + "profile", "n": 0, "blob": findings.profile.to_partial().encode()}
    for d in findings.divergences:
        yield {"kind": prefix + "witness", "blob": dumps(d)}


@dataclass(frozen=True, slots=True)
class PartitionResults:
    """What the partitions sent back: summed counts (by kind and side), the events left
    for the driver (``(pos, side, event)``), what was settled early, and the findings of
    partitions that explained their own."""

    totals: dict[tuple[str, int | None], int]
    events: list[tuple[int, int, Event]]
    settled: list[Divergence]
    findings: Findings
    warnings: tuple[str, ...] = ()

    def total(self, kind: str, side: int | None = None) -> int:
        return self.totals.get((kind, side), 0)

    def stats(self) -> SideStats:
        return SideStats(
            (self.total("rows", 0), self.total("rows", 1)),
            (self.total("keys", 0), self.total("keys", 1)),
            (self.total("barriers", 0), self.total("barriers", 1)),
        )


def match_partitions(
    partitioned: DataFrame,
    dependence: Dependence,
    equality: Equality,
    columns: Sequence[str],
    explain_here: tuple[Sequence[int], int] | None = None,
) -> PartitionResults:
    """Run ``partition_matcher`` over ``partitioned`` (events with ``__pos`` and
    ``__p_side``, sorted by position within each partition) and gather its output.

    With ``explain_here`` (forms without barriers: one unit), a partition's explanation is
    the core's for every event with a chain, since the core never pairs events of
    different chains. Events without a chain pair by similarity across the whole unit, if
    it has at most ``MAX_SIMILARITY_PAIRS`` losses x duplications: the partitions count
    them and explain them unpaired; when the counts say the core would pair some (so at
    most that many events), a second run over the partitions collects them for the driver
    to explain together."""
    table = partitioned.mapInArrow(
        partition_matcher(dependence, equality, columns, explain_here), OUTPUT_SCHEMA
    ).toArrow()
    totals: dict[tuple[str, int | None], int] = {}
    events: list[tuple[int, int, Event]] = []
    settled = []
    warnings: list[str] = []
    found = {"": _Found(), CHAINLESS: _Found()}  # by the rows' prefix (``_explained``)
    for kind, side, pos, n, blob in zip(
        *(arrow_column(table, c) for c in ("kind", "side", "pos", "n", "blob")), strict=True
    ):
        if kind == "left":
            events.append((pos, side, loads(blob)))
        elif kind == "settled":
            settled.append(loads(blob))
        elif kind.removeprefix(CHAINLESS) in ("witness", "count", "column", "profile"):
            prefix = CHAINLESS if kind.startswith(CHAINLESS) else ""
            found[prefix].add(kind.removeprefix(prefix), n, blob)
        elif kind == "warning":
            warnings.append(blob.decode())
        else:
            totals[(kind, side)] = totals.get((kind, side), 0) + n
    limit = explain_here[1] if explain_here else 0
    findings = found[""].findings(limit)
    if explain_here is not None:
        losses, extras = totals.get(("chainless", 0), 0), totals.get(("chainless", 1), 0)
        if 0 < losses * extras <= MAX_SIMILARITY_PAIRS:
            together = _explain_chainless(partitioned, dependence, equality, columns, explain_here)
            findings = findings.merge(together, limit)
        else:
            findings = findings.merge(found[CHAINLESS].findings(limit), limit)
    return PartitionResults(totals, events, settled, findings, tuple(dict.fromkeys(warnings)))


def _explain_chainless(
    partitioned: DataFrame,
    dependence: Dependence,
    equality: Equality,
    columns: Sequence[str],
    explain_here: tuple[Sequence[int], int],
) -> Findings:
    """Match the partitions again, collect only their unmatched events without a chain,
    and explain those together, as the core explains its unit (see ``match_partitions``)."""
    table = partitioned.mapInArrow(
        partition_matcher(dependence, equality, columns, chainless_only=True), OUTPUT_SCHEMA
    ).toArrow()
    loose = [
        (pos, side, loads(blob))
        for side, pos, blob in zip(
            *(arrow_column(table, c) for c in ("side", "pos", "blob")), strict=True
        )
    ]
    lengths, limit = explain_here
    found, _ = explain(dependence, equality, lengths, loose, False)
    return findings_of(found, limit)


@dataclass(slots=True)
class _Found:
    """Findings read back from a partition's output rows (``_explained``)."""

    witnesses: list[Divergence] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    columns: Counter[str] = field(default_factory=Counter)
    profile: Profile = field(default_factory=Profile)

    def add(self, kind: str, n: int, blob: bytes) -> None:
        if kind == "witness":
            self.witnesses.append(loads(blob))
        elif kind == "count":
            self.counts[blob.decode()] += n
        elif kind == "profile":
            self.profile.merge(Profile.from_partial(blob))
        else:
            self.columns[blob.decode()] += n

    def findings(self, limit: int) -> Findings:
        self.witnesses.sort(key=Divergence.sort_key)
        return Findings(
            tuple(self.witnesses[:limit]), self.counts, self.columns, profile=self.profile
        )


def partitioned_union(streams: Streams, partition_by: Sequence[str]) -> DataFrame:
    """Both streams, tagged with their side, in partitions of ``partition_by`` (SQL; none:
    one partition), sorted by position within each."""
    union = streams.reference.selectExpr("*", f"0 AS {SIDE}").unionByName(
        streams.candidate.selectExpr("*", f"1 AS {SIDE}")
    )
    if partition_by:
        partitioned = union.repartition(*[F.expr(e) for e in partition_by])
    else:
        partitioned = union.repartition(1)
    return partitioned.sortWithinPartitions(POS, SIDE)


def run_per_partition(
    streams: Streams,
    dependence: Dependence,
    equality: Equality,
    partition_by: Sequence[str],
    limit: int,
    warnings: Sequence[str] = (),
) -> Outcome:
    """Match each partition (see ``partitioned_union``) and explain what is left."""
    partitioned = partitioned_union(streams, partition_by)
    results = match_partitions(partitioned, dependence, equality, streams.columns)
    if results.total("unmatched") > DRIVER_LIMIT:
        raise InputError(
            f"{results.total('unmatched')} unmatched events: too many to explain on the "
            f"driver (limit {DRIVER_LIMIT}); give a coarse key that splits the streams"
        )
    stats = results.stats()
    matched = results.total("matched")
    warnings = (*warnings, *results.warnings)
    if not results.events and not results.settled and not results.total("detected"):
        return Outcome(True, matched, stats, findings_of([], limit), tuple(warnings))
    found, _ = explain(
        dependence, equality, stats.rows, results.events, False, settled=results.settled
    )
    return Outcome(False, matched, stats, findings_of(found, limit), tuple(warnings))
