"""A recovery run's crash log as the report shows it, read defensively.

    view = recovery_view(record)     # None for a comparison or a properties run
    view["crashes"]                  # the kills whose every value has its type
    view["invalid"]                  # what was skipped: ["planned", "crashes[2]"]

The crash log is stored in the run's statistics (``parity.recovery.crashes.CrashedRun``), and
the store is untrusted input (SECURITY.md): a value of the wrong type (a string where a number
of seconds is, a list where a count is, a crash that is not a mapping) must not take the
report, the command line or the plugin's page down. Each summary value is kept only when it
has its type (else ``None``, and its name listed in ``invalid``); a kill with any value of
the wrong type is skipped whole and listed as ``crashes[i]``, since its other values cannot
be trusted to describe it. Numbers are finite and never negative; a bool is not a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from matcher.store.records import RECOVERY, RunRecord

#: where a kill landed (``parity.recovery.crashes``), in words
MOMENTS = {
    "between": "between batches",
    "inside": "inside a batch",
    "written": "after the sink wrote, before the commit",
}
CHECKS = ("windows", "differential")
#: longest text kept from the crash log (a target, a phase, an error)
LONGEST_TEXT = 2000

_Check = Callable[[Any], bool]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _seconds(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= LONGEST_TEXT


def _or_none(check: _Check) -> _Check:
    return lambda value: value is None or check(value)


#: a kill's fields, each with its type (``parity.recovery.crashes.Crash``); a kill lacking
#: one of ``REQUIRED`` is skipped too
CRASH_FIELDS: dict[str, _Check] = {
    "number": _count,
    "target": _text,
    "planned": _or_none(_text),
    "phase": _text,
    "at": _seconds,
    "batch": _or_none(_count),
    "committed": _count,
    "killed": _count,
    "attempt": _count,
    "missed": _or_none(_count),
    "recovered_in": _or_none(_seconds),
}
REQUIRED = ("number", "target", "phase", "at")
SUMMARY_FIELDS: dict[str, _Check] = {
    "planned": _count,
    "injected": _count,
    "recovered": _count,
    "attempts": _count,
    "batches": _count,
    "seconds": _seconds,
    "uninterrupted_seconds": _seconds,
    "error": _text,
}


def crash_moment(crash: Mapping[str, Any]) -> str:
    """Where a kill of the crash log landed, in words (and what was planned, if other)."""
    phase, planned = crash.get("phase"), crash.get("planned")
    where = MOMENTS.get(str(phase), str(phase))
    if planned is not None and planned != phase:
        where += f" (planned {MOMENTS.get(str(planned), str(planned))})"
    missed = crash.get("missed") or 0
    if missed:
        where += f", {missed} batch{'es' if missed != 1 else ''} committed unseen first"
    return where


def valid_crash(entry: Any) -> dict[str, Any] | None:
    """The kill with its values, when every one present has its type; else ``None``."""
    if not isinstance(entry, Mapping) or any(field not in entry for field in REQUIRED):
        return None
    crash = {field: entry.get(field) for field in CRASH_FIELDS}
    if not all(check(crash[field]) for field, check in CRASH_FIELDS.items()):
        return None
    return crash


def recovery_view(record: RunRecord) -> dict[str, Any] | None:
    """A recovery run's check and crash log (``None`` for other kinds): every kill, when it
    happened, which batch was in flight, how long the job took to come back; what could not
    be read is in ``invalid``."""
    if record.kind != RECOVERY:
        return None
    invalid: list[str] = []
    stats = record.stats if isinstance(record.stats, Mapping) else {}
    log = stats.get("crashes")
    if log is not None and not isinstance(log, Mapping):
        invalid.append("crash log")
    log = log if isinstance(log, Mapping) else {}
    entries = log.get("crashes", [])
    if not isinstance(entries, list):
        invalid.append("crashes")
        entries = []
    crashes = []
    for index, entry in enumerate(entries):
        crash = valid_crash(entry)
        if crash is None:
            invalid.append(f"crashes[{index}]")
        else:
            crashes.append({**crash, "where": crash_moment(crash)})
    summary: dict[str, Any] = {}
    for field, check in SUMMARY_FIELDS.items():
        value = log.get(field)
        if value is not None and not check(value):
            invalid.append(field)
            value = None
        summary[field] = value
    if "injected" not in log and not invalid:
        summary["injected"] = len(crashes)
    checked_by = stats.get("check", "differential")
    if checked_by not in CHECKS:
        invalid.append("check")
        checked_by = None
    return {
        "check": checked_by,
        "settings": _settings(record.spec, invalid),
        **{field: summary[field] for field in SUMMARY_FIELDS if field != "error"},
        "crashes": crashes,
        "error": summary["error"],
        "invalid": invalid,
    }


def _settings(spec: Any, invalid: list[str]) -> dict[str, Any] | None:
    """The recovery settings the run used (kill, seed, ...): scalars only."""
    settings = spec.get("recovery") if isinstance(spec, Mapping) else None
    if settings is None:
        return None
    if not isinstance(settings, Mapping):
        invalid.append("settings")
        return None
    kept = {}
    for name, value in settings.items():
        number = isinstance(value, int | float) and math.isfinite(value)  # a bool is an int
        scalar = value is None or number or _text(value)
        if isinstance(name, str) and scalar:
            kept[name] = value
        else:
            invalid.append(f"settings.{name}")
    return kept


def invalid_note(view: Mapping[str, Any]) -> str | None:
    """The line that says what of the stored crash log was skipped (``None``: nothing)."""
    invalid = view.get("invalid") or []
    if not invalid:
        return None
    return f"the stored crash log has values of the wrong type, not shown: {', '.join(invalid)}"
