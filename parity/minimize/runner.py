"""``parity minimize``'s search: a divergent run's reference and candidate applications
re-run on subsets of its replayed slice until the smallest subset on which they still
diverge the same way is found (``ddmin``, first over the dependence key's values, then over
the records left).

    workspace = open_workspace(record)                 # the run's plan, spec and slice
    found = minimize(workspace, Settings(budget=Budget(runs=60)), progress=print)
    found.rows, found.document()                       # 4, what the store keeps

A subset *reproduces* the run when the verdict there (the run's spec, its reference
reruns for noise, the core engine) is divergent with the same kinds of divergence on the
same columns as the run's own verdict on its outputs (``keep="same"``), or divergent at all
(``keep="divergent"``). A trial whose application fails, or whose outputs cannot be
compared, does not reproduce: the search goes round it (ddmin's "unresolved").

Each trial runs the applications together, as ``spark-submit`` processes of their own on
the chosen master, with the run's arguments and configuration; only the paths of the
slice, the outputs and the run's folder change. The budget (runs, seconds) ends the search
with the smallest reproducing subset found so far. The result is written below ``out``:
``input/`` (the subset, in the slice's format and layout), ``reference/``, ``candidate/``
(their outputs on it), ``witness.txt`` and ``verdict.json`` (the verdict there),
``spec.yaml`` and a pytest file that re-runs both applications on ``input/`` and fails while
they diverge (``parity.minimize.regression``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from matcher import uris
from matcher.errors import InputError, ParityError
from matcher.files import locations
from matcher.files.compare import compare_files_with_noise
from matcher.noise import NoisyComparison
from matcher.spec import Spec, load_spec
from matcher.store.records import RunRecord
from parity.minimize.ddmin import Exhausted, ddmin
from parity.minimize.regression import write_regression_test
from parity.minimize.slices import Slice, read_slice, write_subset
from parity.runs.package import submitted_to
from parity.runs.submits import SparkJob, spark_submit_argv
from parity.views.verdict_text import verdict_lines

#: the applications a trial runs, in the order their outputs are compared
ROLES = ("reference", "candidate", "rerun")
#: witnesses kept of a trial's verdict
LIMIT = 20
DEFAULT_RUNS = 60
#: seconds one application may take in a trial before the trial is given up
JOB_TIMEOUT = 900.0
KEEPS = ("same", "divergent")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h)$")
_UNITS = {"s": 1, "m": 60, "h": 3600}


class MinimizeError(ParityError):
    """The run cannot be minimized: not divergent, no workspace, a slice that cannot be read,
    or a divergence that the applications do not repeat."""


@dataclass(frozen=True, slots=True)
class Budget:
    """How much the search may spend: trials (each runs the applications once) and
    seconds; ``None``: no bound of that kind."""

    runs: int | None = DEFAULT_RUNS
    seconds: float | None = None

    @classmethod
    def parse(cls, texts: Sequence[str]) -> Budget:
        """``--budget`` values: a number of runs (``40``) or a time (``900s``, ``15m``,
        ``1h``); one of each at most. None given: the default, 60 runs."""
        runs: int | None = None
        seconds: float | None = None
        for text in texts:
            value = text.strip().lower()
            timed = _DURATION.match(value)
            if value.isdigit() and int(value) > 0 and runs is None:
                runs = int(value)
            elif timed and float(timed.group(1)) > 0 and seconds is None:
                seconds = float(timed.group(1)) * _UNITS[timed.group(2)]
            else:
                raise InputError(
                    f"--budget: expected a number of runs (40) or a time (900s, 15m, 1h), "
                    f"one of each at most; got {text!r}"
                )
        if runs is None and seconds is None:
            return cls()
        return cls(runs, seconds)

    def describe(self) -> str:
        parts = [] if self.runs is None else [f"{self.runs} runs"]
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s")
        return " or ".join(parts)


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
        if other.verdict != "divergent":
            return False
        return keep == "divergent" or other == self

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
class Workspace:
    """A pipeline run's workspace as minimizing needs it: its folder, its jobs (with the
    run's paths made placeholders), its spec and its slice."""

    run_id: str
    validation: str
    run_dir: str
    spec: Spec
    spec_text: str
    jobs: Mapping[str, SparkJob]
    slice_dir: Path
    slice_format: str
    #: the run's own outputs, where they can still be read (role -> local path)
    outputs: Mapping[str, Path]


@dataclass(frozen=True, slots=True)
class Settings:
    budget: Budget = field(default_factory=Budget)
    keep: str = "same"
    master: str = "local[2]"
    spark_submit: str = "spark-submit"
    env: Mapping[str, str] = field(default_factory=dict)
    job_timeout: float = JOB_TIMEOUT
    packages: Path = Path("packages")


@dataclass(slots=True)
class Trial:
    """One trial's subset and outcome; ``directory`` holds its input and outputs."""

    number: int
    phase: str
    indexes: list[int]
    directory: Path
    seconds: float = 0.0
    signature: Signature | None = None
    result: NoisyComparison | None = None
    failure: str | None = None


@dataclass(slots=True)
class Minimized:
    """The search's end: the smallest reproducing subset and how it was found."""

    run_id: str
    validation: str
    rows_before: int
    keys_before: int | None
    target: Signature
    keep: str
    budget: Budget
    best: Trial | None
    runs: int
    seconds: float
    exhausted: bool
    out: Path
    key: tuple[str, ...]
    keys_after: int | None = None
    test_file: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return self.rows_before if self.best is None else len(self.best.indexes)

    def document(self) -> dict[str, Any]:
        """What the store keeps with the run (``stats["minimized"]``) and ``--json`` prints."""
        best = self.best
        return {
            "status": "budget spent" if self.exhausted else "1-minimal",
            "rows_before": self.rows_before,
            "rows_after": self.rows,
            "keys_before": self.keys_before,
            "keys_after": self.keys_after,
            "key": list(self.key),
            "runs": self.runs,
            "seconds": round(self.seconds, 1),
            "budget": self.budget.describe(),
            "keep": self.keep,
            "reproduces": self.target.describe(),
            "verdict": None if best is None or best.signature is None else best.signature.verdict,
            "directory": str(self.out),
            "input": str(self.out / "input"),
            "test": None if self.test_file is None else str(self.test_file),
            "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "notes": list(self.notes),
        }


def open_workspace(record: RunRecord, given: str | None = None) -> Workspace:
    """The run's workspace: ``given``, else the folder its report is in (a pipeline run's,
    ``RUN/report``). A run with no plan there (one made by ``parity compare``, a workspace
    since deleted) is a ``MinimizeError`` saying so."""
    if record.verdict != "divergent":
        raise MinimizeError(
            f"run {record.run_id} is {record.verdict or record.status}, not divergent: "
            "there is no divergence to minimize"
        )
    run_dir = given or _run_dir(record)
    if run_dir is None:
        raise MinimizeError(
            f"run {record.run_id} has no workspace on record (only a pipeline run's: the DAG's "
            "or parity run's); give --workspace DIR"
        )
    plan_file = uris.join(run_dir, "plan.json")
    try:
        plan = json.loads(locations.read_text(plan_file))
    except (OSError, ValueError, InputError) as exc:
        raise MinimizeError(
            f"{plan_file}: cannot read the run's plan ({' '.join(str(exc).split())}): its "
            "workspace is gone or is not a pipeline run's"
        ) from None
    spec_file = str(plan["spec_file"])
    try:
        spec_text = locations.read_text(spec_file)
        spec = load_spec(spec_file) if uris.local_path(spec_file) else None
    except (OSError, InputError) as exc:
        raise MinimizeError(f"{spec_file}: cannot read the run's spec: {exc}") from None
    if spec is None:
        raise MinimizeError(f"{spec_file}: a spec off this machine is not supported")
    local = _local_copy(run_dir, "slice")
    jobs = {
        role: _template(SparkJob.from_dict(plan["jobs"][role]), run_dir, role)
        for role in ROLES
        if role in plan["jobs"]
    }
    outputs = {}
    for role in jobs:
        folder = uris.local_path(uris.join(run_dir, role))
        if folder is not None and folder.exists():
            outputs[role] = folder
    return Workspace(
        run_id=record.run_id,
        validation=record.validation,
        run_dir=run_dir,
        spec=spec,
        spec_text=spec_text,
        jobs=jobs,
        slice_dir=local,
        slice_format=plan["slice"].get("format") or (spec.input and spec.input.format) or "",
        outputs=outputs,
    )


def dependence_key(spec: Spec) -> tuple[str, ...]:
    """The columns whose values group the slice's records for the first phase: the
    dependence key, else the slice's sample key; none when the spec names neither."""
    if spec.dependence.key:
        return tuple(spec.dependence.key)
    chosen = spec.input.slice if spec.input is not None else None
    if chosen is not None and chosen.key:
        return tuple(chosen.key)
    return ()


def minimize(
    workspace: Workspace,
    settings: Settings,
    out: Path,
    *,
    record: RunRecord | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Minimized:
    """Search the smallest subset of the run's slice that reproduces its divergence, write
    it and its regression test below ``out`` (emptied first). ``record``: the stored run,
    whose verdict is the target when its outputs are gone."""
    started = time.monotonic()
    key = dependence_key(workspace.spec)
    try:
        whole = read_slice(workspace.slice_dir, workspace.slice_format, key)
    except InputError as exc:
        if not key or "a key column" not in str(exc):
            raise MinimizeError(f"the run's slice cannot be read: {exc}") from None
        progress(f"the slice has no column of the key {', '.join(key)}: records only")
        key = ()
        whole = read_slice(workspace.slice_dir, workspace.slice_format)
    if whole.rows == 0:
        raise MinimizeError(f"{workspace.slice_dir}: the run's slice is empty")
    target = _target(workspace, record)
    progress(
        f"the run: {whole.rows:,} rows in {len(whole.files)} files; {target.describe()}; "
        f"budget {settings.budget.describe()}"
    )
    if out.exists():
        shutil.rmtree(out)
    (out / "trials").mkdir(parents=True)
    search = _Search(workspace, settings, whole, target, out, started, progress)
    groups = whole.keys() if key else {}
    result = Minimized(
        run_id=workspace.run_id,
        validation=workspace.validation,
        rows_before=whole.rows,
        keys_before=len(groups) if key else None,
        target=target,
        keep=settings.keep,
        budget=settings.budget,
        best=None,
        runs=0,
        seconds=0.0,
        exhausted=False,
        out=out,
        key=key,
    )
    kept = list(range(whole.rows))
    if key and len(groups) > 1:
        values = list(groups)
        found = ddmin(values, lambda chosen: search.test("keys", _rows_of(groups, chosen)))
        kept = _rows_of(groups, found.smallest)
        result.exhausted = found.exhausted
    if not result.exhausted and len(kept) > 1:
        found_rows = ddmin(kept, lambda chosen: search.test("rows", list(chosen)))
        result.exhausted = found_rows.exhausted
    result.best, result.runs = search.best, search.runs
    result.notes = search.notes
    if search.best is None:
        shutil.rmtree(out / "trials", ignore_errors=True)
        raise MinimizeError(
            f"no subset reproduced the run's verdict ({target.describe()}) in {search.runs} "
            f"runs{_why(search)}"
        )
    if key:
        result.keys_after = len({whole.records[i].key for i in search.best.indexes})
    _finish(workspace, result, whole)
    result.seconds = time.monotonic() - started
    return result


class _Search:
    """The trials of one search: each distinct subset run once, the best one kept."""

    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        whole: Slice,
        target: Signature,
        out: Path,
        started: float,
        progress: Callable[[str], None],
    ) -> None:
        self.workspace, self.settings, self.whole = workspace, settings, whole
        self.target, self.out, self.started, self.progress = target, out, started, progress
        self.runs = 0
        self.best: Trial | None = None
        self.seen: dict[tuple[int, ...], bool] = {}
        self.notes: list[str] = []
        self.failures = 0

    def test(self, phase: str, indexes: list[int]) -> bool:
        subset = tuple(sorted(indexes))
        if subset in self.seen:
            return self.seen[subset]
        if len(subset) == self.whole.rows:
            return True  # the run itself: it diverged
        budget = self.settings.budget
        if budget.runs is not None and self.runs >= budget.runs:
            raise Exhausted
        if budget.seconds is not None and time.monotonic() - self.started >= budget.seconds:
            raise Exhausted
        self.runs += 1
        trial = Trial(self.runs, phase, list(subset), self.out / "trials" / f"{self.runs:03d}")
        self.progress(f"run {trial.number} ({phase}): {_subset(trial, self.whole)}: running")

        def same(signature: Signature) -> bool:
            return self.target.reproduced_by(signature, self.settings.keep)

        run_trial(self.workspace, self.settings, self.whole, trial, same)
        reproduces = trial.failure is None and trial.signature is not None and same(trial.signature)
        self.seen[subset] = reproduces
        smaller = reproduces and (self.best is None or len(subset) < len(self.best.indexes))
        self.progress(_trial_line(trial, self.whole, reproduces, smaller, self.started))
        if trial.failure is not None:
            self.failures += 1
            if self.failures <= 3:
                self.notes.append(f"trial {trial.number}: {trial.failure}")
        if smaller:
            if self.best is not None:
                shutil.rmtree(self.best.directory, ignore_errors=True)
            self.best = trial
        else:
            shutil.rmtree(trial.directory, ignore_errors=True)
        return reproduces


def run_trial(
    workspace: Workspace,
    settings: Settings,
    whole: Slice,
    trial: Trial,
    reproduces: Callable[[Signature], bool] = lambda signature: True,
) -> None:
    """Write the trial's input, run the reference and the candidate on it together and
    compare their outputs; the outcome goes into ``trial``. The reference's rerun (for
    noise) runs only when the two already reproduce the run: noise can only explain
    divergences away, so without it a trial that does not reproduce would not either."""
    started = time.monotonic()
    write_subset(whole, trial.indexes, trial.directory / "input")
    (trial.directory / "logs").mkdir()
    try:
        trial.result = _compare(workspace, settings, trial.directory, ("reference", "candidate"))
        trial.signature = Signature.of(trial.result)
        if "rerun" in workspace.jobs and reproduces(trial.signature):
            trial.result = _compare(workspace, settings, trial.directory, ("rerun",))
            trial.signature = Signature.of(trial.result)
    except ParityError as exc:
        trial.failure = " ".join(str(exc).split())
    trial.seconds = time.monotonic() - started


def _compare(
    workspace: Workspace, settings: Settings, directory: Path, roles: Sequence[str]
) -> NoisyComparison:
    """Run the applications of ``roles`` in ``directory``, then compare every output there
    (the rerun's, when it has run)."""
    _run_jobs(workspace, settings, directory, roles)
    reruns = [str(directory / "rerun")] if (directory / "rerun").exists() else []
    return compare_files_with_noise(
        workspace.spec,
        str(directory / "reference"),
        str(directory / "candidate"),
        reruns=reruns,
        limit=LIMIT,
    )


def filled(job: SparkJob, directory: Path, role: str) -> SparkJob:
    """A templated job's arguments with the trial's paths (``_template``'s inverse)."""
    values = {
        "{input}": str(directory / "input"),
        "{output}": str(directory / role),
        "{checkpoint}": str(directory / f"checkpoint-{role}"),
        "{run_dir}": str(directory),
    }

    def fill(arg: str) -> str:
        for name, value in values.items():
            arg = arg.replace(name, value)
        return arg

    return replace(job, args=tuple(fill(arg) for arg in job.args))


def _run_jobs(
    workspace: Workspace, settings: Settings, directory: Path, roles: Sequence[str]
) -> None:
    """The applications of ``roles`` at once; the first failure (or time limit) is an
    ``InputError`` naming the role and its log's last line, after all have ended."""
    env = {**os.environ, **settings.env}
    running = []
    try:
        for role in roles:
            shipped = submitted_to(
                filled(workspace.jobs[role], directory, role),
                settings.master,
                own=False,
                cache_dir=settings.packages,
            )
            argv = spark_submit_argv(
                shipped, spark_submit=settings.spark_submit, master=settings.master
            )
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
                _kill(process)
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
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(empty log)"])[-1][:300]


def _target(workspace: Workspace, record: RunRecord | None = None) -> Signature:
    """The run's own verdict as trials are judged: its outputs compared again here, as each
    trial's are (the run's engine may have been Spark; the verdict is the same). When they
    are gone, the stored verdict: its kinds and the columns its corruptions changed."""
    outputs = workspace.outputs
    if "reference" not in outputs or "candidate" not in outputs:
        if record is None:
            raise MinimizeError(f"{workspace.run_dir}: the run's outputs are gone")
        return stored_signature(record)
    try:
        result = compare_files_with_noise(
            workspace.spec,
            str(outputs["reference"]),
            str(outputs["candidate"]),
            reruns=[str(outputs["rerun"])] if "rerun" in outputs else [],
            limit=LIMIT,
        )
    except ParityError as exc:
        raise MinimizeError(f"the run's outputs cannot be compared again: {exc}") from None
    target = Signature.of(result)
    if target.verdict != "divergent":
        raise MinimizeError(
            f"the run's outputs compared again are {target.verdict}: nothing to reproduce"
        )
    return target


def stored_signature(record: RunRecord) -> Signature:
    """The signature of a run's stored verdict."""
    return Signature(
        record.verdict or record.status,
        tuple(kind for kind, n in record.counts.items() if n),
        tuple(sorted(stat.column for stat in record.column_stats if stat.mismatches)),
        record.schema is not None and record.schema.divergent,
    )


def _finish(workspace: Workspace, result: Minimized, whole: Slice) -> None:
    """Move the best trial's input and outputs up, write its witness, verdict, spec and the
    regression test; drop the other trials."""
    best = result.best
    assert best is not None and best.result is not None
    comparison = best.result
    for name in ("input", *workspace.jobs):
        shutil.move(str(best.directory / name), str(result.out / name))
    shutil.rmtree(result.out / "trials", ignore_errors=True)
    verdict = comparison.verdict
    equality = workspace.spec.build_equality()
    witness = verdict_lines(verdict, equality, more="run the test to see them all")
    header = (
        f"{workspace.validation}, run {workspace.run_id}: {result.rows} of "
        f"{result.rows_before:,} rows of the slice ({result.out / 'input'}) reproduce "
        f"{result.target.describe()}"
    )
    (result.out / "witness.txt").write_text(
        "\n".join([header, "", *witness]) + "\n", encoding="utf-8"
    )
    (result.out / "verdict.json").write_text(
        json.dumps(verdict.to_dict(), indent=2, default=str, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    (result.out / "spec.yaml").write_text(workspace.spec_text, encoding="utf-8")
    result.test_file = write_regression_test(
        result.out,
        validation=workspace.validation,
        run_id=workspace.run_id,
        reference=workspace.jobs["reference"],
        candidate=workspace.jobs["candidate"],
        rows=result.rows,
        rows_before=whole.rows,
        reproduces=result.target.describe(),
    )


def _template(job: SparkJob, run_dir: str, role: str) -> SparkJob:
    """The plan's job with the run's paths as placeholders: its slice ``{input}``, its
    output ``{output}``, its checkpoint ``{checkpoint}``, the rest of its folder
    ``{run_dir}``."""
    paths = [
        (uris.join(run_dir, "slice"), "{input}"),
        (uris.join(run_dir, role), "{output}"),
        (uris.join(run_dir, "checkpoint"), "{checkpoint}"),
        (run_dir, "{run_dir}"),
    ]

    def template(arg: str) -> str:
        for path, name in paths:
            arg = arg.replace(path, name)
        return arg

    return replace(job, args=tuple(template(arg) for arg in job.args))


def _run_dir(record: RunRecord) -> str | None:
    report = record.report_path
    if not report:
        return None
    parent = report.rstrip("/").rsplit("/", 1)[0]
    return parent or None


def _local_copy(run_dir: str, name: str) -> Path:
    """The workspace's ``name`` folder here: itself when local, else a copy."""
    location = uris.join(run_dir, name)
    folder = uris.local_path(location)
    if folder is not None:
        if not folder.exists():
            raise MinimizeError(f"{folder}: the run's slice is gone")
        return folder
    try:
        return locations.download(location, Path(os.environ.get("TMPDIR", "/tmp")) / "parity-min")
    except (OSError, InputError) as exc:
        raise MinimizeError(f"{location}: cannot copy the run's slice here: {exc}") from None


def _rows_of(groups: Mapping[tuple[str, ...], list[int]], chosen: Sequence[Any]) -> list[int]:
    return sorted(index for value in chosen for index in groups[value])


def _trial_line(trial: Trial, whole: Slice, reproduces: bool, smaller: bool, started: float) -> str:
    subset = _subset(trial, whole)
    if trial.failure is not None:
        outcome = f"unresolved: {trial.failure}"
    elif reproduces:
        outcome = "reproduces" + (" (smallest so far)" if smaller else "")
    else:
        assert trial.signature is not None
        outcome = f"does not reproduce ({trial.signature.describe()})"
    return (
        f"run {trial.number} ({trial.phase}): {subset}: {outcome} "
        f"[{trial.seconds:.0f}s, {time.monotonic() - started:.0f}s in all]"
    )


def _subset(trial: Trial, whole: Slice) -> str:
    rows = f"{len(trial.indexes):,} rows"
    if trial.phase != "keys":
        return rows
    return f"{rows}, {len({whole.records[i].key for i in trial.indexes}):,} keys"


def _why(search: _Search) -> str:
    if search.failures and search.failures == search.runs:
        return f": every trial failed ({search.notes[0] if search.notes else 'see the logs'})"
    return ""
