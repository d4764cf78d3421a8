"""What the history page and the JSON API show of a run: plain values, no HTML.

The cells use the same wording as ``parity history`` (``parity.views.history``), and a JSON
entry is ``parity history --json``'s entry plus the run's links, so the page, the API and
the command line list the same runs the same way. The gate cell is the gate now: a run
whose divergences an active approval accepts shows ``open`` and ``approved #3`` (or
``covered by #3``), a revoked approval ``revoked #3`` (``parity.views.approvals``).
Escaping is the templates' job (autoescaped Jinja2): nothing here is markup.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from matcher.schema import SchemaDiff
from matcher.store import RunSummary
from parity.views.approvals import RunApprovals, describe_state, marker
from parity.views.history import (
    NONE,
    describe_divergences,
    describe_duration,
    describe_expectations,
    describe_slice,
    describe_validation,
    gate_now,
    history_entry,
)
from parity_ui.links import dag_run_path, run_path


@dataclass(frozen=True, slots=True)
class Roots:
    """Where the plugin's pages and the Airflow UI live, as URL paths without a trailing
    slash (``/parity`` and ``""`` on a default Airflow)."""

    plugin: str
    airflow: str

    def run(self, run_id: str) -> str:
        return f"{self.plugin}/{run_path(run_id)}"

    def run_api(self, run_id: str) -> str:
        return f"{self.plugin}/api/{run_path(run_id)}"

    def dag_run(self, run: RunSummary) -> str | None:
        if run.dag_id is None or run.dag_run_id is None:
            return None
        return f"{self.airflow}/{dag_run_path(run.dag_id, run.dag_run_id)}"


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One line of the history table."""

    run_id: str
    href: str
    validation: str
    started: str
    trigger: str
    reference_version: str
    candidate_version: str
    slice: str
    verdict: str
    counts: str
    total_divergences: int
    expectations: str
    expectations_state: str
    gate: str
    duration: str
    dag_run_href: str | None
    dag_run_label: str
    error: str | None
    #: the schema findings in a few words (``None``: none), shown under the counts
    schema: str | None = None
    #: the approval's marker beside the gate (``approved #3``; ``None``: none), its state
    #: (``approved``, ``covered``, ``revoked``) and who, when, why (the cell's title)
    approval: str | None = None
    approval_state: str | None = None
    approval_title: str | None = None


def when(instant: dt.datetime) -> str:
    """``2026-01-02 03:00 UTC``."""
    return f"{instant.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"


def history_row(run: RunSummary, roots: Roots, approvals: RunApprovals | None = None) -> HistoryRow:
    passed = run.expectations_passed
    approved = approvals is not None and approvals.state is not None
    return HistoryRow(
        run_id=run.run_id,
        href=roots.run(run.run_id),
        validation=describe_validation(run),
        started=when(run.started_at),
        trigger="ad-hoc" if run.trigger == "adhoc" else run.trigger,
        reference_version=run.reference_version or NONE,
        candidate_version=run.candidate_version or NONE,
        slice=describe_slice(run.slice),
        verdict=run.verdict or run.status,
        counts=describe_divergences(run),
        total_divergences=run.total_divergences,
        expectations=describe_expectations(run),
        expectations_state="none" if passed is None else "passed" if passed else "failed",
        gate=gate_now(run, approvals) or NONE,
        duration=describe_duration(run.duration),
        dag_run_href=roots.dag_run(run),
        dag_run_label=run.dag_run_id or NONE,
        error=run.error,
        schema=describe_schema(run.schema),
        approval=marker(approvals) if approved else None,
        approval_state=approvals.state if approvals is not None and approved else None,
        approval_title=describe_state(approvals) if approvals is not None and approved else None,
    )


def describe_schema(schema: SchemaDiff | None) -> str | None:
    """``schema: 2 differences (1 divergent)``, or ``None`` when there is nothing to say."""
    if schema is None or not schema.findings:
        return None
    return f"schema: {schema.summary()}"


def run_entry(
    run: RunSummary, roots: Roots, approvals: RunApprovals | None = None
) -> dict[str, Any]:
    """One run in the JSON API: ``parity history --json``'s entry and the run's links."""
    return {
        **history_entry(run, approvals),
        "links": {
            "page": roots.run(run.run_id),
            "report": roots.run_api(run.run_id),
            "dag_run": roots.dag_run(run),
        },
    }
