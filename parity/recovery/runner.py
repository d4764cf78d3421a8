"""A recovery validation end to end: the streaming application uninterrupted (differential
check only), then under seeded crashes, then the check, stored as a run of kind
``recovery``.

    plan = plan_recovery(spec, root=REPO, home=Path("~/.parity").expanduser())
    record = recover(plan, env=spark_env())          # the stored RunRecord

The plan and the commands it makes are ``parity.recovery.plan`` (re-exported here).

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

``recover`` (the command line) opens the store and starts the run, ``running`` under a lease
its heartbeat renews (``matcher.store.lease``), before any job starts: a store that is down
stops it at once, and a run killed outright reads as failed once its lease expires; its jobs
die with it (``parity.recovery.watchdog``). A run that cannot finish (the job fails on its
own, stalls, runs out of time, or its checkpoint cannot be written) is stored as a failed
run with that one line as its error (the crash log so far stays in the workspace), and
``RecoveryError`` says it. A check that tested nothing never passes: fewer crashes landed
than planned, or an output with no record to check, is such a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from matcher.errors import InputError, ParityError
from matcher.files.locations import local_bytes
from matcher.files.windows_output import read_windows
from matcher.store import RunOutcome, RunRecord, RunStart, Store, StoredDivergence
from matcher.store.lease import Heartbeat
from matcher.store.records import RECOVERY
from matcher.windows import Violation, WindowsReport, check_windows
from parity.recovery.crashes import (
    REAP,
    CrashedRun,
    RecoveryError,
    last_line,
    plan_kills,
    run_with_crashes,
)
from parity.recovery.plan import (
    RecoveryPlan,
    app_command,
    plan_recovery,
    prepare_workspace,
    recovery_slice,
    recovery_start,
    slice_command,
    started_at,
    submit_command,
    write_json,
)
from parity.recovery.processes import executor_pids, kill_tree
from parity.recovery.sink import SinkWatch
from parity.recovery.watchdog import track, untrack, watched
from parity.runs.engines import core_match_argv, core_match_limit
from parity.runs.submits import SparkJob

__all__ = [  # the plan's names too: the DAG, the command line and the tests import them here
    "LIMIT",
    "ROLES",
    "RecoveryError",
    "RecoveryPlan",
    "app_command",
    "check",
    "check_differential",
    "check_windows_output",
    "failures_stored",
    "find_spark_submit",
    "make_input",
    "match_command",
    "match_job",
    "plan_recovery",
    "prepare_workspace",
    "recover",
    "recovery_slice",
    "recovery_start",
    "refuse_an_empty_comparison",
    "require_crashes",
    "run_crashed",
    "run_to_end",
    "run_uninterrupted",
    "slice_command",
    "spark_env",
    "windows_outcome",
]

#: witnesses kept per run
LIMIT = 100
ROLES = ("uninterrupted", "crashed")


def make_input(plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str) -> None:
    """Write the slice the application reads (nothing to do without ``input.slice``)."""
    command = slice_command(plan, spark_submit=spark_submit)
    if command is not None:
        run_to_end(command, env, plan.path("logs") / "slice.log", plan.timeout, "the slice job")


def run_uninterrupted(plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str) -> float:
    """The application once, without crashes; its wall time. A failure or the time limit is
    a ``RecoveryError``."""
    command = app_command(plan, "uninterrupted", spark_submit=spark_submit)
    log = plan.path("logs") / "uninterrupted.log"
    started = time.monotonic()
    run_to_end(command, env, log, plan.timeout, "the uninterrupted run")
    seconds = time.monotonic() - started
    write_json(plan.path("uninterrupted.json"), {"seconds": round(seconds, 3)})
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
        write_json(plan.path("crashes.json"), {"error": str(exc), "seed": plan.seed})
        raise
    document: dict[str, Any] = {**crashed.to_dict(), "seed": plan.seed}
    if plan.path("uninterrupted.json").exists():
        uninterrupted = json.loads(plan.path("uninterrupted.json").read_text(encoding="utf-8"))
        document["uninterrupted_seconds"] = uninterrupted.get("seconds")
    write_json(plan.path("crashes.json"), document)
    return crashed


def require_crashes(crash_log: Mapping[str, Any]) -> None:
    """Refuse a crashed run whose planned kills did not all land: a recovery test that
    crashed less than it says tested less than it says, and must not pass for the full plan
    (the job finished first, on an input too short for the plan)."""
    planned, injected = crash_log.get("planned"), crash_log.get("injected")
    if not isinstance(planned, int) or not isinstance(injected, int):
        raise RecoveryError("the crash log (crashes.json) does not say how many crashes landed")
    if injected < planned:
        raise RecoveryError(
            f"only {injected} of {planned} crashes landed; lengthen the input or lower "
            "recovery.crashes"
        )


def check_windows_output(plan: RecoveryPlan, crash_log: Mapping[str, Any]) -> RunOutcome:
    """The crashed output through the sequence-window validator, as the store keeps it. An
    output with no record at all, when the spec does not say how many to expect, is an
    error: it tested nothing, and nothing found is not a pass (with ``expected`` it is the
    loss of every update, a divergence)."""
    assert plan.spec.recovery is not None
    recovery = plan.spec.recovery
    started = time.monotonic()
    report = check_windows(
        read_windows(plan.path("crashed")),
        expected=recovery.expected,
        at_least_once=recovery.at_least_once,
        limit=LIMIT,
    )
    if report.records == 0 and recovery.expected is None:
        raise RecoveryError(
            "the crashed run wrote no records: a windows check of an empty output tests "
            "nothing (does the application write to its output folder?)"
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
    started = started_at(plan)
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
    write_json(plan.path("stats.json"), {"check": "differential", "crashes": crash_log})
    limit = core_match_limit()
    outputs = [str(plan.path("uninterrupted")), str(plan.path("crashed"))]
    if limit is not None and local_bytes(outputs, limit) is not None:
        command = core_match_argv(match_job(plan, db))
    else:
        command = match_command(plan, spark_submit=spark_submit, db=db)
    run_to_end(command, env, plan.path("logs") / "check.log", plan.timeout, "the check")


def refuse_an_empty_comparison(plan: RecoveryPlan, db: str | None) -> None:
    """Mark failed a differential run the match job found equivalent on two empty outputs:
    it compared nothing, and nothing found is not a pass. (The match job stores the run
    itself; this runs right after it, in the same task.)"""
    with Store.open(db) as store:
        record = store.get_run(plan.run_id)
        if record is None or record.verdict != "equivalent":
            return
        stats = record.stats if isinstance(record.stats, Mapping) else {}
        if stats.get("reference_count") != 0 or stats.get("candidate_count") != 0:
            return
        reason = (
            "neither run of the application wrote an event: a differential check of two "
            "empty outputs tests nothing (does the application write to its output folder?)"
        )
        store.mark_failed(plan.run_id, reason, start=recovery_start(plan))
    raise RecoveryError(reason)


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
        track(process.pid)
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
        finally:
            untrack(process.pid)
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
    with Store.open(db) as store:  # a store that is down or wrong stops the run before any job
        prepare_workspace(plan)
        store.start_run(recovery_start(plan))  # running, under a lease the heartbeat renews
        try:
            with Heartbeat(store, plan.run_id), watched(), failures_stored(plan, db):
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
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the jobs are killed, the run failed
            store.fail_if_running(plan.run_id, "interrupted")
            raise
    with Store.open_readonly(db) as store:
        record = store.get_run(plan.run_id)
    if record is None:
        raise RecoveryError(f"the check stored no run {plan.run_id!r}")
    return record


def check(plan: RecoveryPlan, env: Mapping[str, str], *, spark_submit: str, db: str | None) -> None:
    """Check the crashed output as the spec says and store the run (``crashes.json`` holds
    the crash log)."""
    crash_log = json.loads(plan.path("crashes.json").read_text(encoding="utf-8"))
    require_crashes(crash_log)
    if plan.check == "differential":
        check_differential(plan, env, spark_submit=spark_submit, db=db)
        refuse_an_empty_comparison(plan, db)
        return
    outcome = check_windows_output(plan, crash_log)  # an error here: failures_stored's line
    with Store.open(db) as store, store.running(recovery_start(plan)):
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


def find_spark_submit() -> str:
    """``spark-submit`` beside this interpreter (the project's venv), else on ``PATH``."""
    beside = Path(sys.executable).parent / "spark-submit"
    if beside.exists():
        return str(beside)
    found = shutil.which("spark-submit")
    if found is None:
        raise InputError("spark-submit not found: install pyspark into this environment")
    return found
