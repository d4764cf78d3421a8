"""Trends: each validation's latest runs, oldest first, as data and as a chart layout.

The chart is drawn on the server (``templates/trends.html.j2`` turns a ``Chart`` into SVG),
so it needs no script and no network. One slot per run: a bar stacked by divergence kind
(height: the run's divergence count, on a scale from 0 to a round maximum) over a dot
coloured by the verdict; a slot links to the run's page and its tooltip says what it shows,
the gate included: open or closed, as the history's gate column says it
(``parity.views.history.gate_now``, an approval that opens it counted).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matcher.store import RunSummary
from matcher.store.records import PROPERTIES
from parity.views.approvals import RunApprovals
from parity.views.history import NONE, describe_counts, gate_now
from parity_ui.views import Roots, when

KINDS = ("loss", "duplication", "reordering", "corruption")
WIDTH = 760
HEIGHT = 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 12, 12, 44
_DOT_RADIUS = 5


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One finished run as the trends show it."""

    run_id: str
    started_at: dt.datetime
    verdict: str
    counts: Mapping[str, int]
    total_divergences: int
    gate_passed: bool | None
    #: the gate now, ``open`` or ``closed`` (``None``: not decided)
    gate: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "started_at": self.started_at.isoformat(),
            "verdict": self.verdict,
            "counts": dict(self.counts),
            "total_divergences": self.total_divergences,
            "gate_passed": self.gate_passed,
            "gate": self.gate,
        }


def trend_points(
    runs: Sequence[RunSummary], approvals: Mapping[str, RunApprovals] | None = None
) -> list[TrendPoint]:
    """The finished runs among ``runs`` (newest first, as the store lists them), oldest
    first; a run still running has no verdict yet and is left out, and so is a properties
    run (a spec's operators re-tested under its name), which never has one. ``approvals``:
    the runs' (``history_approvals``), so that an approved run's gate reads open."""
    approved = approvals or {}
    return [
        TrendPoint(
            run_id=run.run_id,
            started_at=run.started_at,
            verdict=run.verdict or run.status,
            counts={kind: run.counts.get(kind, 0) for kind in KINDS},
            total_divergences=run.total_divergences,
            gate_passed=run.gate_passed,
            gate=gate_now(run, approved.get(run.run_id)),
        )
        for run in reversed(runs)
        if run.status != "running" and run.kind != PROPERTIES
    ]


@dataclass(frozen=True, slots=True)
class Bar:
    kind: str
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class Slot:
    """One run's column: its link, tooltip, stacked bars and verdict dot."""

    href: str
    title: str
    verdict: str
    bars: tuple[Bar, ...]
    dot_x: float
    dot_y: float


@dataclass(frozen=True, slots=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    right: int
    baseline: float
    slots: tuple[Slot, ...]
    ticks: tuple[Tick, ...]
    first_label: str
    last_label: str


def nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``value`` (>= 1)."""
    if value <= 1:
        return 1
    magnitude = 1
    while magnitude * 10 <= value:
        magnitude *= 10
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= value)


def layout_chart(points: Sequence[TrendPoint], roots: Roots) -> Chart:
    """Where everything goes in a ``WIDTH`` x ``HEIGHT`` chart of ``points``."""
    plot_width = WIDTH - _LEFT - _RIGHT
    baseline = HEIGHT - _BOTTOM
    plot_height = baseline - _TOP
    top = nice_ceiling(max((p.total_divergences for p in points), default=0))
    slot_width = plot_width / max(len(points), 1)
    bar_width = max(min(slot_width * 0.7, 40.0), 1.0)
    slots = []
    for index, point in enumerate(points):
        centre = _LEFT + slot_width * (index + 0.5)
        bars, stacked = [], 0
        for kind in KINDS:
            count = point.counts[kind]
            if count == 0:
                continue
            y_top = baseline - plot_height * (stacked + count) / top
            y_bottom = baseline - plot_height * stacked / top
            bars.append(
                Bar(
                    kind, _r(centre - bar_width / 2), _r(y_top), _r(bar_width), _r(y_bottom - y_top)
                )
            )
            stacked += count
        slots.append(
            Slot(
                href=roots.run(point.run_id),
                title=_title(point),
                verdict=point.verdict,
                bars=tuple(bars),
                dot_x=_r(centre),
                dot_y=baseline + 12 + _DOT_RADIUS,
            )
        )
    ticks = tuple(Tick(_r(baseline - plot_height * v / top), str(v)) for v in _tick_values(top))
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=_LEFT,
        right=WIDTH - _RIGHT,
        baseline=baseline,
        slots=tuple(slots),
        ticks=ticks,
        first_label=_day(points[0]) if points else "",
        last_label=_day(points[-1]) if points else "",
    )


def _tick_values(top: int) -> tuple[int, ...]:
    return (0, top // 2, top) if top % 2 == 0 and top >= 2 else (0, top)


def _title(point: TrendPoint) -> str:
    counts = describe_counts(point.counts)
    gate = point.gate or NONE
    return f"{when(point.started_at)}: {point.verdict}, divergences {counts}, gate {gate}"


def _day(point: TrendPoint) -> str:
    return f"{point.started_at.astimezone(dt.UTC):%Y-%m-%d}"


def _r(value: float) -> float:
    return round(value, 1)
