"""Issue 16: progress on stderr for the long commands, only for a person at a terminal
(``parity.cli.progress``).

The helper itself on fake streams and a fake clock; then the real ``parity compare`` and
``parity properties`` in a child process whose stderr is a pseudo-terminal (``pty``): the
steps appear there, never on stdout, whose verdict stays byte for byte what a script
reads; with stderr a pipe (CI, an Airflow task's log) nothing at all, unless ``--progress``.
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from parity.cli.progress import Progress, wanted

ROOT = Path(__file__).resolve().parents[1]
COMPARE = (
    "compare",
    "examples/taxi/reference.jsonl",
    "examples/taxi/candidate_bug.jsonl",
    "--spec",
    "examples/taxi/spec.yaml",
    "--engine",
    "core",
)
#: a progress line: the command, the seconds elapsed, the step
LINE = re.compile(r"^(compare|properties|recovery): (\d+\.\d)s (.*)$")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- the helper ------------------------------------------------------------------------------


def test_steps_are_lines_with_the_seconds_since_the_start() -> None:
    stream, clock = Terminal(), Clock()
    progress = Progress("compare", enabled=True, stream=stream, clock=clock)
    progress.step("reading the spec")
    clock.now += 2.25
    progress.step("matching")

    assert stream.getvalue() == "compare: 0.0s reading the spec\ncompare: 2.2s matching\n"


def test_disabled_progress_writes_nothing_and_starts_no_thread() -> None:
    stream = Terminal()
    progress = Progress("compare", enabled=False, stream=stream, heartbeat=0.01)
    before = threading.active_count()
    with progress.heartbeat():
        assert threading.active_count() == before
        progress.step("matching")
        time.sleep(0.05)
    assert stream.getvalue() == ""


def test_the_heartbeat_repeats_a_step_that_runs_long() -> None:
    stream = Terminal()
    progress = Progress("recovery", enabled=True, stream=stream, heartbeat=0.1)
    with progress.heartbeat():
        progress.step("running it under 5 crashes")
        time.sleep(0.45)
    steps = [LINE.match(line) for line in stream.getvalue().splitlines()]
    assert all(steps), stream.getvalue()
    texts = [m.group(3) for m in steps if m]
    assert texts[0] == "running it under 5 crashes"
    assert set(texts[1:]) == {"still running it under 5 crashes"}
    assert 2 <= len(texts) - 1 <= 4  # one every 0.1 s without a line, give or take a tick
    seconds = [float(m.group(2)) for m in steps if m]
    assert seconds == sorted(seconds)


def test_a_step_cannot_send_the_terminal_an_escape() -> None:
    stream = Terminal()
    Progress("compare", enabled=True, stream=stream, clock=Clock()).step(
        "reading out\x1b[2J\x1b]0;owned\x07.jsonl"
    )
    assert stream.getvalue() == "compare: 0.0s reading out\\x1b[2J\\x1b]0;owned\\x07.jsonl\n"


def test_shown_on_a_terminal_or_when_asked() -> None:
    assert wanted(None, Terminal()) is True
    assert wanted(None, io.StringIO()) is False
    assert wanted(True, io.StringIO()) is True
    assert wanted(False, Terminal()) is False
    closed = io.StringIO()
    closed.close()  # its isatty() raises ValueError
    assert wanted(None, closed) is False


# -- the commands, under a pseudo-terminal and without one -----------------------------------


def run_on_terminal(*args: str) -> tuple[int, str, str]:
    """``parity ARGS`` with stderr a pseudo-terminal and stdout a pipe: (exit code, stdout,
    what the terminal received, its line ends as ``\\n``)."""
    controller, terminal = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "parity", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
        )
    finally:
        os.close(terminal)
    received = bytearray()
    try:
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed the terminal's last descriptor
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(controller)
    out, _ = child.communicate(timeout=120)
    return child.returncode, out.decode(), received.decode().replace("\r\n", "\n")


def run_piped(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parity", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def steps(text: str) -> list[tuple[str, str]]:
    """(command, step) of each progress line, the elapsed seconds left out."""
    found = []
    for line in text.splitlines():
        match = LINE.match(line)
        assert match, f"not a progress line: {line!r}"
        found.append((match.group(1), match.group(3)))
    return found


def test_compare_shows_its_steps_on_a_terminal_and_its_verdict_on_stdout() -> None:
    code, out, terminal = run_on_terminal(*COMPARE)
    piped = run_piped(*COMPARE)

    assert code == piped.returncode == 1
    assert out == piped.stdout  # the report scripts read is the same with or without a terminal
    assert steps(terminal) == [
        ("compare", "reading the spec examples/taxi/spec.yaml"),
        (
            "compare",
            "reading and matching examples/taxi/reference.jsonl (reference) and "
            "examples/taxi/candidate_bug.jsonl (candidate) in this process",
        ),
        ("compare", "done: divergent (2 divergences)"),
    ]
    assert not [line for line in out.splitlines() if LINE.match(line)]


def test_compare_says_nothing_on_stderr_without_a_terminal() -> None:
    piped = run_piped(*COMPARE)
    assert (piped.returncode, piped.stderr) == (1, "")
    asked = run_piped(*COMPARE, "--progress")
    assert [s for _, s in steps(asked.stderr)][-1] == "done: divergent (2 divergences)"
    assert asked.stdout == piped.stdout


def test_no_progress_silences_a_terminal() -> None:
    code, out, terminal = run_on_terminal(*COMPARE, "--json", "--no-progress")
    assert (code, terminal) == (1, "")
    assert out.startswith("{") and out.count("\n") == 1


def test_a_hostile_path_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    hostile = tmp_path / "ref\x1b[2J\x1b]0;owned\x07.jsonl"
    hostile.write_bytes((ROOT / "examples/taxi/reference.jsonl").read_bytes())
    code, _, terminal = run_on_terminal(
        "compare", str(hostile), str(hostile), "--spec", "examples/taxi/spec.yaml"
    )
    assert code == 0
    assert "\x1b" not in terminal and "\x07" not in terminal
    assert f"{tmp_path}/ref\\x1b[2J\\x1b]0;owned\\x07.jsonl (reference)" in terminal


PROPERTIES = (
    "properties",
    "jobs.examples.operators.streams:RunningCountPerKey",
    "--sample",
    "jobs/examples/operators/items.jsonl",
    "--key",
    "key",
    "--budget",
    "2",
    "--no-store",
)


def test_properties_shows_the_operator_and_its_steps_on_a_terminal(tmp_path: Path) -> None:
    args = (*PROPERTIES, "--evidence-dir", str(tmp_path))
    code, out, terminal = run_on_terminal(*args)
    operator = "operator jobs.examples.operators.streams:RunningCountPerKey"

    assert code == 0
    assert out.startswith("parity properties: jobs.examples.operators.streams:RunningCount")
    # the heartbeat may repeat a step that runs long on a slow machine: not asserted
    shown = [(command, step) for command, step in steps(terminal) if not step.startswith("still")]
    assert shown[:-1] == [
        (
            "properties",
            f"{operator}: loading it and its sample jobs/examples/operators/items.jsonl",
        ),
        ("properties", f"{operator}: testing 6 properties (hybrid, budget 2 tests each)"),
        # each property as its tests start; a one-input operator cannot block (Fig. 4), so
        # blocking (3 of 6) is decided without a test and never announced
        ("properties", "property 1 of 6: nondeterminism"),
        ("properties", "property 2 of 6: selectivity"),
        ("properties", "property 4 of 6: statefulness"),
        ("properties", "property 5 of 6: non_commutativity"),
        ("properties", "property 6 of 6: partition_interference"),
    ]
    assert re.fullmatch(rf"{operator}: tested in \d+\.\ds", shown[-1][1]), shown
    piped = run_piped(*args)
    assert (piped.returncode, piped.stderr) == (0, "")
