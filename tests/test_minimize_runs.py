"""``parity minimize`` on each bundled divergent validation, end to end (``make minimize``;
minutes each, not in CI).

For each one: ``parity run V --local --wait`` (the real DAG with ``dag.test()``, real
``spark-submit`` jobs, SQLite), then ``parity minimize RUN`` on that run. Its input must
end at most a few rows long and still diverge; its generated pytest file must fail as it
is (the buggy candidate) and pass once ``CANDIDATE`` is replaced by ``REFERENCE``. The
figures (rows before and after, runs, seconds) are printed and appended as JSON lines to
``$PARITY_MINIMIZE_FIGURES`` when it is set (``make minimize``: ``minimize-figures.jsonl``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.minimize, pytest.mark.timeout(3600)]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: the bundled comparisons whose candidates diverge (``Expected verdict: divergent``)
DIVERGENT = (
    "taxi_parallel_buggy",
    "topics_parallel_buggy",
    "firstn_arbitrary",
    "indexvaluepair_arbitrary",
    "maxrow_arbitrary",
    "singleitem_arbitrary",
    "strconcat_arbitrary",
    "strconcat_stream_ordered",
)
#: "at most a few rows long"
FEW = 6


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("minimize-home")


def parity(home: Path, *args: str, timeout: int = 3000) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PARITY_")},
        "PARITY_HOME": str(home),
        "PARITY_DB_URL": f"sqlite:///{home / 'demo' / 'parity.db'}",
    }
    return subprocess.run(
        [str(BIN / "parity"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def pytest_file(test: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=test.parent,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


@pytest.mark.parametrize("validation", DIVERGENT)
def test_minimize_a_bundled_divergent_run(validation: str, home: Path) -> None:
    run = parity(home, "run", validation, "--local", "--wait", "--json")
    assert run.returncode == 1, (run.stdout + run.stderr)[-3000:]
    outcome = json.loads(run.stdout)
    assert outcome["verdict"] == "divergent", outcome

    started = time.monotonic()
    found = parity(home, "minimize", outcome["run_id"], "--json", "--no-progress")
    seconds = time.monotonic() - started
    assert found.returncode == 0, (found.stdout + found.stderr)[-3000:]
    result = json.loads(found.stdout)
    figures = {
        "validation": validation,
        "rows_before": result["rows_before"],
        "rows_after": result["rows_after"],
        "keys_before": result["keys_before"],
        "keys_after": result["keys_after"],
        "runs": result["runs"],
        "seconds": round(seconds, 1),
        "status": result["status"],
        "reproduces": result["reproduces"],
    }
    print(json.dumps(figures))
    if os.environ.get("PARITY_MINIMIZE_FIGURES"):
        with open(os.environ["PARITY_MINIMIZE_FIGURES"], "a", encoding="utf-8") as sink:
            sink.write(json.dumps(figures) + "\n")
    assert result["verdict"] == "divergent"
    assert 1 <= result["rows_after"] <= FEW, figures

    report = parity(home, "report", outcome["run_id"])
    assert f"minimized: {result['rows_before']:,} → {result['rows_after']:,} rows" in report.stdout

    test = Path(result["test"])
    failing = pytest_file(test)
    assert failing.returncode == 1, (failing.stdout + failing.stderr)[-3000:]
    assert "is not equivalent to the reference" in failing.stdout

    # the candidate replaced by the reference: the test passes
    text = test.read_text()
    block = re.search(r"^CANDIDATE = dict\(\n.*?^\)\n", text, re.MULTILINE | re.DOTALL)
    assert block is not None, text
    fixed = test.with_name("test_fixed_" + test.name[len("test_") :])
    fixed.write_text(text.replace(block.group(0), "CANDIDATE = REFERENCE\n"))
    assert "CANDIDATE = REFERENCE" in fixed.read_text()
    passing = pytest_file(fixed)
    assert passing.returncode == 0, (passing.stdout + passing.stderr)[-3000:]
