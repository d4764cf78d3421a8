"""``parity recovery`` for real: the sequence-window detector under spark-submit, its driver's
whole process tree killed with SIGKILL and restarted from the checkpoint, and its executors
killed on a standalone cluster started from pyspark's own distribution
(``tests/standalone_cluster.py``); the output checked by the Wallaroo validator and the run
stored as kind ``recovery``.

Small on purpose (6 micro-batches, 2 crashes): each start of a PySpark streaming job costs
tens of seconds on two cores. The figures over many seeded runs: ``make recovery-figures``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jobs.examples.sequence_input import write_input
from matcher.store import Store
from parity.cli import main
from parity.recovery.processes import descendants

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parent.parent
KEYS, COUNT, FILES = 4, 12, 6
#: plan_kills(2, seed=7): inside the batch after the first commit, then right after the next
SEED = 7


def _spec(tmp_path: Path, variant: str, *, crashes: int = 2, extra: str = "") -> Path:
    inputs = tmp_path / "input"
    if not inputs.exists():
        write_input(inputs, keys=KEYS, count=COUNT, files=FILES, seed=1)
    path = tmp_path / f"{variant}.yaml"
    path.write_text(
        f"""\
name: detector_{variant}
application:
  application: jobs/examples/sequence_window.py
  args: [--input, "{{input}}", --output, "{{output}}", --checkpoint, "{{checkpoint}}",
         --files-per-batch, "1", --variant, {variant}]
  conf: {{spark.ui.enabled: "false", spark.sql.shuffle.partitions: "2"}}
  version: {variant}
recovery: {{crashes: {crashes}, seed: {SEED}, check: windows, expected: {COUNT}{extra}}}
input: {{path: {inputs}, format: jsonl}}
output: {{format: jsonl}}
dependence: {{key: [key]}}
""",
        encoding="utf-8",
    )
    return path


def _recover(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, object]]:
    db = f"sqlite:///{tmp_path / 'parity.db'}"
    code = main(
        ["recovery", str(spec), "--root", str(ROOT), "--home", str(tmp_path / "home"),
         "--db", db, "--json", *args]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert out, err
    return code, json.loads(out)


def _spark_processes_of(tmp_path: Path) -> list[int]:
    """Processes whose command line names this test's workspace (the jobs it started)."""
    found = []
    mark = str(tmp_path).encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in descendants(os.getpid()):
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if mark in cmdline:
                found.append(int(entry))
    return found


def test_the_detector_survives_driver_kills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run = _recover(tmp_path, _spec(tmp_path, "correct"), capsys)
    recovery = run["recovery"]
    assert isinstance(recovery, dict)
    assert (code, run["kind"], run["verdict"]) == (0, "recovery", "equivalent"), run
    assert (recovery["planned"], recovery["injected"], recovery["recovered"]) == (2, 2, 2)
    # Three starts; after a restart Spark may plan the rest in fewer micro-batches.
    assert recovery["attempts"] == 3 and 3 <= recovery["batches"] <= FILES
    crashes = recovery["crashes"]
    assert [c["target"] for c in crashes] == ["driver", "driver"]
    assert all(c["killed"] >= 3 for c in crashes)  # launcher, driver JVM, Python driver...
    assert run["counts"] == {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}
    assert run["stats"]["windows"]["records"] == KEYS * COUNT  # type: ignore[index]
    assert _spark_processes_of(tmp_path) == []  # every killed tree is gone
    with Store.open_readonly(f"sqlite:///{tmp_path / 'parity.db'}") as store:
        (summary,) = store.list_runs()
    assert (summary.kind, summary.status) == ("recovery", "completed")


@pytest.mark.crashes
def test_state_kept_on_the_driver_is_lost_by_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run = _recover(tmp_path, _spec(tmp_path, "driver_state", crashes=1), capsys)
    counts = run["counts"]
    assert isinstance(counts, dict)
    assert (code, run["verdict"]) == (1, "divergent")
    assert counts["loss"] > 0, counts
    first = run["divergences"][0]  # type: ignore[index]
    assert first["kind"] == "loss"
    assert "record #" in first["explanation"]


@pytest.mark.crashes
def test_the_detector_survives_executor_kills_on_a_standalone_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from standalone_cluster import standalone_cluster

    with standalone_cluster(tmp_path / "cluster", workers=2) as cluster:
        spec = _spec(tmp_path, "correct")
        code, run = _recover(
            tmp_path, spec, capsys, "--kill", "executor", "--master", cluster.master_url
        )
    recovery = run["recovery"]
    assert isinstance(recovery, dict)
    assert (code, run["verdict"]) == (0, "equivalent"), run
    assert recovery["attempts"] == 1  # executors are replaced: the application goes on
    assert recovery["injected"] >= 1
    assert {c["target"] for c in recovery["crashes"]} == {"executor"}
    assert all(c["killed"] >= 1 for c in recovery["crashes"])


def test_a_job_that_cannot_start_is_a_failed_run_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, "no_such_variant", crashes=1)
    db = f"sqlite:///{tmp_path / 'parity.db'}"
    code = main(
        ["recovery", str(spec), "--root", str(ROOT), "--home", str(tmp_path / "home"),
         "--db", db]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    last = err.strip().splitlines()[-1]
    assert last.startswith("parity: error: the application failed on its own (exit 2, attempt 1)")
    with Store.open_readonly(db) as store:
        (summary,) = store.list_runs()
    assert (summary.kind, summary.status, summary.verdict) == ("recovery", "failed", "error")


def test_the_differential_check_compares_with_an_uninterrupted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The form for a user's own job: the crashed output against an uninterrupted run of the
    same job, through the match job (``jobs/match.py --kind recovery``)."""
    spec = _spec(tmp_path, "driver_state", crashes=1)
    text = spec.read_text().replace(f"check: windows, expected: {COUNT}", "check: differential")
    spec.write_text(text)
    code, run = _recover(tmp_path, spec, capsys)
    assert (code, run["kind"], run["verdict"]) == (1, "recovery", "divergent"), run
    counts = run["counts"]
    assert isinstance(counts, dict) and counts["corruption"] + counts["loss"] > 0
    assert run["recovery"]["check"] == "differential"  # type: ignore[index]
    assert run["recovery"]["injected"] == 1  # type: ignore[index]
    assert run["recovery"]["uninterrupted_seconds"] > 0  # type: ignore[index]
    assert run["sides"]["reference"]["rows"] == KEYS * COUNT  # type: ignore[index]
