"""A recovery validation end to end: the streaming application uninterrupted (differential
check only), then under seeded crashes, then the check, stored as a run of kind
``recovery``.

    plan = plan_recovery(spec, root=REPO, home=Path("~/.parity").expanduser())
    record = recover(plan, env=spark_env())          # the stored RunRecord

The workspace is ``HOME/recovery/<validation>/<run>/``: ``uninterrupted/`` and ``crashed/``
the two outputs with their own ``checkpoint-*`` folders, ``crashes.json`` the crash log and
``logs/`` every ``spark-submit``'s output. The application reads the spec's input as it is,
as a stream of files, or, when the spec gives ``input.slice``, the slice the slice job
writes to ``slice/`` first (``make_input``): its ``files`` are the stream's files, so they
set how many micro-batches the crashes can fall between. A slice window comes from the
spec's ``start``/``end``; without them the whole capture is replayed (a recovery run has
no data interval).

Every job runs on the plan's master. On a cluster (not ``local[...]``) the slice and match
jobs, and an application that is a module of the project's packages (the detector,
``jobs/examples/``), get the project's zip for their executors, by the rule the DAG's Spark
tasks follow (``parity.runs.package.submitted_to``), cached in ``HOME/packages/``.

The check:

* ``windows`` (the sequence-window detector): the crashed output alone, through the
  Wallaroo validator (``matcher.windows``), in this process;
* ``differential``: the match job (``jobs/match.py --kind recovery``) compares the
  uninterrupted output (as the reference) with the crashed one (as the candidate) under the
  spec's dependence and equality, and stores the run itself with the crash log; on the core
  in a Python process when both outputs are small (``parity.runs.engines``).

A run that cannot finish (the job fails on its own, stalls, runs out of time, or its
checkpoint cannot be written) is stored as a failed run with that one line as its error (the
crash log so far stays in the workspace), and ``RecoveryError`` says it. Nothing is stored
before the check starts but that failure: a run is never half written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcher.errors import InputError, ParityError, SpecError
from matcher.files.locations import local_bytes
from matcher.files.windows_output import read_windows
from matcher.spec import Spec
from matcher.store import RunOutcome, RunRecord, RunStart, Store, StoredDivergence
from matcher.store.records import RECOVERY
from matcher.store.run_ids import adhoc_run_id
from matcher.windows import Violation, WindowsReport, check_windows
from parity.recovery.crashes import (
    REAP,
    CrashedRun,
    RecoveryError,
    last_line,
    plan_kills,
    run_with_crashes,
)
from parity.recovery.processes import executor_pids, kill_tree
from parity.recovery.sink import SinkWatch
from parity.runs.engines import core_match_argv, core_match_limit
from parity.runs.package import PACKAGES_DIR, submitted_to
from parity.runs.submits import (
    SparkJob,
    build_app_job,
    build_slice_job,
    resolve_path,
    spark_submit_argv,
)

#: witnesses kept per run
LIMIT = 100
ROLES = ("uninterrupted", "crashed")


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


def make_input(plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str) -> None:
    """Write the slice the application reads (nothing to do without ``input.slice``)."""
    command = slice_command(plan, spark_submit=spark_submit)
    if command is not None:
        run_to_end(command, env, plan.path("logs") / "slice.log", plan.timeout, "the slice job")


def prepare_workspace(plan: RecoveryPlan) -> None:
    """A fresh workspace (an earlier attempt's outputs and checkpoints would be resumed), and
    the instant the run started, which the stored run keeps (``run.json``)."""
    if plan.run_dir.exists():
        shutil.rmtree(plan.run_dir)
    (plan.run_dir / "logs").mkdir(parents=True)
    _write_json(plan.path("run.json"), {"started_at": dt.datetime.now(dt.UTC).isoformat()})


def _started_at(plan: RecoveryPlan) -> dt.datetime | None:
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
        started_at=_started_at(plan),
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
    )


def run_uninterrupted(plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str) -> float:
    """The application once, without crashes; its wall time. A failure or the time limit is
    a ``RecoveryError``."""
    command = app_command(plan, "uninterrupted", spark_submit=spark_submit)
    log = plan.path("logs") / "uninterrupted.log"
    started = time.monotonic()
    run_to_end(command, env, log, plan.timeout, "the uninterrupted run")
    seconds = time.monotonic() - started
    _write_json(plan.path("uninterrupted.json"), {"seconds": round(seconds, 3)})
    return seconds


def run_crashed(
    plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str, progress: Any = None
) -> CrashedRun:
    """The application under the plan's kills until it finishes; the crash log is written to
    ``crashes.json`` (also when the run fails, with the error). ``progress`` gets a line per
    kill."""
    say = progress or (lambda text: None)
    command = app_command(plan, "crashed", spark_submit=spark_submit)
    kills = plan_kills(plan.crashes, plan.seed)
    try:
        crashed = run_with_crashes(
            command,
            env=env,
            checkpoint=plan.path("checkpoint-crashed"),
            kills=kills,
            log=plan.path("logs") / "crashed.log",
            timeout=plan.timeout,
            target=plan.kill,
            executors=executor_pids if plan.kill == "executor" else None,
            sink=SinkWatch((plan.path("crashed"),)),
            on_crash=lambda crash: say(
                f"crash {crash.number} of {plan.crashes}: {crash.target} killed "
                f"({crash.phase}), {crash.committed} batches committed"
            ),
        )
    except RecoveryError as exc:
        _write_json(plan.path("crashes.json"), {"error": str(exc), "seed": plan.seed})
        raise
    document: dict[str, Any] = {**crashed.to_dict(), "seed": plan.seed}
    if plan.path("uninterrupted.json").exists():
        uninterrupted = json.loads(plan.path("uninterrupted.json").read_text(encoding="utf-8"))
        document["uninterrupted_seconds"] = uninterrupted.get("seconds")
    _write_json(plan.path("crashes.json"), document)
    return crashed


def check_windows_output(plan: RecoveryPlan, crash_log: Mapping[str, Any]) -> RunOutcome:
    """The crashed output through the sequence-window validator, as the store keeps it."""
    assert plan.spec.recovery is not None
    recovery = plan.spec.recovery
    started = time.monotonic()
    report = check_windows(
        read_windows(plan.path("crashed")),
        expected=recovery.expected,
        at_least_once=recovery.at_least_once,
        limit=LIMIT,
    )
    return windows_outcome(report, crash_log, seconds=time.monotonic() - started)


def windows_outcome(
    report: WindowsReport, crash_log: Mapping[str, Any], *, seconds: float = 0.0
) -> RunOutcome:
    """A windows report as a stored outcome: pass is ``equivalent`` (the output is the one an
    uncrashed run gives), fail ``divergent``; each violation a witness in its own words."""
    return RunOutcome(
        verdict="equivalent" if report.passed else "divergent",
        counts=report.counts,
        divergences=tuple(_witness(i, v) for i, v in enumerate(report.violations)),
        stats={
            "check": "windows",
            "windows": {k: v for k, v in report.to_dict().items() if k != "violations"},
            "crashes": dict(crash_log),
            "candidate_count": report.records,
            "seconds": round(seconds, 3),
        },
    )


def _witness(ordinal: int, violation: Violation) -> StoredDivergence:
    document = violation.to_dict()
    return StoredDivergence(
        ordinal=ordinal,
        kind=violation.kind,
        key=document["key"],
        reference_position=None,
        candidate_position=violation.position,
        reference_event=None,
        candidate_event={"key": document["key"], "window": document["window"]},
        columns=("window",),
        explanation=f"record #{violation.position}: {violation.detail}",
    )


def match_command(plan: RecoveryPlan, *, spark_submit: str, db: str | None) -> list[str]:
    """The match job comparing the uninterrupted output with the crashed one, storing the
    run as kind ``recovery`` with the crash log: its ``spark-submit`` line."""
    return submit_command(plan, match_job(plan, db), own=True, spark_submit=spark_submit)


def match_job(plan: RecoveryPlan, db: str | None) -> SparkJob:
    """The match job of ``match_command``, as a value."""
    args = [
        *("--spec", str(plan.spec.source), "--run-id", plan.run_id),
        *("--reference", str(plan.path("uninterrupted")), "--candidate", str(plan.path("crashed"))),
        *("--kind", RECOVERY, "--stats-json", str(plan.path("stats.json"))),
        *("--trigger", plan.trigger, "--record-only", "--limit", str(LIMIT)),
        *("--slice-json", json.dumps({"input": plan.input, **(plan.slice or {})})),
        *("--report-dir", str(plan.path("report"))),
    ]
    if plan.dag_id is not None and plan.dag_run_id is not None:
        args += ["--dag-id", plan.dag_id, "--dag-run-id", plan.dag_run_id]
    assert plan.spec.application is not None
    if plan.spec.application.version is not None:
        args += ["--candidate-version", plan.spec.application.version]
    started = _started_at(plan)
    if started is not None:
        args += ["--started-at", started.isoformat()]
    if db is not None:
        args += ["--db", db]
    return SparkJob(
        application=str(plan.root / "jobs" / "match.py"),
        args=tuple(args),
        conf={"spark.ui.enabled": "false"},
        name=f"parity-{plan.spec.name}-recovery-check",
    )


def check_differential(
    plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str, db: str | None
) -> None:
    """Run the match job; it stores the run (or marks it failed) itself, with the check and
    the crash log among its statistics, as the windows check stores them. Two small outputs
    are matched on the core in a Python process, as the DAG's match task does
    (``parity.runs.engines``)."""
    crash_log = json.loads(plan.path("crashes.json").read_text(encoding="utf-8"))
    _write_json(plan.path("stats.json"), {"check": "differential", "crashes": crash_log})
    limit = core_match_limit()
    outputs = [str(plan.path("uninterrupted")), str(plan.path("crashed"))]
    if limit is not None and local_bytes(outputs, limit) is not None:
        command = core_match_argv(match_job(plan, db))
    else:
        command = match_command(plan, spark_submit=spark_submit, db=db)
    run_to_end(command, env, plan.path("logs") / "check.log", plan.timeout, "the check")


def run_to_end(
    command: Sequence[str], env: Mapping[str, str], log: Path, timeout: float, what: str
) -> None:
    """Run ``command`` to its end, its output in ``log``; a non-zero exit or the time limit
    (its whole process tree is then killed) is a ``RecoveryError`` naming ``what``."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            list(command),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(process.pid)
            process.wait(timeout=REAP)
            raise RecoveryError(f"{what} did not finish within {timeout:g}s (log: {log})") from None
        except BaseException:  # interrupted (Ctrl-C, SIGTERM, Airflow's timeout): no orphan
            kill_tree(process.pid)
            process.wait(timeout=REAP)
            raise
    if code != 0:
        raise RecoveryError(f"{what} failed (exit {code}): {last_line(log)}")


def recover(
    plan: RecoveryPlan,
    *,
    env: Mapping[str, str],
    spark_submit: str,
    db: str | None = None,
    progress: Any = None,
) -> RunRecord:
    """The whole recovery validation; the stored run. A run that could not finish is stored
    failed and raised as ``RecoveryError``."""
    say = progress or (lambda text: None)
    prepare_workspace(plan)
    with failures_stored(plan, db):
        if plan.slice is not None:
            say("writing the input slice")
            make_input(plan, env, spark_submit=spark_submit)
        if plan.check == "differential":
            say("running the application without crashes")
            run_uninterrupted(plan, env, spark_submit=spark_submit)
        say(f"running it under {plan.crashes} crashes ({plan.kill}, seed {plan.seed})")
        run_crashed(plan, env, spark_submit=spark_submit, progress=progress)
        say(f"checking the output ({plan.check})")
        check(plan, env, spark_submit=spark_submit, db=db)
    with Store.open_readonly(db) as store:
        record = store.get_run(plan.run_id)
    if record is None:
        raise RecoveryError(f"the check stored no run {plan.run_id!r}")
    return record


def check(plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str, db: str | None) -> None:
    """Check the crashed output as the spec says and store the run (``crashes.json`` holds
    the crash log)."""
    crash_log = json.loads(plan.path("crashes.json").read_text(encoding="utf-8"))
    if plan.check == "differential":
        check_differential(plan, env, spark_submit=spark_submit, db=db)
        return
    with Store.open(db) as store, store.running(recovery_start(plan)):
        outcome = check_windows_output(plan, crash_log)
        store.record_run(plan.run_id, outcome)


@contextmanager
def failures_stored(plan: RecoveryPlan, db: str | None) -> Iterator[None]:
    """Store the run as failed when the block raises a Parity error or an ``OSError`` (a
    run the check already ended stays as it is), and raise it as ``RecoveryError``."""
    try:
        yield
    except (ParityError, OSError) as exc:
        _store_failure(plan, recovery_start(plan), db, exc)
        if isinstance(exc, RecoveryError):
            raise
        raise RecoveryError(" ".join(str(exc).split())) from exc


def _store_failure(plan: RecoveryPlan, start: RunStart, db: str | None, exc: BaseException) -> None:
    """Store the run as failed, its error the one line; the crash log so far stays in the
    workspace (``crashes.json``)."""
    with Store.open(db) as store:
        current = store.get_run(plan.run_id)
        if current is not None and current.status != "running":
            return  # the match job ended it itself
        store.mark_failed(plan.run_id, " ".join(str(exc).split()), start=start)


def spark_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the jobs run in: this interpreter for PySpark, a local IP."""
    env = dict(os.environ if base is None else base)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def _write_json(path: Path, document: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def find_spark_submit() -> str:
    """``spark-submit`` beside this interpreter (the project's venv), else on ``PATH``."""
    beside = Path(sys.executable).parent / "spark-submit"
    if beside.exists():
        return str(beside)
    found = shutil.which("spark-submit")
    if found is None:
        raise InputError("spark-submit not found: install pyspark into this environment")
    return found
