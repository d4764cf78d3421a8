"""What `make test` needs on a fresh machine, and what it leaves behind.

``tools/ensure_chromium.sh`` (run by `make test` and by .ci/run) installs Debian's Chromium,
the browser tests' only browser, where it can, and otherwise stops at once with the command
to run; here it runs against stub ``id``, ``sudo`` and ``apt-get`` commands, never the real
ones. And a test session that used Spark ends without py4j's "--- Logging error ---" at exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "ensure_chromium.sh"
INSTALL = "apt-get update && apt-get install -y --no-install-recommends chromium"


def _stub(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _machine(tmp_path: Path, *, uid: int, sudo: bool, apt: bool) -> tuple[Path, Path]:
    """A PATH of stubs: ``id -u`` says ``uid``; ``sudo -n`` works when ``sudo``; ``apt-get``
    (when ``apt``) logs its arguments and, on install, creates the browser."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "env").symlink_to("/usr/bin/env")
    log = tmp_path / "commands.log"
    _stub(bin_dir, "id", f'[ "$1" = -u ] && echo {uid}')
    # The stubs themselves find the system's tools, the other stubs first.
    path = f"PATH={bin_dir}:/usr/bin:/bin"
    if sudo:
        _stub(
            bin_dir, "sudo", f'{path}; [ "$1" = -n ] && shift; echo "sudo $*" >> "{log}"; exec "$@"'
        )
    else:
        _stub(bin_dir, "sudo", "echo 'sudo: a password is required' >&2; exit 1")
    if apt:
        _stub(
            bin_dir,
            "apt-get",
            f'{path}; echo "apt-get $* ($DEBIAN_FRONTEND)" >> "{log}"\n'
            'if [ "$1" = install ]; then touch "$CHROMIUM" && chmod +x "$CHROMIUM"; fi',
        )
    return bin_dir, log


def _ensure(bin_dir: Path, chromium: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(SCRIPT)],
        env={"PATH": str(bin_dir), "CHROMIUM": str(chromium)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_chromium_already_there_is_left_alone(tmp_path: Path) -> None:
    bin_dir, log = _machine(tmp_path, uid=0, sudo=False, apt=True)
    chromium = tmp_path / "chromium"
    chromium.touch(mode=0o755)
    done = _ensure(bin_dir, chromium)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not log.exists()


def test_without_root_or_sudo_it_fails_at_once_with_the_command_to_run(tmp_path: Path) -> None:
    bin_dir, log = _machine(tmp_path, uid=1000, sudo=False, apt=True)
    missing = tmp_path / "no" / "chromium"
    done = _ensure(bin_dir, missing)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"make test: {missing} is missing (the browser tests drive Debian's Chromium): "
        f"run: sudo sh -c '{INSTALL}'\n"
    )
    assert not log.exists()


def test_as_root_it_installs_debians_chromium(tmp_path: Path) -> None:
    bin_dir, log = _machine(tmp_path, uid=0, sudo=False, apt=True)
    chromium = tmp_path / "chromium"
    done = _ensure(bin_dir, chromium)
    assert (done.returncode, done.stderr) == (0, "")
    assert log.read_text().splitlines() == [
        "apt-get update -q (noninteractive)",
        "apt-get install -y -q --no-install-recommends chromium (noninteractive)",
    ]
    assert os.access(chromium, os.X_OK)


def test_with_passwordless_sudo_it_installs_through_sudo(tmp_path: Path) -> None:
    bin_dir, log = _machine(tmp_path, uid=1000, sudo=True, apt=True)
    done = _ensure(bin_dir, tmp_path / "chromium")
    assert (done.returncode, done.stderr) == (0, "")
    assert log.read_text().splitlines() == [
        "sudo true",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q",
        "apt-get update -q (noninteractive)",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
        "chromium",
        "apt-get install -y -q --no-install-recommends chromium (noninteractive)",
    ]


def test_without_apt_get_it_says_so(tmp_path: Path) -> None:
    bin_dir, _ = _machine(tmp_path, uid=0, sudo=False, apt=False)
    missing = tmp_path / "chromium"
    done = _ensure(bin_dir, missing)
    assert done.returncode == 1
    assert done.stderr == (
        f"make test: {missing} is missing (the browser tests drive Debian's Chromium): no "
        f"apt-get here; install your distribution's chromium package so that {missing} exists\n"
    )


def test_make_test_and_ci_ensure_chromium_before_the_tests() -> None:
    # No Chromium is installed by either: -n prints the recipe without running it.
    # Under `make check` the parent make's MAKEFLAGS/MAKELEVEL would make this a sub-make
    # that prints "Entering directory" lines: plan it as a user's own `make test` would.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "TEST_WORKERS")
    }
    planned = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert planned.stdout.splitlines()[-2:] == [
        "bash tools/ensure_chromium.sh",
        ".venv/bin/pytest -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("bash tools/ensure_chromium.sh") < ci.index("\nmake check\n")
    assert "chromium)" not in ci  # no second, diverging way of installing it


TINY_SESSION = """
from pyspark.sql import SparkSession

pytest_plugins = ("tests.spark_fixtures",)


def test_spark_after_airflow(spark: SparkSession) -> None:
    # Importing Airflow points the root logger, at INFO, at pytest's captured stdout.
    import airflow.providers.apache.spark.hooks.spark_submit  # noqa: F401

    assert spark.range(3).count() == 3
"""


# The project's conftest (with its pytest_unconfigure) as a plugin: the tiny test file lives
# outside tests/, where no conftest would be found.
PLUGINS = ("-p", "tests.conftest")


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(900)
def test_a_session_that_used_spark_ends_without_a_logging_error(tmp_path: Path) -> None:
    test_file = tmp_path / "test_tiny.py"
    test_file.write_text(TINY_SESSION)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGINS, str(test_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "1 passed" in output
    assert "Logging error" not in output, output[-3000:]


def test_the_repository_tracks_no_symlink_and_nothing_of_the_environment() -> None:
    # A clean clone must build: a tracked `.venv` link (once committed from a worktree that
    # shared the environment) pointed at itself there and `make install` failed at once.
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    entries = [line.split("\t", 1) for line in listed]  # "mode object stage", path
    links = [path for stage, path in entries if stage.startswith("120000 ")]
    environment = [path for _, path in entries if path.split("/", 1)[0] in {".venv", "venv"}]
    assert links == []
    assert environment == []
