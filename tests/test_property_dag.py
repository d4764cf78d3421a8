"""The ``properties`` task of a validation DAG on real Airflow: a spec with ``properties:`` gets
it beside the comparison (after ``plan``, before nothing), its ``parity properties`` line is
exact, and its body re-tests the operator in a real process into a real store, reusing the
evidence first, warns when the spec contradicts what it found, and fails on bad input only.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import ROOT, ParityEnv, dag_bag

from matcher.spec import load_spec
from matcher.store import Store
from matcher.store.records import PROPERTIES
from parity.airflow.properties import properties_command, properties_run_id

pytest_plugins = ("airflow_fixtures",)

OPERATOR = "jobs.examples.taxi:track"
SAMPLE = "examples/properties/taxi.jsonl"
SPEC = """\
name: taxi_props
reference: {application: tests/pipelines/relay.py}
candidate: {application: tests/pipelines/relay.py}
input: {path: capture, format: parquet}
dependence: {key: [taxi_id]}
"""
SECTION = f"""\
properties:
  - {{operator: {OPERATOR}, sample: {SAMPLE}, key: taxi_id, budget: 5}}
"""


def _edges(dag: Any) -> dict[str, list[str]]:
    return {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}


def _dag(parity_env: ParityEnv, text: str) -> Any:
    (parity_env.validations / "taxi_props.yaml").write_text(text, encoding="utf-8")
    bag = dag_bag()
    assert bag.import_errors == {}
    return bag.dags["parity_taxi_props"]


def test_the_properties_task_is_beside_the_comparison(parity_env: ParityEnv) -> None:
    without = _edges(_dag(parity_env, SPEC))
    assert "properties" not in without
    dag = _dag(parity_env, SPEC + SECTION)
    edges = _edges(dag)
    assert edges == {
        **without,
        "plan": ["properties", "slice_input"],
        "properties": [],
    }
    task = dag.get_task("properties")
    assert (task.pool, task.execution_timeout) == ("parity_spark", dt.timedelta(hours=2))


def test_the_properties_command_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "taxi_props.yaml"
    path.write_text(SPEC + SECTION.replace("budget: 5", "budget: 2, shape: stream"))
    spec = load_spec(path)
    (entry,) = spec.properties
    command = properties_command(
        spec,
        entry,
        root=ROOT,
        home=tmp_path / "home",
        dag_id="parity_taxi_props",
        dag_run_id="scheduled__2026-01-02",
        trigger="scheduled",
        python="python",
    )
    run_id = f"parity_taxi_props/scheduled__2026-01-02/properties/{OPERATOR}"
    assert run_id == properties_run_id("parity_taxi_props", "scheduled__2026-01-02", OPERATOR)
    assert command == [
        *("python", "-m", "parity", "properties", OPERATOR, "--sample", str(ROOT / SAMPLE)),
        *("--key", "taxi_id", "--shape", "stream", "--technique", "reuse", "--budget", "2"),
        *("--seed", "0", "--evidence-dir", str(tmp_path / "home" / "properties")),
        *("--run-id", run_id, "--validation", "taxi_props", "--trigger", "scheduled"),
        *("--spec-file", str(path), "--dag-id", "parity_taxi_props"),
        *("--dag-run-id", "scheduled__2026-01-02"),
    ]


def _run_task(dag: Any, run_type: str = "scheduled") -> Any:
    run = SimpleNamespace(dag_id=dag.dag_id, run_id="scheduled__2026-01-02", run_type=run_type)
    return dag.get_task("properties").python_callable(dag_run=run)


def test_the_task_retests_reusing_evidence_stores_and_warns(
    parity_env: ParityEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first run keeps its evidence; the second replays it first (reuse), finds the
    same properties, and replaces nothing but its own run. The spec says unordered, which
    a non-commutative operator contradicts: one warning line, and the task succeeds."""
    dag = _dag(parity_env, SPEC.replace("{key: [taxi_id]}", "unordered") + SECTION)
    warnings = _run_task(dag)
    evidence = parity_env.home / "properties" / "jobs.examples.taxi_track.json"
    assert set(json.loads(evidence.read_text())["tests"]) == {"statefulness", "non_commutativity"}
    run_id = properties_run_id(dag.dag_id, "scheduled__2026-01-02", OPERATOR)
    spec_file = str(parity_env.validations / "taxi_props.yaml")
    assert warnings == [
        f"parity: warning: {spec_file}: properties: {OPERATOR}: run {run_id} found "
        "statefulness, non-commutativity, which needs at least dependence {key: [taxi_id]}, "
        "but the spec's is unordered: set dependence: {key: [taxi_id]}"
    ]
    assert warnings[0] in capsys.readouterr().out
    with Store.open_readonly(parity_env.db_url) as store:
        first = store.get_run(run_id)
    assert first is not None and first.stats is not None
    tests = {n: p["tests"] for n, p in first.stats["properties"]["properties"].items()}
    assert (tests["statefulness"], tests["non_commutativity"]) == (3, 2)
    _run_task(dag)  # again: the same run id, replaced
    with Store.open_readonly(parity_env.db_url) as store:
        (summary,) = store.list_runs()
        record = store.get_run(run_id)
    assert record is not None and summary.run_id == run_id
    assert (record.kind, record.validation, record.trigger, record.verdict) == (
        PROPERTIES,
        "taxi_props",
        "scheduled",
        None,
    )
    assert (record.dag_id, record.dag_run_id) == (dag.dag_id, "scheduled__2026-01-02")
    assert record.spec["file"] == spec_file and record.spec["technique"] == "pool+reuse"
    assert record.stats is not None
    assert record.stats["found"] == ["statefulness", "non_commutativity"]
    # reuse: the kept evidence is replayed first, so both are found with fewer tests
    props = record.stats["properties"]["properties"]
    assert (props["statefulness"]["tests"], props["non_commutativity"]["tests"]) == (2, 1)


def test_a_spec_that_agrees_gets_no_warning_from_the_task(parity_env: ParityEnv) -> None:
    assert _run_task(_dag(parity_env, SPEC + SECTION)) == []


def test_bad_input_fails_the_task_at_once(parity_env: ParityEnv) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    dag = _dag(parity_env, SPEC + SECTION.replace(SAMPLE, "tests/data/none.jsonl"))
    with pytest.raises(AirflowFailException, match=r"^parity properties jobs.examples.taxi:track"):
        _run_task(dag)
    with Store.open(parity_env.db_url) as store:
        assert store.list_runs() == []
