"""``parity minimize`` through the command, with real ``spark-submit`` runs of two small
applications (plain Python files, which ``spark-submit`` runs as it runs any PySpark
application) on a pipeline run's workspace as the DAG leaves it: its plan, spec, slice and
outputs, and the run in a SQLite store. The candidate drops one record; the search must end
on that record alone, store the result with the run, and write a regression test that fails,
then passes with the reference as the candidate. And the errors: one line, exit 2.

The bundled validations' own runs are ``tests/test_minimize_runs.py`` (``make minimize``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from matcher.dependence import by_key
from matcher.online import compare
from matcher.store import RunOutcome, RunStart, Store
from parity.runs.submits import SparkJob

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
APPLICATION = """\
import json, sys
from pathlib import Path

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
out = Path(args["--output"])
out.mkdir(parents=True)
with open(out / "part-00000.json", "w") as sink:
    for part in sorted(Path(args["--input"]).glob("part-*")):
        for line in part.read_text().splitlines():
            if "--drop" in args and json.loads(line)["v"] == int(args["--drop"]):
                continue
            sink.write(line + "\\n")
"""
SPEC = "name: tiny\ndependence: {key: [k]}\noutput: {format: jsonl}\n"
ROWS = [{"k": n % 4, "v": n} for n in range(12)]


def workspace(tmp_path: Path) -> tuple[str, Path]:
    """A divergent pipeline run's workspace and its run in a store: the candidate loses v=7."""
    run_dir = tmp_path / "runs" / "parity_tiny" / "run-1"
    (run_dir / "slice").mkdir(parents=True)
    for part in range(3):
        rows = ROWS[part * 4 : part * 4 + 4]
        text = "".join(json.dumps(r) + "\n" for r in rows)
        (run_dir / "slice" / f"part-0000{part}.json").write_text(text)
    app = tmp_path / "app.py"
    app.write_text(APPLICATION)
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)

    def job(role: str, *extra: str) -> dict[str, object]:
        args = ("--input", f"{run_dir}/slice", "--output", f"{run_dir}/{role}", *extra)
        return SparkJob(str(app), args, name=f"parity-tiny-{role}").to_dict()

    plan = {
        "spec_file": str(spec),
        "slice": {"format": "jsonl"},
        "jobs": {"reference": job("reference"), "candidate": job("candidate", "--drop", "7")},
    }
    (run_dir / "plan.json").write_text(json.dumps(plan))
    for role, rows in (("reference", ROWS), ("candidate", [r for r in ROWS if r["v"] != 7])):
        (run_dir / role).mkdir()
        (run_dir / role / "part-00000.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = f"sqlite:///{tmp_path / 'parity.db'}"
    with Store.open(db) as store:
        store.start_run(RunStart("parity_tiny/run-1", "tiny"))
        verdict = compare(ROWS, [r for r in ROWS if r["v"] != 7], by_key("k"))
        store.record_run(
            "parity_tiny/run-1", RunOutcome.from_verdict(verdict, report_path=f"{run_dir}/report")
        )
    return db, run_dir


def parity(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run(
        [str(BIN / "parity"), *args], env=env, capture_output=True, text=True, timeout=900
    )


def run_pytest(test: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=test.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_minimize_ends_on_the_one_record_and_writes_a_regression_test(tmp_path: Path) -> None:
    db, run_dir = workspace(tmp_path)
    done = parity("minimize", "parity_tiny/run-1", "--db", db)
    assert done.returncode == 0, done.stdout + done.stderr
    out = run_dir / "minimized"
    first, second = done.stdout.splitlines()[:2]
    assert first.startswith("minimize: run parity_tiny/run-1: 12 → 1 rows (4 → 1 keys) in ")
    assert first.endswith(" (1-minimal)") and second == "  reproduces: divergent: loss"
    assert "run 1 (keys)" in done.stderr and "reproduces" in done.stderr
    assert [
        json.loads(line) for line in (out / "input" / "part-00001.json").read_text().splitlines()
    ] == [{"k": 3, "v": 7}]
    assert sorted(p.name for p in (out / "input").iterdir()) == ["_SUCCESS", "part-00001.json"]
    assert "loss 1" in (out / "witness.txt").read_text()

    with Store.open_readonly(db) as store:
        record = store.get_run("parity_tiny/run-1")
    assert record is not None and record.stats is not None
    stored = record.stats["minimized"]
    assert (stored["rows_before"], stored["rows_after"], stored["keys_after"]) == (12, 1, 1)
    assert stored["status"] == "1-minimal" and stored["test"] == str(out / "test_tiny_minimal.py")
    assert (
        "minimized: 12 → 1 rows (4 → 1 keys)" in parity("report", record.run_id, "--db", db).stdout
    )

    test = out / "test_tiny_minimal.py"
    failing = run_pytest(test)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "loss 1" in failing.stdout
    text = test.read_text()
    block = re.search(r"^CANDIDATE = dict\(\n.*?^\)\n", text, re.MULTILINE | re.DOTALL)
    assert block is not None
    test.write_text(text.replace(block.group(0), "CANDIDATE = REFERENCE\n"))
    passing = run_pytest(test)
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_a_budget_ends_the_search_with_the_smallest_subset_so_far(tmp_path: Path) -> None:
    db, run_dir = workspace(tmp_path)
    done = parity("minimize", "parity_tiny/run-1", "--db", db, "--budget", "2", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["runs"]) == ("budget spent", 2)
    assert 1 <= result["rows_after"] < 12
    assert (run_dir / "minimized" / "test_tiny_minimal.py").is_file()


def test_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    db, run_dir = workspace(tmp_path)
    unknown = parity("minimize", "nope", "--db", db)
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert unknown.stderr.strip().count("\n") == 0 and "no run 'nope'" in unknown.stderr
    bad_budget = parity("minimize", "parity_tiny/run-1", "--db", db, "--budget", "1d")
    assert bad_budget.returncode == 2 and "--budget: expected" in bad_budget.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    refused = parity("minimize", "parity_tiny/run-1", "--db", db, "--out", str(mine))
    assert refused.returncode == 2 and "is not an earlier result" in refused.stderr
    assert (mine / "notes.txt").read_text() == "keep me"
    (run_dir / "plan.json").unlink()
    gone = parity("minimize", "parity_tiny/run-1", "--db", db)
    assert gone.returncode == 2 and "cannot read the run's plan" in gone.stderr
    assert "Traceback" not in unknown.stderr + bad_budget.stderr + gone.stderr
    with Store.open(db) as store:
        store.start_run(RunStart("same", "tiny"))
        store.record_run("same", RunOutcome.from_verdict(compare(ROWS, ROWS, by_key("k"))))
    same = parity("minimize", "same", "--db", db)
    assert same.returncode == 2 and "is equivalent, not divergent" in same.stderr
