"""A release pipeline with a validation inside: build ─► validate ─► deploy.

    build ─► parity_maxrow_wellformed (plan ─► ... ─► record ─► gate) ─► deploy

``build`` stands for a team's own build step: it returns the candidate it made (here the
application the bundled ``maxrow_wellformed`` spec names, and a version label); the
validation group (``parity.airflow.group.validation_group``) validates that candidate, the
values coming from ``build``'s XCom when the run reaches them; ``deploy`` runs only when
the group's gate is open (a closed gate fails ``gate``, and ``deploy`` is then
``upstream_failed``). Trigger it by hand (``airflow dags trigger parity_release_example``).

The DAG exists only where the validations folder has ``maxrow_wellformed``: a deployment
with its own specs (``PARITY_VALIDATIONS_DIR``) gets no broken example.
"""

import datetime as dt
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from parity.airflow.group import has_validation, validation_group

VALIDATION = "maxrow_wellformed"
DAGS = Path(__file__).parent

if has_validation(VALIDATION, DAGS):
    with DAG(
        dag_id="parity_release_example",
        description="Example: build a candidate, validate it with Parity, deploy it if it passed.",
        schedule=None,
        start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        max_active_runs=1,
        tags=["parity", "example"],
        doc_md=__doc__,
    ):

        @task(multiple_outputs=True)
        def build(**context: object) -> dict[str, str]:
            """The build's artifact and its version (a real build would upload it and return
            its URL, allowed by PARITY_ADHOC_APPLICATION_ROOTS)."""
            run = context["dag_run"]
            return {
                "application": "jobs/examples/reducers.py",
                "version": f"build-{getattr(run, 'run_id', 'manual')}",
            }

        @task
        def deploy(application: str, version: str) -> str:
            """Stands for the deployment: says what it ships."""
            print(f"deploying {application} version {version}", flush=True)
            return version

        built: Any = build()  # an XComArg: its keys are the build's outputs
        checked = validation_group(
            VALIDATION,
            candidate_application=built["application"],
            candidate_version=built["version"],
            dags_folder=DAGS,
        )
        checked >> deploy(built["application"], built["version"])
