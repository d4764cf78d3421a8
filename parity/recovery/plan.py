"""A recovery run's plan: fixed before any job starts, the same in every Airflow task.

    plan = plan_recovery(spec, root=REPO, home=Path("~/.parity").expanduser())
    plan.run_dir                      # HOME/recovery/<validation>/<run>/
    app_command(plan, "crashed", spark_submit="spark-submit")

The plan names the run, its workspace, its input (the spec's, or the slice the slice job
writes), the master and the crash settings (the spec's, each overridable); the commands
of its jobs are built from it without running anything (``parity.recovery.runner`` runs
them), and ``recovery_start`` is the run as the store keeps it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcher.errors import SpecError
from matcher.spec import Spec
from matcher.spec_digest import verdict_digest
from matcher.store import RunStart
from matcher.store.records import RECOVERY
from matcher.store.run_ids import adhoc_run_id
from parity.runs.package import PACKAGES_DIR, submitted_to
from parity.runs.submits import (
    SparkJob,
    build_app_job,
    build_slice_job,
    resolve_path,
    spark_submit_argv,
)


@dataclass(frozen=True, slots=True)
class RecoveryPlan:
    """Everything a recovery run needs, fixed before any job starts."""

    spec: Spec
    run_id: str
    run_dir: Path
    root: Path
    input: str
    #: the slice the slice job makes the input from (``None``: the spec's input as it is)
    slice: Mapping[str, Any] | None
    master: str
    crashes: int
    seed: int
    kill: str
    #: where the project's zip for a cluster's executors is cached (``HOME/packages``)
    packages: Path
    trigger: str = "cli"
    dag_id: str | None = None
    dag_run_id: str | None = None

    def path(self, name: str) -> Path:
        return self.run_dir / name

    @property
    def check(self) -> str:
        assert self.spec.recovery is not None
        return self.spec.recovery.check

    @property
    def timeout(self) -> int:
        assert self.spec.recovery is not None
        return self.spec.recovery.timeout


def plan_recovery(
    spec: Spec,
    *,
    root: Path,
    home: Path,
    run_id: str | None = None,
    crashes: int | None = None,
    seed: int | None = None,
    kill: str | None = None,
    master: str | None = None,
    trigger: str = "cli",
) -> RecoveryPlan:
    """The run's plan: the spec's recovery settings, each overridable, and a new workspace
    named after the run."""
    if spec.recovery is None or spec.application is None:
        raise SpecError(f"{spec.source}: recovery: this spec is not a recovery validation")
    if spec.input is None:
        raise SpecError(f"{spec.source}: input: a recovery validation needs the job's input")
    recovery = spec.recovery
    chosen_kill = kill or recovery.kill
    chosen_master = master or recovery.master or "local[2]"
    if chosen_kill == "executor" and not chosen_master.startswith("spark://"):
        raise SpecError(
            f"{spec.source}: recovery.master: kill: executor needs a standalone cluster "
            f"(spark://HOST:PORT), got {chosen_master!r}"
        )
    run_id = run_id or adhoc_run_id("recovery")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id).strip("._") or "run"
    run_dir = home / "recovery" / spec.name / safe
    chosen = recovery_slice(spec, root)
    return RecoveryPlan(
        spec=spec,
        run_id=run_id,
        run_dir=run_dir,
        root=root,
        input=resolve_path(spec.input.path, root) if chosen is None else str(run_dir / "slice"),
        slice=chosen,
        master=chosen_master,
        crashes=recovery.crashes if crashes is None else crashes,
        seed=recovery.seed if seed is None else seed,
        kill=chosen_kill,
        packages=home / PACKAGES_DIR,
        trigger=trigger,
    )


def recovery_slice(spec: Spec, root: Path) -> dict[str, Any] | None:
    """The slice of the spec's ``input.slice`` as the slice job takes it: its fixed window
    (else the whole capture), its sample, its number of files."""
    assert spec.input is not None
    chosen = spec.input.slice
    if chosen is None:
        return None
    window = chosen.fixed_window()
    key = chosen.key if chosen.key is not None else spec.dependence.key
    if chosen.sample is not None and key is None:
        raise SpecError(
            f"{spec.source}: input.slice.sample: a sample hashes key columns, and the spec "
            "names none (input.slice.key or a dependence key)"
        )
    return {
        "capture": resolve_path(spec.input.path, root),
        "format": spec.input.format,
        "column": chosen.column,
        "start": None if window is None else window[0].isoformat(),
        "end": None if window is None else window[1].isoformat(),
        "window_source": "whole capture" if window is None else "spec",
        "sample": chosen.sample,
        "key": None if chosen.sample is None else list(key or ()),
        "files": chosen.files,
    }


def slice_command(plan: RecoveryPlan, *, spark_submit: str) -> list[str] | None:
    """The slice job's ``spark-submit`` line, or ``None`` when the input is used as it is."""
    if plan.slice is None:
        return None
    job = build_slice_job(plan.spec.name, plan.slice, plan.input, str(plan.run_dir), plan.root)
    return submit_command(plan, job, own=True, spark_submit=spark_submit)


def submit_command(plan: RecoveryPlan, job: SparkJob, *, own: bool, spark_submit: str) -> list[str]:
    """``job``'s ``spark-submit`` line on the plan's master; on a cluster with the project's
    zip when the job is Parity's own (``own``) or a module of its packages."""
    shipped = submitted_to(job, plan.master, own=own, cache_dir=plan.packages)
    return spark_submit_argv(shipped, spark_submit=spark_submit, master=plan.master)


def prepare_workspace(plan: RecoveryPlan) -> None:
    """A fresh workspace (an earlier attempt's outputs and checkpoints would be resumed), and
    the instant the run started, which the stored run keeps (``run.json``)."""
    if plan.run_dir.exists():
        shutil.rmtree(plan.run_dir)
    (plan.run_dir / "logs").mkdir(parents=True)
    write_json(plan.path("run.json"), {"started_at": dt.datetime.now(dt.UTC).isoformat()})


def started_at(plan: RecoveryPlan) -> dt.datetime | None:
    try:
        document = json.loads(plan.path("run.json").read_text(encoding="utf-8"))
        return dt.datetime.fromisoformat(document["started_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def app_command(plan: RecoveryPlan, role: str, *, spark_submit: str) -> list[str]:
    """The ``spark-submit`` line of the application's ``role`` run (``uninterrupted`` or
    ``crashed``): its own output and checkpoint folders."""
    assert plan.spec.application is not None
    dirs = {
        "slice": plan.input,
        role: str(plan.path(role)),
        "checkpoint": str(plan.path(f"checkpoint-{role}")),
    }
    job = build_app_job(
        plan.spec.name, role, plan.spec.application, dirs, str(plan.run_dir), plan.root
    )
    return submit_command(plan, job, own=False, spark_submit=spark_submit)


def recovery_start(plan: RecoveryPlan) -> RunStart:
    """The run as the store keeps it: kind ``recovery``, the application's version as the
    candidate's, and the recovery settings in its spec document."""
    assert plan.spec.application is not None and plan.spec.recovery is not None
    return RunStart(
        run_id=plan.run_id,
        validation=plan.spec.name,
        trigger=plan.trigger,
        kind=RECOVERY,
        started_at=started_at(plan),
        candidate_version=plan.spec.application.version,
        slice={"input": plan.input, **(plan.slice or {})},
        spec={
            "file": plan.spec.source,
            "dependence": plan.spec.build_dependence().describe(),
            "gate": plan.spec.gate.to_dict(),
            "expectations": [],
            "recovery": {
                **plan.spec.recovery.model_dump(mode="json"),
                "crashes": plan.crashes,
                "seed": plan.seed,
                "kill": plan.kill,
                "master": plan.master,
            },
        },
        dag_id=plan.dag_id,
        dag_run_id=plan.dag_run_id,
        engine="spark",
        spec_hash=verdict_digest(plan.spec),
    )


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
