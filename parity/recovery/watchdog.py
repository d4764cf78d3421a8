"""Jobs that die with the recovery run that started them.

    with watched():                      # the recovery run's whole life
        process = subprocess.Popen(command, start_new_session=True)
        track(process.pid)               # killed with its tree if this process dies
        ...
        untrack(process.pid)             # ended and reaped: nothing to kill any more

A recovery run starts every job in a session of its own, so that a kill takes the job's
whole process tree and spares the run (``parity.recovery.crashes``). That same isolation
means a ``kill -9`` of the run would leave the job running, reparented to init, writing to
its checkpoint for as long as it likes. ``watched`` starts a watchdog process, itself in a
session of its own (so neither a kill of the run's process group nor the crash loop's kills
of the job's groups reach it), that reads the pids to guard from a pipe. The run holds the
pipe's only write end (it is not inherited: PEP 446), so the kernel closes it whichever way
the run ends; at end of file the watchdog SIGKILLs each tracked pid's tree
(``parity.recovery.processes.kill_tree``) and exits. A run that ends normally untracks
every job first, so its watchdog kills nothing. ``track`` without ``watched`` (the Airflow
tasks, whose supervisor reaps their trees) does nothing.

A kernel parent-death signal (``prctl(PR_SET_PDEATHSIG)``) would reach only the direct
child, and only from a ``preexec_fn``, which is unsafe in a process with threads (the
run's heartbeat and progress): the watchdog reaches the whole tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO

from parity.recovery.processes import kill_tree

#: seconds to wait for the watchdog to exit once told the run is over
EXIT_WAIT = 10.0

_active: list[Watchdog] = []


class Watchdog:
    """The run's end of the pipe to its watchdog process."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    @classmethod
    def start(cls) -> Watchdog:
        process = subprocess.Popen(
            [sys.executable, "-m", "parity.recovery.watchdog"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        return cls(process)

    def send(self, line: str) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(f"{line}\n".encode("ascii"))
            stdin.flush()
        except OSError:  # the watchdog is gone: the jobs are reaped on the way out as before
            pass

    def close(self) -> None:
        """Tell the watchdog the run is over (end of file) and wait for it."""
        stdin = self.process.stdin
        assert stdin is not None
        with suppress(OSError):
            stdin.close()
        try:
            self.process.wait(timeout=EXIT_WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def watched() -> Iterator[Watchdog]:
    """A watchdog for the jobs ``track`` names while the block runs."""
    watchdog = Watchdog.start()
    _active.append(watchdog)
    try:
        yield watchdog
    finally:
        _active.remove(watchdog)
        watchdog.close()


def track(pid: int) -> None:
    """Kill ``pid``'s process tree if this process dies before ``untrack(pid)``."""
    for watchdog in _active:
        watchdog.send(f"+{pid}")


def untrack(pid: int) -> None:
    """``pid`` ended and was reaped: its number may be reused, never kill it."""
    for watchdog in _active:
        watchdog.send(f"-{pid}")


def guard(lines: IO[bytes]) -> set[int]:
    """Read ``+PID``/``-PID`` lines to their end; the pids still tracked then."""
    tracked: set[int] = set()
    for raw in lines:
        line = raw.strip()
        if line[:1] in (b"+", b"-") and line[1:].isdigit():
            pid = int(line[1:])
            if line[:1] == b"+":
                tracked.add(pid)
            else:
                tracked.discard(pid)
    return tracked


def main() -> int:
    """The watchdog process: guard the pids the run names until its pipe closes, then kill
    the trees of those it did not untrack, sparing the run's own process group (a job is
    started in a session of its own; one that is not must not take its starter's group
    down with it)."""
    try:
        spare = frozenset({os.getpgid(os.getppid())})
    except ProcessLookupError:
        spare = frozenset()
    for pid in sorted(guard(sys.stdin.buffer)):
        kill_tree(pid, spare=spare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
