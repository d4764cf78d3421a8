"""Recovery validations as specs and as stored runs: the ``application``/``recovery`` sections,
a windows check's outcome in the store, the report's crash log, the history and the gate.
The crash loop itself: ``test_recovery_crashes.py``; real Spark jobs: ``test_recovery.py``."""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from matcher.errors import SpecError
from matcher.spec import load_spec
from matcher.store import RunStart, RunSummary, Store
from matcher.store.records import RECOVERY
from matcher.windows import check_windows
from parity.airflow.gate import record_run_gate
from parity.cli import main
from parity.recovery.runner import plan_recovery, recovery_start, windows_outcome
from parity.views.history import history_row
from parity.views.report import render_report_html, report_document

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
SPEC = """\
name: detector
application:
  application: jobs/examples/sequence_window.py
  args: [--input, "{input}", --output, "{output}", --checkpoint, "{checkpoint}"]
  version: v1
recovery: {crashes: 3, seed: 4, check: windows, expected: 3}
input: {path: data/captures/sequence_window, format: jsonl}
output: {format: jsonl}
dependence: {key: [key]}
"""
CRASH_LOG = {
    "planned": 3,
    "injected": 2,
    "recovered": 2,
    "attempts": 3,
    "batches": 9,
    "seconds": 41.5,
    "seed": 4,
    "crashes": [
        {"number": 1, "target": "driver", "planned": "inside", "phase": "inside", "at": 8.2,
         "batch": 3, "committed": 3, "killed": 7, "attempt": 1, "recovered_in": 12.9},
        {"number": 2, "target": "driver", "planned": "between", "phase": "between", "at": 30.1,
         "batch": 6, "committed": 7, "killed": 7, "attempt": 2, "recovered_in": 11.0},
    ],
}  # fmt: skip


def _spec(tmp_path: Path, text: str = SPEC) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _problem(tmp_path: Path, text: str) -> str:
    path = _spec(tmp_path, text)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return str(caught.value).replace(str(path), "FILE")


def test_a_recovery_spec_loads(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    assert spec.recovery is not None and spec.application is not None
    assert (spec.recovery.crashes, spec.recovery.seed, spec.recovery.kill) == (3, 4, "driver")
    assert (spec.recovery.check, spec.recovery.expected, spec.recovery.timeout) == (
        "windows",
        3,
        900,
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace(
                "recovery: {crashes: 3, seed: 4, check: windows, expected: 3}\n", ""
            ),
            "FILE: recovery: a recovery validation needs both application and recovery",
        ),
        (
            lambda t: t.replace('--checkpoint, "{checkpoint}"', "--checkpoint, /tmp/cp"),
            "FILE: application.args: a streaming job recovers from its checkpoint: pass its "
            "location as {checkpoint} (the run fills it in)",
        ),
        (
            lambda t: t + "reference: {application: a.py}\n",
            "FILE: application: a recovery validation runs one application; it has no "
            "reference or candidate",
        ),
        (
            lambda t: t.replace("check: windows, expected: 3", "kill: executor"),
            "FILE: recovery: kill: executor needs a standalone cluster: set master to its "
            "spark:// URL",
        ),
        (
            lambda t: t.replace("check: windows", "check: differential"),
            "FILE: recovery: 'expected' and 'at_least_once' are for check: windows",
        ),
        (
            lambda t: t.replace("crashes: 3", "crashes: 0"),
            "FILE: recovery.crashes: must be >= 1, got 0",
        ),
    ],
)
def test_a_bad_recovery_spec_is_one_line(tmp_path: Path, edit: object, message: str) -> None:
    assert callable(edit)
    assert _problem(tmp_path, edit(SPEC)) == message


def test_the_plan_fills_in_the_checkpoint_and_keeps_the_runs_apart(tmp_path: Path) -> None:
    from parity.recovery.runner import app_command

    spec = load_spec(_spec(tmp_path))
    plan = plan_recovery(spec, root=ROOT, home=tmp_path / "home", run_id="r/1", crashes=5)
    assert (plan.crashes, plan.seed, plan.kill, plan.master) == (5, 4, "driver", "local[2]")
    assert plan.run_dir == tmp_path / "home" / "recovery" / "detector" / "r_1"
    crashed = app_command(plan, "crashed", spark_submit="spark-submit")
    assert crashed[:5] == [
        "spark-submit",
        "--master",
        "local[2]",
        "--name",
        "parity-detector-crashed",
    ]
    assert crashed[5:] == [
        str(ROOT / "jobs" / "examples" / "sequence_window.py"),
        *("--input", str(ROOT / "data" / "captures" / "sequence_window")),
        *("--output", str(plan.run_dir / "crashed")),
        *("--checkpoint", str(plan.run_dir / "checkpoint-crashed")),
    ]
    other = app_command(plan, "uninterrupted", spark_submit="spark-submit")
    assert str(plan.run_dir / "checkpoint-uninterrupted") in other


def test_a_spec_with_a_slice_reads_the_slice_the_slice_job_writes(tmp_path: Path) -> None:
    """The bundled differential spec: the slice job writes 12 files into the run's folder
    first, and the application reads them; without a slice there is no slice job."""
    from parity.recovery.runner import app_command, slice_command

    spec = load_spec(ROOT / "dags" / "validations" / "taxi_streaming_recovery.yaml")
    plan = plan_recovery(spec, root=ROOT, home=tmp_path, run_id="r1")
    assert plan.input == str(plan.run_dir / "slice")
    assert slice_command(plan, spark_submit="spark-submit") == [
        *("spark-submit", "--master", "local[2]", "--name", "parity-taxi_streaming_recovery-slice"),
        *("--conf", "spark.sql.session.timeZone=UTC", str(ROOT / "jobs" / "slice.py")),
        *("--capture", str(ROOT / "data" / "captures" / "taxi"), "--out", plan.input),
        *("--format", "jsonl", "--column", "event_time"),
        *("--start", "2024-05-01T00:00:00+00:00", "--end", "2024-05-02T00:00:00+00:00"),
        *("--files", "12", "--summary-json", str(plan.run_dir / "slice.json")),
    ]
    crashed = app_command(plan, "crashed", spark_submit="spark-submit")
    assert crashed[crashed.index("--input") + 1] == plan.input
    whole = plan_recovery(load_spec(_spec(tmp_path)), root=ROOT, home=tmp_path)
    assert (whole.slice, slice_command(whole, spark_submit="spark-submit")) == (None, None)


def test_on_a_cluster_the_recovery_jobs_ship_the_project(tmp_path: Path) -> None:
    """On ``spark://`` the slice job, the match job and a bundled application get the
    project's zip from ``HOME/packages`` (``parity.runs.package.submitted_to``, as the DAG's
    Spark tasks); a user's own application does not; on ``local[...]`` nothing is added and
    nothing is built."""
    from parity.recovery.runner import app_command, match_command, slice_command

    master = "spark://10.0.0.5:7077"
    spec = load_spec(ROOT / "dags" / "validations" / "taxi_streaming_recovery.yaml")
    plan = plan_recovery(spec, root=ROOT, home=tmp_path / "home", run_id="r1", master=master)
    assert plan.packages == tmp_path / "home" / "packages"
    name = "parity-taxi_streaming_recovery"
    sliced = slice_command(plan, spark_submit="spark-submit")
    assert sliced is not None
    [bundle] = plan.packages.iterdir()
    assert re.fullmatch(r"parity-[0-9a-f]{16}\.zip", bundle.name)
    with zipfile.ZipFile(bundle) as archive:
        assert "jobs/examples/streaming_taxi.py" in archive.namelist()
    shipped = (
        *("--conf", f"spark.archives={bundle}#parity-code"),
        *("--conf", "spark.executorEnv.PYTHONPATH=parity-code"),
    )
    assert sliced == [
        *("spark-submit", "--master", master, "--name", f"{name}-slice"),
        *("--conf", "spark.sql.session.timeZone=UTC", *shipped, str(ROOT / "jobs" / "slice.py")),
        *("--capture", str(ROOT / "data" / "captures" / "taxi"), "--out", plan.input),
        *("--format", "jsonl", "--column", "event_time"),
        *("--start", "2024-05-01T00:00:00+00:00", "--end", "2024-05-02T00:00:00+00:00"),
        *("--files", "12", "--summary-json", str(plan.run_dir / "slice.json")),
    ]
    application = str(ROOT / "jobs" / "examples" / "streaming_taxi.py")
    crashed = app_command(plan, "crashed", spark_submit="spark-submit")
    assert crashed[: crashed.index(application) + 1] == [
        *("spark-submit", "--master", master, "--name", f"{name}-crashed"),
        *("--conf", "spark.sql.shuffle.partitions=2", *shipped, application),
    ]
    check = match_command(plan, spark_submit="spark-submit", db=None)
    assert check[:14] == [
        *("spark-submit", "--master", master, "--name", f"{name}-recovery-check"),
        *("--conf", "spark.ui.enabled=false", *shipped, str(ROOT / "jobs" / "match.py")),
        *("--spec", str(spec.source)),
    ]
    assert [p.name for p in plan.packages.iterdir()] == [bundle.name]  # built once
    # A user's own application (outside the project's packages): as it is.
    own_app = tmp_path / "app.py"
    assert spec.application is not None
    theirs = replace(
        spec, application=spec.application.model_copy(update={"application": str(own_app)})
    )
    user = app_command(replace(plan, spec=theirs), "crashed", spark_submit="spark-submit")
    assert user[: user.index(str(own_app)) + 1] == [
        *("spark-submit", "--master", master, "--name", f"{name}-crashed"),
        *("--conf", "spark.sql.shuffle.partitions=2", str(own_app)),
    ]
    # local[...]: the executors are the driver's threads; nothing shipped, nothing built.
    local = plan_recovery(spec, root=ROOT, home=tmp_path / "local", run_id="r1")
    commands = [
        slice_command(local, spark_submit="spark-submit") or [],
        app_command(local, "crashed", spark_submit="spark-submit"),
        match_command(local, spark_submit="spark-submit", db=None),
    ]
    assert [c[:3] for c in commands] == [["spark-submit", "--master", "local[2]"]] * 3
    assert not [arg for c in commands for arg in c if "parity-code" in arg]
    assert not (tmp_path / "local" / "packages").exists()


def test_an_executor_kill_needs_a_standalone_master(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    with pytest.raises(SpecError, match=r"kill: executor needs a standalone cluster"):
        plan_recovery(spec, root=ROOT, home=tmp_path, kill="executor")
    plan = plan_recovery(
        spec, root=ROOT, home=tmp_path, kill="executor", master="spark://127.0.0.1:7077"
    )
    assert (plan.kill, plan.master) == ("executor", "spark://127.0.0.1:7077")


def _store_recovery_run(url: str, tmp_path: Path, *, lost: bool) -> str:
    spec = load_spec(_spec(tmp_path))
    plan = plan_recovery(spec, root=ROOT, home=tmp_path / "home", run_id="detector/run-1")
    records = [
        ("k0", [0, 0, 0, 1]),
        ("k1", [0, 0, 0, 1]),
        ("k0", [0, 0, 1, 2]),
        ("k1", [0, 0, 0, 2] if lost else [0, 0, 1, 2]),  # a reset ring: update 1 lost
        ("k0", [0, 1, 2, 3]),
        ("k1", [0, 0, 2, 3] if lost else [0, 1, 2, 3]),
    ]
    report = check_windows(records, expected=3)
    outcome = windows_outcome(report, CRASH_LOG)
    with Store.open(url) as store:
        start = recovery_start(plan)
        store.start_run(start)
        store.record_run(plan.run_id, outcome)
    return plan.run_id


def test_a_windows_check_is_stored_as_a_recovery_run(db_url: str, tmp_path: Path) -> None:
    run_id = _store_recovery_run(db_url, tmp_path, lost=True)
    with Store.open_readonly(db_url) as store:
        record = store.get_run(run_id)
    assert record is not None
    assert (record.kind, record.verdict, record.candidate_version) == (RECOVERY, "divergent", "v1")
    assert record.counts["loss"] >= 1
    first = record.divergences[0]
    assert (first.kind, first.key, first.candidate_position) == ("loss", "k1", 3)
    assert first.candidate_event == {"key": "k1", "window": [0, 0, 0, 2]}
    assert first.explain().startswith("record #3: ")
    assert record.stats is not None and record.stats["check"] == "windows"
    assert record.spec["recovery"]["seed"] == 4


def test_the_report_shows_the_crash_log(db_url: str, tmp_path: Path) -> None:
    run_id = _store_recovery_run(db_url, tmp_path, lost=False)
    with Store.open_readonly(db_url) as store:
        record = store.get_run(run_id)
    assert record is not None
    document = report_document(record)
    recovery = document["recovery"]
    assert (recovery["check"], recovery["planned"], recovery["injected"]) == ("windows", 3, 2)
    assert [c["recovered_in"] for c in recovery["crashes"]] == [12.9, 11.0]
    assert document["verdict"] == "equivalent"
    html = render_report_html(record)
    assert "<h2>Recovery</h2>" in html
    assert "2 injected, 2 recovered" in html
    assert html.count("<td>driver</td>") == 2
    assert history_row(_summary(db_url, run_id))[1] == "detector (recovery)"


def _summary(url: str, run_id: str) -> RunSummary:
    with Store.open_readonly(url) as store:
        return next(r for r in store.list_runs() if r.run_id == run_id)


def test_a_comparison_report_has_no_recovery_section(db_url: str) -> None:
    with Store.open(db_url) as store:
        store.start_run(RunStart("c/1", "taxi"))
        record = store.get_run("c/1")
    assert record is not None
    assert report_document(record)["recovery"] is None


def test_the_gate_of_a_recovery_run(db_url: str, tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    run_id = _store_recovery_run(db_url, tmp_path, lost=True)
    with Store.open(db_url) as store:
        decision = record_run_gate(store, run_id, spec)
    assert decision.passed is False


def test_history_and_report_commands_show_a_recovery_run(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _store_recovery_run(sqlite_url, tmp_path, lost=True)
    assert main(["history", "--db", sqlite_url, "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert (entry["kind"], entry["run_id"], entry["verdict"]) == ("recovery", run_id, "divergent")
    assert main(["report", run_id, "--db", sqlite_url, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["recovery"]["batches"] == 9
    assert main(["history", "--db", sqlite_url]) == 0
    assert "detector (recovery)" in capsys.readouterr().out


@pytest.mark.parametrize(("limit", "engine"), [(None, "core"), ("0", "spark")])
def test_the_differential_check_of_small_outputs_runs_on_the_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str | None, engine: str
) -> None:
    """Two small local outputs are compared by the match job in a Python process, as the
    DAG's match task does (parity.runs.engines); PARITY_CORE_MATCH_BYTES=0 submits it."""
    import sys

    from parity.recovery import runner
    from parity.runs.engines import BYTES_VARIABLE

    if limit is None:
        monkeypatch.delenv(BYTES_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(BYTES_VARIABLE, limit)
    spec = load_spec(
        _spec(tmp_path, SPEC.replace("check: windows, expected: 3", "check: differential"))
    )
    plan = plan_recovery(spec, root=ROOT, home=tmp_path / "home", run_id="r1")
    for side in ("uninterrupted", "crashed"):
        plan.path(side).mkdir(parents=True)
        (plan.path(side) / "part-0.json").write_text('{"key": "a", "window": [1]}\n')
    (plan.path("crashes.json")).write_text(json.dumps(CRASH_LOG))
    ran: list[list[str]] = []
    monkeypatch.setattr(runner, "run_to_end", lambda command, *args: ran.append(list(command)))
    runner.check_differential(plan, {}, spark_submit="spark-submit", db=None)
    [command] = ran
    application = str(ROOT / "jobs" / "match.py")
    if engine == "core":
        assert command[:2] == [sys.executable, application]
        assert command[-2:] == ["--engine", "core"]
    else:
        assert command[:3] == ["spark-submit", "--master", "local[2]"]
        assert application in command and "--engine" not in command
