"""Small outputs are matched on the core, without spark-submit (``parity.runs.engines``): the
setting, the size rule, the match job's ``--engine core``, and the DAG's match task running
it (real ``jobs/match.py`` processes into a real SQLite store). That the core's verdict is
Spark's on every bundled validation is ``test_examples.py``'s; a DAG run end to end on each
engine is ``test_dags.py``'s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import ROOT

from matcher.files.locations import local_bytes
from matcher.store import Store
from parity.runs.engines import (
    BYTES_VARIABLE,
    DEFAULT_BYTES,
    EngineSettingError,
    core_match_argv,
    core_match_limit,
)
from parity.runs.submits import SparkJob

pytest_plugins = ("airflow_fixtures",)

MATCH = str(ROOT / "jobs" / "match.py")
SPEC = "name: tiny\ndependence: {key: [k]}\noutput: {format: jsonl}\n"


def _output(folder: Path, *lines: dict[str, Any]) -> str:
    folder.mkdir(parents=True)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / "part-00000.json").write_text(text, encoding="utf-8")
    (folder / "_SUCCESS").write_text("")
    return str(folder)


@pytest.fixture
def outputs(tmp_path: Path) -> tuple[str, str, str]:
    """A spec, a reference, and a candidate that loses the reference's second event."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    events = [{"k": "a", "v": 1}, {"k": "a", "v": 2}, {"k": "b", "v": 3}]
    reference = _output(tmp_path / "reference", *events)
    candidate = _output(tmp_path / "candidate", events[0], events[2])
    return str(spec), reference, candidate


@pytest.mark.parametrize(
    ("value", "limit"),
    [(None, DEFAULT_BYTES), ("", DEFAULT_BYTES), (" 1024 ", 1024), ("0", None)],
)
def test_the_setting_is_a_whole_number_of_bytes_and_0_turns_the_core_off(
    value: str | None, limit: int | None
) -> None:
    environ = {} if value is None else {BYTES_VARIABLE: value}
    assert core_match_limit(environ) == limit


@pytest.mark.parametrize("value", ["8M", "-1", "1e6", "1.5", "\u0661\u0662"])
def test_a_setting_that_is_not_a_number_of_bytes_is_one_line_naming_it(value: str) -> None:
    with pytest.raises(EngineSettingError) as raised:
        core_match_limit({BYTES_VARIABLE: value})
    assert str(raised.value) == f"{BYTES_VARIABLE}={value!r}: expected a whole number of bytes"


def test_the_core_command_is_the_match_job_on_this_python() -> None:
    job = SparkJob(application=MATCH, args=("--spec", "s.yaml"), conf={"spark.x": "1"})
    assert core_match_argv(job, python="/venv/bin/python") == [
        *("/venv/bin/python", MATCH, "--spec", "s.yaml", "--engine", "core"),
    ]


def test_only_local_outputs_within_the_limit_are_small(
    outputs: tuple[str, str, str], tmp_path: Path
) -> None:
    _, reference, candidate = outputs
    size = sum(p.stat().st_size for d in (reference, candidate) for p in Path(d).iterdir())
    assert local_bytes([reference, candidate], size) == size
    assert local_bytes([reference, f"file://{candidate}"], size) == size
    assert local_bytes([reference, candidate], size - 1) is None
    assert local_bytes([reference, "s3a://bucket/runs/candidate"], 1 << 40) is None
    assert local_bytes([reference, str(tmp_path / "missing")], 1 << 40) is None


def test_the_match_job_on_the_core_records_the_run_without_spark(
    outputs: tuple[str, str, str], tmp_path: Path
) -> None:
    spec, reference, candidate = outputs
    db = f"sqlite:///{tmp_path / 'results.db'}"
    args = ["--spec", spec, "--reference", reference, "--candidate", candidate, "--db", db]
    done = subprocess.run(
        [sys.executable, MATCH, *args, "--run-id", "r1", "--engine", "core"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (1, "")
    assert "match: r1: divergent (loss 1, duplication 0, reordering 0, corruption 0)" in done.stdout
    assert "pyspark" not in done.stdout
    with Store(db) as store:
        run = store.get_run("r1")
    assert run is not None
    assert (run.engine, run.verdict, run.status) == ("core", "divergent", "completed")
    assert [(d.kind, d.key, d.reference_position) for d in run.divergences] == [("loss", "a", 1)]


def test_the_match_job_on_the_core_refuses_an_output_on_a_store(
    outputs: tuple[str, str, str], tmp_path: Path
) -> None:
    spec, reference, _ = outputs
    db = f"sqlite:///{tmp_path / 'results.db'}"
    done = subprocess.run(
        [
            *(sys.executable, MATCH, "--spec", spec, "--reference", reference, "--db", db),
            *("--candidate", "s3a://bucket/candidate", "--run-id", "r2", "--engine", "core"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "match: error: s3a://bucket/candidate: --engine core reads local outputs only\n"
    )
    with Store(db) as store:
        run = store.get_run("r2")
    assert run is not None and (run.status, run.verdict) == ("failed", "error")


def _match_task(spec: str, reference: str, candidate: str, db: str, *extra: str) -> Any:
    """The DAG's match operator as ``render_template_fields`` leaves it for a run's plan."""
    from parity.airflow.operators import ParitySparkSubmitOperator

    task = ParitySparkSubmitOperator(task_id="match", job="match", conn_id="spark_default")
    args = ("--spec", spec, "--reference", reference, "--candidate", candidate, "--db", db)
    task._planned = SparkJob(application=MATCH, args=(*args, *extra))
    task._outputs = [reference, candidate]
    return task


def test_the_match_task_runs_the_job_on_the_core_for_small_outputs(
    outputs: tuple[str, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, reference, candidate = outputs
    db = f"sqlite:///{tmp_path / 'results.db'}"
    monkeypatch.delenv(BYTES_VARIABLE, raising=False)
    task = _match_task(spec, reference, candidate, db, "--run-id", "r3", "--record-only")
    task.execute({})  # no spark-submit: the provider's hook was never made
    assert getattr(task, "_hook", None) is None
    with Store(db) as store:
        run = store.get_run("r3")
    assert run is not None and (run.engine, run.verdict) == ("core", "divergent")


def test_the_match_task_fails_when_the_job_on_the_core_fails(
    outputs: tuple[str, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import AirflowException

    _, reference, _ = outputs
    monkeypatch.delenv(BYTES_VARIABLE, raising=False)
    db = f"sqlite:///{tmp_path / 'results.db'}"
    missing_column = tmp_path / "other.yaml"
    missing_column.write_text(SPEC.replace("[k]", "[taxi]"), encoding="utf-8")
    task = _match_task(str(missing_column), reference, reference, db, "--run-id", "r4")
    with pytest.raises(AirflowException, match=r"the match job exited with code 2"):
        task.execute({})
    with Store(db) as store:
        run = store.get_run("r4")
    assert run is not None and (run.engine, run.status) == ("core", "failed")


def test_a_bad_setting_fails_the_match_task_without_a_retry(
    outputs: tuple[str, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    spec, reference, candidate = outputs
    monkeypatch.setenv(BYTES_VARIABLE, "8M")
    task = _match_task(spec, reference, candidate, f"sqlite:///{tmp_path / 'r.db'}")
    with pytest.raises(AirflowFailException, match=rf"^{BYTES_VARIABLE}='8M': expected"):
        task.execute({})
