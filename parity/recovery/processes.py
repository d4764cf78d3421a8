"""Process trees on Linux, read from ``/proc``: what a kill takes and what it must spare.

    kill_tree(job.pid)                 # the job, its descendants and their process groups
    executor_pids(since=started)       # a standalone cluster's executor JVMs started since
    ancestors(pid)                     # its parent, grandparent, ... up to init

Used by the crash loop (``parity.recovery.crashes``) and by the tests' standalone cluster.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

#: the main class of a standalone cluster's executor JVM
EXECUTOR_CLASS = "CoarseGrainedExecutorBackend"


def stats() -> Iterator[tuple[int, list[str]]]:
    """Every process's ``/proc/PID/stat`` fields after the command name (state, ppid, pgrp,
    ...); a process that ends meanwhile is skipped."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read().decode(errors="replace")
        except OSError:
            continue
        yield int(entry), stat.rsplit(")", 1)[1].split()


def children_of() -> dict[int, list[int]]:
    """Every process's children."""
    tree: dict[int, list[int]] = {}
    for pid, fields in stats():
        tree.setdefault(int(fields[1]), []).append(pid)
    return tree


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    tree = children_of()
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(tree.get(current, ()))
    return found


def ancestors(pid: int) -> Iterator[int]:
    """``pid``'s parent, its parent, ... (init excluded)."""
    parents = {child: int(fields[1]) for child, fields in stats()}
    for _ in range(64):  # bounded: a chain of parents is never this long
        pid = parents.get(pid, 0)
        if pid <= 1:
            return
        yield pid


def kill_tree(pid: int, *, groups: bool = True, spare: frozenset[int] = frozenset()) -> int:
    """SIGKILL ``pid`` and its descendants (and, ``groups``, every process group among them
    but ours and those in ``spare``); how many processes were signalled."""
    pids = descendants(pid)
    own = os.getpgrp()
    if groups:
        for group in {_group(p) for p in pids} - {None, own, *spare}:
            assert group is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
    killed = 0
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return killed


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def executor_pids(since: float = 0.0) -> list[int]:
    """The standalone executor JVMs on this machine started after ``since``
    (``time.time()``; a second of slack for the clock's ticks), in pid order."""
    boot = boot_time()
    ticks = os.sysconf("SC_CLK_TCK")
    found = []
    for pid, fields in stats():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                cmdline = file.read()
        except OSError:
            continue
        if EXECUTOR_CLASS.encode() not in cmdline:
            continue
        if boot + int(fields[19]) / ticks >= since - 1.0:
            found.append(pid)
    return sorted(found)


def boot_time() -> float:
    """When this machine booted (``time.time()``), from ``/proc/stat``."""
    with open("/proc/stat", encoding="ascii") as file:
        for line in file:
            if line.startswith("btime "):
                return float(line.split()[1])
    raise OSError("cannot read the boot time from /proc/stat")
