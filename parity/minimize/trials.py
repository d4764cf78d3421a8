"""One trial of ``parity minimize``: a subset of the run's slice written in its format, the
run's applications run on it together with ``spark-submit``, their outputs compared under
the run's spec, and what the verdict there says went wrong (its ``Signature``).

    outcome = run_trial(workspace, settings, whole, Trial(3, "rows", (4, 9), TRIAL_DIR))
    outcome.signature.describe()             # 'divergent: corruption on distance_km'

The applications keep the run's arguments and configuration; only the paths of the slice,
the outputs and the run's folder change (``workspace.filled``). The reference's rerun (for
noise) runs only once the reference and the candidate already reproduce the run: noise can
only explain divergences away, so a trial that does not reproduce without it would not with
it. A trial whose application fails, or whose outputs cannot be compared, has a
``failure`` and no signature.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matcher.errors import InputError, ParityError
from matcher.files.compare import compare_files_with_noise
from matcher.noise import NoisyComparison
from parity.minimize.slices import Slice, write_subset
from parity.minimize.workspace import Workspace, filled
from parity.runs.package import submitted_to
from parity.runs.submits import spark_submit_argv

#: witnesses kept of a trial's verdict
LIMIT = 20
#: seconds one application may take in a trial before the trial is given up
JOB_TIMEOUT = 900.0


@dataclass(frozen=True, slots=True)
class Settings:
    """How trials run: which subsets count (``keep``), where and how the applications are
    submitted, and how long one may take."""

    keep: str = "same"
    master: str = "local[2]"
    spark_submit: str = "spark-submit"
    env: Mapping[str, str] = field(default_factory=dict)
    job_timeout: float = JOB_TIMEOUT
    packages: Path = Path("packages")


@dataclass(frozen=True, slots=True)
class Signature:
    """What a verdict says went wrong: the run's verdict name, the kinds of divergence it
    counts, the columns its corruptions changed, and whether the schemas diverge."""

    verdict: str
    kinds: tuple[str, ...]
    columns: tuple[str, ...]
    schema: bool = False

    @classmethod
    def of(cls, result: NoisyComparison) -> Signature:
        verdict = result.verdict
        return cls(
            result.status,
            tuple(kind for kind, n in verdict.counts.items() if n),
            tuple(sorted(name for name, n in verdict.column_mismatches.items() if n)),
            verdict.schema is not None and verdict.schema.divergent,
        )

    def reproduced_by(self, other: Signature, keep: str) -> bool:
        """Whether a trial's ``other`` reproduces this (the run's): divergent, and with
        ``keep="same"`` only of the run's kinds on the run's columns (a part of the run's
        divergence: one key seldom shows every column that all keys do), with ``"exact"``
        of all of them and no other."""
        if other.verdict != "divergent":
            return False
        if keep == "exact":
            return other == self
        if keep == "same":
            return (
                set(other.kinds) <= set(self.kinds)
                and set(other.columns) <= set(self.columns)
                and (self.schema or not other.schema)
            )
        return True

    def describe(self) -> str:
        if self.verdict != "divergent":
            return self.verdict
        parts = [*self.kinds]
        if self.columns:
            parts.append(f"on {', '.join(self.columns)}")
        if self.schema:
            parts.append("and a schema change")
        return "divergent: " + " ".join(parts)


@dataclass(frozen=True, slots=True)
class Trial:
    """A subset to try (indexes into the slice's records) and the folder it runs in."""

    number: int
    phase: str
    indexes: tuple[int, ...]
    directory: Path


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a trial gave: the comparison there and its signature, or why there is none."""

    seconds: float
    result: NoisyComparison | None = None
    signature: Signature | None = None
    failure: str | None = None


def run_trial(
    workspace: Workspace,
    settings: Settings,
    whole: Slice,
    trial: Trial,
    reproduces: Callable[[Signature], bool] = lambda signature: True,
) -> Outcome:
    """Write the trial's input, run the reference and the candidate on it, compare; the
    rerun too when ``reproduces`` says the two already do."""
    started = time.monotonic()
    write_subset(whole, trial.indexes, trial.directory / "input")
    (trial.directory / "logs").mkdir()
    try:
        result = _compare(workspace, settings, trial.directory, ("reference", "candidate"))
        if "rerun" in workspace.jobs and reproduces(Signature.of(result)):
            result = _compare(workspace, settings, trial.directory, ("rerun",))
    except ParityError as exc:
        return Outcome(time.monotonic() - started, failure=" ".join(str(exc).split()))
    return Outcome(time.monotonic() - started, result, Signature.of(result))


def _compare(
    workspace: Workspace, settings: Settings, directory: Path, roles: Sequence[str]
) -> NoisyComparison:
    """Run the applications of ``roles`` in ``directory``, then compare every output there
    (the rerun's, when it has run)."""
    run_jobs(workspace, settings, directory, roles)
    reruns = [str(directory / "rerun")] if (directory / "rerun").exists() else []
    return compare_files_with_noise(
        workspace.spec,
        str(directory / "reference"),
        str(directory / "candidate"),
        reruns=reruns,
        limit=LIMIT,
    )


def submit_commands(
    workspace: Workspace, settings: Settings, directory: Path, roles: Sequence[str]
) -> dict[str, list[str]]:
    """The ``spark-submit`` line of each role's application on the trial in ``directory``."""
    commands = {}
    for role in roles:
        job = filled(workspace.jobs[role], directory, role)
        shipped = submitted_to(job, settings.master, own=False, cache_dir=settings.packages)
        commands[role] = spark_submit_argv(
            shipped, spark_submit=settings.spark_submit, master=settings.master
        )
    return commands


def run_jobs(
    workspace: Workspace, settings: Settings, directory: Path, roles: Sequence[str]
) -> None:
    """The applications of ``roles`` at once, each in a process group of its own (killed on
    the way out); the first failure or time limit is an ``InputError`` naming the role and
    its log's last line, once all have ended."""
    env = {**os.environ, **settings.env}
    running = []
    try:
        for role, argv in submit_commands(workspace, settings, directory, roles).items():
            log = directory / "logs" / f"{role}.log"
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            running.append((role, process, log))
        deadline = time.monotonic() + settings.job_timeout
        problems = []
        for role, process, log in running:
            try:
                code = process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                problems.append(f"the {role} did not finish within {settings.job_timeout:g}s")
                continue
            if code != 0:
                problems.append(f"the {role} failed (exit {code}): {_last_line(log)}")
        if problems:
            raise InputError(problems[0])
    finally:
        for _, process, _ in running:
            _kill(process)


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _last_line(log: Path) -> str:
    """The log's last line that mentions an error, else its last line."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(empty log)"])[-1][:300]
