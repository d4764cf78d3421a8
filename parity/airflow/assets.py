"""Every verdict as an Airflow Asset event: ``parity://<validation>``, its extra the verdict.

The ``record`` task of a validation (its own DAG or a ``validation_group``) has the outlet
``validation_asset(name)`` and sets its event's extra to ``event_extra(...)``, whatever the
verdict: open, closed, or a failed run (verdict ``error``). A deploy DAG is scheduled on it
and deploys only when the newest event says the gate is open::

    from parity.airflow.assets import deploy_decision, validation_asset

    @dag(schedule=[validation_asset("taxi_parallel")], ...)
    def deploy_taxi():
        @task.short_circuit
        def gate_open(**context):
            decision = deploy_decision(context["triggering_asset_events"],
                                       validation_asset("taxi_parallel"))
            print(decision.line)
            return decision.deploy

The extra's keys: ``validation``, ``run_id``, ``dag_run_id``, ``verdict``, ``gate`` (``open`` or
``closed``), ``passed``, ``reason``, ``candidate_version``, ``reference_version``, ``counts``,
``spec_hash``. Imports Airflow only where an ``Asset`` is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matcher.printable import printable
from matcher.store import RunSummary

ASSET_SCHEME = "parity"
#: the keys of an event's extra, in the order they are written
EXTRA_KEYS = (
    "validation",
    "run_id",
    "dag_run_id",
    "verdict",
    "gate",
    "passed",
    "reason",
    "candidate_version",
    "reference_version",
    "counts",
    "spec_hash",
)


def asset_uri(validation: str) -> str:
    """``parity://<validation>``: the name (and URI) of the validation's Asset."""
    return f"{ASSET_SCHEME}://{validation}"


def validation_asset(validation: str) -> Any:
    """The Asset every verdict of ``validation`` updates."""
    from airflow.sdk import Asset

    return Asset(asset_uri(validation))


def event_extra(
    run: RunSummary | None,
    *,
    validation: str,
    run_id: str,
    dag_run_id: str,
    passed: bool,
    reason: str,
) -> dict[str, Any]:
    """The event's extra for the gate ``passed``/``reason`` of the stored ``run`` (``None``:
    the run is not in the store; its verdict is then ``error``). JSON values only."""
    verdict = (run.verdict if run is not None else None) or "error"
    return {
        "validation": validation,
        "run_id": run_id,
        "dag_run_id": dag_run_id,
        "verdict": verdict,
        "gate": "open" if passed else "closed",
        "passed": passed,
        "reason": reason,
        "candidate_version": None if run is None else run.candidate_version,
        "reference_version": None if run is None else run.reference_version,
        "counts": {} if run is None else {k: int(n) for k, n in run.counts.items()},
        "spec_hash": None if run is None else run.spec_hash,
    }


def publish(context: Mapping[str, Any], validation: str, extra: Mapping[str, Any]) -> None:
    """Set the extra of the running task's event on the validation's Asset (the task must
    have it as an outlet: Airflow emits the event when the task succeeds)."""
    context["outlet_events"][validation_asset(validation)].extra = dict(extra)


@dataclass(frozen=True, slots=True)
class DeployDecision:
    """What a deploy DAG does with the events that triggered it: ``deploy`` or not, the
    newest event's ``extra`` (``None``: there was none), and one ``line`` saying why."""

    deploy: bool
    extra: Mapping[str, Any] | None
    line: str


def deploy_decision(triggering: Any, asset: Any) -> DeployDecision:
    """Deploy only when the newest event on ``asset`` among ``triggering`` (a DAG run's
    ``triggering_asset_events``: events by asset) says the gate is open. The newest decides:
    an open verdict followed by a closed one must not ship."""
    events: Sequence[Any] = list(triggering.get(asset) or ())
    if not events:
        return DeployDecision(False, None, f"no event on {asset.uri}: nothing to deploy")
    newest = max(events, key=lambda event: event.timestamp)
    extra = dict(newest.extra or {})
    return decide(extra)


def decide(extra: Mapping[str, Any]) -> DeployDecision:
    """The decision on one event's extra: deploy only when ``gate`` is ``open``."""
    validation = printable(str(extra.get("validation", "?")))
    version = printable(str(extra.get("candidate_version") or "(no version)"))
    verdict = printable(str(extra.get("verdict", "?")))
    reason = printable(str(extra.get("reason", "")))
    if extra.get("gate") == "open":
        line = f"gate open: {validation} {version} ({verdict}): deploying"
        return DeployDecision(True, extra, line)
    line = f"gate {printable(str(extra.get('gate', '?')))}: {validation} {version} ({verdict})"
    return DeployDecision(False, extra, f"{line}: {reason}: not deploying")
