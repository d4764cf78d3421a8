"""parity.recovery.crashes: seeded kills, whole process trees killed with SIGKILL, restarts
from the checkpoint, bounded waits.

The job here is a small stand-in that keeps a Structured Streaming checkpoint's layout
(``offsets/N`` when batch N starts, ``commits/N`` when it is done), forks a child in a
process group of its own (as PySpark's worker daemon does) and resumes from its last commit.
The real detector application under spark-submit is tested in ``test_recovery.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from parity.recovery.crashes import (
    PHASES,
    Kill,
    RecoveryError,
    check_checkpoint,
    plan_kills,
    run_with_crashes,
)
from parity.recovery.processes import descendants, kill_tree
from parity.recovery.sink import SinkWatch

JOB = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from pathlib import Path

    checkpoint, batches, pause = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    fail_at = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    sink = Path(sys.argv[5]) if len(sys.argv) > 5 else None
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    # a child in a process group of its own, like PySpark's worker daemon
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             start_new_session=True)
    done = len(os.listdir(checkpoint / "commits"))
    for batch in range(done, batches):
        (checkpoint / "offsets" / str(batch)).write_text("v1")
        if batch == fail_at:
            print("ERROR: the job broke on its own", flush=True)
            child.kill()
            sys.exit(3)
        time.sleep(pause)
        if sink is not None:  # the sink writes the batch, a while before the commit
            sink.mkdir(exist_ok=True)
            (sink / f"part-{batch}").write_text("rows")
            time.sleep(pause)
        (checkpoint / "commits" / str(batch)).write_text("v1")
        time.sleep(pause / 2)  # between two batches
    child.kill()  # a job that ends leaves nothing behind
    print(f"finished at batch {batches}", flush=True)
    """
)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "job.py"
    path.write_text(JOB, encoding="utf-8")
    return path


def _command(job: Path, checkpoint: Path, batches: int, pause: float, *extra: str) -> list[str]:
    return [sys.executable, str(job), str(checkpoint), str(batches), str(pause), *extra]


def test_kills_are_planned_from_the_seed_alone() -> None:
    assert plan_kills(5, seed=7) == plan_kills(5, seed=7)
    assert plan_kills(5, seed=7) != plan_kills(5, seed=8)
    kills = plan_kills(20, seed=1)
    assert [k.number for k in kills] == list(range(1, 21))
    assert sorted(k.phase for k in kills) == sorted([*PHASES * 6, "between", "inside"])
    assert all(1 <= k.after <= 3 and 0.1 <= k.fraction <= 0.9 for k in kills)
    for seed in range(50):  # three kills or more try every moment
        assert {k.phase for k in plan_kills(3, seed)} == set(PHASES)


def test_a_written_kill_lands_after_the_sink_wrote_and_before_the_commit(
    job: Path, tmp_path: Path
) -> None:
    """The sink's file of the batch in flight exists, its commit does not: the restart
    replays a batch the sink already holds."""
    checkpoint, sink = tmp_path / "checkpoint", tmp_path / "sink"
    seen: list[tuple[bool, bool]] = []

    class Watch(SinkWatch):
        def wrote_since(self, before):  # type: ignore[no-untyped-def]
            wrote = SinkWatch.wrote_since(self, before)
            if wrote:  # what the job's folders hold at the instant of the kill
                batch = len(os.listdir(checkpoint / "commits"))
                seen.append(
                    (
                        (sink / f"part-{batch}").exists(),
                        (checkpoint / "commits" / str(batch)).exists(),
                    )
                )
            return wrote

    run = run_with_crashes(
        _command(job, checkpoint, 6, 0.3, "-1", str(sink)),
        env=os.environ,
        checkpoint=checkpoint,
        kills=[Kill(1, "written", 2, 0.5), Kill(2, "written", 1, 0.5)],
        log=tmp_path / "job.log",
        timeout=120,
        sink=Watch((sink,)),
    )
    assert [(c.planned, c.phase, c.committed, c.batch) for c in run.crashes] == [
        ("written", "written", 2, 2),
        ("written", "written", 3, 3),
    ]
    assert seen == [(True, False), (True, False)]
    assert (run.attempts, run.batches, run.recovered) == (3, 6, 2)


def test_the_sink_counts_a_write_only_once_it_is_closed(tmp_path: Path) -> None:
    watch = SinkWatch((tmp_path / "out",), exclude=(tmp_path / "out" / "checkpoint",))
    empty = watch.snapshot()
    assert empty == {} and not watch.wrote_since(empty)
    (tmp_path / "out" / "checkpoint").mkdir(parents=True)
    (tmp_path / "out" / "checkpoint" / "commits").write_text("0")
    assert not watch.wrote_since(empty)  # the checkpoint is not the sink
    (tmp_path / "out" / "sink.db").write_text("rows")
    (tmp_path / "out" / "sink.db-journal").write_text("undo")
    assert not watch.wrote_since(empty)  # a SQLite transaction still open
    (tmp_path / "out" / "sink.db-journal").unlink()
    assert watch.wrote_since(empty)
    before = watch.snapshot()
    assert not watch.wrote_since(before)
    (tmp_path / "out" / "_temporary" / "0").mkdir(parents=True)
    (tmp_path / "out" / "_temporary" / "0" / "part-0").write_text("rows")
    assert not watch.wrote_since(before)  # a Hadoop job commit in progress
    shutil.rmtree(tmp_path / "out" / "_temporary")
    (tmp_path / "out" / "part-0").write_text("rows")
    assert watch.wrote_since(before)


def test_the_job_is_killed_and_restarted_until_it_finishes(job: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    kills = [Kill(1, "between", 2, 0.5), Kill(2, "inside", 1, 0.5), Kill(3, "inside", 2, 0.3)]
    run = run_with_crashes(
        _command(job, checkpoint, 12, 0.2),
        env=os.environ,
        checkpoint=checkpoint,
        kills=kills,
        log=tmp_path / "job.log",
        timeout=120,
    )
    assert (len(run.crashes), run.attempts, run.planned, run.batches) == (3, 4, 3, 12)
    assert run.recovered == 3
    assert [c.planned for c in run.crashes] == ["between", "inside", "inside"]
    first, second = run.crashes[0], run.crashes[1]
    assert (first.phase, first.committed, first.batch) == ("between", 2, 1)
    assert second.phase == "inside" and second.batch == second.committed  # in flight
    assert all(c.killed == 2 and c.recovered_in is not None for c in run.crashes)  # job, child
    assert (tmp_path / "job.log").read_text().count("=== parity: attempt") == 4
    assert "finished at batch 12" in (tmp_path / "job.log").read_text()


def test_nothing_the_job_started_survives_a_kill(job: Path, tmp_path: Path) -> None:
    """The job's own process group and its child's separate one: both are gone."""
    checkpoint = tmp_path / "checkpoint"
    process = subprocess.Popen(
        _command(job, checkpoint, 1000, 0.2), start_new_session=True, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while len(descendants(process.pid)) < 2:
        assert time.monotonic() < deadline, "the job's child never started"
        time.sleep(0.05)
    tree = descendants(process.pid)
    child_groups = {os.getpgid(p) for p in tree}
    assert len(child_groups) == 2  # the job's group and its child's own
    assert kill_tree(process.pid) == len(tree)
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in tree):
        assert time.monotonic() < deadline, "a killed process survived"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_job_that_fails_on_its_own_is_one_line_with_its_log(job: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    with pytest.raises(RecoveryError) as caught:
        run_with_crashes(
            _command(job, checkpoint, 10, 0.05, "4"),
            env=os.environ,
            checkpoint=checkpoint,
            kills=[Kill(1, "between", 8, 0.5)],
            log=tmp_path / "job.log",
            timeout=60,
        )
    assert str(caught.value) == (
        "the application failed on its own (exit 3, attempt 1): ERROR: the job broke on its own"
    )


def test_a_job_that_never_finishes_is_stopped_at_the_time_limit(job: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    started = time.monotonic()
    with pytest.raises(RecoveryError, match=r"did not finish within 3s \(\d+ batches committed"):
        run_with_crashes(
            _command(job, checkpoint, 10_000, 0.1),
            env=os.environ,
            checkpoint=checkpoint,
            kills=[],
            log=tmp_path / "job.log",
            timeout=3,
        )
    assert time.monotonic() - started < 30
    assert not any(_alive(p) for p in _python_children(job))


def _python_children(job: Path) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if str(job).encode() in cmdline:
                found.append(int(entry))
    return found


def test_a_stalled_job_is_stopped(tmp_path: Path) -> None:
    """A job that commits nothing (here: never writes a checkpoint) is a stall, bounded."""
    with pytest.raises(RecoveryError, match=r"committed no batch for 1s \(attempt 1"):
        run_with_crashes(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            env=os.environ,
            checkpoint=tmp_path / "checkpoint",
            kills=[],
            log=tmp_path / "job.log",
            timeout=60,
            stall=1,
        )


def test_a_checkpoint_that_cannot_be_written_is_refused_first(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(RecoveryError, match=r"the checkpoint folder is not writable"):
        check_checkpoint(blocked / "checkpoint")


def test_an_unknown_target_or_executors_without_a_cluster_are_refused(tmp_path: Path) -> None:
    common = {"env": os.environ, "checkpoint": tmp_path, "kills": [], "log": tmp_path / "l"}
    with pytest.raises(RecoveryError, match="unknown kill target 'worker'"):
        run_with_crashes(["true"], timeout=5, target="worker", **common)  # type: ignore[arg-type]
    with pytest.raises(RecoveryError, match="killing executors needs a standalone cluster"):
        run_with_crashes(["true"], timeout=5, target="executor", **common)  # type: ignore[arg-type]


def test_our_own_process_group_is_never_killed(tmp_path: Path) -> None:
    """A child in our group: its pid is killed, our group is not."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    assert os.getpgid(child.pid) == os.getpgrp()
    assert kill_tree(child.pid) == 1
    assert child.wait(timeout=30) == -signal.SIGKILL
