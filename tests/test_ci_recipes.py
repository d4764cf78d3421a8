"""The CI recipes of ``docs/how-to/ci.md`` and the script they call, ``tools/ci/parity-release.sh``.

The recipes are parsed as the CI systems would (YAML) and must call the script and make the
deploy wait for it. The script's own logic (its arguments to ``parity run``, one line per
exit code) runs against a stand-in ``parity`` command that records its arguments and exits
with a chosen code; then the script runs for real, in local mode, on the bundled divergent
``maxrow_arbitrary``: ``dag.test()`` with real ``spark-submit``, exit 1, blocked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "ci" / "parity-release.sh"
DOC = ROOT / "docs" / "how-to" / "ci.md"
BIN = Path(sys.executable).parent
CALL = "tools/ci/parity-release.sh"


def recipes() -> dict[str, Any]:
    """The YAML blocks of docs/how-to/ci.md, by what they are (GitHub's has ``jobs``)."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    parsed = [yaml.safe_load(block) for block in blocks]
    assert len(parsed) == 2
    return {"github": parsed[0], "gitlab": parsed[1]}


def test_the_github_actions_recipe_validates_before_it_deploys() -> None:
    workflow = recipes()["github"]
    jobs = workflow["jobs"]
    assert list(jobs) == ["build", "validate", "deploy"]
    assert (jobs["validate"]["needs"], jobs["deploy"]["needs"]) == ("build", "validate")
    assert [step.get("run") for step in jobs["validate"]["steps"]][-1] == CALL
    assert workflow["env"] == {
        "VALIDATION": "taxi_parallel",
        "VERSION": "${{ github.sha }}",
        "ARTIFACT_URL": "s3a://artifacts/etl/etl-${{ github.sha }}.py",
    }
    assert jobs["validate"]["env"]["PARITY_AIRFLOW_TOKEN"] == "${{ secrets.PARITY_AIRFLOW_TOKEN }}"


def test_the_gitlab_recipe_validates_before_it_deploys() -> None:
    pipeline = recipes()["gitlab"]
    assert pipeline["stages"] == ["build", "validate", "deploy"]
    assert pipeline["validate"]["stage"] == "validate"
    assert pipeline["validate"]["script"][-1] == CALL
    assert pipeline["deploy"]["needs"] == ["validate"]
    assert pipeline["variables"] == {
        "VALIDATION": "taxi_parallel",
        "VERSION": "$CI_COMMIT_SHA",
        "ARTIFACT_URL": "s3a://artifacts/etl/etl-$CI_COMMIT_SHA.py",
    }


# -- the script's logic, against a stand-in parity command ----------------------------------

STAND_IN = """#!/bin/sh
printf '%s\\n' "$@" > "$ARGS_FILE"
exit "$EXIT"
"""


def script(
    tmp_path: Path, exit_code: int, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    stand_in = tmp_path / "parity"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    environment = {
        "PATH": "/usr/bin:/bin",
        "PARITY": str(stand_in),
        "ARGS_FILE": str(tmp_path / "args"),
        "EXIT": str(exit_code),
        **env,
    }
    done = subprocess.run(
        [str(SCRIPT)], env=environment, capture_output=True, text=True, timeout=60, check=False
    )
    args_file = tmp_path / "args"
    args = args_file.read_text().splitlines() if args_file.is_file() else []
    return done, args


ENV = {"VALIDATION": "taxi_parallel", "VERSION": "1.5.0"}


@pytest.mark.parametrize(
    ("code", "exit_code", "line"),
    [
        (0, 0, "parity-release: SHIP: taxi_parallel, candidate 1.5.0: the gate is open"),
        (1, 1, "parity-release: BLOCKED: taxi_parallel, candidate 1.5.0: the verdict closed the "
               "gate (an intended change? parity approve RUN_ID --reason ...)"),
        (3, 3, "parity-release: BLOCKED: taxi_parallel, candidate 1.5.0: no usable verdict (the "
               "run failed, was rejected, or did not end within 2h)"),
        (2, 2, "parity-release: ERROR: taxi_parallel, candidate 1.5.0: Parity could not answer "
               "(exit 2)"),
        (130, 2, "parity-release: ERROR: taxi_parallel, candidate 1.5.0: Parity could not "
                 "answer (exit 130)"),
    ],
)  # fmt: skip
def test_the_script_passes_the_exit_code_on_with_one_line(
    tmp_path: Path, code: int, exit_code: int, line: str
) -> None:
    done, args = script(tmp_path, code, **ENV, ARTIFACT_URL="s3a://artifacts/etl/etl-1.5.0.py")
    assert (done.returncode, done.stdout, done.stderr) == (exit_code, "", line + "\n")
    assert args == [
        "run", "taxi_parallel", "--candidate-version", "1.5.0", "--wait", "--timeout", "2h",
        "--candidate-application", "s3a://artifacts/etl/etl-1.5.0.py",
    ]  # fmt: skip


def test_without_an_artifact_the_spec_s_application_runs(tmp_path: Path) -> None:
    done, args = script(tmp_path, 0, **ENV, PARITY_TIMEOUT="30m")
    assert done.returncode == 0
    assert args == [
        "run", "taxi_parallel", "--candidate-version", "1.5.0", "--wait", "--timeout", "30m",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({"VERSION": "1"}, "VALIDATION is not set (the validation's name)"),
        ({"VALIDATION": "taxi"}, "VERSION is not set (the candidate version, e.g. the commit)"),
    ],
)
def test_the_script_refuses_to_run_without_its_settings(
    tmp_path: Path, env: dict[str, str], line: str
) -> None:
    done, args = script(tmp_path, 0, **env)
    assert (done.returncode, done.stderr, args) == (2, f"parity-release: error: {line}\n", [])


# -- the script for real: local mode, a bundled divergent validation ------------------------


@pytest.mark.release_e2e
@pytest.mark.timeout(1800)
def test_the_script_blocks_a_divergent_build(tmp_path: Path) -> None:
    environment = {
        "HOME": str(tmp_path),
        "PATH": f"{BIN}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PARITY_HOME": str(tmp_path / "parity"),
        "VALIDATION": "maxrow_arbitrary",
        "VERSION": "v-bug",
        "PARITY_TIMEOUT": "25m",
    }
    if "JAVA_HOME" in os.environ:
        environment["JAVA_HOME"] = os.environ["JAVA_HOME"]
    done = subprocess.run(
        [str(SCRIPT)], env=environment, cwd=tmp_path, capture_output=True, text=True,
        timeout=1700, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:] + done.stdout[-3000:]
    assert done.stderr.splitlines()[-1] == (
        "parity-release: BLOCKED: maxrow_arbitrary, candidate v-bug: the verdict closed the "
        "gate (an intended change? parity approve RUN_ID --reason ...)"
    )
    lines = done.stdout.splitlines()
    assert lines[1].split(": verdict ")[1].startswith("divergent (corruption ")
    assert lines[-1].startswith("maxrow_arbitrary (candidate v-bug): gate closed: ")
