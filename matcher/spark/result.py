"""From what the matching left unmatched to the core's ``Verdict``.

The core explains a divergence once, over every event its online matcher left unmatched
(``matcher.classify``). The Spark paths hand over the same events, with their global
positions, so the core's ``Classifier`` gives the same witnesses:

* on the driver, all at once (``explain``), when they are few enough: exactly the core's
  classification (``StreamMatcher.finish``: per-key queues replayed, so that a long
  diverged key resynchronises as in the core, then ``Classifier``, then ``merge_moves``);
* on executors, group by group (``group_explainer``, an ``applyInArrow`` function), when
  they are not. The core never pairs events of different groups (a key that changed is a
  loss and a duplication on both engines, ``matcher.classify``), so this is the same
  classification, except for what the core finds *across* the SQL plan's groups: an
  event that moved across a barrier (a reordering in the core), and the similar pairs of
  a unit's unordered events, which the SQL plan splits by value (corruptions in the core
  when the unit has at most ``MAX_SIMILARITY_PAIRS`` losses x duplications). The
  verdict's warnings say so.

``Verdict.peak_unmatched`` is 0 and ``detected_at`` is ``None`` on the Spark paths: there is
no single interleaved run whose memory or first proof they could report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from matcher.classify import MAX_SIMILARITY_PAIRS, Classifier, merge_moves
from matcher.dependence import Dependence
from matcher.equality import Equality, Event
from matcher.online import SIDES
from matcher.pools import Entry
from matcher.profile import Profile
from matcher.spark.events import arrow_column, arrow_events, dumps, loads
from matcher.spark.replay import PoolLoop, interleaving_order
from matcher.spark.schema import POS
from matcher.verdict import Divergence, Verdict

DIVERGENCE_SCHEMA = (
    "kind string, position long, ref_position long, columns array<string>, "
    "matched long, blob binary"
)


@dataclass(frozen=True, slots=True)
class Findings:
    """Divergences found: the earliest ``limit`` with witnesses, and counts over all."""

    divergences: tuple[Divergence, ...] = ()
    counts: Counter[str] = field(default_factory=Counter)
    columns: Counter[str] = field(default_factory=Counter)
    matched: int = 0  # events matched while explaining (resynchronised keys)
    #: what every corruption did to each column (``matcher.profile``)
    profile: Profile = field(default_factory=Profile)

    def merge(self, other: Findings, limit: int) -> Findings:
        both = sorted((*self.divergences, *other.divergences), key=Divergence.sort_key)
        return Findings(
            tuple(both[:limit]),
            self.counts + other.counts,
            self.columns + other.columns,
            self.matched + other.matched,
            Profile().merge(self.profile).merge(other.profile),
        )


def findings_of(divergences: Sequence[Divergence], limit: int, matched: int = 0) -> Findings:
    ordered = sorted(divergences, key=Divergence.sort_key)
    return Findings(
        tuple(ordered[:limit]),
        Counter(d.kind for d in ordered),
        Counter(c for d in ordered if d.kind == "corruption" for c in d.columns),
        matched,
        Profile().add_divergences(ordered),
    )


def explain(
    dependence: Dependence,
    equality: Equality,
    lengths: Sequence[int],
    events: list[tuple[int, int, Event]],
    replay: bool,
    barriers: Sequence[Sequence[Entry]] = ((), ()),
    settled: Sequence[Divergence] = (),
    similarity_pairs: int = MAX_SIMILARITY_PAIRS,
) -> tuple[list[Divergence], int]:
    """Classify unmatched ``(pos, side, event)`` triples as ``StreamMatcher.finish`` does;
    with ``replay`` they first go through the core's per-key queues again, which settle
    a diverged key early once it agrees again (``settled``: divergences settled so).
    ``similarity_pairs``: the classifier's bound for pairing events without a chain (0:
    pair none, for a part of a unit whose whole is known to exceed the bound).

    Returns the divergences, earliest first, and the pairs matched during the replay.
    """
    events.sort(key=interleaving_order)
    early = list(settled)
    matched = 0
    if replay:
        loop = PoolLoop(dependence, equality, lengths)
        loop.push_all(events)
        reference, candidate = loop.leftovers()
        early.extend(loop.settled)
        matched = loop.matched
    else:
        sides: tuple[list[Entry], list[Entry]] = ([], [])
        for pos, side, event in events:
            sides[side].append(Entry(pos, event, None))
        reference, candidate = sides
    if barriers[0] or barriers[1]:
        reference = sorted([*reference, *barriers[0]], key=_pos)
        candidate = sorted([*candidate, *barriers[1]], key=_pos)
    classifier = Classifier(dependence, equality, list(lengths), similarity_pairs)
    found = sorted([*early, *classifier.classify(reference, candidate)], key=Divergence.sort_key)
    if early:
        found = merge_moves(found, dependence, equality)
    return found, matched


def _pos(entry: Entry) -> int:
    return entry.pos


def group_explainer(
    dependence: Dependence,
    equality: Equality,
    lengths: Sequence[int],
    columns: Sequence[str],
    replay: bool,
) -> Callable[[pa.Table], pa.Table]:
    """The ``applyInArrow`` function that explains one group's unmatched events."""
    names = list(columns)

    def explain_group(table: pa.Table) -> pa.Table:
        events = list(
            zip(
                arrow_column(table, POS),
                arrow_column(table, "__p_side"),
                arrow_events(table, names),
                strict=True,
            )
        )
        divergences, matched = explain(dependence, equality, lengths, events, replay)
        return pa.Table.from_pylist(list(_rows(divergences, matched)), schema=_ARROW_SCHEMA)

    return explain_group


_ARROW_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("position", pa.int64()),
        ("ref_position", pa.int64()),
        ("columns", pa.list_(pa.string())),
        ("matched", pa.int64()),
        ("blob", pa.binary()),
    ]
)


def _rows(divergences: Sequence[Divergence], matched: int) -> Iterator[dict[str, object]]:
    for d in divergences:
        yield {
            "kind": d.kind,
            "position": d.sort_key()[0],
            "ref_position": d.sort_key()[1],
            "columns": list(d.columns),
            "matched": 0,
            "blob": dumps(d),
        }
    if matched:
        yield {
            "kind": "",
            "position": None,
            "ref_position": None,
            "columns": [],
            "matched": matched,
        }


def findings_from_rows(rows: DataFrame, limit: int) -> Findings:
    """Counts, column mismatches and the earliest ``limit`` witnesses of divergence rows."""
    real = rows.where(F.col("kind") != "")
    counts = Counter(
        {r["kind"]: r["n"] for r in real.groupBy("kind").agg(F.count("*").alias("n")).collect()}
    )
    columns = Counter(
        {
            r["c"]: r["n"]
            for r in real.where(F.col("kind") == "corruption")
            .select(F.explode("columns").alias("c"))
            .groupBy("c")
            .agg(F.count("*").alias("n"))
            .collect()
        }
    )
    top = real.orderBy("position", "ref_position").limit(limit).select("blob").collect()
    matched = rows.agg(F.sum("matched").alias("m")).collect()[0]["m"] or 0
    profile = Profile()
    if columns:
        partials = (
            real.where(F.col("kind") == "corruption")
            .select("blob")
            .mapInArrow(_profile_partition, "profile string")
            .collect()
        )
        for row in partials:
            profile.merge(Profile.from_partial(row["profile"]))
    return Findings(
        tuple(sorted((loads(r["blob"]) for r in top), key=Divergence.sort_key)),
        counts,
        columns,
        int(matched),
        profile,
    )


def _profile_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One partition's corruptions (pickled divergences) as one partial profile."""
    profile = Profile()
    for batch in batches:
        profile.add_divergences(loads(blob) for blob in batch.column(0).to_pylist())
    yield pa.RecordBatch.from_pylist([{"profile": profile.to_partial()}])


@dataclass(frozen=True, slots=True)
class SideStats:
    rows: tuple[int, int]
    keys: tuple[int, int]
    barriers: tuple[int, int]

    def as_mapping(self) -> dict[str, dict[str, int]]:
        return {
            side: {"rows": self.rows[i], "keys": self.keys[i], "barriers": self.barriers[i]}
            for i, side in enumerate(SIDES)
        }


def build_verdict(
    *,
    equivalent: bool,
    findings: Findings,
    matched: int,
    stats: SideStats,
    dependence: Dependence,
    warnings: Sequence[str],
) -> Verdict:
    return Verdict(
        equivalent=equivalent,
        divergences=findings.divergences,
        counts=findings.counts,
        reference_count=stats.rows[0],
        candidate_count=stats.rows[1],
        matched_count=matched + findings.matched,
        peak_unmatched=0,
        detected_at=None,
        dependence=dependence.describe(),
        column_mismatches=findings.columns,
        column_profiles=findings.profile.summaries(),
        side_stats=stats.as_mapping(),
        warnings=tuple(warnings),
    )
