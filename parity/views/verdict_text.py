"""A verdict as lines of text for a person: the counts, what was read, the schema findings,
the corrupted columns and the first witnesses as side-by-side tables, so that the reader
sees *which* event went wrong and *how* without opening the outputs. ``parity compare``
prints them under its header (``parity.cli.render``); ``parity.testing.assert_equivalent``
puts them in its failure message.

The lines are not yet escaped: values come from users' data, and each caller passes every
line through ``printable`` before it reaches a terminal or a test report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matcher.equality import Equality
from matcher.verdict import KINDS, Divergence, Verdict
from parity.views.printable import printable
from parity.views.printable import show as shown

#: longest value shown in a witness table; longer ones end in "..."
VALUE_WIDTH = 40
DIFFERS = "*"
MISSING = "-"


def verdict_lines(verdict: Verdict, equality: Equality, *, more: str) -> list[str]:
    """The verdict, its counts and its witnesses; ``more``: what to do to see the witnesses
    not kept."""
    lines = [
        f"verdict: {verdict.status}",
        "counts: " + ", ".join(f"{kind} {verdict.counts[kind]}" for kind in KINDS),
        f"rows: reference {verdict.reference_count}, candidate {verdict.candidate_count}, "
        f"matched {verdict.matched_count}, peak unmatched {verdict.peak_unmatched}",
    ]
    lines.extend(f"warning: {warning}" for warning in verdict.notes)
    if verdict.detected_at is not None:
        read = verdict.reference_count + verdict.candidate_count
        lines.append(f"proven divergent after {verdict.detected_at + 1} of {read} rows read")
    lines.extend(schema_lines(verdict))
    if verdict.column_mismatches:
        ranked = sorted(verdict.column_mismatches.items(), key=lambda item: (-item[1], item[0]))
        lines.append("corrupted columns: " + ", ".join(f"{c} {n}" for c, n in ranked))
    total = verdict.total_divergences
    for number, divergence in enumerate(verdict.divergences, start=1):
        lines.append("")
        lines.extend(witness_lines(number, total, divergence, equality))
    hidden = total - len(verdict.divergences)
    if hidden > 0:
        lines.append("")
        lines.append(f"... and {hidden} more ({more})")
    return lines


def schema_lines(verdict: Verdict) -> list[str]:
    """The schema findings (``matcher.schema``), divergent ones marked; none when the
    schemas agree or were not compared."""
    schema = verdict.schema
    if schema is None or not schema.findings:
        return []
    lines = [f"schema: {schema.summary()} under schema.mode {schema.mode}"]
    for finding in schema.findings:
        mark = "divergent" if finding.divergent else "listed   "
        lines.append(f"  {mark} {finding.kind:<11} {finding.explain()}")
    return lines


def witness_lines(number: int, total: int, d: Divergence, equality: Equality) -> list[str]:
    """Divergence ``number`` of ``total``: its kind, key and positions, its explanation, and
    the two events side by side, the differing columns marked."""
    key = "" if d.key is None else f", key {show(d.key)}"
    near_ref = "near " if d.kind == "duplication" else ""
    near_cand = "near " if d.kind == "loss" else ""
    head = (
        f"divergence {number} of {total}: {d.kind}{key}, reference {near_ref}#"
        f"{d.reference_position}, candidate {near_cand}#{d.candidate_position}"
    )
    return [head, f"  {d.explain()}", *_table(d, equality)]


def _table(d: Divergence, equality: Equality) -> list[str]:
    ref, cand = d.reference_event or {}, d.candidate_event or {}
    names = list(ref) + [name for name in cand if name not in ref]
    differing = set(d.columns)
    rows = [("", "column", "reference", "candidate")]
    for name in names:
        label = printable(f"{name} (ignored)" if name in equality.ignore else name)
        rows.append(
            (
                DIFFERS if name in differing else "",
                label,
                _cell(d.reference_event, name),
                _cell(d.candidate_event, name),
            )
        )
    widths = [len(DIFFERS)] + [max(len(row[i]) for row in rows) for i in range(1, 4)]
    return [
        f"  {mark:<{widths[0]}} {label:<{widths[1]}} | {a:<{widths[2]}} | {b}".rstrip()
        for mark, label, a, b in rows
    ]


def _cell(event: Mapping[str, Any] | None, name: str) -> str:
    if event is None or name not in event:
        return MISSING
    return show(event[name])


def show(value: Any) -> str:
    """A value as one printable line, cut to ``VALUE_WIDTH`` (``parity.views.printable``)."""
    return shown(value, width=VALUE_WIDTH)


def describe_equality(equality: Equality) -> str:
    """One line saying when two events count as equal."""
    if equality.function is not None:
        return f"function {equality.function_name or equality.function!r}"
    parts = []
    if equality.ignore:
        parts.append("ignore " + ", ".join(sorted(equality.ignore)))
    for column, tolerance in sorted(equality.tolerance.items()):
        bounds = [f"{name} {value:g}" for name, value in
                  (("abs", tolerance.abs), ("rel", tolerance.rel)) if value]  # fmt: skip
        parts.append(f"{column} within {' or '.join(bounds) or 'exact'}")
    for column, steps in sorted(equality.normalize.items()):
        parts.append(f"{column} compared after {'+'.join(steps)}")
    if not equality.nan_equal:
        parts.append("NaN differs from NaN")
    return "; ".join(parts) or "exact"
