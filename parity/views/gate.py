"""The deploy gate as read from the results store: "may it ship?".

``decide`` is the gate's decision on a stored run (``matcher.gate.evaluate`` on its verdict
and expectation results); the pipeline stores it with the run (``parity.airflow.gate``) and
``stored_decision`` reads it back. ``gate_status`` is what ``parity gate`` and the UI's JSON
API read: the recorded decision, or, for a run recorded outside Airflow (no decision
stored), the decision evaluated now with the gate policy the match job stored in the run's
spec document.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from matcher.gate import GateDecision, GateSpec, empty_outputs, evaluate
from matcher.serialize import json_safe
from matcher.store import RunRecord, RunSummary, Store, StoreError, UnknownRunError
from parity.views.printable import printable

EXIT_PASSED, EXIT_FAILED, EXIT_NO_RUN = 0, 1, 2


def stored_decision(store: Store, run_id: str) -> GateDecision:
    """The gate decision stored with the run (``record_run_gate``); the pipeline's ``gate``
    task fails the DAG run when it did not pass. A failed run's gate is closed."""
    run = store.get_run(run_id)
    if run is None:
        raise UnknownRunError(f"cannot read the gate of run {run_id!r}: there is no such run")
    if run.gate_passed is None:
        raise StoreError(f"run {run_id!r} has no gate decision: record_run_gate did not run")
    return GateDecision(run.gate_passed, run.gate_reason or "(no reason was recorded)")


def decide(policy: GateSpec, run: RunRecord, *, expected_suites: int = 0) -> GateDecision:
    """The gate's decision on a stored run (``matcher.gate.evaluate`` on its verdict,
    expectation results and the overrides its trigger made)."""
    return evaluate(
        policy,
        run.verdict,
        expectations_passed(run),
        expected_suites=expected_suites,
        empty=empty_outputs(run.stats),
        overrides=run.overrides,
    )


def expectations_passed(run: RunRecord) -> bool | None:
    """All the run's expectation results succeeded (``None``: it has none)."""
    if not run.expectations:
        return None
    return all(result.success for result in run.expectations)


@dataclass(frozen=True, slots=True)
class GateStatus:
    """The gate of a validation (and candidate version), as ``parity gate`` reports it.

    ``passed`` is ``None`` when there is no completed run; ``recorded`` is whether the
    decision is the one the pipeline stored (else it was evaluated now); ``newer`` is a run
    that started later and has not completed (running, or failed), worth knowing about.
    """

    validation: str
    candidate_version: str | None
    passed: bool | None
    reason: str
    run: RunRecord | None = None
    recorded: bool = False
    newer: RunSummary | None = None

    @property
    def exit_code(self) -> int:
        if self.passed is None:
            return EXIT_NO_RUN
        return EXIT_PASSED if self.passed else EXIT_FAILED

    @property
    def state(self) -> str:
        """``passed``, ``failed``, or ``no run``."""
        if self.passed is None:
            return "no run"
        return "passed" if self.passed else "failed"

    def headline(self) -> str:
        """One line: the validation, the outcome, and why."""
        which = "" if self.candidate_version is None else f" (candidate {self.candidate_version})"
        return printable(f"{self.validation}{which}: gate {self.state}: {self.reason}")

    def details(self) -> list[str]:
        """A few ``name: value`` lines about the run the decision rests on."""
        lines: list[str] = []
        run = self.run
        if run is not None:
            finished = "" if run.finished_at is None else f", finished {_iso(run.finished_at)}"
            lines.append(f"run: {run.run_id} ({run.trigger}{finished})")
            versions = f"candidate {run.candidate_version or '-'}"
            lines.append(f"versions: {versions}, reference {run.reference_version or '-'}")
            counts = ", ".join(f"{kind} {n}" for kind, n in run.counts.items() if n)
            lines.append(f"verdict: {run.verdict}" + (f" ({counts})" if counts else ""))
            if run.overrides:
                lines.append(
                    f"overrides: {', '.join(run.overrides)} (the trigger's, not the spec's)"
                )
            if run.noise and isinstance(run.noise.get("summary"), str):
                lines.append(f"noise: {run.noise['summary']}")
            failed = sum(not e.success for e in run.expectations)
            total = len(run.expectations)
            lines.append(f"expectations: {total - failed} passed, {failed} failed")
            how = "recorded by the pipeline" if self.recorded else "evaluated now (none recorded)"
            lines.append(f"decision: {how}")
        if self.newer is not None:
            lines.append(
                f"note: a newer run {self.newer.run_id} is {self.newer.status}"
                f" (started {_iso(self.newer.started_at)})"
            )
        return [printable(line) for line in lines]

    def to_dict(self) -> dict[str, Any]:
        """The status as JSON-safe values (``parity gate --json``, the UI's API)."""
        document: dict[str, Any] = {
            "validation": self.validation,
            "candidate_version": self.candidate_version,
            "state": self.state,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "recorded": self.recorded,
            "run": None if self.run is None else _run_document(self.run),
            "newer_run": None if self.newer is None else _summary_document(self.newer),
        }
        return dict(json_safe(document))


def gate_status(store: Store, validation: str, candidate_version: str | None = None) -> GateStatus:
    """The gate of ``validation``'s latest completed run (of ``candidate_version``)."""
    latest = store.latest_run(validation, candidate_version, completed_only=True)
    newest = store.latest_run(validation, candidate_version, completed_only=False)
    newer = newest if newest is not None and newest.status != "completed" else None
    run = None if latest is None else store.get_run(latest.run_id)
    if run is None or run.status != "completed":
        which = "" if candidate_version is None else f" of candidate {candidate_version}"
        return GateStatus(
            validation, candidate_version, None, f"no completed run{which}", newer=newer
        )
    if newer is not None and newer.started_at <= run.started_at:
        newer = None
    if run.gate_passed is not None:
        reason = run.gate_reason or "(no reason was recorded)"
        return GateStatus(validation, candidate_version, run.gate_passed, reason, run, True, newer)
    policy, suites = stored_policy(run.spec)
    decision = decide(policy, run, expected_suites=suites)
    return GateStatus(
        validation, candidate_version, decision.passed, decision.reason, run, False, newer
    )


def stored_policy(spec: Any) -> tuple[GateSpec, int]:
    """The gate policy and the number of expectation suites in a run's spec document (the
    match job stores them); the default policy when the document has none."""
    if not isinstance(spec, Mapping):
        return GateSpec(), 0
    suites = spec.get("expectations")
    count = len(suites) if isinstance(suites, list) else 0
    gate = spec.get("gate")
    if not isinstance(gate, Mapping):
        return GateSpec(), count
    try:
        return GateSpec.from_document(gate), count
    except ValueError as exc:
        raise StoreError(f"the run's stored gate policy is invalid: {exc}") from exc


# -- helpers -------------------------------------------------------------------------------


def _summary_document(run: RunSummary) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "status": run.status,
        "verdict": run.verdict,
        "trigger": run.trigger,
        "reference_version": run.reference_version,
        "candidate_version": run.candidate_version,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "gate_passed": run.gate_passed,
        "gate_reason": run.gate_reason,
        "overrides": list(run.overrides),
    }


def _run_document(run: RunRecord) -> dict[str, Any]:
    return {
        **_summary_document(run),
        "counts": dict(run.counts),
        "total_divergences": run.total_divergences,
        "expectations": {
            "total": len(run.expectations),
            "failed": sum(not e.success for e in run.expectations),
        },
        "noise": run.noise.get("summary") if isinstance(run.noise, Mapping) else None,
    }


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")
