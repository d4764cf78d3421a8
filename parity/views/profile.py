"""The column profile as reports show it (``matcher.profile`` builds it; it is stored as
each ``ColumnStat``'s ``extra``): one line per column for the headline and the text
report, and the rows of the page's table with a small chart of the differences over time.

    detail(stat.extra)   # 'by +0.5 to +2 (mean +1.25; mean relative 0.31%); 20 became null'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: the most bars a chart of differences over time draws (buckets are joined to fit)
BARS = 40
CHART_WIDTH, CHART_HEIGHT = 160, 28


def _number(value: float, signed: bool = False) -> str:
    return f"{value:+.6g}" if signed else f"{value:.6g}"


def _percent(fraction: float) -> str:
    """A fraction as a percentage, three significant digits (``0.0031`` -> ``0.31%``)."""
    return f"{fraction * 100:.3g}%"


def detail(extra: Mapping[str, Any] | None) -> str | None:
    """What the corruptions did to one column, in a line; ``None``: no profile stored
    (a run from before profiles, or a column with no corrupted pair)."""
    if not isinstance(extra, Mapping) or not extra.get("pairs"):
        return None
    parts = []
    numeric = extra.get("numeric")
    if isinstance(numeric, Mapping) and isinstance(numeric.get("diff"), Mapping):
        diff, rel = numeric["diff"], numeric.get("rel_diff")
        span = (
            f"by {_number(diff['min'], True)}"
            if diff["min"] == diff["max"]
            else f"by {_number(diff['min'], True)} to {_number(diff['max'], True)}"
        )
        means = [f"mean {_number(diff['mean'], True)}"]
        if isinstance(rel, Mapping):
            means.append(f"mean relative {_percent(rel['mean'])}")
        parts.append(f"{span} ({'; '.join(means)})")
    top = (extra.get("transitions") or {}).get("top") or []
    if top:
        first = top[0]
        more = f", {len(top) - 1} other changes" if len(top) > 1 else ""
        parts.append(f"most often {first['change']} ({first['n']:,}){more}")
    if extra.get("nulls_gained"):
        parts.append(f"{extra['nulls_gained']:,} became null")
    if extra.get("nulls_lost"):
        parts.append(f"{extra['nulls_lost']:,} stopped being null")
    return "; ".join(parts) if parts else None


def rows(stats: Sequence[Any]) -> list[dict[str, Any]]:
    """The page's table: a row per column with a stored profile, most differences first."""
    out = []
    for stat in sorted(stats, key=lambda c: (-c.mismatches, c.column)):
        extra = stat.extra
        if not isinstance(extra, Mapping) or not extra.get("pairs"):
            continue
        numeric = extra.get("numeric") if isinstance(extra.get("numeric"), Mapping) else None
        out.append(
            {
                "column": stat.column,
                "pairs": extra["pairs"],
                "nulls_gained": extra.get("nulls_gained", 0),
                "nulls_lost": extra.get("nulls_lost", 0),
                "numeric": None if numeric is None else _numeric(numeric),
                "transitions": (extra.get("transitions") or {}).get("top") or [],
                "transitions_exact": (extra.get("transitions") or {}).get("exact", True),
                "distinct": (extra.get("transitions") or {}).get("distinct", 0),
                "chart": chart(extra.get("over_time")),
            }
        )
    return out


def _numeric(numeric: Mapping[str, Any]) -> dict[str, str]:
    diff, absolute, rel = numeric["diff"], numeric["abs_diff"], numeric.get("rel_diff")
    return {
        "pairs": f"{numeric['pairs']:,}",
        "min": _number(diff["min"], True),
        "max": _number(diff["max"], True),
        "mean": _number(diff["mean"], True),
        "abs_mean": _number(absolute["mean"]),
        "abs_max": _number(absolute["max"]),
        "rel_mean": "—" if not isinstance(rel, Mapping) else _percent(rel["mean"]),
        "rel_max": "—" if not isinstance(rel, Mapping) else _percent(rel["max"]),
    }


def chart(over_time: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Bars of the differences over time (an SVG the template draws: no script, no
    network); consecutive buckets are joined to draw at most ``BARS``. ``None``: no time."""
    if not isinstance(over_time, Mapping) or not over_time.get("counts"):
        return None
    buckets = sorted(over_time["counts"].items())
    per_bar = -(-len(buckets) // BARS)
    joined = [buckets[i : i + per_bar] for i in range(0, len(buckets), per_bar)]
    peak = max(sum(n for _, n in group) for group in joined)
    width = CHART_WIDTH / len(joined)
    bars = []
    for i, group in enumerate(joined):
        n = sum(count for _, count in group)
        height = max(1.0, CHART_HEIGHT * n / peak)
        when = group[0][0] if len(group) == 1 else f"{group[0][0]} to {group[-1][0]}"
        bars.append(
            {
                "x": round(i * width, 2),
                "y": round(CHART_HEIGHT - height, 2),
                "width": round(max(width - 1, 1), 2),
                "height": round(height, 2),
                "title": f"{when}: {n:,}",
            }
        )
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "bars": bars,
        "unit": over_time.get("unit", ""),
        "first": buckets[0][0],
        "last": buckets[-1][0],
    }
