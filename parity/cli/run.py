"""``parity run``: validate one build of a candidate, and (with ``--wait``) answer its gate.

    parity run VALIDATION [--candidate-application PATH_OR_URL] [--candidate-version V]
               [--candidate-arg A]... [--window-start T --window-end T] [--wait]
               [--timeout DURATION] [--json] [--airflow URL | --local] [--unpause]
               [--db URL] [--spec FILE]

    parity run taxi_parallel --candidate-application s3a://artifacts/etl/etl-1.5.0.py \\
        --candidate-version 1.5.0 --wait --timeout 1h --airflow https://airflow.example.com

With an Airflow (``--airflow URL`` or ``PARITY_AIRFLOW_URL``; ``PARITY_AIRFLOW_TOKEN``, else
``PARITY_AIRFLOW_USERNAME`` and ``PARITY_AIRFLOW_PASSWORD``) it triggers the DAG
``parity_<VALIDATION>`` through Airflow's REST API with the options as the run's parameters,
follows it (one line per finished task on stderr), then asks the Parity plugin for the gate
of that candidate version (``GET /parity/api/gate/...``) and checks that the gate's deciding
run is the one it started. Without one (or with ``--local``), it runs the same DAG with
``dag.test()`` on the embedded default, as ``make demo`` does (``tools.local_run``), then
reads the gate from the results store (``--db``, ``PARITY_DB_URL``, else the demo home's).

The exit code is the gate's (DESIGN.md, "The release loop"): 0 open; 1 closed by the
verdict or its expectations; 3 no usable verdict (the run failed, was rejected, or is not
over: without ``--wait``, or ``--timeout`` passed; or the gate answered from another run);
2 error (unknown validation, paused DAG, Airflow or the store unreachable, a bad argument).
With ``--json`` every outcome is one object on stdout: ``validation``, ``dag_id``,
``dag_run_id``, ``run_id``, ``state`` (the DAG run's), ``verdict``, ``counts``, ``gate``
(``parity gate --json``'s document, or null), ``exit_code``, ``reason``, ``mode``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, TextIO

from matcher.errors import ParityError
from matcher.printable import printable
from matcher.spec_bounds import parse_duration
from matcher.store.run_ids import DAG_PREFIX, dag_id_for, pipeline_run_id
from parity.cli.commands import SUMMARY
from parity.cli.gate import json_usage_errors
from parity.runs.airflow_api import (
    FINISHED_RUN_STATES,
    FINISHED_TASK_STATES,
    URL_VARIABLE,
    AirflowApiError,
    AirflowClient,
    Credentials,
    check_url,
)
from parity.views.gate import EXIT_CLOSED, EXIT_ERROR, EXIT_NO_VERDICT, EXIT_OPEN

EXIT_CODES_HELP = (
    "exit codes: 0 gate open; 1 closed by the verdict or its expectations; 3 no usable "
    "verdict (run failed or rejected, not over: no --wait or --timeout passed); 2 error"
)
#: seconds between two looks at a DAG run in Airflow (tests make it shorter)
POLL_SECONDS = 3.0
#: consecutive polls Airflow may leave unanswered (timeouts, 5xx) before --wait gives up
MAX_MISSED_POLLS = 20
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class RunError(ParityError):
    """``parity run`` cannot start or follow the run: a bad argument, an unknown or paused
    validation, an Airflow that refuses."""


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What to run, the options checked (``parse_request``); ``conf`` is the DAG run's
    parameters that were given (``parity.airflow.tasks.params_for``)."""

    validation: str
    conf: dict[str, Any]
    wait: bool = False
    timeout: float | None = None
    timeout_text: str | None = None
    airflow: str | None = None
    unpause: bool = False
    db: str | None = None
    spec: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What ``parity run`` answers: the DAG run, its verdict and the gate's document."""

    validation: str | None
    dag_id: str | None = None
    dag_run_id: str | None = None
    state: str | None = None
    mode: str | None = None
    verdict: str | None = None
    counts: dict[str, int] | None = None
    gate: dict[str, Any] | None = None
    exit_code: int = EXIT_ERROR
    reason: str = ""

    @classmethod
    def error(cls, validation: str | None, reason: str) -> Outcome:
        return cls(validation, reason=reason, exit_code=EXIT_ERROR)

    @property
    def run_id(self) -> str | None:
        """The store's id of the run (``matcher.store.run_ids``)."""
        if self.dag_id is None or self.dag_run_id is None:
            return None
        return pipeline_run_id(self.dag_id, self.dag_run_id)

    def no_verdict(self, reason: str) -> Outcome:
        return replace(self, exit_code=EXIT_NO_VERDICT, reason=reason)

    def with_state(self, state: str) -> Outcome:
        return replace(self, state=state)

    def with_gate(self, gate: dict[str, Any]) -> Outcome:
        """The gate's answer, if it rests on this run; "no usable verdict" if it rests on
        another (a newer attempt of that version, or an older one: this run stored none)."""
        reason = str(gate.get("reason") or "")
        if gate.get("state") == "error":
            return replace(self, gate=gate, exit_code=EXIT_ERROR, reason=reason)
        found = gate.get("run")
        deciding: dict[str, Any] = found if isinstance(found, dict) else {}
        if deciding.get("run_id") != self.run_id:
            other = deciding.get("run_id") or "no run"
            return replace(self, gate=gate).no_verdict(
                f"the gate answers from {other}, not from this run {self.run_id} ({reason})"
            )
        given = deciding.get("counts")
        counts: dict[str, Any] = given if isinstance(given, dict) else {}
        code = gate.get("exit_code")
        return replace(
            self,
            gate=gate,
            verdict=deciding.get("verdict"),
            counts={str(k): int(n) for k, n in counts.items()},
            exit_code=code if code in (EXIT_OPEN, EXIT_CLOSED, EXIT_NO_VERDICT) else EXIT_ERROR,
            reason=reason,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "validation": self.validation,
            "dag_id": self.dag_id,
            "dag_run_id": self.dag_run_id,
            "run_id": self.run_id,
            "state": self.state,
            "verdict": self.verdict,
            "counts": self.counts,
            "gate": self.gate,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "mode": self.mode,
        }

    def lines(self) -> list[str]:
        """The text answer: the DAG run, the verdict, then the gate's one line."""
        lines = []
        if self.dag_run_id is not None:
            lines.append(
                f"{self.validation}: DAG run {self.dag_run_id} of {self.dag_id}: {self.state}"
            )
        if self.verdict is not None:
            kinds = ", ".join(f"{k} {n}" for k, n in (self.counts or {}).items() if n)
            lines.append(
                f"run {self.run_id}: verdict {self.verdict}" + (f" ({kinds})" if kinds else "")
            )
        gate = self.gate or {}
        version = gate.get("candidate_version")
        which = "" if version is None else f" (candidate {version})"
        word = {EXIT_OPEN: "open", EXIT_CLOSED: "closed", EXIT_ERROR: "error"}.get(
            self.exit_code, "no usable verdict"
        )
        lines.append(f"{self.validation}{which}: gate {word}: {self.reason}")
        return lines


def task_line(task_id: str, state: str, seconds: float) -> str:
    """One finished task (``tools.local_run`` prints the same)."""
    return f"  {task_id:<24} {state:<16} (at {round(seconds)}s)"


def add_run_command(commands: Any) -> None:
    """Register ``parity run`` on the ``parity`` command's subparsers."""
    run = commands.add_parser(
        "run",
        help=SUMMARY["run"],
        description="Start a validation of one candidate build, through Airflow's REST API "
        "or locally with dag.test(), and (with --wait) answer its gate. " + EXIT_CODES_HELP,
    )
    run.add_argument("validation", metavar="VALIDATION", help="the validation's name")
    run.add_argument("--candidate-application", metavar="PATH_OR_URL")
    run.add_argument("--candidate-version", metavar="V", help="the version the verdict is for")
    run.add_argument(
        "--candidate-arg",
        metavar="A",
        action="append",
        help="a candidate argument, repeated for each (--candidate-arg=--flag for one with a dash)",
    )
    run.add_argument("--window-start", metavar="T", help="slice window start (ISO 8601)")
    run.add_argument("--window-end", metavar="T", help="slice window end, exclusive")
    run.add_argument("--wait", action="store_true", help="follow the run to its verdict")
    run.add_argument("--timeout", metavar="DURATION", help="stop waiting after 30m, 2h...")
    run.add_argument("--json", action="store_true", help="print one JSON object, always")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--airflow", metavar="URL", help=f"Airflow's base URL ({URL_VARIABLE})")
    where.add_argument("--local", action="store_true", help="dag.test() here, even if set")
    run.add_argument("--unpause", action="store_true", help="unpause the DAG if it is paused")
    run.add_argument("--db", metavar="URL", help="results database (local mode)")
    run.add_argument("--spec", metavar="FILE", help="the validation's spec file (local mode)")
    run.set_defaults(run=run_run)
    json_usage_errors(run, lambda reason: Outcome.error(None, reason).to_dict())


def run_run(args: argparse.Namespace, out: TextIO) -> int:
    progress = Progress(sys.stderr)
    try:
        request = parse_request(args)
        if request.airflow is not None:
            outcome = _remote(request, progress)
        else:
            from parity.cli.run_local import run_local

            outcome = run_local(request, progress)
    except (ParityError, OSError) as exc:
        if not args.json:
            raise  # ``parity.cli.main``: one line on stderr, exit 2
        outcome = Outcome.error(args.validation, str(exc).strip() or type(exc).__name__)
    progress.clear()
    if args.json:
        out.write(json.dumps(outcome.to_dict(), allow_nan=False, ensure_ascii=False) + "\n")
    else:
        out.write("".join(f"{printable(line)}\n" for line in outcome.lines()))
    out.flush()
    return outcome.exit_code


def parse_request(args: argparse.Namespace) -> RunRequest:
    """The options checked before anything starts: one ``RunError`` line for a bad one."""
    if not _NAME.match(args.validation):
        raise RunError(f"VALIDATION: not a validation name: {args.validation!r}")
    timeout = None
    if args.timeout is not None:
        try:
            timeout = parse_duration(args.timeout).total_seconds()
        except ValueError as exc:
            raise RunError(f"--timeout: {exc}") from None
    if (args.window_start is None) != (args.window_end is None):
        given = "--window-start" if args.window_start is not None else "--window-end"
        raise RunError(f"{given}: give --window-start and --window-end together")
    if args.window_start is not None:
        start, end = (
            _instant("--window-start", args.window_start),
            _instant("--window-end", args.window_end),
        )
        if start >= end:
            raise RunError("--window-end: must be after --window-start")
    airflow = None if args.local else (args.airflow or os.environ.get(URL_VARIABLE) or None)
    if airflow is not None:
        try:
            airflow = check_url(airflow)
        except ValueError as exc:
            origin = "--airflow" if args.airflow else URL_VARIABLE
            raise RunError(f"{origin}: {exc}") from None
        if args.spec is not None or args.db is not None:
            which = "--spec" if args.spec is not None else "--db"
            raise RunError(f"{which}: local mode only (Airflow's deployment has its own)")
    conf = {
        "candidate_application": args.candidate_application,
        "candidate_args": args.candidate_arg,
        "candidate_version": args.candidate_version,
        "window_start": args.window_start,
        "window_end": args.window_end,
    }
    return RunRequest(
        validation=args.validation,
        conf={key: value for key, value in conf.items() if value is not None},
        wait=args.wait,
        timeout=timeout,
        timeout_text=args.timeout,
        airflow=airflow,
        unpause=args.unpause,
        db=args.db,
        spec=args.spec,
    )


def _instant(option: str, text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise RunError(f"{option}: not an ISO 8601 date-time: {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


# -- remote mode: Airflow's REST API -------------------------------------------------------


def _remote(request: RunRequest, progress: Progress) -> Outcome:
    assert request.airflow is not None
    client = AirflowClient(request.airflow, Credentials.from_env())
    dag_id = dag_id_for(request.validation)
    found = client.dag(dag_id)
    if found is None:
        raise RunError(_unknown(request.validation, client, request.airflow))
    if found.get("is_paused"):
        if not request.unpause:
            raise RunError(f"DAG {dag_id} is paused in Airflow: unpause it, or pass --unpause")
        client.unpause(dag_id)
    started = client.trigger(dag_id, request.conf)
    dag_run_id = str(started["dag_run_id"])
    outcome = Outcome(
        request.validation, dag_id, dag_run_id, state=str(started.get("state")), mode="airflow"
    )
    progress.line(f"{request.validation}: started DAG run {dag_run_id} of {dag_id}")
    if not request.wait:
        return outcome.no_verdict(f"not waited for (--wait): DAG run {outcome.state}")
    state = _follow(client, outcome, request.timeout, progress)
    if state not in FINISHED_RUN_STATES:
        return outcome.with_state(state).no_verdict(
            f"--timeout {request.timeout_text} passed: DAG run still {state}"
        )
    candidate = request.conf.get("candidate_version")
    if candidate is None:  # the spec's version: the one its run was stored under
        stored = client.parity_run(pipeline_run_id(dag_id, dag_run_id))
        versions = (stored or {}).get("versions") or {}
        candidate = versions.get("candidate") if isinstance(versions, dict) else None
    return outcome.with_state(state).with_gate(client.gate(request.validation, candidate))


def _follow(
    client: AirflowClient, outcome: Outcome, timeout: float | None, progress: Progress
) -> str:
    """Poll the DAG run until it ends or ``timeout`` passes, a line per finished task;
    the DAG run's last state."""
    deadline = None if timeout is None else time.monotonic() + timeout
    started, reported = time.monotonic(), set[str]()
    dag_id, dag_run_id = str(outcome.dag_id), str(outcome.dag_run_id)
    missed = 0
    while True:
        try:
            state = str(client.dag_run(dag_id, dag_run_id).get("state"))
            tasks = client.task_instances(dag_id, dag_run_id)
        except AirflowApiError as exc:
            # A busy API server (its workers waiting on the scheduler's database) may not
            # answer one poll in time: the run goes on, so ask again, up to the deadline.
            missed += 1
            late = deadline is not None and time.monotonic() >= deadline
            if not _transient(exc) or late or missed > MAX_MISSED_POLLS:
                raise
            progress.status(f"  Airflow did not answer ({exc}); asking again")
            time.sleep(POLL_SECONDS)
            continue
        missed = 0
        for task in sorted(tasks, key=lambda t: str(t.get("end_date") or "")):
            key = f"{task.get('task_id')}[{task.get('map_index', -1)}]#{task.get('try_number')}"
            if task.get("state") in FINISHED_TASK_STATES and key not in reported:
                reported.add(key)
                progress.line(
                    task_line(str(task.get("task_id")), str(task.get("state")), _since(started))
                )
        if state in FINISHED_RUN_STATES:
            return state
        if deadline is not None and time.monotonic() >= deadline:
            return state
        done = sum(t.get("state") in FINISHED_TASK_STATES for t in tasks)
        progress.status(f"  DAG run {state}: {done} of {len(tasks)} tasks done")
        time.sleep(POLL_SECONDS)


def _transient(exc: AirflowApiError) -> bool:
    """Unreachable (a timeout, a refused connection) or a server error: worth asking again."""
    return exc.status is None or exc.status >= 500


def _unknown(validation: str, client: AirflowClient, url: str) -> str:
    names = [i.removeprefix(DAG_PREFIX) for i in client.dag_ids(DAG_PREFIX)]
    near = difflib.get_close_matches(validation, names, n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return f"unknown validation {validation!r}: Airflow has no DAG {dag_id_for(validation)}{hint}"


def _since(started: float) -> float:
    return time.monotonic() - started


class Progress:
    """Lines about the run on stderr (stdout carries the answer): on a terminal, a status
    line rewritten in place while waiting; elsewhere, only the lines."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._shown = False

    def line(self, text: str) -> None:
        self.clear()
        self._stream.write(printable(text) + "\n")
        self._stream.flush()

    def status(self, text: str) -> None:
        if self._tty:
            self._stream.write("\r\x1b[K" + printable(text))
            self._stream.flush()
            self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False
