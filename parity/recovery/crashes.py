"""Real crashes for a Structured Streaming job: SIGKILL at seeded moments, restart from the
checkpoint, until the job finishes.

    kills = plan_kills(crashes=5, seed=1)
    run = run_with_crashes(command, env=env, checkpoint=run_dir / "checkpoint", kills=kills,
                           timeout=900, log=run_dir / "crashed.log")
    run.crashes       # when each kill happened, which batch was in flight, how long recovery took

The job must stop by itself once its input is consumed (``trigger(availableNow=True)``), so
that a restart processes what is left and exits 0.

**Where the kills land.** Spark writes ``offsets/N`` in the checkpoint when micro-batch ``N``
starts and ``commits/N`` when it has been written to the sink. A kill is planned, from the
seed alone, as "after ``k`` more batches commit", at one of three moments:

* ``between`` batches: as soon as ``commits/N`` appears, before the next batch starts;
* ``inside`` one: once ``offsets/N`` of the next batch exists, a seeded fraction of the last
  batch's duration later;
* ``written``: once the sink has written the batch in flight (``parity.recovery.sink``: a
  file under the sink's folders changed, no write still open) and before ``commits/N``: the
  moment an at-least-once sink duplicates a batch on restart. The sink is watched every
  ``WRITE_POLL`` seconds while such a kill waits; when the batch commits before a write was
  seen, the kill waits for the next batch (``Crash.missed`` counts those).

A run of at least three kills has each moment at least once. The checkpoint is polled every
``POLL`` seconds, so where a kill really landed is recorded from what the checkpoint (and the
sink) said at that instant, not from the plan.

**What is killed.** ``driver``: the whole process tree of the ``spark-submit`` — its process
group (the launcher script, the driver JVM, the Python driver) and every descendant's group
(PySpark's worker daemon puts its workers in a group of their own) — with SIGKILL; then the
same command is started again on the same checkpoint. ``executor``: the executor JVMs of a
standalone cluster that started after the application did, and their Python workers, but
not the worker daemons that launched them: Spark replaces the executors and retries the
tasks, and no restart is needed.

Every wait is bounded: ``timeout`` for the whole run, ``stall`` for a job that neither
commits a batch nor exits. A failure is a ``RecoveryError`` with one line: a job that exited
non-zero without being killed (with the last line of its log), a stall, the timeout.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from matcher.errors import ParityError
from parity.recovery.processes import kill_tree
from parity.recovery.sink import SinkWatch, Snapshot
from parity.recovery.watchdog import track, untrack

#: seconds between two looks at the checkpoint and the process
POLL = 0.05
#: seconds between two looks at the sink while a ``written`` kill waits for its write
WRITE_POLL = 0.002
#: seconds a job may go without committing a batch (or exiting) before it is called stalled
STALL = 300.0
#: seconds to wait for a killed process tree to be gone
REAP = 30.0
TARGETS = ("driver", "executor")
PHASES = ("between", "inside", "written")


class RecoveryError(ParityError):
    """The crashed run could not be completed: the job failed on its own, stalled or ran
    past the time limit."""


@dataclass(frozen=True, slots=True)
class Kill:
    """One planned kill: after ``after`` more batches commit, ``phase`` ``between`` (at once),
    ``inside`` (``fraction`` of a batch's duration into the next batch) or ``written`` (once
    the sink wrote the next batch, before it commits)."""

    number: int
    phase: str
    after: int
    fraction: float


def plan_kills(crashes: int, seed: int, *, most_batches_apart: int = 3) -> list[Kill]:
    """``crashes`` kills chosen by ``seed`` alone: each lands after 1 to ``most_batches_apart``
    more committed batches, at one of the ``PHASES``: the phases in turn, shuffled by the
    seed, so that three kills or more try every moment."""
    rng = random.Random(seed)
    phases = [PHASES[i % len(PHASES)] for i in range(crashes)]
    rng.shuffle(phases)
    return [
        Kill(
            number=i + 1,
            phase=phase,
            after=rng.randint(1, most_batches_apart),
            fraction=round(rng.uniform(0.1, 0.9), 3),
        )
        for i, phase in enumerate(phases)
    ]


@dataclass(frozen=True, slots=True)
class Crash:
    """A kill as it happened.

    ``phase``: where it landed (``between``, ``inside``, or ``written``: the sink had written
    the batch in flight); ``at``: seconds since the run started; ``batch``: the batch in
    flight (``inside``, ``written``) or the last one committed (``between``); ``committed``:
    batches committed before the kill; ``killed``: processes signalled; ``missed``: batches
    a ``written`` kill let commit because it saw no write first; ``recovered_in``: seconds
    from the kill until the job committed its next batch or finished (``None``: it never
    did)."""

    number: int
    target: str
    planned: str
    phase: str
    at: float
    batch: int | None
    committed: int
    killed: int
    attempt: int
    missed: int = 0
    recovered_in: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CrashedRun:
    """The crashed run: its kills, how many times the job was started, and how long it all
    took; ``planned``: kills planned, ``len(crashes)``: kills that happened (the job may
    finish before the last planned ones)."""

    crashes: tuple[Crash, ...]
    attempts: int
    planned: int
    seconds: float
    batches: int

    @property
    def recovered(self) -> int:
        """Kills the job came back from (committed a batch or finished after them)."""
        return sum(c.recovered_in is not None for c in self.crashes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "planned": self.planned,
            "injected": len(self.crashes),
            "recovered": self.recovered,
            "attempts": self.attempts,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "crashes": [c.to_dict() for c in self.crashes],
        }


class Checkpoint:
    """What a Structured Streaming checkpoint says about progress: the batches started
    (``offsets/N``) and committed (``commits/N``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def started(self) -> int:
        """How many batches have started (the highest ``offsets/N`` plus one)."""
        return _count(self.path / "offsets")

    def committed(self) -> int:
        """How many batches have committed (the highest ``commits/N`` plus one)."""
        return _count(self.path / "commits")


def _count(folder: Path) -> int:
    try:
        ids = [int(name) for name in os.listdir(folder) if name.isdigit()]
    except FileNotFoundError:
        return 0
    return max(ids) + 1 if ids else 0


def check_checkpoint(path: Path) -> None:
    """Refuse a checkpoint folder that cannot be created or written, before anything runs."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".parity-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RecoveryError(f"{path}: the checkpoint folder is not writable: {reason}") from None


@dataclass
class _Attempt:
    number: int
    process: subprocess.Popen[bytes]
    started: float
    base: int  # batches committed when it started
    last_commit: float = field(default=0.0)


def run_with_crashes(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    checkpoint: Path,
    kills: Sequence[Kill],
    log: Path,
    timeout: float,
    target: str = "driver",
    stall: float = STALL,
    executors: Callable[[float], list[int]] | None = None,
    sink: SinkWatch | None = None,
    cwd: Path | None = None,
    on_crash: Callable[[Crash], None] | None = None,
) -> CrashedRun:
    """Run ``command`` (a ``spark-submit`` line) to completion, killing it as ``kills`` say
    and restarting it from ``checkpoint`` after each driver kill; its output goes to ``log``.

    ``executors(since)``: the pids of the application's executor processes started after
    ``since`` (``time.time()``), for ``target="executor"``. ``sink``: what the job's sink
    writes, for ``written`` kills (without it they land ``inside``). ``on_crash``: told of
    each kill as it lands (the CLI's progress)."""
    if target not in TARGETS:
        raise RecoveryError(f"unknown kill target {target!r} (known: {', '.join(TARGETS)})")
    if target == "executor" and executors is None:
        raise RecoveryError("killing executors needs a standalone cluster to find them on")
    check_checkpoint(checkpoint)
    progress = Checkpoint(checkpoint)
    started = time.monotonic()
    deadline = started + timeout
    pending = list(kills)
    crashes: list[Crash] = []
    durations: list[float] = []
    waiting: list[tuple[int, float, int]] = []  # (index in crashes, kill time, committed then)
    attempt_number = 0
    with log.open("ab") as output:

        def launch() -> _Attempt:
            nonlocal attempt_number
            attempt_number += 1
            output.write(f"\n=== parity: attempt {attempt_number}\n".encode())
            output.flush()
            process = subprocess.Popen(
                list(command),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: the kill takes it whole
            )
            track(process.pid)  # dies with this process, not reparented to init
            now = time.monotonic()
            return _Attempt(attempt_number, process, now, progress.committed(), now)

        attempt = launch()
        wall_started = time.time()
        armed = _Armed(progress.committed())
        last_seen = armed.at
        batch_started: dict[int, float] = {}
        sink_before: dict[int, Snapshot] = {}
        try:
            while True:
                now = time.monotonic()
                committed, begun = progress.committed(), progress.started()
                if begun > committed and committed not in batch_started:
                    batch_started[committed] = now
                    if sink is not None:
                        sink_before[committed] = sink.snapshot()
                if committed > last_seen:
                    for batch in range(last_seen, committed):
                        if batch in batch_started:
                            durations.append(now - batch_started.pop(batch))
                        sink_before.pop(batch, None)
                    last_seen = committed
                    attempt.last_commit = now
                    _settle(crashes, waiting, now, committed)
                code = attempt.process.poll()
                if code is not None:
                    if code != 0:
                        raise RecoveryError(
                            f"the application failed on its own (exit {code}, attempt "
                            f"{attempt.number}): {last_line(log)}"
                        )
                    _settle(crashes, waiting, now, None)
                    break
                if now > deadline:
                    raise RecoveryError(
                        f"the application did not finish within {timeout:g}s "
                        f"({committed} batches committed, {len(crashes)} crashes injected)"
                    )
                if now - attempt.last_commit > stall:
                    raise RecoveryError(
                        f"the application committed no batch for {stall:g}s "
                        f"(attempt {attempt.number}, {committed} batches committed)"
                    )
                kill = pending[0] if pending else None
                if kill is not None and kill.phase == "written" and sink is not None:
                    armed.catch_up(kill, committed)
                    moment = _written_due(kill, armed.at, committed, begun, sink, sink_before)
                elif kill is not None:
                    moment = _due(kill, armed.at, committed, begun, batch_started, durations, now)
                else:
                    moment = None
                if kill is None or moment is None:
                    waits_for_write = (
                        kill is not None and kill.phase == "written" and sink is not None
                    )
                    time.sleep(WRITE_POLL if waits_for_write and begun > committed else POLL)
                    continue
                if target == "driver":
                    killed = kill_tree(attempt.process.pid)
                    _reap(attempt.process)
                    untrack(attempt.process.pid)
                else:
                    assert executors is not None
                    pids = executors(wall_started)
                    killed = sum(kill_tree(pid, groups=False) for pid in pids)
                inside = begun > committed
                crashes.append(
                    Crash(
                        number=kill.number,
                        target=target,
                        planned=kill.phase,
                        phase="written" if moment == "written" else _where(inside),
                        at=round(time.monotonic() - started, 3),
                        batch=committed if inside else (committed - 1 if committed else None),
                        committed=committed,
                        killed=killed,
                        attempt=attempt.number,
                        missed=armed.missed,
                    )
                )
                waiting.append((len(crashes) - 1, time.monotonic(), committed))
                if on_crash is not None:
                    on_crash(crashes[-1])
                pending.pop(0)
                batch_started.clear()
                sink_before.clear()
                if target == "driver":
                    attempt = launch()
                armed = _Armed(progress.committed())
                attempt.last_commit = time.monotonic()
        finally:
            if attempt.process.poll() is None:
                kill_tree(attempt.process.pid)
                _reap(attempt.process)
            untrack(attempt.process.pid)
    return CrashedRun(
        crashes=tuple(crashes),
        attempts=attempt_number,
        planned=len(kills),
        seconds=time.monotonic() - started,
        batches=progress.committed(),
    )


def _where(inside: bool) -> str:
    return "inside" if inside else "between"


@dataclass
class _Armed:
    """Where the next kill counts its batches from, and how many batches a ``written`` kill
    has let commit without seeing their write."""

    at: int
    missed: int = 0

    def catch_up(self, kill: Kill, committed: int) -> None:
        """A ``written`` kill whose batch committed unseen aims at the next one."""
        if committed > self.at + kill.after:
            self.missed += committed - (self.at + kill.after)
            self.at = committed - kill.after


def _due(
    kill: Kill,
    armed_at: int,
    committed: int,
    begun: int,
    batch_started: Mapping[int, float],
    durations: Sequence[float],
    now: float,
) -> str | None:
    """Whether the planned kill's moment has come, and which (``between`` or ``inside``):
    ``after`` batches committed since it was armed (``between``), or the next batch
    ``fraction`` of a batch's duration in flight (``inside``, and ``written`` without a sink
    to watch; at once when that batch committed before it was seen)."""
    target = armed_at + kill.after
    if kill.phase == "between" or committed > target:
        return "between" if committed >= target else None
    if committed < target or begun <= target:
        return None
    batch = statistics.median(durations) if durations else 1.0
    in_flight = now - batch_started.get(target, now)
    return "inside" if in_flight >= kill.fraction * batch else None


def _written_due(
    kill: Kill,
    armed_at: int,
    committed: int,
    begun: int,
    sink: SinkWatch,
    before: Mapping[int, Snapshot],
) -> str | None:
    """``written`` once the batch the kill aims at is in flight and the sink wrote since it
    began."""
    target = armed_at + kill.after
    if committed != target or begun <= target or target not in before:
        return None
    return "written" if sink.wrote_since(before[target]) else None


def _settle(
    crashes: list[Crash], waiting: list[tuple[int, float, int]], now: float, committed: int | None
) -> None:
    """Record how long the job took to recover from each kill it has now come back from:
    a batch committed after the kill, or (``committed=None``) the job finished."""
    still = []
    for index, killed_at, before in waiting:
        if committed is None or committed > before:
            old = crashes[index]
            crashes[index] = replace(old, recovered_in=round(now - killed_at, 3))
        else:
            still.append((index, killed_at, before))
    waiting[:] = still


def last_line(log: Path) -> str:
    """The line of a job's log that says what went wrong: its last error line, else its last."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(empty log)"])[-1].strip()[:500]


def _reap(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=REAP)
    except subprocess.TimeoutExpired as exc:
        raise RecoveryError(f"process {process.pid} survived SIGKILL for {REAP:g}s") from exc
