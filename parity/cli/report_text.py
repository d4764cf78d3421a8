"""What ``parity report RUN_ID`` prints without options: a few lines about a stored run.

Every line goes through ``parity.cli.render.printable``: the validation, versions, gate reason,
error, schema findings and paths were stored by jobs and users, and a terminal must show
their control characters (an escape sequence in a version label) rather than act on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from matcher.equality import Equality
from matcher.gate import empty_outputs
from matcher.store import RunRecord
from matcher.verdict import EMPTY_WARNING
from parity.views.crash_log import invalid_note
from parity.views.crash_log import recovery_view as _recovery
from parity.views.headline import headline, patterns
from parity.views.printable import compact, printable
from parity.views.properties import properties_document, property_rows
from parity.views.report import data_docs_path, minimized_view
from parity.views.verdict_text import witness_lines

if TYPE_CHECKING:
    from parity.views.approvals import RunApprovals

GATE = {None: "gate not decided", True: "gate open", False: "gate closed"}


def render_summary(record: RunRecord, approvals: RunApprovals | None = None) -> str:
    """The run in a few lines, ending in a newline, safe for a terminal; with its
    approvals (who accepted which divergences, when, why; revocations) when given."""
    counts = ", ".join(f"{kind} {n}" for kind, n in record.counts.items())
    lines = [
        f"run {record.run_id}: {record.validation}, "
        f"{record.verdict or record.status} ({GATE[record.gate_passed]}"
        + (f": {record.gate_reason})" if record.gate_reason else ")"),
        f"versions: reference {record.reference_version or '-'}, "
        f"candidate {record.candidate_version or '-'}",
        f"slice: {'-' if record.slice is None else compact(record.slice)}",
        f"started {record.started_at:%Y-%m-%d %H:%M:%S} UTC, "
        + (
            "still running"
            if record.finished_at is None or record.duration is None
            else f"finished {record.finished_at:%Y-%m-%d %H:%M:%S} UTC "
            f"after {record.duration.total_seconds():.1f}s"
        ),
    ]
    properties = properties_document(record)
    head = headline(record) if properties is None else None
    if head is not None:
        lines.insert(1, f"matched: {head['text']}")
    if properties is None:
        lines.append(f"counts: {counts} ({record.total_divergences} total)")
        if head is not None:
            for line in head["columns"]:
                lines.append(f"  {line['text']}")
                if line["detail"]:
                    lines.append(f"    {line['detail']}")
    else:
        lines.extend(_properties(properties))
    minimized = minimized_view(record)
    if minimized is not None and minimized["done"]:
        keys = f" ({minimized['key_counts']})" if minimized["key_counts"] else ""
        lines.append(
            f"minimized: {minimized['rows']}{keys} in {minimized['runs']} runs, "
            f"{minimized['time']} ({minimized['status']}); test: {minimized['test']}"
        )
    recovery = _recovery(record)
    if recovery is not None:
        c = recovery
        lines.append(
            f"recovery: {c['injected']} of {c['planned']} crashes injected, "
            f"{c['recovered']} recovered, {c['attempts']} starts, {c['batches']} batches; "
            f"checked by {c['check']}"
        )
        for crash in c["crashes"]:
            back = crash.get("recovered_in")
            took = "never recovered" if back is None else f"recovered in {back:.1f}s"
            lines.append(
                f"  crash {crash.get('number')}: {crash.get('target')} killed at "
                f"{crash.get('at', 0):.1f}s, {crash.get('where')} "
                f"(batch {crash.get('batch')}), {took}"
            )
        if c["invalid"]:  # the store is untrusted: what could not be read is said, not shown
            lines.append(f"  note: {invalid_note(c)}")
    if empty_outputs(record.stats):
        lines.append(f"warning: {EMPTY_WARNING}")
    if record.schema is not None and record.schema.findings:
        lines.append(f"schema: {record.schema.summary()} under schema.mode {record.schema.mode}")
        lines.extend(
            f"  {'divergent' if f.divergent else 'listed   '} {f.kind:<11} {f.explain()}"
            for f in record.schema.findings
        )
    if record.error:
        # A traceback keeps its lines; any other break (a carriage return) is escaped.
        first, *rest = record.error.rstrip("\n").split("\n")
        lines.append(f"error: {first}")
        lines.extend(f"  {line}" for line in rest)
    lines.extend(_expectations(record))
    lines.extend(_approvals(approvals))
    if record.divergences:
        lines.extend(_witnesses(record, head))
    return "".join(printable(line) + "\n" for line in lines)


#: witness patterns whose first example the text summary shows as a table
PATTERNS_SHOWN = 5


def _witnesses(record: RunRecord, head: dict[str, Any] | None) -> list[str]:
    """The stored witnesses by pattern (kind and differing columns), with the first
    example of each as the side-by-side table ``parity compare`` prints."""
    stored = len(record.divergences)
    total = record.total_divergences
    which = f"all {stored}" if stored >= total else f"the first {stored} of {total:,}"
    lines = [
        f"witnesses: {which} divergences stored "
        f"(parity report {record.run_id} --html PATH shows them all)"
    ]
    groups = patterns(record.divergences) if head is None else head["patterns"]
    by_ordinal = {d.ordinal: d for d in record.divergences}
    equality = _equality(record)
    for group in groups[:PATTERNS_SHOWN]:
        lines.append("")
        lines.append(f"pattern: {group['text']}: {group['count']} of the {stored} stored")
        example = by_ordinal[group["first"]]
        lines.extend(
            witness_lines(
                example.ordinal + 1, record.total_divergences, example.to_divergence(), equality
            )
        )
    if len(groups) > PATTERNS_SHOWN:
        lines.append("")
        lines.append(f"... and {len(groups) - PATTERNS_SHOWN} more patterns (see the HTML report)")
    return lines


def _equality(record: RunRecord) -> Equality:
    """The columns the run's spec ignored (marked in the tables); none when unknown."""
    spec = record.spec if isinstance(record.spec, dict) else {}
    equality = spec.get("equality") if isinstance(spec.get("equality"), dict) else {}
    ignore = equality.get("ignore") if isinstance(equality, dict) else None
    names = [c for c in ignore if isinstance(c, str)] if isinstance(ignore, list) else []
    return Equality(ignore=frozenset(names))


def _properties(document: dict[str, Any]) -> list[str]:
    """What testing the operator found: each property, its class or key, and the shrunk
    evidence input that makes it definite."""
    key = document.get("key") or []
    lines = [
        f"properties: {document.get('operator')} ({document.get('shape')}), technique "
        f"{document.get('technique')}, budget {document.get('budget')}, seed "
        f"{document.get('seed')}" + (f", key {', '.join(map(str, key))}" if key else "")
    ]
    for row in property_rows(document):
        found = "-" if row["found"] is None else "found" if row["found"] else "potentially not"
        details = [row["state"]]
        if row["key"]:
            details.append(f"key {', '.join(map(str, row['key']))}")
        if row["tests"]:
            details.append(f"{row['tests']} test{'s' if row['tests'] != 1 else ''}")
        lines.append(f"  {row['name']:<24}{found:<17}{', '.join(details)}")
        if row["evidence"] is not None:
            shrunk = "" if row["shrunk_from"] is None else f" (shrunk from {row['shrunk_from']})"
            lines.append(f"    evidence input{shrunk}: {row['evidence']}")
    return lines


def _approvals(approvals: RunApprovals | None) -> list[str]:
    """``approval: approved by alice ...: why``, what it accepted, then the trail."""
    from parity.views.approvals import describe_row, describe_signature, describe_state

    if approvals is None or (approvals.state is None and not approvals.trail):
        return []
    lines = [f"approval: {describe_state(approvals)}"]
    if approvals.approval is not None:
        accepted = describe_signature(approvals.approval.divergences)
        gate = " (opens the gate)" if approvals.opens_gate else ""
        lines.append(f"  accepted: {accepted}{gate}")
    lines.extend(f"  {describe_row(row)}" for row in approvals.trail)
    return lines


#: failed expectations listed in the text summary (the HTML report and Data Docs list all)
FAILED_SHOWN = 20


def _expectations(record: RunRecord) -> list[str]:
    """The totals, then each failed expectation: which suite and side, what it asked of
    which column, and what was observed."""
    if not record.expectations_total:
        return ["expectations: none recorded"]
    failed, total = record.expectations_failed, record.expectations_total
    docs = data_docs_path(record)
    lines = [
        f"expectations: {total - failed} of {total} met" + (f"; Data Docs {docs}" if docs else "")
    ]
    failures = [r for r in record.expectations if not r.success]
    for result in failures[:FAILED_SHOWN]:
        asked = ", ".join(
            f"{k}={_clip(compact(v))}" for k, v in result.kwargs.items() if k not in _NOT_ASKED
        )
        seen = "" if result.observed is None else f": observed {_clip(compact(result.observed))}"
        lines.append(
            f"  failed: {result.suite} ({result.side}) {result.expectation_type}({asked}){seen}"
        )
    if len(failures) > FAILED_SHOWN:
        lines.append(f"  ... and {len(failures) - FAILED_SHOWN} more failed (--html shows all)")
    return lines


_NOT_ASKED = frozenset({"result_format", "batch_id", "catch_exceptions", "meta"})


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
