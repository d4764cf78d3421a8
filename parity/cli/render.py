"""What ``parity compare`` prints: a verdict for a person, or one JSON object for a program.

The human form answers, in order: equivalent or not; how many divergences of each kind;
how much was read and held; then the first witnesses as side-by-side tables, so that the
reader sees *which* event went wrong and *how* without opening the outputs.

The JSON form is ``Verdict.to_dict()`` plus the paths and spec name, made strictly valid
JSON: datetimes become ISO strings, ``Decimal`` a string (no precision lost), bytes base64,
NaN and infinities the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

Names, paths, versions, errors and values come from users and their data: ``printable`` is
the one escape every command uses before text reaches a terminal (``parity compare``,
``report``, ``history``, ``gate``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from matcher.equality import Equality
from matcher.serialize import json_safe
from matcher.verdict import KINDS, Divergence, Verdict
from parity.views.printable import printable
from parity.views.printable import show as shown

#: longest value shown in a witness table; longer ones end in "..."
VALUE_WIDTH = 40
DIFFERS = "*"
MISSING = "-"


@dataclass(frozen=True, slots=True)
class Comparison:
    """What was compared: the names a report shows beside the verdict."""

    spec_name: str
    spec_file: str
    reference: str
    candidate: str
    dependence: str
    equality: Equality


def render_text(comparison: Comparison, verdict: Verdict) -> str:
    """The human report, ending in a newline."""
    c = comparison
    lines = [
        f"parity compare: {c.spec_name}",
        f"  reference   {c.reference}",
        f"  candidate   {c.candidate}",
        f"  dependence  {c.dependence}",
        f"  equality    {describe_equality(c.equality)}",
        "",
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
        lines.extend(_witness(number, total, divergence, c.equality))
    hidden = total - len(verdict.divergences)
    if hidden > 0:
        lines.append("")
        lines.append(f"... and {hidden} more (raise --limit to see their witnesses)")
    return "".join(printable(line) + "\n" for line in lines)


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


def _witness(number: int, total: int, d: Divergence, equality: Equality) -> list[str]:
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


def render_json(comparison: Comparison, verdict: Verdict) -> str:
    """One JSON object (strictly valid JSON), ending in a newline."""
    document = {
        "verdict": verdict.status,
        "spec": comparison.spec_name,
        "spec_file": comparison.spec_file,
        "reference": comparison.reference,
        "candidate": comparison.candidate,
        **verdict.to_dict(),
    }
    return json.dumps(json_safe(document), allow_nan=False, ensure_ascii=False) + "\n"
