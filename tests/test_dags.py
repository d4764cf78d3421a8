"""The validation DAGs on real Airflow: the dags folder loads, every DAG has the pipeline's
shape, one bad spec stays one import error, bad parameters stop a run before Spark, and
``dag.test()`` runs a validation end to end with real ``spark-submit`` into a real store.
"""

from __future__ import annotations

import datetime as dt
import gc
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import DAGS, ROOT, ParityEnv, dag_bag, scheduled_runs

from matcher.errors import SpecError
from matcher.spec import load_spec, parse_spec, parse_yaml
from matcher.store import RunOutcome, RunStart, Store
from parity.airflow.factory import load_validations
from parity.airflow.gate import record_gate
from parity.airflow.plan import (
    PARAMS,
    WORKSPACE_VARIABLE,
    RunContext,
    RunPlan,
    plan_run,
    workspace,
)
from parity.runs.engines import BYTES_VARIABLE

pytest_plugins = ("airflow_fixtures",)


pytestmark = [
    # Airflow's in-process execution API (dag.test) imports starlette.testclient, which
    # warns that it uses httpx; nothing of ours uses it.
    pytest.mark.filterwarnings(
        "ignore:Using `httpx` with `starlette.testclient` is deprecated:UserWarning"
    ),
    # The Spark provider's SparkSubmitHook never closes spark-submit's stdout pipe; our
    # operator closes it, an operator that does not leaks it until garbage collection.
    pytest.mark.filterwarnings("ignore:unclosed file <_io.TextIOWrapper name=:ResourceWarning"),
]
UTC = dt.UTC


@pytest.fixture(autouse=True)
def collect_leaked_pipes() -> Iterator[None]:
    """Collect what a test leaked (the provider's spark-submit pipes) while the filter above
    still applies, not during whichever test the garbage collector happens to run in."""
    yield
    gc.collect()


SPARK_TASKS = {"slice_input", "run_reference", "run_candidate", "rerun_reference", "match"}


def edges(dag: Any) -> dict[str, list[str]]:
    return {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}


def expected_edges(noise: bool) -> dict[str, list[str]]:
    runs = ["run_candidate", "run_reference", *(["rerun_reference"] if noise else [])]
    shape = {
        "plan": ["slice_input"],
        "slice_input": sorted(runs),
        **{run: ["match"] for run in runs},
        "match": ["record"],
        "record": ["gate"],
        "gate": [],
    }
    return shape


# --- the real dags folder -----------------------------------------------------------------


def test_the_dags_folder_loads_every_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARITY_VALIDATIONS_DIR", raising=False)
    specs, errors = load_validations(DAGS / "validations", ROOT)
    bag = dag_bag()
    assert bag.import_errors == {}
    assert errors == []
    examples = ["parity_deploy_example", "parity_release_example"]  # dags/*_example.py
    assert sorted(bag.dag_ids) == sorted([*(f"parity_{spec.name}" for spec in specs), *examples])
    assert len(specs) == len([*(DAGS / "validations").glob("*.yaml")])
    for spec in specs:
        if spec.recovery is not None:  # its own shape: tests/test_recovery_dag.py
            continue
        dag = bag.dags[f"parity_{spec.name}"]
        graph = edges(dag)
        if spec.properties:  # the property re-test hangs off the plan, beside the comparison
            assert graph.pop("properties") == [] and "properties" in graph["plan"], dag.dag_id
            graph["plan"].remove("properties")
        if "expectations" in graph:  # the expectations step sits between match and record
            assert (graph["match"], graph.pop("expectations")) == (["expectations"], ["record"])
            graph["match"] = ["record"]
        assert graph == expected_edges(spec.noise.reference_runs > 1), dag.dag_id
        assert dag.catchup is False
        assert dag.start_date == dt.datetime(2024, 1, 1, tzinfo=UTC)
        assert sorted(dag.tags) == ["parity", "validation"]
        assert dag.doc_md.startswith(f"# Parity validation `{spec.name}`")
        assert sorted(dag.params) == sorted(PARAMS)
        for task in dag.tasks:
            # a closed gate is a verdict, not an accident: it is never retried
            retries = 0 if task.task_id == "gate" else 1
            assert (task.retries, task.retry_delay) == (retries, dt.timedelta(seconds=30))
            if task.task_id in SPARK_TASKS:
                assert task._conn_id == "spark_default"


def test_every_spark_task_takes_a_pool_slot_and_has_a_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Concurrency: one run of each validation at a time, no backlog of runs by surprise,
    and every task that starts Spark jobs (comparison and recovery DAGs alike) in the
    ``parity_spark`` pool with a time limit; the tasks that only plan and decide are not."""
    monkeypatch.delenv("PARITY_VALIDATIONS_DIR", raising=False)
    bag = dag_bag()
    spark_tasks = {
        *SPARK_TASKS,
        "expectations",
        "plan",  # a recovery DAG's plan task writes the input slice
        "run_uninterrupted",
        "run_crashed",
        "check",
        "properties",  # a DataFrame operator's tests start a local SparkSession
    }
    seen = set()
    for dag in bag.dags.values():
        assert (dag.max_active_runs, dag.catchup) == (1, False), dag.dag_id
        recovery = "recovery" in dag.tags
        for task in dag.tasks:
            runs_spark = task.task_id in spark_tasks and (recovery or task.task_id != "plan")
            if runs_spark:
                seen.add(task.task_id)
                limit = dt.timedelta(hours=2)
                assert (task.pool, task.execution_timeout) == ("parity_spark", limit), task
            else:
                assert task.pool == "default_pool", (dag.dag_id, task.task_id)
    assert seen == spark_tasks


def test_the_airflow_section_sets_runs_pool_and_time_limit(parity_env: ParityEnv) -> None:
    text = GOOD + "airflow: {max_active_runs: 2, pool: spark_big, task_timeout: 45m}\n"
    (parity_env.validations / "good.yaml").write_text(text, encoding="utf-8")
    dag = dag_bag().dags["parity_good"]
    assert dag.max_active_runs == 2
    match = dag.get_task("match")
    assert (match.pool, match.execution_timeout) == ("spark_big", dt.timedelta(minutes=45))
    bad = GOOD + "airflow: {task_timeout: forever}\n"
    with pytest.raises(SpecError, match=r"airflow.task_timeout: expected a duration"):
        parse_spec(parse_yaml(bad, "bad.yaml"), "bad.yaml", ROOT)


# --- one bad spec -------------------------------------------------------------------------

GOOD = """\
name: good
reference: {application: tests/pipelines/relay.py}
candidate: {application: tests/pipelines/relay.py}
input: {path: capture, format: parquet}
dependence: {key: [taxi_id]}
"""


def test_a_bad_spec_is_one_import_error_and_the_others_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PARITY_VALIDATIONS_DIR", raising=False)
    folder = tmp_path / "dags"
    (folder / "validations").mkdir(parents=True)
    for dag_file in DAGS.glob("*.py"):
        shutil.copy(dag_file, folder)
    (folder / "validations" / "good.yaml").write_text(GOOD)
    bad = GOOD.replace("name: good", "name: bad") + "noise: {reference_runs: 0}\n"
    (folder / "validations" / "bad.yaml").write_text(bad)
    bag = dag_bag(folder)
    assert bag.dag_ids == ["parity_good"]
    assert list(bag.import_errors) == [str(folder / "parity_spec_errors.py")]
    error = bag.import_errors[str(folder / "parity_spec_errors.py")]
    assert error.strip().splitlines()[-1] == (
        "parity.airflow.factory.InvalidValidationSpecs: dags/validations/bad.yaml: "
        "noise.reference_runs: must be >= 1, got 0"
    )


def test_two_bad_specs_are_listed_in_one_error(tmp_path: Path, parity_env: ParityEnv) -> None:
    (parity_env.validations / "a.yaml").write_text("name: a\ndependence: ordered\n")
    (parity_env.validations / "b.yaml").write_text(GOOD.replace("tests/", "missing/") + "x: 1\n")
    (parity_env.validations / "c.yaml").write_text(GOOD)
    (parity_env.validations / "d.yaml").write_text(GOOD)
    _, errors = load_validations(parity_env.validations, ROOT)
    shown = str(parity_env.validations)
    assert errors == [
        f"{shown}/a.yaml: reference: required by the Airflow pipeline",
        f"{shown}/b.yaml: x: unknown key (expected one of: name, reference, candidate, "
        "application, recovery, input, output, dependence, equality, expectations, noise, "
        "schedule, gate, airflow, properties, schema)",
        f"{shown}/d.yaml: name: 'good' is already used by {shown}/c.yaml",
    ]


# --- parameters ---------------------------------------------------------------------------

RELAY = """\
name: relay
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
  slice: {{column: event_time, window: 1d}}
output: {{format: parquet}}
dependence: {{key: [taxi_id]}}
schedule: "0 0 * * *"
"""
TAXIS = ["T1", "T2", "T3"]


def write_capture(directory: Path) -> Path:
    """Two days of positions, one every 2 hours: taxis T1, T2, T3 in turn."""
    base = dt.datetime(2024, 5, 1, tzinfo=UTC)
    rows = [
        {
            "offset": n,
            "event_time": base + dt.timedelta(hours=2 * n),
            "taxi_id": TAXIS[n % 3],
            "km": float(n),
        }
        for n in range(24)
    ]
    directory.mkdir(parents=True)
    for part in range(2):
        table = pa.Table.from_pylist(rows[part * 12 : (part + 1) * 12])
        pq.write_table(table, directory / f"part-{part:05d}.parquet")
    return directory


@pytest.fixture
def relay_dag(parity_env: ParityEnv, tmp_path: Path, airflow_db: Path) -> Any:
    capture = write_capture(tmp_path / "capture")
    (parity_env.validations / "relay.yaml").write_text(RELAY.format(capture=capture))
    bag = dag_bag()
    assert bag.import_errors == {}
    return bag.dags["parity_relay"]


def states(run: Any) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def test_params_outside_their_schema_are_refused_before_a_run(relay_dag: Any) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError) as info:
        relay_dag.test(run_conf={"sample": 2})
    assert "sample" in str(info.value)
    with pytest.raises(ParamValidationError):
        relay_dag.test(run_conf={"candidate_args": "--not-a-list"})


def test_bad_params_fail_the_plan_and_no_spark_job_runs(
    relay_dag: Any, parity_env: ParityEnv
) -> None:
    run = relay_dag.test(
        run_conf={"window_start": "2024-05-02T00:00:00Z", "window_end": "2024-05-01T00:00:00Z"}
    )
    assert str(run.state) == "failed"
    assert states(run) == {
        "plan": "failed",
        "slice_input": "upstream_failed",
        "run_reference": "upstream_failed",
        "run_candidate": "upstream_failed",
        "match": "upstream_failed",
        "expectations": "upstream_failed",
        "record": "success",  # it publishes the rejected run's Asset event
        "gate": "failed",
    }
    assert not (parity_env.home / "runs").exists()
    with Store.open(parity_env.db_url) as store:  # the rejection is stored, with its reason
        [stored] = store.list_runs()
    assert (stored.status, stored.verdict, stored.error) == (
        "failed",
        "error",
        "rejected by the plan: params.window_end: must be after window_start "
        "(2024-05-02T00:00:00+00:00), got 2024-05-01T00:00:00+00:00",
    )


# --- record: the gate, and failed runs ------------------------------------------------------


def a_plan(tmp_path: Path) -> RunPlan:
    spec = load_spec(_relay_spec(tmp_path))
    context = RunContext("parity_relay", "manual__1", params={})
    return plan_run(spec, context, root=ROOT, home=tmp_path / "home")


def _relay_spec(tmp_path: Path) -> Path:
    path = tmp_path / "relay.yaml"
    path.write_text(
        RELAY.format(capture=tmp_path / "capture").replace(
            "window: 1d", "start: 2024-05-01T00:00:00Z, window: 1d"
        )
    )
    return path


@pytest.mark.parametrize(
    ("stored", "failed", "expected", "status"),
    [
        ("equivalent", [], (True, "verdict equivalent; no expectation results"), "completed"),
        (
            "equivalent",
            ["expectations"],
            (False, "expectations failed; verdict equivalent; no expectation results"),
            "completed",
        ),
        (None, ["run_candidate"], (False, "the run failed: run_candidate failed"), "failed"),
        ("running", ["match"], (False, "the run failed: match failed"), "failed"),
        ("failed", ["match"], (False, "the run failed: InputError: unreadable"), "failed"),
    ],
)
def test_record_stores_the_gate_and_failed_runs(
    tmp_path: Path,
    parity_env: ParityEnv,
    stored: str | None,
    failed: list[str],
    expected: tuple[bool, str],
    status: str,
) -> None:
    made = a_plan(tmp_path)
    spec = load_spec(_relay_spec(tmp_path))
    with Store.open(parity_env.db_url) as store:
        if stored is not None:
            store.start_run(RunStart(made.run_id, "relay", trigger="adhoc"))
        if stored == "equivalent":
            store.record_run(made.run_id, RunOutcome(verdict="equivalent"))
        if stored == "failed":
            store.mark_failed(made.run_id, "InputError: unreadable")
    assert record_gate(made, spec, failed) == {"passed": expected[0], "reason": expected[1]}
    with Store.open(parity_env.db_url) as store:
        run = store.get_run(made.run_id)
    assert run is not None
    assert (run.status, run.gate_passed, run.validation) == (status, expected[0], "relay")
    if status == "completed":
        assert run.gate_reason == expected[1]
    else:
        assert run.verdict == "error"


def test_the_plan_shows_the_run_running_until_the_match_replaces_it(
    tmp_path: Path, parity_env: ParityEnv
) -> None:
    """Issue 16: a run in progress is in the history from its DAG run's start, while its
    slice and applications run; a job failing before the match leaves it failed, not running."""
    from parity.airflow.factory import show_running

    made = a_plan(tmp_path)
    spec = load_spec(_relay_spec(tmp_path))
    began = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    show_running(made, spec, began)
    with Store.open(parity_env.db_url) as store:
        run = store.get_run(made.run_id)
        assert run is not None
        assert (run.status, run.started_at, run.validation) == ("running", began, "relay")
        listed = store.list_runs()
        assert [r.status for r in listed if r.run_id == made.run_id] == ["running"]
    reason = "the run failed: slice_input failed"
    assert record_gate(made, spec, ["slice_input"]) == {"passed": False, "reason": reason}
    with Store.open(parity_env.db_url) as store:
        run = store.get_run(made.run_id)
    assert run is not None and (run.status, run.verdict) == ("failed", "error")


# --- end to end ---------------------------------------------------------------------------


def dag_run_note(run_id: str) -> str | None:
    """A ``parity_relay`` DAG run's note, from Airflow's database."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run = session.scalar(
            select(DagRun).where(DagRun.dag_id == "parity_relay", DagRun.run_id == run_id)
        )
        return None if run is None else run.note


def rendered(run_id: str, task_id: str) -> dict[str, Any]:
    """A ``parity_relay`` task's fields as its *Rendered Template* page shows them."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rendered
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        fields = session.scalar(
            select(Rendered.rendered_fields).where(
                Rendered.dag_id == "parity_relay",
                Rendered.run_id == run_id,
                Rendered.task_id == task_id,
            )
        )
    assert fields is not None, f"no rendered fields for {task_id} of {run_id}"
    return dict(fields)


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(1800)
def test_equivalent_then_divergent_runs_end_to_end(
    relay_dag: Any, parity_env: ParityEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plugin's listener, as the scheduler loads it: the verdict on each DAG run's note.
    monkeypatch.syspath_prepend(str(ROOT / "plugins"))
    from airflow.listeners.listener import get_listener_manager

    from parity_ui import notes

    get_listener_manager().add_listener(notes)
    # A run as the scheduler makes it: the data interval [2024-05-01, 2024-05-02) chooses
    # the slice, and the run is stored as scheduled.
    with scheduled_runs(monkeypatch):
        ok = relay_dag.test(logical_date=dt.datetime(2024, 5, 2, tzinfo=UTC))
    assert str(ok.state) == "success", states(ok)
    assert (str(ok.run_type), ok.run_id) == ("scheduled", "scheduled__2024-05-02T00:00:00+00:00")
    run_dir = Path(workspace(str(parity_env.home / "runs"), "parity_relay", ok.run_id))
    slice_files = sorted(p.name for p in (run_dir / "slice").glob("part-*"))
    assert len(slice_files) == 4
    sliced = pq.read_table([run_dir / "slice" / name for name in slice_files])
    assert sliced.column("offset").to_pylist() == list(range(12))
    with Store.open(parity_env.db_url) as store:
        record = store.get_run(f"parity_relay/{ok.run_id}")
    assert record is not None
    assert (record.status, record.verdict, record.gate_passed, record.trigger) == (
        "completed",
        "equivalent",
        True,
        "scheduled",
    )
    with Store.open(parity_env.db_url) as store:  # the history's "scheduled" filter
        found = store.list_runs(trigger="scheduled")
    assert [r.run_id for r in found] == [record.run_id]
    assert record.gate_reason == "verdict equivalent; expectations passed"
    assert (record.reference_version, record.candidate_version) == ("1.0", "1.1")
    assert (record.dag_id, record.dag_run_id, record.task_try) == ("parity_relay", ok.run_id, 1)
    # Outputs of a few KiB: the match task ran the job on the core, no spark-submit, and
    # its Rendered Template shows that command, not a spark-submit line that never ran.
    assert record.engine == "core"
    shown = rendered(ok.run_id, "match")
    assert shown["application"] == str(ROOT / "jobs" / "match.py")
    assert shown["application_args"][-2:] == ["--engine", "core"]
    assert not shown.get("conf")
    # The stored start is the DAG run's, so the history shows the pipeline's duration
    assert ok.start_date is not None and record.started_at == ok.start_date.astimezone(UTC)
    assert (record.slice["start"], record.slice["end"]) == (
        "2024-05-01T00:00:00+00:00",
        "2024-05-02T00:00:00+00:00",
    )
    assert dag_run_note(ok.run_id) == (
        "**Parity: equivalent** (loss 0, duplication 0, reordering 0, corruption 0); "
        "gate open: verdict equivalent; expectations passed. [Parity run]"
        f"(/plugin/parity/parity/runs/parity_relay%2F{quote(ok.run_id, safe='')})"
    )

    # An ad-hoc run: a buggy candidate (loses offset 7) on a window given as parameters, in
    # a workspace the deployment names by URI, as it would a shared store (hdfs://, s3a://):
    # Spark and the Python side (pyarrow.fs) both take it as a URI, never as a local path.
    # With PARITY_CORE_MATCH_BYTES at 0, the match job is a spark-submit whatever the size.
    shared = parity_env.home / "shared"
    monkeypatch.setenv(WORKSPACE_VARIABLE, f"file://{shared}")
    monkeypatch.setenv(BYTES_VARIABLE, "0")
    bad = relay_dag.test(
        run_conf={
            "candidate_args": ["--input", "{input}", "--output", "{output}", "--drop-offset", "7"],
            "candidate_version": "1.2-bug",
            "window_start": "2024-05-01T06:00:00Z",
            "window_end": "2024-05-02T06:00:00Z",
        }
    )
    assert str(bad.state) == "failed"
    assert states(bad) == {
        "plan": "success",
        "slice_input": "success",
        "run_reference": "success",
        "run_candidate": "success",
        "match": "success",
        "expectations": "success",
        "record": "success",
        "gate": "failed",
    }
    with Store.open(parity_env.db_url) as store:
        record = store.get_run(f"parity_relay/{bad.run_id}")
    assert record is not None
    assert (record.status, record.verdict, record.gate_passed, record.candidate_version) == (
        "completed",
        "divergent",
        False,
        "1.2-bug",
    )
    assert record.engine == "spark"
    shown = rendered(bad.run_id, "match")
    assert shown["application"] == str(ROOT / "jobs" / "match.py")
    assert "--engine" not in shown["application_args"]
    assert (
        record.gate_reason
        == "verdict divergent (the gate requires equivalent); expectations passed"
    )
    # Offsets 3..14 are in the window; offset 7 (taxi T2) is the 5th row of the slice.
    assert [
        (d.kind, d.key, d.reference_position, d.candidate_position) for d in record.divergences
    ] == [("loss", "T2", 4, 6)]  # it belongs before T2's next event, offset 10
    assert dict(record.counts) == {"loss": 1, "duplication": 0, "reordering": 0, "corruption": 0}
    bad_dir = workspace(f"file://{shared}", "parity_relay", bad.run_id)
    assert record.report_path == f"{bad_dir}/report"
    written = Path(bad_dir.removeprefix("file://"))
    assert sorted(p.name for p in written.iterdir()) == [
        "candidate",
        "plan.json",
        "reference",
        "report",
        "slice",
        "slice.json",
        "verdict.json",
    ]
    assert (written / "report" / "match.json").is_file()
    assert (written / "report" / "data_docs" / "index.html").is_file()
    assert dag_run_note(bad.run_id).startswith(
        "**Parity: divergent** (loss 1, duplication 0, reordering 0, corruption 0); gate "
        "closed: verdict divergent \\(the gate requires equivalent\\); expectations passed. "
    )
    get_listener_manager().clear()
