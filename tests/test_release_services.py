"""The release loop's short path on a real Airflow, in the normal suite: ``airflow
api-server``, ``scheduler`` and ``dag-processor`` on loopback (tests/release_services.py),
one small equivalent bundled validation started by ``parity run --airflow URL --wait``
through the REST API and run by the scheduler (no ``dag.test()``), then ``parity gate``.

The whole loop (artifacts by URL, approvals, stale and failed verdicts, the deploy DAG on
the Asset event) is tests/test_release_e2e.py, behind ``make release-e2e``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from release_services import release_services

from matcher.store.run_ids import dag_id_for, pipeline_run_id

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(1200)]

#: equivalent, one application run each, no noise rerun, no properties: the quickest
VALIDATION = "maxrow_wellformed"
DAG_ID = dag_id_for(VALIDATION)


def test_parity_run_waits_for_the_scheduler_and_the_gate_opens(tmp_path: Path) -> None:
    with release_services(tmp_path / "services", [VALIDATION]) as airflow:
        done = airflow.parity(
            "run", VALIDATION, "--airflow", airflow.url, "--wait", "--timeout", "30m", "--json"
        )
        why = f"{done.stdout}\n{done.stderr}\n{airflow.tails()}"
        answer = json.loads(done.stdout)
        assert (done.returncode, answer["exit_code"], answer["verdict"]) == (
            0,
            0,
            "equivalent",
        ), why
        dag_run_id = answer["dag_run_id"]
        assert answer["run_id"] == pipeline_run_id(DAG_ID, dag_run_id)

        # The scheduler ran it: a manual DAG run of the REST API, every task a success.
        run = airflow.api("GET", f"/dags/{DAG_ID}/dagRuns/{dag_run_id}")
        assert (run["state"], run["run_type"]) == ("success", "manual"), why
        states = airflow.task_states(DAG_ID, dag_run_id)
        assert states and set(states.values()) == {"success"}, states

        gate = airflow.parity("gate", VALIDATION, "--json")
        document = json.loads(gate.stdout)
        assert (gate.returncode, document["state"], document["run"]["run_id"]) == (
            0,
            "open",
            answer["run_id"],
        ), gate.stdout + gate.stderr
        assert document["spec"]["matches"] is True
        assert answer["gate"]["state"] == "open"
