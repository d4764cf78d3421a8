"""The pipeline's ``record`` step: decide a run's gate and store it with the run, once.

    record_gate(plan, spec, failed_tasks=[])   # {"passed": True, "reason": "..."}

``record_run_gate`` decides with ``parity.views.gate.decide`` (the spec's gate policy on the
run's verdict and expectation results), lets an active approval of exactly the run's
divergences open a gate the verdict alone closed (``parity.views.gate.apply_approval``), and
stores the decision with ``Store.set_gate``; the ``gate`` task reads it back. ``plan_start``
binds the run to the DAG's spec (``RunStart.spec_hash``, ``matcher.spec_digest``). No
Airflow import: the DAG's task callables call these.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from matcher.errors import SpecError
from matcher.gate import GateDecision
from matcher.spec import Spec, load_spec
from matcher.spec_digest import verdict_digest
from matcher.store import RunStart, Store, StoreError, UnknownRunError
from matcher.store.run_ids import dag_run_of
from parity.airflow.plan import RunPlan
from parity.views.gate import apply_approval, current_spec, decide


def record_run_gate(
    store: Store,
    run_id: str,
    spec: Spec,
    *,
    failed_tasks: Sequence[str] = (),
    overrides: Sequence[str] = (),
) -> GateDecision:
    """Decide the gate of the completed run ``run_id`` under ``spec``'s gate policy (its
    verdict, its stored expectation results, and the overrides stored with it) and store the
    decision with the run. ``failed_tasks``: tasks after the match that failed; they close
    the gate whatever the verdict, and the reason names them first. ``overrides``: the
    sections the run's plan overrode, counted even if the stored run lost them. A gate
    closed by the verdict alone opens on an approval of exactly the run's divergences."""
    run = store.get_run(run_id)
    if run is None:
        raise UnknownRunError(f"cannot gate run {run_id!r}: there is no such run")
    if run.status != "completed":
        raise StoreError(f"cannot gate run {run_id!r}: it is {run.status}, not completed")
    if not set(overrides) <= set(run.overrides):
        run = replace(run, overrides=tuple(dict.fromkeys((*run.overrides, *overrides))))
    suites = len(spec.expectations.suites)
    decision = decide(spec.gate, run, expected_suites=suites)
    if failed_tasks:
        decision = GateDecision(False, f"{', '.join(failed_tasks)} failed; {decision.reason}")
    else:  # a failed task is never approved away
        decision, _ = apply_approval(store, spec.gate, run, decision, expected_suites=suites)
    store.set_gate(run_id, decision.passed, decision.reason)
    return decision


def record_gate(plan: RunPlan, spec: Spec, failed_tasks: list[str]) -> dict[str, Any]:
    """Store the gate's decision on the run and return it (``passed``, ``reason``).

    * The match recorded a verdict: the gate follows the spec's policy, and is closed
      whatever the verdict when a task after the match failed.
    * A job before the match failed (or the match crashed before recording): the run is
      recorded as failed, verdict ``error``, so that the history shows it; gate closed.
    * The match job failed with an error: it marked the run failed itself; gate closed.
    """
    failed = ", ".join(failed_tasks)
    with Store.open() as store:
        stored = store.get_run(plan.run_id)
        if stored is None or stored.status == "running":
            start = plan_start(plan, spec=spec)
            store.mark_failed(plan.run_id, f"{failed or 'a task'} failed", start=start)
            stored = store.get_run(plan.run_id)
        assert stored is not None
        if stored.status == "failed":
            return {"passed": False, "reason": f"the run failed: {stored.error}"}
        decision = record_run_gate(
            store, plan.run_id, spec, failed_tasks=failed_tasks, overrides=plan.overridden
        )
    return {"passed": decision.passed, "reason": decision.reason}


def plan_start(
    plan: RunPlan, started_at: dt.datetime | None = None, *, spec: Spec | None = None
) -> RunStart:
    """The run as the plan describes it: stored running by the plan task, failed by the
    record task when a job before the match failed. ``spec``: the DAG's spec (not the
    run's effective one with its overrides, which are recorded and gated on their own),
    whose verdict digest binds the run; without it, the plan's spec file when the run
    overrides nothing (it is then the DAG's), else today's spec in the validations folder
    (``parity.views.gate.current_spec``), else no digest."""
    dag_id, dag_run_id = dag_run_of(plan.run_id) or (None, None)
    return RunStart(
        run_id=plan.run_id,
        validation=plan.validation,
        trigger=plan.trigger,
        reference_version=plan.reference_version,
        candidate_version=plan.candidate_version,
        slice=dict(plan.slice),
        spec={"file": plan.spec_file},
        dag_id=dag_id,
        dag_run_id=dag_run_id,
        engine="spark",
        started_at=started_at,
        overrides=plan.overridden,
        spec_hash=_spec_hash(plan, spec),
    )


def _spec_hash(plan: RunPlan, spec: Spec | None) -> str | None:
    """The digest of the DAG's spec: ``spec``'s; else the plan's file when the run
    overrides nothing (it is the DAG's); else today's spec in the validations folder."""
    if spec is not None:
        return verdict_digest(spec)
    try:
        if not plan.overrides:
            return verdict_digest(load_spec(plan.spec_file))
        current = current_spec(plan.validation)
    except (SpecError, OSError):  # loaded by the plan task a moment ago; else the gate says 3
        return None
    return None if current is None else current.spec_hash
