"""``parity validate``: real spec files through the real command (a child process that
imports Airflow), one exact line per spec, exit 0 or 2."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from parity.cli import main
from parity.cli.validate import child_argv

pytest_plugins = ("airflow_fixtures",)  # AIRFLOW_HOME in a temporary folder, not ~/airflow

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted((ROOT / "dags" / "validations").glob("*.yaml"))
GOOD = (ROOT / "dags" / "validations" / "maxrow_wellformed.yaml").read_text(encoding="utf-8")
SCHEDULED = (ROOT / "dags" / "validations" / "taxi_parallel.yaml").read_text(encoding="utf-8")


def validate(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parity", "validate", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_every_bundled_spec_validates() -> None:
    done = validate("--no-files", *(str(p.relative_to(ROOT)) for p in BUNDLED))
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert len(lines) == len(BUNDLED) == 21
    assert lines[BUNDLED.index(ROOT / "dags/validations/taxi_parallel.yaml")] == (
        "dags/validations/taxi_parallel.yaml: OK (validation taxi_parallel, "
        "DAG parity_taxi_parallel, schedule 0 2 * * *)"
    )
    assert lines[BUNDLED.index(ROOT / "dags/validations/maxrow_wellformed.yaml")] == (
        "dags/validations/maxrow_wellformed.yaml: OK (validation maxrow_wellformed, "
        "DAG parity_maxrow_wellformed, schedule none (ad hoc only))"
    )
    assert all(": OK (validation " in line for line in lines)


def test_bad_specs_one_line_each_and_exit_2(tmp_path: Path) -> None:
    typo = write(tmp_path, "typo.yaml", GOOD + "airflow:\n  pol: spark\n")
    schedule = write(
        tmp_path,
        "schedule.yaml",
        SCHEDULED.replace('schedule: "0 2 * * *"', 'schedule: "0 25 * * *"').replace(
            "name: taxi_parallel", "name: taxi_bad_schedule"
        ),
    )
    broken = write(tmp_path, "broken.yaml", "name: [\n")
    # The capture is there (an empty folder will do), the candidate's application is not.
    (tmp_path / "jobs").symlink_to(ROOT / "jobs")
    (tmp_path / "data" / "captures" / "maxrow_wellformed").mkdir(parents=True)
    missing = write(
        tmp_path,
        "missing.yaml",
        GOOD.replace("name: maxrow_wellformed", "name: m2").replace(
            "  application: jobs/examples/reducers.py\n  args: [--reducer, maxrow, --variant, "
            "parallel",
            "  application: jobs/examples/gone.py\n  args: [--reducer, maxrow, --variant, parallel",
        ),
    )
    done = validate(typo, schedule, broken, missing, "--root", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        f"{typo}: airflow.pol: unknown key (expected one of: max_active_runs, pool, "
        "task_timeout, spark_conf, match_conf, conn_id)",
        f"{schedule}: schedule: [0 25 * * *] is not acceptable, out of range",
        f"{broken}: line 2, column 1: YAML syntax error: expected the node content, but "
        "found '<stream end>'",
        f"{missing}: candidate.application: no such file: {tmp_path / 'jobs/examples/gone.py'}",
    ]


def test_a_missing_capture_names_it(tmp_path: Path) -> None:
    done = validate("dags/validations/taxi_parallel.yaml", "--root", str(tmp_path / "none"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"parity: error: --root: no such directory: {tmp_path / 'none'}\n"
    (tmp_path / "jobs").symlink_to(ROOT / "jobs")  # the applications, not the captures
    done = validate("dags/validations/taxi_parallel.yaml", "--root", str(tmp_path))
    assert done.returncode == 2
    assert done.stdout == (
        "dags/validations/taxi_parallel.yaml: input.path: no such capture: "
        f"{tmp_path / 'data/captures/taxi'} (generate the captures first: "
        "python -m jobs.examples.generate)\n"
    )


def test_two_specs_of_one_name(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", GOOD)
    second = write(tmp_path, "b.yaml", GOOD)
    done = validate("--no-files", first, second)
    assert done.returncode == 2
    assert done.stdout.splitlines()[1] == (
        f"{second}: name: 'maxrow_wellformed' is already used by {first}"
    )


def test_a_missing_file_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["validate", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out.startswith(f"{missing}: [Errno 2] No such file or directory")
    assert "\n" not in out.rstrip("\n") and err == ""
    assert main(["validate"]) == 2
    assert "the following arguments are required: SPEC" in capsys.readouterr().err


def test_child_command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(tmp_path / "dags"))
    args = argparse.Namespace(specs=["-x.yaml"], root=None, no_files=True)
    assert child_argv(args) == [
        sys.executable,
        *("-m", "parity.airflow.validate", "--root", str(tmp_path), "--no-files"),
        *("--", "-x.yaml"),
    ]
