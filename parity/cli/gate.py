"""``parity gate``: may this validation's candidate ship? The newest attempt decides.

    parity gate VALIDATION [--candidate VERSION] [--max-age DURATION]
                [--wait [--timeout DURATION]] [--spec FILE] [--json] [--db URL]

The answer (``parity.views.gate.gate_status``; DESIGN.md, "The release loop") is the exit
code, the same as the HTTP gate's ``exit_code``:

    0  open: the newest attempt completed and its gate opened, or an approval
       (``parity approve``) covers exactly its divergences
    1  closed: its verdict or its expectations closed the gate
    3  no usable verdict: the newest attempt is running (without --wait, or still after
       --timeout) or failed (an older verdict is never used instead), finished longer ago
       than --max-age, was made under another spec or reference version than today's, or
       there is no run (for that version) of a validation the store knows
    2  error: an unknown validation (the nearest names are suggested), no spec found for
       it, a store that cannot be read, a bad argument

The answer is bound to today's spec (``parity.views.gate.current_spec``): ``--spec FILE``,
else the validations folder (``PARITY_VALIDATIONS_DIR``, else
``$AIRFLOW__CORE__DAGS_FOLDER/validations``, else ``./dags/validations``). ``--wait``
polls while the newest attempt is running (every second at first, backing off to
``MAX_POLL`` seconds), up to ``--timeout`` (default 2h).

It prints one line (``VALIDATION: gate open|closed|no usable verdict: why``) and a few
details; an error is one line on stderr. With ``--json`` every outcome, errors included,
is exactly one JSON object on stdout (``GateStatus.to_dict``) and nothing else is printed
there, so that a pipeline can always parse what it got.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NoReturn, TextIO

from matcher.errors import ParityError
from matcher.store import Store
from parity.cli.commands import SUMMARY
from parity.views.gate import (
    ERROR,
    NO_VERDICT,
    CurrentSpec,
    GateStatus,
    MaxAge,
    current_spec,
    gate_status,
    where_looked,
)

EXIT_CODES_HELP = (
    "exit codes: 0 open (or approved); 1 closed by the verdict or its expectations; "
    "3 no usable verdict (running, newest attempt failed, older than --max-age, another "
    "spec or reference version, no run for that version); 2 error (unknown validation, no "
    "spec found, store unreachable, bad argument)"
)
#: --wait's default --timeout
DEFAULT_TIMEOUT = "2h"
#: --wait polls every FIRST_POLL seconds, doubling up to MAX_POLL
FIRST_POLL, MAX_POLL = 1.0, 15.0


class GateError(ParityError):
    """``parity gate`` cannot answer: a bad argument, or a validation no run has."""


def add_gate_command(commands: Any) -> None:
    """Register ``parity gate`` on the ``parity`` command's subparsers."""
    gate = commands.add_parser(
        "gate",
        help=SUMMARY["gate"],
        description="Answer whether the newest attempt of VALIDATION (of the candidate "
        "VERSION, when given) opens the deploy gate, and print why. " + EXIT_CODES_HELP + ".",
    )
    gate.add_argument("validation", metavar="VALIDATION", help="the validation's name")
    gate.add_argument("--candidate", metavar="VERSION", help="the candidate version to gate")
    gate.add_argument(
        "--max-age",
        metavar="DURATION",
        help="a verdict older than this (30m, 6h, 1d, 2w) is no usable verdict (exit 3)",
    )
    gate.add_argument(
        "--wait",
        action="store_true",
        help="while the newest attempt is running, wait for its verdict",
    )
    gate.add_argument(
        "--timeout",
        metavar="DURATION",
        help=f"with --wait: give up after this long, exit 3 (default {DEFAULT_TIMEOUT})",
    )
    gate.add_argument(
        "--spec",
        metavar="FILE",
        help="today's spec of VALIDATION (default: <validations folder>/VALIDATION.yaml)",
    )
    gate.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    gate.add_argument(
        "--json", action="store_true", help="print one JSON object, whatever the outcome"
    )
    gate.set_defaults(run=run_gate)
    json_usage_errors(gate, _usage_document)


def run_gate(args: argparse.Namespace, out: TextIO) -> int:
    try:
        status = _status(args)
    except (ParityError, OSError) as exc:
        if not args.json:
            raise  # ``parity.cli.main``: one line on stderr, exit 2
        reason = str(exc).strip() or type(exc).__name__
        status = GateStatus.error(args.validation, args.candidate, reason, max_age=args.max_age)
    if args.json:
        out.write(json.dumps(status.to_dict(), allow_nan=False, ensure_ascii=False) + "\n")
    elif status.state == ERROR:
        raise GateError(status.reason)
    else:
        out.write("".join(f"{line}\n" for line in _text(status)))
    out.flush()
    return status.exit_code


def _status(args: argparse.Namespace) -> GateStatus:
    max_age = _duration("--max-age", args.max_age)
    if args.timeout is not None and not args.wait:
        raise GateError("--timeout: it bounds --wait; give --wait too")
    timeout = _duration("--timeout", args.timeout or DEFAULT_TIMEOUT)
    assert timeout is not None
    with Store.open_readonly(args.db) as store:  # a reader: it never migrates nor writes
        current = _current(store, args)
        if current is None:  # an unknown validation: the store's error, with suggestions
            return gate_status(store, args.validation, args.candidate, max_age=max_age)

        def answer() -> GateStatus:
            return gate_status(
                store, args.validation, args.candidate, max_age=max_age, current=current
            )

        status = answer()
        if not args.wait:
            return status
        return _wait(status, answer, timeout)


def _wait(status: GateStatus, answer: Callable[[], GateStatus], timeout: MaxAge) -> GateStatus:
    """Ask again while the newest attempt is running, backing off, up to ``timeout``."""
    deadline, pause = time.monotonic() + timeout.duration.total_seconds(), FIRST_POLL
    while _running(status):
        left = deadline - time.monotonic()
        if left <= 0:
            reason = f"still running after --timeout {timeout.text}: {status.reason}"
            return replace(status, reason=reason)
        time.sleep(min(pause, left))
        pause = min(pause * 2, MAX_POLL)
        status = answer()
    return status


def _current(store: Store, args: argparse.Namespace) -> CurrentSpec | None:
    """Today's spec; ``None`` for a validation the store does not know (its error, with
    the nearest names, says more than "no spec"); ``GateError`` when no spec is found."""
    if args.spec is None and args.validation not in store.validations():
        return None
    current = current_spec(args.validation, args.spec)
    if current is None:
        raise GateError(where_looked(args.validation))
    return current


def _running(status: GateStatus) -> bool:
    return status.state == NO_VERDICT and status.run is not None and status.run.status == "running"


def _duration(option: str, text: str | None) -> MaxAge | None:
    if text is None:
        return None
    try:
        return MaxAge.parse(text)
    except ValueError as exc:
        raise GateError(f"{option}: {exc}") from None


def _usage_document(reason: str) -> dict[str, Any]:
    document = GateStatus.error("", None, reason).to_dict()
    document["validation"] = None  # not parsed
    return document


def _text(status: GateStatus) -> list[str]:
    return [status.headline(), *(f"  {line}" for line in status.details())]


def json_usage_errors(
    parser: argparse.ArgumentParser, document_of: Callable[[str], dict[str, Any]]
) -> None:
    """Under ``--json``, argparse's own errors (no VALIDATION, an option without its value,
    an unknown option) are the one JSON object on stdout too (``document_of(message)``, the
    command's own error document), exit 2, so that a pipeline parsing the answer never
    meets an empty stdout. ``add_parser`` builds the parser, so its ``parse_known_args`` and
    ``error`` are wrapped on the instance; without ``--json`` argparse reports as it does
    for every command. ``parity gate`` and ``parity run`` use it."""
    parse_known = parser.parse_known_args
    usage_error = parser.error
    wants_json = [False]

    def parse_known_args(args: Any = None, namespace: Any = None) -> Any:
        wants_json[0] = args is not None and "--json" in args
        parsed, extras = parse_known(args, namespace)
        if extras and wants_json[0]:  # else the ``parity`` parser reports them
            error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(message: str) -> NoReturn:
        if not wants_json[0]:
            usage_error(message)
        document = document_of(f"{parser.prog}: {message}")
        sys.stdout.write(json.dumps(document, allow_nan=False, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        raise SystemExit(2)

    setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010 (an instance's)
    setattr(parser, "error", error)  # noqa: B010
