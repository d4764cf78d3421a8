"""A deploy DAG scheduled on a validation's verdicts: it ships only on an open gate.

    Asset parity://taxi_parallel ─► gate_open (short-circuit) ─► deploy

Every verdict of ``taxi_parallel`` (its own DAG, or a validation group) is an event of the
Asset ``parity://taxi_parallel`` whose extra holds the verdict, the gate, the versions and
the run id (``parity.airflow.assets``). Each event triggers a run of this DAG; ``gate_open``
looks at the newest triggering event and skips ``deploy`` unless its gate is ``open``.

The DAG exists only where the validations folder has ``taxi_parallel``.
"""

import datetime as dt
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from parity.airflow.assets import deploy_decision, validation_asset
from parity.airflow.group import has_validation

VALIDATION = "taxi_parallel"
DAGS = Path(__file__).parent

if has_validation(VALIDATION, DAGS):  # no example for a validation this deployment lacks
    with DAG(
        dag_id="parity_deploy_example",
        description="Example: deploy taxi_parallel's candidate when Parity's gate opens.",
        schedule=[validation_asset(VALIDATION)],
        start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        max_active_runs=1,
        tags=["parity", "example"],
        doc_md=__doc__,
    ):

        @task.short_circuit
        def gate_open(**context: Any) -> dict[str, Any] | None:
            """The newest event's extra when its gate is open; otherwise deploy is skipped."""
            decision = deploy_decision(
                context["triggering_asset_events"], validation_asset(VALIDATION)
            )
            print(decision.line, flush=True)
            return dict(decision.extra or {}) if decision.deploy else None

        @task
        def deploy(extra: dict[str, Any]) -> str:
            """Stands for the deployment: says what it ships."""
            version = extra.get("candidate_version") or "(no version)"
            print(
                f"deploying {VALIDATION} {version} (verdict {extra.get('verdict')}, "
                f"run {extra.get('run_id')})",
                flush=True,
            )
            return str(version)

        opened: Any = gate_open()  # an XComArg: the event's extra
        deploy(opened)
