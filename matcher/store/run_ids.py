"""The store's key for a run, built in one place.

A run started by Airflow is keyed by its DAG run, ``DAG_ID/DAG_RUN_ID``: the plan builds it
once and passes it down (``--run-id`` of the match and expectations jobs), and the match
task's failure callback and the plugin's links find the run by the same key. A match job
started by hand without one gets ``match-`` and twelve random hex digits.

    pipeline_run_id("parity_taxi", "manual__2026-01-01T00:00:00+00:00")
    # 'parity_taxi/manual__2026-01-01T00:00:00+00:00'
"""

from __future__ import annotations

import uuid

#: the id of a validation's DAG is this and the validation's name
DAG_PREFIX = "parity_"


def dag_id_for(validation: str) -> str:
    """The DAG that runs a validation: ``parity_<name>``."""
    return f"{DAG_PREFIX}{validation}"


def pipeline_run_id(dag_id: str, dag_run_id: str) -> str:
    """The run id of a DAG run (a DAG id holds no ``/``, so the first one splits it)."""
    return f"{dag_id}/{dag_run_id}"


def dag_run_of(run_id: str) -> tuple[str, str] | None:
    """``(dag_id, dag_run_id)`` of a pipeline run id; ``None`` for any other run id."""
    dag_id, slash, dag_run_id = run_id.partition("/")
    return (dag_id, dag_run_id) if slash and dag_id and dag_run_id else None


def adhoc_run_id(job: str) -> str:
    """A fresh run id for a job started outside a pipeline (``match-1f0c...``)."""
    return f"{job}-{uuid.uuid4().hex[:12]}"
