"""The run report: one stored run as a JSON document and as a self-contained HTML page.

    parity report RUN_ID [--html PATH] [--json] [--db URL]

    from parity.views.report import render_report_html, report_document
    record = Store.open().get_run("parity__taxi/scheduled__2026-01-02")
    document = report_document(record)          # JSON-safe dict
    page = render_report_html(record, links={"Airflow DAG run": "/dags/parity__taxi/runs/x"})
    document = report_document(record, run_approvals(store, record))   # with its approvals

The page answers, in order: the verdict (and whether the gate opened); how much of each
side matched, the counts per kind and a line per column that differed, all on the first
screen (``parity.views.headline``); the approvals; the expectation results per suite (each
with its arguments, what GX observed, the unexpected counts and GX's sample of unexpected
values: the page shows offline what GX's Data Docs, which load their styles and scripts
from public CDNs, show only online) with a link to the Data Docs; the schema findings
(added, removed, retyped, nullability, order; divergent or listed); the witnesses grouped
by pattern (kind and differing columns), one example of each open as a side-by-side diff
of the reference and the candidate event with the differing columns highlighted, the
others folded; how much noise the reference showed and which divergences it explains;
per-side row, key and barrier counts; the run's facts, and its spec folded. A recovery run
adds its crash log; a properties run (no verdict: it judges nothing) shows its properties
instead of the divergence counts (``parity.views.properties``).

The page needs no network: inline CSS, no script, no external resource. Every value that
came from data (events, keys, column names, versions, errors, expectation results) is
escaped by Jinja2's autoescaping (``parity/views/templates/report.html.j2``); nothing is marked
safe, and control characters are shown as escapes (``parity.views.printable``: the page
may be printed on a terminal with ``--html -``). A link's target is either a URL of a safe
scheme (``link_target``: http, https, file, or none) or a file path made a link that no
browser reads as a scheme (``path_link``); anything else is shown as text, never linked.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2

from matcher import uris
from matcher.gate import empty_outputs
from matcher.serialize import json_safe
from matcher.store import DATA_DOCS_DIR, ExpectationRecord, RunRecord, StoredDivergence
from matcher.store.records import PROPERTIES
from matcher.uris import local_path
from matcher.verdict import EMPTY_WARNING, KINDS
from parity.views.approvals import RunApprovals, describe_row, describe_signature, describe_state
from parity.views.crash_log import recovery_view
from parity.views.headline import headline
from parity.views.printable import compact, printable
from parity.views.printable import show as shown
from parity.views.profile import rows as profile_rows
from parity.views.properties import properties_document, property_rows

#: the ``links`` key whose URL replaces the default link to the Data Docs
DATA_DOCS_LINK = "data_docs"
#: longest value shown in a witness table cell; longer ones end in "..."
VALUE_WIDTH = 200
MISSING = "—"
SIDES = ("reference", "candidate")
#: noisy keys (and other lists in the noise report) shown on the page; the rest are counted
NOISE_ITEMS = 20
#: unexpected values of an expectation shown on the page (GX keeps up to 20)
UNEXPECTED_ITEMS = 20
#: the URL schemes a page links to; any other (``javascript:``, ``data:``) is shown as text
SAFE_SCHEMES = ("http", "https", "file")


def report_document(record: RunRecord, approvals: RunApprovals | None = None) -> dict[str, Any]:
    """The run as one JSON-safe document (what ``parity report --json`` prints);
    ``approvals`` (``parity.views.approvals.run_approvals``) under ``approvals`` (``null``:
    not read)."""
    return {
        "run_id": record.run_id,
        "validation": record.validation,
        "kind": record.kind,
        "trigger": record.trigger,
        "engine": record.engine,
        "status": record.status,
        "verdict": record.verdict,
        "gate_passed": record.gate_passed,
        "gate_reason": record.gate_reason,
        "error": record.error,
        "versions": {
            "reference": record.reference_version,
            "candidate": record.candidate_version,
        },
        "slice": json_safe(record.slice),
        "timings": {
            "started_at": record.started_at.isoformat(),
            "finished_at": None if record.finished_at is None else record.finished_at.isoformat(),
            "duration_seconds": (
                None if record.duration is None else record.duration.total_seconds()
            ),
        },
        # what matched and what differs, at a glance (``parity.views.headline``)
        "headline": None if record.kind == PROPERTIES else headline(record),
        "counts": {kind: record.counts[kind] for kind in KINDS},
        "total_divergences": record.total_divergences,
        "empty": empty_outputs(record.stats),
        "warnings": [EMPTY_WARNING] if empty_outputs(record.stats) else [],
        "noise": _noise(record),
        "recovery": recovery_view(record),
        # a properties run's report, as ``parity properties --json`` printed it
        "properties": properties_document(record),
        "sides": _sides(record.stats),
        "stats": json_safe(record.stats),
        "column_stats": [
            {"column": c.column, "mismatches": c.mismatches, "extra": json_safe(c.extra)}
            for c in sorted(record.column_stats, key=lambda c: (-c.mismatches, c.column))
        ],
        "divergences": [_divergence(d, _explanations(record.noise)) for d in record.divergences],
        "expectations": _expectations(record),
        "airflow": {
            "dag_id": record.dag_id,
            "dag_run_id": record.dag_run_id,
            "task_try": record.task_try,
        },
        "report_path": record.report_path,
        "spec": json_safe(record.spec),
        "schema": None if record.schema is None else json_safe(record.schema.to_dict()),
        "spec_hash": record.spec_hash,
        "approvals": None if approvals is None else approvals.to_dict(),
    }


def data_docs_path(record: RunRecord) -> str | None:
    """Where the expectations step wrote the run's Data Docs (``None``: no results): a path,
    or a URI when the run's workspace is on shared storage."""
    if record.report_path is None or not record.expectations:
        return None
    return uris.join(record.report_path, DATA_DOCS_DIR, "index.html")


def _noise(record: RunRecord) -> dict[str, Any] | None:
    """The noise the reference showed, and which stored witnesses it explains."""
    explained = [d.ordinal for d in record.divergences if d.noisy]
    if record.noise is None and not explained:
        return None
    noise = json_safe(record.noise) or {}
    return {
        **noise,
        "explained_divergences": explained,
        "unexplained_divergences": [d.ordinal for d in record.divergences if not d.noisy],
    }


def _sides(stats: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per-side statistics, as the match job stores its ``side_stats``: the ``reference``,
    ``candidate`` and ``rerun*`` entries of the run's stats that are mappings."""
    return {
        side: dict(values)
        for side, values in (stats or {}).items()
        if (side in SIDES or side.startswith("rerun")) and isinstance(values, Mapping)
    }


def _explanations(noise: Mapping[str, Any] | None) -> dict[int, Any]:
    """What explained each stored witness, by ordinal (the noise report's ``witnesses``)."""
    entries = (noise or {}).get("witnesses")
    if not isinstance(entries, list):
        return {}
    return {
        e["ordinal"]: e.get("explained_by")
        for e in entries
        if isinstance(e, Mapping) and isinstance(e.get("ordinal"), int)
    }


def _divergence(d: StoredDivergence, explanations: Mapping[int, Any]) -> dict[str, Any]:
    ref, cand = d.reference_event, d.candidate_event
    names = list(ref or {}) + [name for name in cand or {} if name not in (ref or {})]
    differing = set(d.columns)
    diff = []
    for name in names:
        row: dict[str, Any] = {"column": name, "differs": name in differing}
        if ref is not None and name in ref:
            row["reference"] = ref[name]
        if cand is not None and name in cand:
            row["candidate"] = cand[name]
        diff.append(row)
    return {
        "ordinal": d.ordinal,
        "kind": d.kind,
        "key": d.key,
        "noisy": d.noisy,
        "explained_by": json_safe(explanations.get(d.ordinal)),
        "reference_position": d.reference_position,
        "candidate_position": d.candidate_position,
        "partner_reference_position": d.partner_reference_position,
        "partner_candidate_position": d.partner_candidate_position,
        "columns": list(d.columns),
        "explanation": d.explain(),
        "reference_event": ref,
        "candidate_event": cand,
        "diff": diff,
    }


def _expectations(record: RunRecord) -> dict[str, Any]:
    suites: list[dict[str, Any]] = []
    for result in record.expectations:
        if not suites or (suites[-1]["suite"], suites[-1]["side"]) != (result.suite, result.side):
            suites.append(
                {"suite": result.suite, "side": result.side, "success": True, "results": []}
            )
        suites[-1]["success"] = suites[-1]["success"] and result.success
        suites[-1]["results"].append(_expectation(result))
    return {
        "passed": record.expectations_passed,
        "total": record.expectations_total,
        "failed": record.expectations_failed,
        "data_docs": data_docs_path(record),
        "suites": suites,
    }


def _expectation(result: ExpectationRecord) -> dict[str, Any]:
    return {
        "expectation_type": result.expectation_type,
        "kwargs": json_safe(result.kwargs),
        "success": result.success,
        "observed": json_safe(result.observed),
        "details": json_safe(result.details),
    }


# -- HTML ------------------------------------------------------------------------------------


def render_report_html(
    record: RunRecord,
    *,
    links: Mapping[str, str] = {},
    approvals: RunApprovals | None = None,
    approval_form: Mapping[str, Any] | None = None,
) -> str:
    """The run as one self-contained HTML page (a ``str``; write it as UTF-8).

    ``links`` maps a label to a URL shown at the top of the page (the Airflow DAG run, the
    history page); ``links["data_docs"]``, when given, is the Data Docs URL instead of the
    run's report folder (``Run.report_path``/data_docs/index.html). ``approvals`` are shown
    in their section; ``approval_form`` (``approve``/``revoke``: the URLs to POST to, or
    ``None``; ``token``: a hidden field's value) adds the form to it.
    """
    document = report_document(record, approvals)
    docs_path = document["expectations"]["data_docs"]
    if DATA_DOCS_LINK in links:
        data_docs = (links[DATA_DOCS_LINK], link_target(links[DATA_DOCS_LINK]))
    elif docs_path is not None:
        data_docs = (docs_path, path_link(docs_path))
    else:
        data_docs = None
    template = _environment().get_template("report.html.j2")
    return template.render(
        doc=document,
        kinds=KINDS,
        links=[
            (label, url, link_target(url))
            for label, url in links.items()
            if label != DATA_DOCS_LINK
        ],
        data_docs=data_docs,
        expectation_suites=[_suite_view(suite) for suite in document["expectations"]["suites"]],
        witnesses=[_witness_view(d, record.total_divergences) for d in document["divergences"]],
        patterns=_pattern_views(document),
        profile_rows=profile_rows(record.column_stats),
        differences=_differences_view(record),
        minimized=minimized_view(record),
        side_metrics=_side_metrics(document["sides"]),
        scalar_stats=_scalar_stats(document["stats"]),
        noise_rows=_noise_rows(document["noise"]),
        schema_rows=_schema_rows(document["schema"]),
        property_rows=[]
        if document["properties"] is None
        else property_rows(document["properties"]),
        suggested_spec=_suggested_spec(record),
        approvals=_approvals_view(approvals),
        approval_form=approval_form,
    )


def _differences_view(record: RunRecord) -> dict[str, Any] | None:
    """The run's table of every difference (``output.differences``): where, how many rows,
    a link when it is a local path, and the command that exports it."""
    stored = (record.stats or {}).get("differences")
    if not isinstance(stored, Mapping) or not isinstance(stored.get("path"), str):
        return None
    path = stored["path"]
    return {
        "path": path,
        "link": path_link(path) if local_path(path) is not None else None,
        "rows": stored.get("rows"),
        "command": f"parity report {record.run_id} --differences differences.parquet",
    }


def minimized_view(record: RunRecord) -> dict[str, Any] | None:
    """``parity minimize``'s result stored with the run (``stats["minimized"]``): rows and
    keys before and after, runs, time, what still diverges, where the input and the
    regression test are. A divergent pipeline run not yet minimized gets the command
    instead; any other run, ``None``."""
    stored = (record.stats or {}).get("minimized")
    if not isinstance(stored, Mapping):
        if record.verdict != "divergent" or not record.report_path:
            return None
        return {"done": False, "command": f"parity minimize {record.run_id}"}
    test = stored.get("test") if isinstance(stored.get("test"), str) else None
    source = stored.get("input") if isinstance(stored.get("input"), str) else None
    keys = None
    if isinstance(stored.get("keys_before"), int) and isinstance(stored.get("keys_after"), int):
        unit = stored.get("unit") if stored.get("unit") in ("keys", "segments") else "keys"
        keys = f"{stored['keys_before']:,} → {stored['keys_after']:,} {unit}"
    seconds = stored.get("seconds")
    return {
        "done": True,
        "rows": f"{_whole(stored.get('rows_before'))} → {_whole(stored.get('rows_after'))} rows",
        "key_counts": keys,
        "runs": _whole(stored.get("runs")),
        "time": f"{seconds:.0f}s" if isinstance(seconds, int | float) else "?",
        "status": str(stored.get("status", "")),
        "reproduces": str(stored.get("reproduces", "")),
        "input": source,
        "input_link": path_link(source) if source and local_path(source) else None,
        "test": test,
        "test_link": path_link(test) if test and local_path(test) else None,
        "command": f"pytest {test}" if test else None,
    }


def _whole(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"


def _approvals_view(approvals: RunApprovals | None) -> dict[str, Any] | None:
    """The approvals section: the run's state in words and the trail, one row each."""
    if approvals is None:
        return None
    shown = approvals.approval
    return {
        "state": approvals.state,
        "opens_gate": approvals.opens_gate,
        "summary": describe_state(approvals),
        "accepted": None if shown is None else describe_signature(shown.divergences),
        "rows": [
            {
                "number": row.approval_id,
                "action": "revoked" if row.action == "revoke" else "approved",
                "revokes": row.revokes,
                "actor": row.actor,
                "at": row.at.isoformat(),
                "reason": row.reason,
                "signature": describe_signature(row.divergences),
                "line": describe_row(row),
            }
            for row in approvals.trail
        ],
    }


def _suggested_spec(record: RunRecord) -> str | None:
    """A properties run's suggested spec sections (``parity properties --suggest-spec``)."""
    stats = record.stats if isinstance(record.stats, Mapping) else {}
    text = stats.get("suggested_spec")
    return text if isinstance(text, str) and record.kind == PROPERTIES else None


@cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("parity.views", "templates"),
        autoescape=True,  # every {{ }} is escaped; the template never uses |safe
        finalize=_printable,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["show"] = show
    environment.filters["when"] = _when
    environment.filters["duration"] = _duration
    environment.filters["compact"] = compact
    return environment


def _printable(value: Any) -> Any:
    """Every ``{{ }}`` of the page: text with its control characters shown as escapes (a
    terminal would act on them, and HTML forbids most); line breaks and tabs stay."""
    return printable(value, keep="\n\t") if isinstance(value, str) else value


def link_target(url: str) -> str | None:
    """``url`` when a page may link to it: a safe scheme (``SAFE_SCHEMES``) or none (a
    relative or root-relative URL); ``None`` (show it as text) for any other scheme, and for
    a URL with whitespace or control characters at its ends or inside, which browsers drop
    before they read the scheme (``java\\tscript:``)."""
    if not url or not url.isprintable() or url != url.strip():
        return None
    scheme = urlsplit(url).scheme.lower()
    return url if scheme in ("", *SAFE_SCHEMES) else None


def path_link(path: str) -> str:
    """A file path as a link: absolute, a ``file:`` URL; relative, the path percent-encoded
    (``:`` included), so that ``javascript:alert(1)/index.html`` is a folder, not a scheme."""
    posix = PurePosixPath(path)
    if posix.is_absolute():
        return posix.as_uri()
    return quote(path)


def show(value: Any) -> str:
    """A data value as one line, objects as compact JSON, cut to ``VALUE_WIDTH`` (wider than
    the terminal's)."""
    return shown(value, width=VALUE_WIDTH, documents=True)


def _when(iso: str | None) -> str:
    if iso is None:
        return MISSING
    at = dt.datetime.fromisoformat(iso).astimezone(dt.UTC)
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    if hours:
        return f"{hours}h {minutes}m {rest:.0f}s"
    return f"{minutes}m {rest:.1f}s" if minutes else f"{rest:.1f}s"


def _suite_view(suite: Mapping[str, Any]) -> dict[str, Any]:
    """A suite's results as the page's rows: what GX observed in words, and the sample of
    unexpected values it kept (``partial_unexpected_list``), each shown like an event value."""
    rows = []
    for result in suite["results"]:
        details = result["details"] if isinstance(result["details"], Mapping) else {}
        rows.append(
            {
                "expectation_type": result["expectation_type"],
                "kwargs": compact(result["kwargs"]),
                "success": result["success"],
                "observed": _observed(result["observed"]),
                "unexpected": _unexpected(details.get("partial_unexpected_list")),
            }
        )
    return {**suite, "rows": rows}


def _unexpected(sample: Any) -> str:
    """GX's sample of unexpected values, each as a witness shows a value (``'T9', None``)."""
    if not isinstance(sample, list) or not sample:
        return MISSING
    shown = ", ".join(show(value) for value in sample[:UNEXPECTED_ITEMS])
    more = len(sample) - UNEXPECTED_ITEMS
    return f"{shown} ... and {more} more" if more > 0 else shown


def _observed(observed: Any) -> str:
    """GX's observed value; for an expectation about column values (the runner stores its
    counts), the counts in words: ``2 of 35 unexpected (5.71%); 1 missing, not checked``
    (GX checks the values that are not null: its percentage is of those)."""
    counts = observed if isinstance(observed, Mapping) else {}
    unexpected, total = counts.get("unexpected_count"), counts.get("element_count")
    if not (isinstance(unexpected, int) and isinstance(total, int)):
        return show(observed)
    missing = counts.get("missing_count")
    missing = missing if isinstance(missing, int) else 0
    checked = total - missing
    words = f"{unexpected} of {checked} unexpected"
    if checked > 0:
        words += f" ({100 * unexpected / checked:.3g}%)"
    if missing:
        words += f"; {missing} missing, not checked"
    return words


def _witness_view(d: Mapping[str, Any], total: int) -> dict[str, Any]:
    key = "" if d["key"] is None else f", key {show(d['key'])}"
    near_ref = "near " if d["kind"] == "duplication" else ""
    near_cand = "near " if d["kind"] == "loss" else ""
    title = (
        f"Divergence {d['ordinal'] + 1} of {total}: {d['kind']}{key}, "
        f"reference {near_ref}#{_position(d['reference_position'])}, "
        f"candidate {near_cand}#{_position(d['candidate_position'])}"
    )
    rows = [
        {
            "column": row["column"],
            "differs": row["differs"],
            "reference": show(row["reference"]) if "reference" in row else MISSING,
            "candidate": show(row["candidate"]) if "candidate" in row else MISSING,
            "reference_absent": "reference" not in row,
            "candidate_absent": "candidate" not in row,
        }
        for row in d["diff"]
    ]
    return {**d, "title": title, "rows": rows}


def _pattern_views(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stored witnesses by pattern (``parity.views.headline.patterns``), each with its
    witnesses' views, the first being the example the page shows open."""
    head = document["headline"]
    if head is None:
        return []
    total = document["total_divergences"]
    views: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}
    for d in document["divergences"]:
        views.setdefault((d["kind"], tuple(sorted(d["columns"]))), []).append(
            _witness_view(d, total)
        )
    return [
        {**group, "witnesses": views.get((group["kind"], tuple(group["columns"])), [])}
        for group in head["patterns"]
    ]


def _position(position: int | None) -> str:
    return "?" if position is None else str(position)


def _side_metrics(sides: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """Rows of the per-side table: each metric with its value on every side."""
    metrics: list[str] = []
    for values in sides.values():
        metrics.extend(m for m in values if m not in metrics)
    return [
        (metric, [str(values.get(metric, MISSING)) for values in sides.values()])
        for metric in metrics
    ]


def _scalar_stats(stats: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The statistics that are not per side: counts, timings, the dependence."""
    sides = _sides(stats)
    return [
        (name, value if isinstance(value, str) else compact(value))
        for name, value in (stats or {}).items()
        if name not in sides and name != "minimized"  # a section of its own
    ]


def _schema_rows(schema: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The schema findings as table rows: what changed, each side, and whether it made the
    run divergent or is only listed (``matcher.schema``)."""
    rows = []
    for finding in (schema or {}).get("findings", ()):
        sides = [finding.get(side) for side in SIDES]
        shown = [
            MISSING if v is None else ", ".join(map(str, v)) if isinstance(v, list) else str(v)
            for v in sides
        ]
        rows.append(
            {
                "weight": "divergent" if finding.get("divergent") else "listed",
                "kind": str(finding.get("kind")),
                "column": MISSING if finding.get("column") is None else str(finding["column"]),
                "reference": shown[0],
                "candidate": shown[1],
                "explanation": str(finding.get("explanation", "")),
            }
        )
    return rows


def _noise_rows(noise: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The noise report as rows; its summary and per-witness entries are shown elsewhere."""
    if noise is None:
        return []
    elsewhere: Sequence[str] = (
        "summary", "witnesses", "explained_divergences", "unexplained_divergences",
    )  # fmt: skip
    return [(name, _noise_value(value)) for name, value in noise.items() if name not in elsewhere]


def _noise_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return compact(value)
    items = [_noise_item(item) for item in value[:NOISE_ITEMS]]
    more = f" ... and {len(value) - NOISE_ITEMS} more" if len(value) > NOISE_ITEMS else ""
    return ", ".join(items) + more if items else "none"


def _noise_item(item: Any) -> str:
    """A noisy key ``{key, order, events}`` as ``'T1' (order, events)``."""
    if isinstance(item, Mapping) and "key" in item:
        flags = [flag for flag in ("order", "events") if item.get(flag)]
        return show(item["key"]) + (f" ({', '.join(flags)})" if flags else "")
    return show(item)
