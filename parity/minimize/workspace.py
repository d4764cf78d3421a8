"""A pipeline run's workspace as ``parity minimize`` needs it: its plan's jobs with the run's
paths made placeholders, its spec, its slice and its outputs.

    workspace = open_workspace(record)      # RUN/plan.json, the spec, RUN/slice
    workspace.jobs["candidate"].args        # ('--variant', 'buggy', '--input', '{input}', ...)

The run's folder is the one its report is in (``RUN/report``, as the match job records it),
or the one given. A run that has no plan there (made by ``parity compare``, or whose
workspace was deleted) cannot be minimized, and ``MinimizeError`` says so in one line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from matcher import uris
from matcher.errors import InputError, ParityError
from matcher.files import locations
from matcher.spec import Spec, load_spec
from matcher.store.records import RunRecord
from parity.runs.submits import SparkJob

#: the applications a trial runs, in the order their outputs are compared
ROLES = ("reference", "candidate", "rerun")


class MinimizeError(ParityError):
    """The run cannot be minimized: not divergent, no workspace, a slice that cannot be read,
    or a divergence that no subset of its slice repeats."""


@dataclass(frozen=True, slots=True)
class Workspace:
    """A pipeline run's workspace: its folder, its jobs (with the run's paths made
    placeholders), its spec, its slice and its outputs where they can still be read."""

    run_id: str
    validation: str
    run_dir: str
    spec: Spec
    spec_text: str
    jobs: Mapping[str, SparkJob]
    slice_dir: Path
    slice_format: str
    outputs: Mapping[str, Path]

    def key(self) -> tuple[str, ...]:
        """The columns whose values group the slice's records for the first phase: the
        dependence key, else the slice's sample key; none when the spec names neither."""
        if self.spec.dependence.key:
            return tuple(self.spec.dependence.key)
        chosen = self.spec.input.slice if self.spec.input is not None else None
        return tuple(chosen.key) if chosen is not None and chosen.key else ()

    def barrier(self) -> tuple[str, tuple[Any, ...]] | None:
        """Without a key, the barrier's column and the values that end a segment, when the
        dependence has a barrier recognised by a column (``{column: kind, equals: EOF}``)."""
        barrier = self.spec.dependence.barrier
        if self.key() or barrier is None or barrier.column is None or barrier.equals is None:
            return None
        return barrier.column, tuple(barrier.equals)


def open_workspace(record: RunRecord, given: str | None = None) -> Workspace:
    """The workspace of ``record``, a divergent run: ``given``, else its report's folder."""
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
        spec_file = str(plan["spec_file"])
        jobs = {
            role: template(SparkJob.from_dict(plan["jobs"][role]), run_dir, role)
            for role in ROLES
            if role in plan["jobs"]
        }
    except (OSError, ValueError, KeyError, TypeError, InputError) as exc:
        raise MinimizeError(
            f"{plan_file}: cannot read the run's plan ({' '.join(str(exc).split())}): its "
            "workspace is gone or is not a pipeline run's"
        ) from None
    if uris.local_path(spec_file) is None:
        raise MinimizeError(f"{spec_file}: the run's spec is not on this machine")
    try:
        spec_text = locations.read_text(spec_file)
    except (OSError, InputError) as exc:
        raise MinimizeError(f"{spec_file}: cannot read the run's spec: {exc}") from None
    spec = load_spec(spec_file)
    outputs = {}
    for role in jobs:
        folder = uris.local_path(uris.join(run_dir, role))
        if folder is not None and folder.exists():
            outputs[role] = folder
    declared = plan.get("slice", {}).get("format")
    return Workspace(
        run_id=record.run_id,
        validation=record.validation,
        run_dir=run_dir,
        spec=spec,
        spec_text=spec_text,
        jobs=jobs,
        slice_dir=_local_copy(run_dir, "slice"),
        slice_format=declared or (spec.input.format if spec.input else None) or "",
        outputs=outputs,
    )


def template(job: SparkJob, run_dir: str, role: str) -> SparkJob:
    """The plan's job with the run's paths as placeholders: its slice ``{input}``, its
    output ``{output}``, its checkpoint ``{checkpoint}``, the rest of its folder
    ``{run_dir}``."""
    paths = [
        (uris.join(run_dir, "slice"), "{input}"),
        (uris.join(run_dir, role), "{output}"),
        (uris.join(run_dir, "checkpoint"), "{checkpoint}"),
        (run_dir, "{run_dir}"),
    ]

    def placeholders(arg: str) -> str:
        for path, name in paths:
            arg = arg.replace(path, name)
        return arg

    return replace(job, args=tuple(placeholders(arg) for arg in job.args))


def filled(job: SparkJob, directory: Path, role: str) -> SparkJob:
    """A templated job's arguments with a trial's paths (``template``'s inverse)."""
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


def _run_dir(record: RunRecord) -> str | None:
    report = record.report_path
    if not report:
        return None
    return report.rstrip("/").rsplit("/", 1)[0] or None


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
