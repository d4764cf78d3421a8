"""A newcomer's first hour, as a test (``make newcomer``; minutes, not in CI).

From a fresh clone of HEAD, with nothing but what the README's first screen says: ``make
demo`` (which installs everything into the clone's own ``.venv``), then the tutorial
(docs/tutorial.md) on the bundled example pipeline, command by command, in the clone:

* every shell session the tutorial shows is run and prints what the page shows (the
  ``parity compare`` steps, from the strictest spec to the bundled one);
* ``parity run taxi_parallel --local --wait`` ends with the verdict and the gate the
  tutorial gives, and exits 0;
* ``parity history``, ``parity report --latest`` and ``parity gate`` then read that run as
  the tutorial's last two steps say.

The results and the Airflow home go to a temporary ``PARITY_HOME``; the clone installs from
uv's cache, so no network is needed when the lock's packages are there.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.doc_sessions import ROOT, matches, sessions

pytestmark = [pytest.mark.newcomer, pytest.mark.timeout(3600)]

VERDICT = "taxi_parallel (candidate parallel): gate open: verdict equivalent; expectations passed"


def shell(
    clone: Path, home: Path, command: str, timeout: int = 1800
) -> subprocess.CompletedProcess[str]:
    """A command in the clone, as a newcomer types it there (its venv's bin on PATH)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PARITY_", "VIRTUAL_ENV"))},
        "PATH": f"{clone / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PARITY_HOME": str(home),
    }
    return subprocess.run(
        ["bash", "-c", command],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_clone_demo_and_the_tutorial(tmp_path: Path) -> None:
    clone, home = tmp_path / "parity", tmp_path / "home"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    # CI's layout: the shared documents beside the clone
    (tmp_path / "shared").symlink_to((ROOT.parent / "shared").resolve())

    demo = shell(clone, home, "make demo")
    assert demo.returncode == 0, (demo.stdout + demo.stderr)[-4000:]
    assert "Parity demo:" in demo.stdout
    assert " divergent " in demo.stdout and " equivalent " in demo.stdout

    tutorial = clone / "docs" / "tutorial.md"
    shown = [s for s in sessions(tutorial, clone) if s.not_executed is None]
    assert len(shown) >= 8
    for session in shown:
        for command in session.commands:
            result = shell(clone, home, command.command, timeout=600)
            assert matches(command.expected, result.stdout, abridged=session.abridged), (
                f"{session.name}: `$ {command.command}` printed\n{result.stdout}"
                f"{result.stderr[-2000:]}"
            )

    run = shell(clone, home, "parity run taxi_parallel --local --wait")
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert VERDICT in run.stdout + run.stderr
    assert VERDICT in tutorial.read_text(encoding="utf-8").replace("\n", " ").replace("  ", " ")

    # step 5 and 6, in the demo's store as the tutorial says (its env.sh)
    demo_env = f"source {home / 'demo' / 'env.sh'} && "
    history = shell(clone, home, demo_env + "parity history --validation taxi_parallel")
    assert history.returncode == 0 and "equivalent" in history.stdout, history.stderr
    report = shell(clone, home, demo_env + "parity report --latest taxi_parallel")
    assert report.returncode == 0 and "equivalent" in report.stdout, report.stderr
    gate = shell(
        clone, home, demo_env + "parity gate taxi_parallel --candidate parallel --max-age 1d"
    )
    assert gate.returncode == 0, gate.stdout + gate.stderr
