"""``parity gate``: may this validation's candidate ship? The newest attempt decides.

    parity gate VALIDATION [--candidate VERSION] [--max-age DURATION] [--json] [--db URL]

The answer (``parity.views.gate.gate_status``; DESIGN.md, "The release loop") is the exit
code, the same as the HTTP gate's ``exit_code``:

    0  open: the newest attempt completed and its gate opened
    1  closed: its verdict or its expectations closed the gate
    3  no usable verdict: the newest attempt is running or failed (an older verdict is
       never used instead), finished longer ago than --max-age, or there is no run (for
       that version) of a validation the store knows
    2  error: an unknown validation (the nearest names are suggested), a store that cannot
       be read, a bad argument

It prints one line (``VALIDATION: gate open|closed|no usable verdict: why``) and a few
details; an error is one line on stderr. With ``--json`` every outcome, errors included,
is exactly one JSON object on stdout (``GateStatus.to_dict``) and nothing else is printed
there, so that a pipeline can always parse what it got.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn, TextIO

from matcher.errors import ParityError
from matcher.store import Store
from parity.cli.commands import SUMMARY
from parity.views.gate import ERROR, GateStatus, MaxAge, gate_status

EXIT_CODES_HELP = (
    "exit codes: 0 open; 1 closed by the verdict or its expectations; 3 no usable verdict "
    "(running, newest attempt failed, older than --max-age, no run for that version); "
    "2 error (unknown validation, store unreachable, bad argument)"
)


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
    gate.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    gate.add_argument(
        "--json", action="store_true", help="print one JSON object, whatever the outcome"
    )
    gate.set_defaults(run=run_gate)
    _json_usage_errors(gate)


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
    max_age = None
    if args.max_age is not None:
        try:
            max_age = MaxAge.parse(args.max_age)
        except ValueError as exc:
            raise GateError(f"--max-age: {exc}") from None
    with Store.open_readonly(args.db) as store:  # a reader: it never migrates nor writes
        return gate_status(store, args.validation, args.candidate, max_age=max_age)


def _text(status: GateStatus) -> list[str]:
    return [status.headline(), *(f"  {line}" for line in status.details())]


def _json_usage_errors(parser: argparse.ArgumentParser) -> None:
    """Under ``--json``, argparse's own errors (no VALIDATION, an option without its value,
    an unknown option) are the one JSON object on stdout too, exit 2, so that a pipeline
    parsing the answer never meets an empty stdout. ``add_parser`` builds the parser, so its
    ``parse_known_args`` and ``error`` are wrapped on the instance; without ``--json``
    argparse reports as it does for every command."""
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
        document = GateStatus.error("", None, f"{parser.prog}: {message}").to_dict()
        document["validation"] = None  # not parsed
        sys.stdout.write(json.dumps(document, allow_nan=False, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        raise SystemExit(2)

    setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010 (an instance's)
    setattr(parser, "error", error)  # noqa: B010
