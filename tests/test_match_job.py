"""The match job through real ``spark-submit`` on ``local[2]``, writing to a real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from matcher.store import Store

ROOT = Path(__file__).resolve().parent.parent
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPEC = """\
name: taxi_job
dependence: {key: [taxi_id]}
equality: {ignore: [emitted_at]}
output: {format: parquet}
"""


def write_output(directory: Path, rows: list[dict[str, Any]], files: int = 2) -> Path:
    """A Spark-like output directory: part files in name order, plus _SUCCESS."""
    directory.mkdir(parents=True)
    step = -(-len(rows) // files)
    for n in range(files):
        part = rows[n * step : (n + 1) * step]
        table = pa.Table.from_pylist(part, schema=SCHEMA)
        pq.write_table(table, directory / f"part-{n:05d}.parquet")
    (directory / "_SUCCESS").write_text("")
    return directory


SCHEMA = pa.schema(
    [
        ("taxi_id", pa.string()),
        ("seq", pa.int64()),
        ("km", pa.float64()),
        ("emitted_at", pa.int64()),
    ]
)
REFERENCE = [
    {"taxi_id": f"T{t}", "seq": s, "km": float(s * t), "emitted_at": 100 * s + t}
    for s in range(1, 6)
    for t in range(1, 4)
]


def submit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    command += ["--conf", "spark.sql.shuffle.partitions=4", str(ROOT / "jobs" / "match.py")]
    return subprocess.run(
        [*command, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )


def output(result: subprocess.CompletedProcess[str]) -> str:
    """What the job printed: spark-submit's PythonRunner sends the driver's stderr to stdout."""
    return result.stdout + result.stderr


@pytest.fixture
def job(tmp_path: Path) -> dict[str, Any]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return {
        "spec": spec,
        "db": f"sqlite:///{tmp_path / 'results.db'}",
        "reference": write_output(tmp_path / "reference", REFERENCE),
    }


def test_equivalent_output_exits_0_and_records_the_run(tmp_path: Path, job: dict[str, Any]) -> None:
    # Taxis interleaved differently, per-taxi order kept, other emission times.
    by_taxi = sorted(REFERENCE, key=lambda r: (r["taxi_id"], r["seq"]))
    candidate = [{**r, "emitted_at": 0} for r in by_taxi]
    write_output(tmp_path / "candidate", candidate, files=3)
    out = tmp_path / "verdict.json"
    result = submit(
        tmp_path,
        *("--reference", str(job["reference"]), "--candidate", str(tmp_path / "candidate")),
        *("--spec", str(job["spec"]), "--db", job["db"], "--run-id", "run-ok"),
        *("--json-out", str(out)),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "match: run-ok: equivalent" in result.stdout
    document = json.loads(out.read_text())
    assert document["verdict"] == "equivalent"
    assert document["run_id"] == "run-ok"
    with Store(job["db"]) as store:
        run = store.get_run("run-ok")
    assert run is not None
    assert (run.status, run.verdict, run.engine, run.validation) == (
        "completed",
        "equivalent",
        "spark",
        "taxi_job",
    )
    assert run.divergences == ()


def test_divergent_output_exits_1_with_witnesses_and_a_retry_replaces(
    tmp_path: Path, job: dict[str, Any]
) -> None:
    candidate = [dict(r) for r in REFERENCE]
    candidate[4]["km"] = -1.0  # corruption of taxi T2, seq 2
    del candidate[9]  # loss of taxi T1, seq 4
    write_output(tmp_path / "candidate", candidate)
    args = (
        *("--reference", str(job["reference"]), "--candidate", str(tmp_path / "candidate")),
        *("--spec", str(job["spec"]), "--db", job["db"], "--run-id", "run-bug"),
    )
    for _attempt in range(2):  # the retried task must replace its results, not add to them
        result = submit(tmp_path, *args)
        assert result.returncode == 1, result.stderr[-3000:]
    with Store(job["db"]) as store:
        run = store.get_run("run-bug")
        assert len(store.list_runs(validation="taxi_job")) == 1
    assert run is not None
    assert (run.status, run.verdict) == ("completed", "divergent")
    assert [
        (d.kind, d.key, d.reference_position, d.candidate_position) for d in run.divergences
    ] == [
        ("corruption", "T2", 4, 4),
        ("loss", "T1", 9, 11),  # it belongs before T1's next event: candidate #11
    ]
    assert run.divergences[0].columns == ("km",)
    assert run.counts["corruption"] == 1 and run.counts["loss"] == 1


def test_user_errors_are_one_line_and_leave_the_run_failed(
    tmp_path: Path, job: dict[str, Any]
) -> None:
    wrong = [{**r, "km": str(r["km"])} for r in REFERENCE]  # km retyped to string
    directory = tmp_path / "candidate"
    directory.mkdir()
    pq.write_table(pa.Table.from_pylist(wrong), directory / "part-00000.parquet")
    result = submit(
        tmp_path,
        *("--reference", str(job["reference"]), "--candidate", str(directory)),
        *("--spec", str(job["spec"]), "--db", job["db"], "--run-id", "run-schema"),
    )
    assert result.returncode == 2
    assert "Traceback" not in output(result)
    errors = [line for line in output(result).splitlines() if line.startswith("match: error:")]
    assert len(errors) == 1
    assert "km" in errors[0] and "retyped" in errors[0]
    with Store(job["db"]) as store:
        run = store.get_run("run-schema")
    assert run is not None
    assert (run.status, run.verdict, run.divergences) == ("failed", "error", ())

    missing = submit(
        tmp_path,
        *("--reference", str(job["reference"]), "--candidate", str(tmp_path / "nowhere")),
        *("--spec", str(job["spec"]), "--db", job["db"], "--run-id", "run-missing"),
    )
    assert missing.returncode == 2
    assert "Traceback" not in output(missing)
    assert "match: error:" in output(missing) and "nowhere" in output(missing)


def test_a_bad_spec_is_one_line_before_spark_starts(tmp_path: Path, job: dict[str, Any]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("dependence: {key: [taxi_id]}\nequality: {ignore: [taxi_id]}\n")
    result = submit(
        tmp_path,
        *("--reference", str(job["reference"]), "--candidate", str(job["reference"])),
        *("--spec", str(bad), "--db", job["db"]),
    )
    assert result.returncode == 2
    assert "Traceback" not in output(result)
    assert f"match: error: {bad}: equality.ignore:" in output(result)
