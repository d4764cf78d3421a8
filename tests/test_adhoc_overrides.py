"""Ad-hoc code overrides on real Airflow: a DAG of the real dags folder, triggered with a
``candidate_application`` that is not the spec's while the deployment allows none, fails in
its ``plan`` task with one line, before any workspace, Spark job or stored run exists.

The policy's cases (roots, symbolic links, module prefixes) are unit tests in
``tests/test_plan.py``; this is the one end-to-end check that the DAGs enforce it.
"""

from __future__ import annotations

import datetime as dt
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import ParityEnv, dag_bag

from matcher.store import Store
from parity.airflow.plan import MODULES_VARIABLE, ROOTS_VARIABLE

pytest_plugins = ("airflow_fixtures",)

pytestmark = [
    # Airflow's in-process execution API (dag.test) imports starlette.testclient, which
    # warns that it uses httpx; nothing of ours uses it.
    pytest.mark.filterwarnings(
        "ignore:Using `httpx` with `starlette.testclient` is deprecated:UserWarning"
    ),
    pytest.mark.slow,
]

SPEC = """\
name: adhoc
reference:
  application: tests/pipelines/relay.py
candidate:
  application: tests/pipelines/relay.py
input:
  path: {capture}
  format: parquet
  slice: {{column: event_time, start: "2024-05-01T00:00:00Z", window: 1d}}
output: {{format: parquet}}
dependence: {{key: [taxi_id]}}
"""


def write_capture(directory: Path) -> Path:
    directory.mkdir(parents=True)
    at = dt.datetime(2024, 5, 1, 1, tzinfo=dt.UTC)
    table = pa.Table.from_pylist([{"event_time": at, "taxi_id": "T1", "km": 1.0}])
    pq.write_table(table, directory / "part-00000.parquet")
    return directory


def test_an_application_override_is_refused_when_the_deployment_allows_none(
    parity_env: ParityEnv,
    tmp_path: Path,
    airflow_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv(ROOTS_VARIABLE, raising=False)
    monkeypatch.delenv(MODULES_VARIABLE, raising=False)
    capture = write_capture(tmp_path / "capture")
    (parity_env.validations / "adhoc.yaml").write_text(SPEC.format(capture=capture))
    bag = dag_bag()
    assert bag.import_errors == {}
    dag: Any = bag.dags["parity_adhoc"]
    evil = tmp_path / "evil.py"
    evil.write_text("open(__file__ + '.ran', 'w').close()\n")

    run = dag.test(run_conf={"candidate_application": str(evil)})

    assert str(run.state) == "failed"
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert states["plan"] == "failed"
    assert {states[t] for t in ("slice_input", "run_reference", "run_candidate", "match")} == {
        "upstream_failed"
    }
    assert not (parity_env.home / "runs").exists()
    assert not Path(f"{evil}.ran").exists()
    with Store.open(parity_env.db_url) as store:  # stored failed, with the reason: no job ran
        [stored] = store.list_runs()
    assert (stored.status, stored.verdict) == ("failed", "error")
    assert stored.error is not None and stored.error.startswith(
        "rejected by the plan: params.candidate_application: ad-hoc applications are disabled"
    )
    out, err = capfd.readouterr()  # the task's log, as dag.test() prints it
    assert (
        "params.candidate_application: ad-hoc applications are disabled in this deployment "
        "(only the spec's 'tests/pipelines/relay.py' may run; PARITY_ADHOC_APPLICATION_ROOTS "
        "allows others)"
    ) in out + err


# --- issue 29 items 7 and 9: overrides close the gate; a bad workspace stops the plan ------

RELAY = """\
name: loosened
reference:
  application: tests/pipelines/relay.py
  version: "1.0"
candidate:
  application: tests/pipelines/relay.py
  args: [--input, "{{input}}", --output, "{{output}}"]
  version: "1.1"
input:
  path: {capture}
  format: parquet
  slice: {{column: event_time, start: "2024-05-01T00:00:00Z", window: 1d}}
output: {{format: parquet}}
dependence: {{key: [taxi_id]}}
equality: {{tolerance: {{km: {{abs: 0.001}}}}}}
"""


def write_offsets(directory: Path) -> Path:
    """Three positions of one taxi, in ``offset`` order (what relay.py sorts by)."""
    directory.mkdir(parents=True)
    at = dt.datetime(2024, 5, 1, 1, tzinfo=dt.UTC)
    rows = [
        {"offset": n, "event_time": at + dt.timedelta(hours=n), "taxi_id": "T1", "km": 1.0}
        for n in range(3)
    ]
    pq.write_table(pa.Table.from_pylist(rows), directory / "part-00000.parquet")
    return directory


@pytest.fixture
def collect_leaked_pipes() -> Iterator[None]:
    """Collect the Spark provider's spark-submit pipes (see tests/test_dags.py) while the
    test's filter still applies."""
    yield
    gc.collect()


@pytest.mark.spark
@pytest.mark.timeout(1800)
# The Spark provider's SparkSubmitHook never closes spark-submit's stdout pipe.
@pytest.mark.filterwarnings("ignore:unclosed file <_io.TextIOWrapper name=:ResourceWarning")
@pytest.mark.usefixtures("collect_leaked_pipes")
def test_a_run_that_loosens_the_spec_is_stored_so_and_closes_the_gate(
    parity_env: ParityEnv,
    tmp_path: Path,
    airflow_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from parity.cli import main

    monkeypatch.delenv(ROOTS_VARIABLE, raising=False)
    monkeypatch.delenv(MODULES_VARIABLE, raising=False)
    capture = write_offsets(tmp_path / "capture")
    (parity_env.validations / "loosened.yaml").write_text(RELAY.format(capture=capture))
    bag = dag_bag()
    assert bag.import_errors == {}
    dag: Any = bag.dags["parity_loosened"]

    # The overrides: a tolerance that makes any two distances equal, and no order.
    # The verdict is equivalent (the candidate is the reference); the gate stays closed.
    run = dag.test(
        run_conf={
            "candidate_version": "untested",
            "equality": {"tolerance": {"km": {"abs": 1e300}}},
            "dependence": {"unordered": True},
        }
    )

    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert str(run.state) == "failed", states
    assert (states["match"], states["record"], states["gate"]) == ("success", "success", "failed")
    with Store.open(parity_env.db_url) as store:
        (summary,) = store.list_runs()
        record = store.get_run(summary.run_id)
    assert record is not None
    reason_tail = "overrides equality, dependence (gate.allow_overrides is false)"
    assert (record.verdict, record.candidate_version, record.overrides, record.gate_passed) == (
        "equivalent",
        "untested",
        ("equality", "dependence"),
        False,
    )
    assert record.gate_reason is not None and record.gate_reason.endswith(reason_tail)
    capsys.readouterr()
    assert main(["gate", "loosened", "--candidate", "untested"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(reason_tail)
    assert "  overrides: equality, dependence (the trigger's, not the spec's)" in lines


@pytest.mark.parametrize("workspace", ["javascript:x", "s3a://", "-rf"])
def test_a_malformed_workspace_fails_the_plan_and_writes_nothing(
    parity_env: ParityEnv,
    tmp_path: Path,
    airflow_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    workspace: str,
) -> None:
    monkeypatch.setenv("PARITY_WORKSPACE", workspace)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    capture = write_offsets(tmp_path / "capture")
    (parity_env.validations / "loosened.yaml").write_text(RELAY.format(capture=capture))
    bag = dag_bag()
    assert bag.import_errors == {}

    run = bag.dags["parity_loosened"].test()

    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert (str(run.state), states["plan"], states["match"]) == (
        "failed",
        "failed",
        "upstream_failed",
    )
    assert sorted(p.name for p in cwd.iterdir()) == []
    with Store.open(parity_env.db_url) as store:  # stored failed with the reason; no job ran
        [stored] = store.list_runs()
    assert (stored.status, stored.verdict) == ("failed", "error")
    assert stored.error is not None and stored.error.startswith("rejected by the plan: ")
    out, err = capfd.readouterr()
    assert f"PARITY_WORKSPACE: {workspace!r} " in out + err
