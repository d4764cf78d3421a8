"""What ``parity report RUN_ID`` prints without options: a few lines about a stored run.

Every line goes through ``parity.cli.render.printable``: the validation, versions, gate reason,
error, schema findings and paths were stored by jobs and users, and a terminal must show
their control characters (an escape sequence in a version label) rather than act on them.
"""

from __future__ import annotations

from matcher.gate import empty_outputs
from matcher.store import RunRecord
from matcher.verdict import EMPTY_WARNING
from parity.views.printable import compact, printable
from parity.views.report import data_docs_path
from parity.views.report import recovery_view as _recovery

GATE = {None: "gate not decided", True: "gate passed", False: "gate closed"}


def render_summary(record: RunRecord) -> str:
    """The run in a few lines, ending in a newline, safe for a terminal."""
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
        f"counts: {counts} ({record.total_divergences} total)",
    ]
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
    lines.append(_expectations(record))
    if record.divergences:
        lines.append(
            f"witnesses: {len(record.divergences)} stored "
            f"(parity report {record.run_id} --html PATH shows them)"
        )
    return "".join(printable(line) + "\n" for line in lines)


def _expectations(record: RunRecord) -> str:
    if not record.expectations_total:
        return "expectations: none recorded"
    failed, total = record.expectations_failed, record.expectations_total
    docs = data_docs_path(record)
    return f"expectations: {total - failed} of {total} met" + (
        f"; Data Docs {docs}" if docs else ""
    )
