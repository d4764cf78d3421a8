"""The history of recorded runs as rows: what ``parity history`` prints and the Parity page
shows, from ``Store.list_runs``.

One row per run: when it started, the validation, how it was triggered, both versions,
the input slice, the verdict, its divergences per kind, the expectations met, how long it
took, its gate now and its run id (for ``parity report RUN_ID``). ``history_entry`` is a
run as ``parity history --json`` prints it, with its schema findings in the same form as
``parity report --json`` (``null``: the schemas were not compared).

The gate column is the gate now: the decision stored with the run, opened by an active
approval of its divergences (``parity approve``; ``parity.views.approvals``) and marked so:
``open (approved #3)``, ``open (covered by #3)``, ``closed (revoked #3)``. The JSON entry
has the same as ``gate_now`` and the approvals as ``approval`` (``null``: none).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from matcher.serialize import json_safe
from parity.views.approvals import RunApprovals, marker
from parity.views.printable import printable

if TYPE_CHECKING:  # the store (SQLAlchemy, Alembic) is imported when the command runs
    from matcher.store import RunSummary

DEFAULT_LIMIT = 50
#: the store's run verdicts (``matcher.store.records.RUN_VERDICTS``; a test checks they agree)
VERDICTS = ("equivalent", "divergent", "noisy", "error")
#: the triggers runs are stored with: ``scheduled`` and ``adhoc`` by the DAGs
#: (``parity.airflow.plan.trigger_of``), ``cli`` by ``parity recovery`` and ``parity
#: properties``, ``manual`` by ``jobs/match.py`` run by hand (its default); a test checks
#: that every writer's values are here
TRIGGERS = ("scheduled", "adhoc", "cli", "manual")
TRIGGERS_HELP = (
    "scheduled (the scheduler's runs), adhoc (triggered in Airflow or by parity run), cli "
    "(parity recovery, parity properties), manual (jobs/match.py run by hand)"
)
COLUMNS = (
    "started",
    "validation",
    "trigger",
    "versions",
    "slice",
    "verdict",
    "divergences",
    "expectations",
    "gate",
    "duration",
    "run id",
)
SHORT_KINDS = {"loss": "loss", "duplication": "dup", "reordering": "reord", "corruption": "corr"}
NONE = "-"


def history_entry(run: RunSummary, approvals: RunApprovals | None = None) -> dict[str, Any]:
    """One run as ``parity history --json`` prints it (``approvals``: the run's, if any)."""
    return {
        "run_id": run.run_id,
        "validation": run.validation,
        "kind": run.kind,
        "trigger": run.trigger,
        "status": run.status,
        "verdict": run.verdict,
        "gate_passed": run.gate_passed,
        "gate_now": gate_now(run, approvals),
        "approval": None if approvals is None or approvals.state is None else approvals.to_dict(),
        "versions": {"reference": run.reference_version, "candidate": run.candidate_version},
        "slice": json_safe(run.slice),
        "started_at": run.started_at.isoformat(),
        "finished_at": None if run.finished_at is None else run.finished_at.isoformat(),
        "duration_seconds": None if run.duration is None else run.duration.total_seconds(),
        "counts": dict(run.counts),
        "total_divergences": run.total_divergences,
        "expectations": {
            "passed": run.expectations_passed,
            "total": run.expectations_total,
            "failed": run.expectations_failed,
        },
        "dag_id": run.dag_id,
        "dag_run_id": run.dag_run_id,
        "error": run.error,
        # as ``parity report --json`` gives it (``parity.views.report.report_document``)
        "schema": None if run.schema is None else json_safe(run.schema.to_dict()),
    }


def history_row(run: RunSummary, approvals: RunApprovals | None = None) -> tuple[str, ...]:
    """The table cells of one run, in ``COLUMNS`` order."""
    return tuple(
        printable(cell)
        for cell in (
            f"{run.started_at.astimezone(dt.UTC):%Y-%m-%d %H:%M}",
            describe_validation(run),
            run.trigger,
            f"{run.reference_version or NONE} -> {run.candidate_version or NONE}",
            describe_slice(run.slice),
            run.verdict or run.status,
            describe_divergences(run),
            describe_expectations(run),
            describe_gate(run, approvals),
            describe_duration(run.duration),
            run.run_id,
        )
    )


def gate_now(run: RunSummary, approvals: RunApprovals | None = None) -> str | None:
    """``open``, ``closed`` or ``None`` (not decided): the stored decision, opened by an
    active approval that covers the run's divergences, unless its expectations failed (an
    approval accepts divergences, not failed expectations)."""
    if approvals is not None and approvals.opens_gate and run.expectations_passed is not False:
        return "open"
    if run.gate_passed is None:
        return None
    return "open" if run.gate_passed else "closed"


def describe_gate(run: RunSummary, approvals: RunApprovals | None = None) -> str:
    """The gate now, with the approval that decides it: ``open (approved #3)``,
    ``closed (revoked #3)``."""
    now = gate_now(run, approvals) or NONE
    if approvals is None or approvals.state is None or run.gate_passed:
        return now
    return f"{now} ({marker(approvals)})"


def describe_validation(run: RunSummary) -> str:
    """The validation's name, with the run's kind when it is not a comparison
    (``sequence_window (recovery)``)."""
    return run.validation if run.kind == "comparison" else f"{run.validation} ({run.kind})"


def describe_slice(slice_: Any) -> str:
    """``event_time 2024-05-01 00:00..2024-05-02 00:00 sample=0.25``: the replayed window
    and key sample; a slice without them shows its other values (``window=1d``)."""
    if slice_ is None:
        return NONE
    if not isinstance(slice_, Mapping):
        return json.dumps(slice_, ensure_ascii=False)
    parts = []
    start, end = slice_.get("start"), slice_.get("end")
    if start is not None or end is not None:
        column = slice_.get("column") or "time"
        parts.append(f"{column} {_instant(start)}..{_instant(end)}")
    if slice_.get("sample") is not None:
        parts.append(f"sample={_text(slice_['sample'])}")
    if not parts:  # an unusual slice: its scalars, in its order
        parts = [
            f"{name}={_text(value)}"
            for name, value in slice_.items()
            if value is not None and not isinstance(value, Mapping | list)
        ]
    return " ".join(parts) or NONE


def _instant(value: Any) -> str:
    if not isinstance(value, str):
        return "" if value is None else _text(value)
    try:
        at = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    if at.tzinfo is not None:
        at = at.astimezone(dt.UTC)
    return f"{at:%Y-%m-%d %H:%M}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def describe_divergences(run: RunSummary) -> str:
    """The run's divergences (``describe_counts``); ``-`` for a properties run, which
    compares nothing: its findings are in its report."""
    return NONE if run.kind == "properties" else describe_counts(run.counts)


def describe_counts(counts: Mapping[str, int]) -> str:
    """``loss 4, reord 1``: the kinds that occurred, or ``0``."""
    found = [f"{SHORT_KINDS.get(kind, kind)} {n}" for kind, n in counts.items() if n]
    return ", ".join(found) or "0"


def describe_expectations(run: RunSummary) -> str:
    """``met 5/5`` or ``FAILED 2/5`` (failed of total), ``-`` when none were recorded."""
    if run.expectations_passed is None:
        return NONE
    total = run.expectations_total
    if run.expectations_passed:
        return f"met {total}/{total}"
    return f"FAILED {run.expectations_failed}/{total}"


def describe_duration(duration: dt.timedelta | None) -> str:
    if duration is None:
        return NONE
    seconds = round(duration.total_seconds())
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{seconds:02d}s"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def render_table(rows: Sequence[tuple[str, ...]]) -> str:
    """Left-aligned columns, two spaces apart, under an upper-case header."""
    header = tuple(name.upper() for name in COLUMNS)
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
             for row in (header, *rows)]  # fmt: skip
    return "\n".join(lines) + "\n"
