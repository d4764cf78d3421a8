"""A run the plan task rejects is an answer too: stored as failed, with its reason.

    store_rejection(spec, run_context, "params.window_end: ... before window_start")

Bad parameters (a window that ends before it starts, an application outside the allowed
roots, a missing input) stop a run in its ``plan`` task, before any Spark job. Without a
trace in the store, ``parity gate --candidate V`` would answer from an older run of that
version, or say it never ran; stored as failed under the pipeline's run id
(``DAG_ID/DAG_RUN_ID``) with the reason, it is the newest attempt, and the gate says
``newest attempt failed: <reason>``. The run's versions are what it would have run: the
``candidate_version`` parameter when it is a string, else the spec's.

A store that cannot take the record does not hide the rejection: its error is printed and
the plan task fails with the rejection's reason all the same. No Airflow import.
"""

from __future__ import annotations

from matcher.spec import Spec
from matcher.spec_digest import verdict_digest
from matcher.store import RunStart, Store, StoreError
from matcher.store.run_ids import pipeline_run_id
from parity.airflow.plan import RunContext


def rejected_start(spec: Spec, context: RunContext) -> RunStart:
    """The rejected run as the store keeps it: the pipeline's run id, the validation, its
    trigger, the versions it would have run, and the DAG run it belongs to."""
    given = context.params.get("candidate_version")
    candidate = spec.candidate.version if spec.candidate is not None else None
    return RunStart(
        run_id=pipeline_run_id(context.dag_id, context.dag_run_id),
        validation=spec.name,
        trigger=context.trigger,
        reference_version=spec.reference.version if spec.reference is not None else None,
        candidate_version=given if isinstance(given, str) and given else candidate,
        started_at=context.started_at,
        spec={"file": spec.source},
        dag_id=context.dag_id,
        dag_run_id=context.dag_run_id,
        engine="spark",
        spec_hash=verdict_digest(spec),
    )


def store_rejection(spec: Spec, context: RunContext, reason: str) -> bool:
    """Store the run rejected for ``reason`` as failed (``True``), or print why the store
    could not take it (``False``)."""
    start = rejected_start(spec, context)
    try:
        with Store.open() as store:
            store.mark_failed(start.run_id, f"rejected by the plan: {reason}", start=start)
    except StoreError as exc:  # already one line, its URL's password masked
        print(f"parity: the rejected run {start.run_id} is not stored: {exc}", flush=True)
        return False
    return True
