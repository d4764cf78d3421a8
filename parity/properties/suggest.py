"""The spec sections an operator's properties imply (``--suggest-spec``).

* ``dependence``: a stateless or commutative operator's outputs do not depend on the order
  of its input, which Spark does not keep: ``unordered``. A non-commutative one that is
  partition-isolated by key K depends on the order within each key only: ``key: [K]``
  (the output must carry K). Non-commutative and partition-interfering (or no key
  tested): every event's place matters, ``ordered``.
* ``equality``: exact, unless non-determinism changed only some columns of the same rows:
  those are ignored (or, when they are floats that moved in their last digits, compared
  within a relative tolerance). A column the dependence reads is never loosened.
* ``noise``: a non-deterministic operator makes the reference disagree with itself: run it
  twice (``reference_runs: 2``) so that a verdict tells noise from a regression.

A property left undetermined (no test of it could be checked, or the time budget ran out
before it) is never read as absent: the dependence stays ``ordered`` and the reference runs
twice, as if it held. One tested partially (no evidence in the tests there was time for)
is read as tested: "potentially", on fewer tests, which the comments count.

Every line carries its reason as a YAML comment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from parity.properties.outcomes import Report, undetermined, untested

#: a float that moved by less than this, relatively, moved in its last digits
FLOAT_NOISE = 1e-6
#: the properties a dependence is chosen from: one undetermined keeps every event's place
ORDER_PROPERTIES = ("statefulness", "non_commutativity", "partition_interference")


def suggest_spec(report: Report, output_columns: Sequence[str] | None = None) -> str:
    props = report.properties
    lines = [f"# Suggested by parity properties {report.operator} ({report.technique})."]
    dependence, reads = _dependence(report, output_columns)
    lines += dependence
    lines += _equality(props["nondeterminism"].evidence, reads)
    if undetermined(props["nondeterminism"]):
        why = (
            "the time budget ran out before it was tested"
            if untested(props["nondeterminism"])
            else "no test could be checked"
        )
        lines += [
            f"# non-determinism undetermined ({why}): run the reference",
            "# twice to measure its own noise.",
            "noise:",
            "  reference_runs: 2",
        ]
    elif props["nondeterminism"].found:
        lines += [
            "# non-deterministic: the same input gave different outputs (evidence above);",
            "# run the reference twice to measure its own noise.",
            "noise:",
            "  reference_runs: 2",
        ]
    else:
        lines += [
            f"# deterministic on {props['nondeterminism'].tests} tests: one reference run.",
            "noise:",
            "  reference_runs: 1",
        ]
    return "\n".join(lines) + "\n"


def _dependence(report: Report, columns: Sequence[str] | None) -> tuple[list[str], list[str]]:
    props = report.properties
    keys = list(report.keys)
    if props["nondeterminism"].found:
        return [
            "# non-deterministic, so order, state and keys were not tested: keep every",
            "# event's place until they are (make the operator deterministic and re-run).",
            "dependence: ordered",
        ], []
    unknown = [n for n in ORDER_PROPERTIES if undetermined(props[n])]
    if unknown:
        why = (
            "the time budget ran out before they were tested"
            if all(untested(props[n]) for n in unknown)
            else "no test could be checked"
        )
        return [
            f"# {', '.join(n.replace('_', '-') for n in unknown)} undetermined",
            f"# ({why}): keep every event's place until they are known.",
            "dependence: ordered",
        ], []
    if not props["statefulness"].found:
        return [
            "# stateless: each item's output depends on that item alone, so the output's",
            "# order is only the input's, which Spark does not keep.",
            "dependence: unordered",
        ], []
    if not props["non_commutativity"].found:
        return [
            "# stateful but commutative: no order of the input changed the output.",
            "dependence: unordered",
        ], []
    pi = props["partition_interference"]
    if keys and pi.applicable and not pi.found:
        missing = [k for k in keys if columns is not None and k not in columns]
        if not missing:
            note = "" if columns is not None else " (the output must carry it by that name)"
            return [
                "# non-commutative, but partition-isolated by "
                f"{', '.join(keys)}: only each key's order matters{note}.",
                "dependence:",
                f"  key: [{', '.join(keys)}]",
            ], keys
        why = f"partition-isolated by {', '.join(keys)}, but the output lacks {', '.join(missing)}"
    elif keys and pi.found:
        why = f"partition-interfering by {', '.join(keys)}: keys affect each other"
    else:
        why = "no key tested (--key)"
    return [f"# non-commutative and {why}: every event keeps its place.", "dependence: ordered"], []


def _equality(evidence: Mapping[str, Any] | None, reads: Sequence[str]) -> list[str]:
    if evidence is None:
        return ["# deterministic: exact equality.", "equality: {}"]
    difference = evidence.get("difference", {})
    first, second = difference.get("only_first", []), difference.get("only_second", [])
    columns = _changed_columns(first, second)
    if not columns:
        return [
            "# non-deterministic in which rows it emits, not in some columns: exact equality",
            "# (the noise runs below tell it apart).",
            "equality: {}",
        ]
    floats = {c for c, tiny in columns.items() if tiny}
    ignored = sorted(c for c in columns if c not in floats and c not in reads)
    lines = ["equality:"]
    if ignored:
        lines.insert(0, f"# non-deterministic columns (differ between runs): {', '.join(ignored)}.")
        lines.append(f"  ignore: [{', '.join(ignored)}]")
    tolerated = sorted(c for c in floats if c not in reads)
    if tolerated:
        lines.insert(0, f"# floats that moved in their last digits: {', '.join(tolerated)}.")
        lines.append("  tolerance:")
        lines += [f"    {c}: {{rel: {FLOAT_NOISE:.1e}}}" for c in tolerated]
    kept = sorted(c for c in columns if c in reads)
    if kept:
        lines.insert(0, f"# {', '.join(kept)} differ between runs but the dependence reads them:")
        lines.insert(1, "# they stay exact (loosening them would make the verdict unsound).")
    if len(lines) == 1 or lines[-1] == "equality:":
        lines[-1] = "equality: {}"
    return lines


def _changed_columns(first: list[Any], second: list[Any]) -> dict[str, bool]:
    """Columns that differ between rows paired across the two runs (same count, mappings):
    each with whether every change was a float's last digits."""
    if not first or len(first) != len(second):
        return {}
    if not all(isinstance(r, dict) for r in first + second):
        return {}
    changed: dict[str, bool] = {}
    for a, b in zip(_by_shape(first), _by_shape(second), strict=True):
        if a.keys() != b.keys():
            return {}
        for column in a:
            if a[column] != b[column]:
                tiny = _tiny(a[column], b[column])
                changed[column] = changed.get(column, True) and tiny
    return changed


def _by_shape(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: repr(sorted(r)))


def _tiny(a: Any, b: Any) -> bool:
    if not (isinstance(a, float) and isinstance(b, float)) or not math.isfinite(a + b):
        return False
    return abs(a - b) <= FLOAT_NOISE * max(abs(a), abs(b))
