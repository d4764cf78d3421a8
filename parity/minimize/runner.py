"""``parity minimize``'s search: a divergent run's applications re-run on subsets of its
replayed slice until the smallest subset on which they still diverge the same way is found
(``ddmin``, first over the dependence key's values, then over the records left).

    workspace = open_workspace(record)          # the run's plan, spec and slice
    found = minimize(workspace, Budget(runs=60), Settings(), out, progress=print)
    found.rows_after, found.document()          # 3, what the store keeps

A subset *reproduces* the run when the verdict there is divergent with only the run's kinds
of divergence on the run's columns (``Settings.keep``: ``same``; ``exact``: all of them;
``divergent``: any divergence); see ``parity.minimize.trials.Signature``. The run itself is taken as
reproducing (it diverged: ddmin's precondition), and its signature is its outputs compared
again as the trials' are, or its stored verdict when they are gone. The budget (runs,
seconds) ends the search with the smallest reproducing subset found so far.

The result is written below ``out``: ``input/`` (the subset, in the slice's format and
layout), ``reference/``, ``candidate/`` (their outputs on it), ``witness.txt`` and
``verdict.json`` (the verdict there), ``spec.yaml`` and a pytest file that re-runs both
applications on ``input/`` and fails while they diverge (``parity.minimize.regression``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcher.errors import InputError, ParityError
from matcher.files.compare import compare_files_with_noise
from matcher.store.records import RunRecord
from parity.minimize.ddmin import Exhausted, ddmin
from parity.minimize.regression import write_regression_test
from parity.minimize.slices import Slice, read_slice, segments
from parity.minimize.trials import LIMIT, Outcome, Settings, Signature, Trial, run_trial
from parity.minimize.workspace import MinimizeError, Workspace
from parity.views.verdict_text import verdict_lines

DEFAULT_RUNS = 60
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h)$")
_UNITS = {"s": 1, "m": 60, "h": 3600}


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
class Minimized:
    """The search's end: the smallest reproducing subset, how it was found, where it is."""

    run_id: str
    rows_before: int
    rows_after: int
    keys_before: int | None
    keys_after: int | None
    #: what the first phase dropped whole: "keys", "segments" (a barrier's), or ``None``
    unit: str | None
    reproduces: str
    keep: str
    budget: Budget
    runs: int
    seconds: float
    exhausted: bool
    out: Path
    test_file: Path
    notes: tuple[str, ...] = ()

    def document(self) -> dict[str, Any]:
        """What the store keeps with the run (``stats["minimized"]``) and ``--json`` prints."""
        return {
            "status": "budget spent" if self.exhausted else "1-minimal",
            "rows_before": self.rows_before,
            "rows_after": self.rows_after,
            "keys_before": self.keys_before,
            "keys_after": self.keys_after,
            "unit": self.unit,
            "runs": self.runs,
            "seconds": round(self.seconds, 1),
            "budget": self.budget.describe(),
            "keep": self.keep,
            "reproduces": self.reproduces,
            "verdict": "divergent",
            "directory": str(self.out),
            "input": str(self.out / "input"),
            "test": str(self.test_file),
            "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "notes": list(self.notes),
        }


def minimize(
    workspace: Workspace,
    budget: Budget,
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
    whole, unit = _read(workspace, progress)
    target = _target(workspace, record)
    progress(
        f"the run: {whole.rows:,} rows in {len(whole.files)} files; {target.describe()}; "
        f"budget {budget.describe()}"
    )
    _empty(out)
    (out / "trials").mkdir(parents=True)
    search = _Search(workspace, budget, settings, whole, target, out, started, progress)
    groups = whole.keys() if unit else {}
    kept = list(range(whole.rows))
    exhausted = False
    if unit is not None and len(groups) > 1:
        phase = unit
        found = ddmin(list(groups), lambda chosen: search.test(phase, _rows_of(groups, chosen)))
        kept, exhausted = _rows_of(groups, found.smallest), found.exhausted
    if not exhausted and len(kept) > 1:
        exhausted = ddmin(kept, lambda chosen: search.test("rows", chosen)).exhausted
    if search.best is None:
        shutil.rmtree(out / "trials", ignore_errors=True)
        raise MinimizeError(
            f"no subset reproduced the run's verdict ({target.describe()}) in {search.runs} "
            f"runs{search.why()}"
        )
    trial, outcome = search.best
    test_file = _write(workspace, out, trial, outcome, target, whole)
    return Minimized(
        run_id=workspace.run_id,
        rows_before=whole.rows,
        rows_after=len(trial.indexes),
        keys_before=len(groups) if unit else None,
        keys_after=len({whole.records[i].key for i in trial.indexes}) if unit else None,
        unit=unit,
        reproduces=target.describe(),
        keep=settings.keep,
        budget=budget,
        runs=search.runs,
        seconds=time.monotonic() - started,
        exhausted=exhausted,
        out=out,
        test_file=test_file,
        notes=tuple(search.notes),
    )


class _Search:
    """The trials of one search (a process, not a value): each distinct subset runs once,
    the smallest that reproduces is kept, the budget is checked before each run."""

    def __init__(
        self,
        workspace: Workspace,
        budget: Budget,
        settings: Settings,
        whole: Slice,
        target: Signature,
        out: Path,
        started: float,
        progress: Callable[[str], None],
    ) -> None:
        self.workspace, self.budget, self.settings, self.whole = workspace, budget, settings, whole
        self.target, self.out, self.started, self.progress = target, out, started, progress
        self.runs = 0
        self.failures = 0
        self.best: tuple[Trial, Outcome] | None = None
        self.seen: dict[tuple[int, ...], bool] = {}
        self.notes: list[str] = []

    def test(self, phase: str, indexes: Sequence[int]) -> bool:
        subset = tuple(sorted(indexes))
        if len(subset) == self.whole.rows:
            return True  # the run itself: it diverged
        if subset not in self.seen:
            self.seen[subset] = self._run(phase, subset)
        return self.seen[subset]

    def why(self) -> str:
        if self.failures and self.failures == self.runs:
            return f": every trial failed ({self.notes[0] if self.notes else 'see the logs'})"
        return ""

    def _run(self, phase: str, subset: tuple[int, ...]) -> bool:
        if self.budget.runs is not None and self.runs >= self.budget.runs:
            raise Exhausted
        seconds = self.budget.seconds
        if seconds is not None and time.monotonic() - self.started >= seconds:
            raise Exhausted
        self.runs += 1
        trial = Trial(self.runs, phase, subset, self.out / "trials" / f"{self.runs:03d}")
        shown = _subset(trial, self.whole)
        self.progress(f"run {trial.number} ({phase}): {shown}: running")
        outcome = run_trial(self.workspace, self.settings, self.whole, trial, self._reproduces)
        reproduces = outcome.signature is not None and self._reproduces(outcome.signature)
        smaller = reproduces and (self.best is None or len(subset) < len(self.best[0].indexes))
        if outcome.failure is not None:
            self.failures += 1
            if self.failures <= 3:
                self.notes.append(f"run {trial.number}: {outcome.failure}")
            said = f"unresolved: {outcome.failure}"
        elif reproduces:
            said = "reproduces" + (" (smallest so far)" if smaller else "")
        else:
            assert outcome.signature is not None
            said = f"does not reproduce ({outcome.signature.describe()})"
        elapsed = time.monotonic() - self.started
        self.progress(
            f"run {trial.number} ({phase}): {shown}: {said} "
            f"[{outcome.seconds:.0f}s, {elapsed:.0f}s in all]"
        )
        if smaller:
            if self.best is not None:
                shutil.rmtree(self.best[0].directory, ignore_errors=True)
            self.best = (trial, outcome)
        else:
            shutil.rmtree(trial.directory, ignore_errors=True)
        return reproduces

    def _reproduces(self, signature: Signature) -> bool:
        return self.target.reproduced_by(signature, self.settings.keep)


def stored_signature(record: RunRecord) -> Signature:
    """The signature of a run's stored verdict."""
    return Signature(
        record.verdict or record.status,
        tuple(kind for kind, n in record.counts.items() if n),
        tuple(sorted(stat.column for stat in record.column_stats if stat.mismatches)),
        record.schema is not None and record.schema.divergent,
    )


def _read(workspace: Workspace, progress: Callable[[str], None]) -> tuple[Slice, str | None]:
    """The run's slice with its records grouped for the first phase, and what a group is:
    by the key (``"keys"``), else by the barrier's segments (``"segments"``), when the
    slice holds their columns; else ``None``, records only."""
    key, barrier = workspace.key(), workspace.barrier()
    columns = key or ((barrier[0],) if barrier else ())
    try:
        whole = read_slice(workspace.slice_dir, workspace.slice_format, columns)
    except InputError as exc:
        if not columns or "a key column" not in str(exc):
            raise MinimizeError(f"the run's slice cannot be read: {exc}") from None
        progress(f"the slice has no column {', '.join(columns)}: records only")
        columns = ()
        whole = read_slice(workspace.slice_dir, workspace.slice_format)
    if whole.rows == 0:
        raise MinimizeError(f"{workspace.slice_dir}: the run's slice is empty")
    if not columns:
        return whole, None
    if barrier is not None:
        return segments(whole, barrier[1]), "segments"
    return whole, "keys"


def _target(workspace: Workspace, record: RunRecord | None) -> Signature:
    """The run's own verdict as trials are judged: its outputs compared again here, as each
    trial's are (the run's engine may have been Spark; the verdict is the same). When they
    are gone, the stored verdict."""
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


def _write(
    workspace: Workspace,
    out: Path,
    trial: Trial,
    outcome: Outcome,
    target: Signature,
    whole: Slice,
) -> Path:
    """Move the best trial's input and outputs up, write its witness, verdict, spec and the
    regression test (its path); drop the trials' folder."""
    assert outcome.result is not None
    for name in ("input", *workspace.jobs):
        if (trial.directory / name).exists():
            shutil.move(str(trial.directory / name), str(out / name))
    shutil.rmtree(out / "trials", ignore_errors=True)
    verdict = outcome.result.verdict
    witness = verdict_lines(
        verdict, workspace.spec.build_equality(), more="run the test to see them all"
    )
    header = (
        f"{workspace.validation}, run {workspace.run_id}: {len(trial.indexes):,} of "
        f"{whole.rows:,} rows of the slice ({out / 'input'}) reproduce {target.describe()}"
    )
    (out / "witness.txt").write_text("\n".join([header, "", *witness]) + "\n", encoding="utf-8")
    document = json.dumps(verdict.to_dict(), indent=2, default=str, ensure_ascii=False)
    (out / "verdict.json").write_text(document + "\n", encoding="utf-8")
    (out / "spec.yaml").write_text(workspace.spec_text, encoding="utf-8")
    return write_regression_test(
        out,
        validation=workspace.validation,
        run_id=workspace.run_id,
        reference=workspace.jobs["reference"],
        candidate=workspace.jobs["candidate"],
        rows=len(trial.indexes),
        rows_before=whole.rows,
        reproduces=target.describe(),
    )


def _empty(out: Path) -> None:
    """Remove ``out`` when it is an earlier result (it holds ``trials/`` or ``witness.txt``)
    or empty; any other folder is the user's, and is refused rather than emptied."""
    if not out.exists():
        return
    earlier = (out / "trials").exists() or (out / "witness.txt").exists()
    if not out.is_dir() or not (earlier or not any(out.iterdir())):
        raise MinimizeError(
            f"{out}: exists and is not an earlier result of parity minimize: give a new or "
            "empty folder"
        )
    shutil.rmtree(out)


def _rows_of(groups: Mapping[tuple[str, ...], list[int]], chosen: Sequence[Any]) -> list[int]:
    return sorted(index for value in chosen for index in groups[value])


def _subset(trial: Trial, whole: Slice) -> str:
    rows = f"{len(trial.indexes):,} rows"
    if trial.phase == "rows":
        return rows
    return f"{rows}, {len({whole.records[i].key for i in trial.indexes}):,} {trial.phase}"
