"""A recovery validation's DAG on real Airflow: a spec with ``application`` and ``recovery``
becomes ``plan >> run_crashed >> check >> gate`` (``run_uninterrupted`` first for the
differential check), and ``dag.test()`` runs it with real spark-submit and real SIGKILLs into
a real store: the correct detector passes, the one keeping state on the driver fails the gate
with loss."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import ParityEnv, dag_bag

from jobs.examples.sequence_input import write_input
from matcher.store import Store

pytest_plugins = ("airflow_fixtures",)
pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:Using `httpx` with `starlette.testclient` is deprecated:UserWarning"
    ),
]

SPEC = """\
name: {name}
application:
  application: jobs/examples/sequence_window.py
  args: [--input, "{{input}}", --output, "{{output}}", --checkpoint, "{{checkpoint}}",
         --files-per-batch, "1", --variant, {variant}]
  conf: {{spark.sql.shuffle.partitions: "2"}}
  version: {variant}
recovery: {{crashes: 1, seed: 7, check: {check}, timeout: 900{extra}}}
input: {{path: {input}, format: jsonl}}
output: {{format: jsonl}}
dependence: {{key: [key]}}
"""


def _write(parity_env: ParityEnv, tmp_path: Path, name: str, variant: str, check: str) -> None:
    inputs = tmp_path / "input"
    if not inputs.exists():
        write_input(inputs, keys=3, count=8, files=4, seed=2)
    extra = ", expected: 8" if check == "windows" else ""
    text = SPEC.format(name=name, variant=variant, check=check, extra=extra, input=inputs)
    (parity_env.validations / f"{name}.yaml").write_text(text, encoding="utf-8")


def _edges(dag: Any) -> dict[str, list[str]]:
    return {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}


def test_a_recovery_spec_gets_its_own_dag_shape(parity_env: ParityEnv, tmp_path: Path) -> None:
    _write(parity_env, tmp_path, "windows_check", "correct", "windows")
    _write(parity_env, tmp_path, "differential_check", "correct", "differential")
    bag = dag_bag()
    assert bag.import_errors == {}
    assert _edges(bag.dags["parity_windows_check"]) == {
        "plan": ["run_crashed"],
        "run_crashed": ["check"],
        "check": ["gate"],
        "gate": [],
    }
    assert _edges(bag.dags["parity_differential_check"]) == {
        "plan": ["run_uninterrupted"],
        "run_uninterrupted": ["run_crashed"],
        "run_crashed": ["check"],
        "check": ["gate"],
        "gate": [],
    }
    dag = bag.dags["parity_windows_check"]
    assert "recovery" in dag.tags
    assert all(t.retries == 0 for t in dag.tasks)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_dag_runs_store_a_passing_and_a_failing_recovery(
    parity_env: ParityEnv, tmp_path: Path, airflow_db: Path
) -> None:
    _write(parity_env, tmp_path, "detector", "correct", "windows")
    _write(parity_env, tmp_path, "detector_buggy", "driver_state", "windows")
    bag = dag_bag()
    assert bag.import_errors == {}
    ok = bag.dags["parity_detector"].test()
    states = {ti.task_id: str(ti.state) for ti in ok.get_task_instances()}
    assert str(ok.state) == "success", states
    bad = bag.dags["parity_detector_buggy"].test()
    states = {ti.task_id: str(ti.state) for ti in bad.get_task_instances()}
    assert str(bad.state) == "failed"
    assert states == {
        "plan": "success",
        "run_crashed": "success",
        "check": "success",
        "gate": "failed",
    }
    with Store.open(parity_env.db_url) as store:
        passed = store.get_run(f"parity_detector/{ok.run_id}")
        failed = store.get_run(f"parity_detector_buggy/{bad.run_id}")
    assert passed is not None and failed is not None
    assert (passed.kind, passed.verdict, passed.gate_passed) == ("recovery", "equivalent", True)
    assert (failed.kind, failed.verdict, failed.gate_passed) == ("recovery", "divergent", False)
    assert failed.counts["loss"] > 0
    assert (passed.dag_id, passed.dag_run_id) == ("parity_detector", ok.run_id)
    assert passed.stats is not None and passed.stats["crashes"]["injected"] == 1
