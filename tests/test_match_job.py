"""The match job through real ``spark-submit`` on ``local[2]``, writing to a real store."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import text

from matcher.spec import load_spec
from matcher.store import RunStart, Store

ROOT = Path(__file__).resolve().parent.parent
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"

pytestmark = [pytest.mark.spark, pytest.mark.slow]
pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture (in-process runs)

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
    # the key retyped so that its values cannot be compared (a retyped value column is a
    # schema finding of the verdict instead: tests/test_schema_engines.py)
    wrong = [{**r, "taxi_id": [r["taxi_id"]]} for r in REFERENCE]
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
    assert "taxi_id" in errors[0] and "cannot be compared" in errors[0]
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


# -- noise, the pipeline's flags ------------------------------------------------------------


def swap(rows: list[dict[str, Any]], i: int, j: int) -> list[dict[str, Any]]:
    swapped = [dict(r) for r in rows]
    swapped[i], swapped[j] = swapped[j], swapped[i]
    return swapped


# A reference that is itself non-deterministic: run again, it emits taxi T1's first two
# positions the other way round (rows 0 and 3), and T3's last km differently (row 14). Its
# emission times differ everywhere, which the equality ignores: that is not noise.
RERUN = [{**r, "emitted_at": r["emitted_at"] + 1} for r in swap(REFERENCE, 0, 3)]
RERUN[14]["km"] = 999.0


def test_a_candidate_diverging_only_where_the_reference_is_noisy_is_noisy(
    tmp_path: Path, job: dict[str, Any]
) -> None:
    write_output(tmp_path / "rerun", RERUN, files=3)
    candidate = swap(REFERENCE, 0, 3)  # T1 reordered as in the rerun
    candidate[4]["km"] = -1.0  # T2's km corrupted: km is a noisy column
    write_output(tmp_path / "candidate", candidate)
    slice_json = '{"column": "event_time", "start": "2026-01-01T00:00:00+00:00"}'
    result = submit(
        tmp_path,
        *("--reference", str(job["reference"]), "--candidate", str(tmp_path / "candidate")),
        *("--rerun-reference", str(tmp_path / "rerun"), "--spec", str(job["spec"])),
        *("--db", job["db"], "--record-only", "--trigger", "scheduled"),
        *("--reference-version", "v1", "--candidate-version", "v2"),
        *("--dag-id", "parity_taxi", "--dag-run-id", "scheduled__2026-01-02", "--task-try", "2"),
        *("--slice-json", slice_json, "--report-dir", str(tmp_path / "report")),
        *("--json-out", str(tmp_path / "verdict.json")),
    )
    assert result.returncode == 0, output(result)[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("match: ")]
    assert lines[0].startswith(
        "match: parity_taxi/scheduled__2026-01-02: noisy "
        "(loss 0, duplication 0, reordering 1, corruption 1) in "
    )
    assert lines[1] == (
        "match: noise: all 2 divergences are explained by noise: 1 noisy key, 1 noisy column"
        " (2 divergences of the reference from its rerun)"
    )
    with Store(job["db"]) as store:
        run = store.get_run("parity_taxi/scheduled__2026-01-02")
    assert run is not None
    assert (
        run.status,
        run.verdict,
        run.gate_passed,
        run.trigger,
        run.reference_version,
        run.candidate_version,
        run.dag_id,
        run.dag_run_id,
        run.task_try,
        run.report_path,
    ) == (
        "completed",
        "noisy",
        None,
        "scheduled",
        "v1",
        "v2",
        "parity_taxi",
        "scheduled__2026-01-02",
        2,
        str(tmp_path / "report"),
    )
    assert run.slice == {"column": "event_time", "start": "2026-01-01T00:00:00+00:00"}
    assert run.spec == {
        "file": str(job["spec"]),
        "dependence": "by_key(taxi_id)",
        "gate": {
            "require": "equivalent",
            "allow_noisy": False,
            "expectations": True,
            "empty": "fail",
            "on_closed": "fail",
            "allow_overrides": False,
        },
        "expectations": [],
        "reference_runs": 2,
    }
    assert [(d.kind, d.key, d.columns, d.noisy) for d in run.divergences] == [
        ("reordering", "T1", (), True),
        ("corruption", "T2", ("km",), True),
    ]
    assert run.noise is not None
    assert {k: v for k, v in run.noise.items() if k != "summary"} == {
        "verdict": "noisy",
        "reference_runs": 2,
        "reference_divergences": 2,
        "reference_counts": {"loss": 0, "duplication": 0, "reordering": 1, "corruption": 1},
        "noise_complete": True,
        "noisy_key_count": 1,
        "noisy_keys": [{"key": "T1", "order": True, "events": False}],
        "noisy_columns": ["km"],
        "candidate_divergences": 2,
        "checked": 2,
        "explained": 2,
        "checked_all": True,
        "witnesses": [
            {"ordinal": 0, "explained_by": "order"},
            {"ordinal": 1, "explained_by": "columns"},
        ],
    }
    document = json.loads((tmp_path / "verdict.json").read_text())
    assert (document["verdict"], document["equivalent"], document["noise"]) == (
        "noisy",
        False,
        run.noise,
    )
    assert (tmp_path / "report" / "match.json").read_text() == (
        tmp_path / "verdict.json"
    ).read_text()


def test_a_divergence_outside_the_noise_is_divergent(
    tmp_path: Path, job: dict[str, Any], spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobs.match import main

    write_output(tmp_path / "rerun", RERUN)
    candidate = swap(REFERENCE, 0, 3)  # explained: T1 is reordered by the reference too
    del candidate[10]  # T2 seq 4 lost: the reference never lost an event
    write_output(tmp_path / "candidate", candidate)
    args = [
        *("--reference", str(job["reference"]), "--candidate", str(tmp_path / "candidate")),
        *("--rerun-reference", str(tmp_path / "rerun"), "--spec", str(job["spec"])),
        *("--db", job["db"], "--run-id", "adhoc-1", "--trigger", "adhoc"),
    ]
    assert main([*args, "--record-only"]) == 0  # recorded: the gate decides later
    out = capsys.readouterr().out
    assert (
        "match: noise: 1 of 2 divergences are not explained by noise: 1 noisy key, "
        "1 noisy column (2 divergences of the reference from its rerun)"
    ) in out
    with Store(job["db"]) as store:
        run = store.get_run("adhoc-1")
    assert run is not None
    assert (run.status, run.verdict, run.trigger, dict(run.counts)) == (
        "completed",
        "divergent",
        "adhoc",
        {"loss": 1, "duplication": 0, "reordering": 1, "corruption": 0},
    )
    assert [(d.kind, d.key, d.noisy) for d in run.divergences] == [
        ("reordering", "T1", True),
        ("loss", "T2", False),
    ]
    assert run.noise is not None
    assert (run.noise["verdict"], run.noise["explained"], run.noise["checked_all"]) == (
        "divergent",
        1,
        True,
    )


def test_pipeline_flags_become_the_run_start(job: dict[str, Any]) -> None:
    from jobs.match import build_run_start, parse_args

    spec = load_spec(job["spec"])
    args = parse_args(
        [
            *("--reference", "r", "--candidate", "c", "--spec", str(job["spec"])),
            *("--rerun-reference", "r2", "--trigger", "adhoc", "--candidate-version", "v9"),
            *("--dag-id", "parity_taxi", "--dag-run-id", "manual__1", "--task-try", "3"),
            *("--slice-json", '{"window": "1d", "sample": 0.5}'),
        ]
    )
    assert (args.rerun_reference, args.record_only, args.limit) == (["r2"], False, 100)
    assert build_run_start(args, spec) == RunStart(
        run_id="parity_taxi/manual__1",
        validation="taxi_job",
        trigger="adhoc",
        reference_version=None,
        candidate_version="v9",
        slice={"window": "1d", "sample": 0.5},
        spec={
            "file": str(job["spec"]),
            "dependence": "by_key(taxi_id)",
            "gate": {
                "require": "equivalent",
                "allow_noisy": False,
                "expectations": True,
                "empty": "fail",
                "on_closed": "fail",
                "allow_overrides": False,
            },
            "expectations": [],
            "reference_runs": 2,
        },
        dag_id="parity_taxi",
        dag_run_id="manual__1",
        task_try=3,
        engine="spark",
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dag-id", "d"], "match: error: --dag-id and --dag-run-id go together"),
        (["--slice-json", "{nope"], "match: error: --slice-json: not JSON: Expecting property"),
        (["--slice-json", "[1]"], "match: error: --slice-json: expected a JSON object"),
        (["--trigger", "cron"], "match: error: argument --trigger: invalid choice: 'cron'"),
        (["--limit", "-1"], "match: error: argument --limit: expected a whole number >= 0"),
    ],
)
def test_bad_pipeline_flags_are_one_line_before_anything_runs(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobs.match import parse_args

    with pytest.raises(SystemExit) as exited:
        parse_args(["--reference", "r", "--candidate", "c", "--spec", "s.yaml", *extra])
    assert exited.value.code == 2
    (error,) = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert error.startswith(message)


@pytest.mark.parametrize(
    ("status", "record_only", "code"),
    [
        ("equivalent", False, 0),
        ("divergent", False, 1),
        ("noisy", False, 1),  # not proven equivalent
        ("divergent", True, 0),
        ("noisy", True, 0),
    ],
)
def test_exit_codes(status: str, record_only: bool, code: int) -> None:
    from jobs.match import exit_code

    assert exit_code(status, record_only=record_only) == code


def test_versions_come_from_the_spec_unless_given(tmp_path: Path, job: dict[str, Any]) -> None:
    spec = tmp_path / "versioned.yaml"
    spec.write_text(
        SPEC
        + "reference: {application: ref.py, version: 'ref 1.4 <b>'}\n"
        + "candidate: {application: cand.py, version: cand-1.5}\n"
    )
    arguments = ("--reference", str(job["reference"]), "--candidate", str(job["reference"]))
    result = submit(
        tmp_path,
        *arguments,
        *("--spec", str(spec), "--db", job["db"], "--run-id", "by-hand"),
        *("--candidate-version", "cand-1.6"),
    )
    assert result.returncode == 0, output(result)[-3000:]
    with Store(job["db"]) as store:
        run = store.get_run("by-hand")
    assert run is not None
    assert (run.status, run.reference_version, run.candidate_version) == (
        "completed",
        "ref 1.4 <b>",
        "cand-1.6",
    )


def test_a_killed_match_job_reads_failed_once_its_lease_expired(
    tmp_path: Path, job: dict[str, Any]
) -> None:
    # kill -9 of spark-submit's whole process group (JVM and Python driver): nothing can mark
    # the run failed, and it used to stay running forever. With a 2 s lease (beats every
    # 1/3 s), the run reads failed once the lease has passed, and `parity runs expire` says so.
    from matcher.store.lease import LEASE_VARIABLE, lease_expired_reason
    from parity.cli import main as parity

    Store.open(job["db"]).close()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    command += [str(ROOT / "jobs" / "match.py"), "--spec", str(job["spec"]), "--db", job["db"]]
    command += ["--reference", str(job["reference"]), "--candidate", str(job["reference"])]
    process = subprocess.Popen(
        [*command, "--run-id", "doomed"],
        cwd=tmp_path,
        env={**env, LEASE_VARIABLE: "2"},
        start_new_session=True,  # its own process group, killed whole as a scheduler does
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        first = _lease_while_running(job["db"], "doomed", process)
        while _lease_while_running(job["db"], "doomed", process) == first:
            time.sleep(0.02)  # until the heartbeat renewed the lease
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    status, lease = _stored(job["db"], "doomed")
    assert status == "running" and lease is not None
    while dt.datetime.now(dt.UTC) <= lease:
        time.sleep(0.05)
    with Store.open_readonly(job["db"]) as store:
        run = store.get_run("doomed")
    assert run is not None
    assert (run.status, run.verdict, run.error) == ("failed", "error", lease_expired_reason(lease))
    assert _stored(job["db"], "doomed") == ("running", lease)  # shown failed, not written
    assert parity(["runs", "expire", "--db", job["db"]]) == 0
    assert _stored(job["db"], "doomed") == ("failed", None)


def _stored(url: str, run_id: str) -> tuple[str, dt.datetime | None] | None:
    """The run's status and lease as stored (no lease logic); ``None``: no such run yet."""
    with Store(url) as store, store._engine.connect() as connection:
        found = connection.execute(
            text("SELECT status, lease_expires_at FROM runs WHERE run_id = :id"), {"id": run_id}
        ).first()
    if found is None:
        return None
    lease = None if found[1] is None else dt.datetime.fromisoformat(found[1])
    return found[0], None if lease is None else lease.replace(tzinfo=dt.UTC)


def _lease_while_running(
    url: str, run_id: str, process: subprocess.Popen[bytes]
) -> dt.datetime | None:
    """The run's stored lease, once the job started the run; the job must still be running."""
    while (found := _stored(url, run_id)) is None:
        assert process.poll() is None, "the match job ended before it started its run"
        time.sleep(0.05)
    assert process.poll() is None, "the match job ended before it could be killed"
    assert found[0] == "running"
    return found[1]
