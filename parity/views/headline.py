"""What a divergent run says at a glance: how much of each side matched, a line per column
that differed, and the witnesses grouped by pattern. The text report (``parity report``),
the JSON document and the page lead with it.

    headline(record)["text"]     # '992 of 1,000 reference events matched (99.2%), ...'
    headline(record)["columns"]  # [{'column': 'fare', 'text': 'fare differs in ...'}, ...]

The match rates and the column lines count every event: they come from the verdict's
counts, which are exact. The patterns are those of the stored witnesses (the first
``--limit`` divergences), and say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matcher.store import RunRecord, StoredDivergence
from parity.views.profile import detail as profile_detail

SIDES = ("reference", "candidate")


def headline(record: RunRecord) -> dict[str, Any] | None:
    """The run's headline (``None``: a run with no verdict counts, such as a properties
    run or one that failed before matching).

    An event *matched* when no divergence names it: a loss, a reordering or a corruption
    names one reference event, a duplication, a reordering or a corruption one candidate
    event. The pairs a column line counts are the reference events the candidate has
    (all but the losses)."""
    stats = record.stats or {}
    events = {side: n for side in SIDES if isinstance(n := stats.get(f"{side}_count"), int)}
    if len(events) < len(SIDES):
        return None
    counts = record.counts
    both = counts.get("reordering", 0) + counts.get("corruption", 0)
    named = {
        "reference": counts.get("loss", 0) + both,
        "candidate": counts.get("duplication", 0) + both,
    }
    sides = []
    for side, n in events.items():
        matched = max(0, n - named[side])
        sides.append({"side": side, "events": n, "matched": matched, "rate": _rate(matched, n)})
    pairs = max(0, events["reference"] - counts.get("loss", 0))
    return {
        "sides": sides,
        "text": _matched_text(sides),
        "columns": column_lines(record, pairs),
        "patterns": patterns(record.divergences),
    }


def _rate(matched: int, events: int) -> float | None:
    return None if events == 0 else matched / events


def _matched_text(sides: Sequence[Mapping[str, Any]]) -> str:
    if all(s["events"] == 0 for s in sides):
        return "both outputs are empty"
    if all(s["matched"] == 0 for s in sides):
        return "nothing matched: " + ", ".join(
            f"0 of {s['events']:,} {s['side']} events" for s in sides
        )
    return ", ".join(
        f"{s['matched']:,} of {s['events']:,} {s['side']} events matched ({_percent(s['rate'])})"
        for s in sides
    )


def _percent(rate: float | None) -> str:
    if rate is None:
        return "no events"
    if 0 < rate < 0.001:
        return "<0.1%"
    if 0.999 < rate < 1:
        return ">99.9%"
    return f"{rate:.1%}"


def column_lines(record: RunRecord, pairs: int) -> list[dict[str, Any]]:
    """One line per column that differed, most first: in how many of the ``pairs``
    (reference events the candidate has, corrupted or not), and its ``detail``: what the
    corruptions did to it, over all of them (``parity.views.profile.detail``; ``None``
    for a run stored without a profile)."""
    lines = []
    for stat in sorted(record.column_stats, key=lambda c: (-c.mismatches, c.column)):
        share = _percent(_rate(stat.mismatches, pairs)) if pairs else "no pairs"
        text = f"{stat.column} differs in {stat.mismatches:,} of {pairs:,} paired events ({share})"
        lines.append(
            {
                "column": stat.column,
                "mismatches": stat.mismatches,
                "text": text,
                "detail": profile_detail(stat.extra),
            }
        )
    return lines


def patterns(divergences: Sequence[StoredDivergence]) -> list[dict[str, Any]]:
    """The stored witnesses grouped by kind and set of differing columns, in the order of
    each group's first witness: how many, and that first one's ordinal (the example
    shown: for a corruption, its differing columns are the pattern's)."""
    groups: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for d in divergences:
        key = (d.kind, tuple(sorted(d.columns)))
        group = groups.get(key)
        if group is None:
            groups[key] = {"kind": d.kind, "columns": list(key[1]), "count": 1, "first": d.ordinal}
        else:
            group["count"] += 1
    for group in groups.values():
        on = f" on {', '.join(group['columns'])}" if group["columns"] else ""
        group["text"] = f"{group['kind']}{on}"
    return list(groups.values())
