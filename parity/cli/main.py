"""The ``parity`` command.

    parity compare REFERENCE CANDIDATE --spec SPEC.yaml [--json] [--limit N]
                   [--engine auto|core|spark]                         (parity.cli.compare)
    parity gate VALIDATION [--candidate VERSION] [--db URL] [--json]   (parity.cli.gate)
                [--max-age D] [--wait [--timeout D]] [--spec FILE]
    parity approve|revoke RUN_ID --reason TEXT [--by NAME] [--json]    (parity.cli.approve)
    parity run VALIDATION [--airflow URL] [--wait] [--json] ...        (parity.cli.run)
    parity report RUN_ID | --latest VALIDATION [--html PATH] [--json] [--db URL]
                                                                       (parity.cli.report)
    parity history [--validation V] [--verdict X] [--trigger T] [--since YYYY-MM-DD]
                   [--until YYYY-MM-DD] [--limit N] [--json] [--db URL] (parity.cli.history)
    parity validate SPEC... [--root DIR] [--no-files]                  (parity.cli.validate)
    parity list [--json] [--db URL]                                    (parity.cli.listing)
    parity windows OUTPUT [--expected N] [--at-least-once] [--json]    (parity.cli.windows)
    parity recovery SPEC.yaml [--crashes N] [--seed S] [--kill K] ...  (parity.cli.recovery)
    parity properties MODULE:FUNCTION --sample SAMPLE [--key COL ...] ... (parity.cli.properties)
    parity db upgrade [--db URL]                                       (parity.cli.store)
    parity runs expire [--db URL]                                      (parity.cli.store)

Exit codes: 0 equivalent, 1 divergent, 2 error (bad spec, unreadable output, bad usage,
a spec's function that raised, a bug). Exit 1 means divergent and nothing else. An error
is one line on stderr, ``parity: error: <message>``, never a traceback: the messages
already name the file, key or line to fix. Every error line (argparse's usage errors too) has
its control characters escaped (``matcher.printable``): a message may quote a hostile value
or what a spec's function raised. A spec's function that calls ``sys.exit()`` or raises
``KeyboardInterrupt`` is an error naming it (``matcher.user_code``); a real Ctrl-C is
``parity: interrupted``, exit 130. An unexpected exception is a bug in Parity:
``parity: internal error: <exception> (a bug in Parity; traceback in <file>)``, the
traceback written to that file in the temporary directory.

Subcommands are subparsers so that ``gate``, ``report`` and ``history`` can join
``compare`` without changing how it is called.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from matcher.errors import ParityError
from matcher.printable import error_line, printable
from matcher.user_code import note_interrupts
from parity import __version__
from parity.cli.commands import COMMANDS, EXIT_ERROR, SUMMARY


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``parity`` parser. Only ``command``'s own parser is built for real, importing its
    module; every other subcommand is a name and its help line, so that ``parity
    --version``, ``--help`` and ``history`` do not pay for PySpark or the comparison's
    imports. ``None`` (no subcommand given) builds none."""
    parser = _Parser(
        prog="parity",
        description="Decide whether a candidate pipeline's output is equivalent to the "
        "reference's, up to the reorderings its consumer does not care about.",
    )
    parser.add_argument("--version", action="version", version=f"parity {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = COMMANDS.get(command) if command else None
    for name, entry in COMMANDS.items():
        if entry != chosen:
            commands.add_parser(name, help=SUMMARY[name])
        elif name not in commands.choices:  # one function may add several (db, runs)
            module, function = entry
            getattr(importlib.import_module(module), function)(commands)
    return parser


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors escaped: they quote the arguments as given, and an
    argument may hold an escape sequence. Subparsers are built of the same class."""

    def error(self, message: str) -> NoReturn:
        super().error(printable(message))


def _command_of(arguments: Sequence[str]) -> str | None:
    """The subcommand named: the first argument that is not an option (``parity`` itself
    takes no option with a value)."""
    first = next((a for a in arguments if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    note_interrupts()  # a KeyboardInterrupt from a spec's function is not a Ctrl-C
    try:
        args = build_parser(_command_of(arguments)).parse_args(arguments)
    except SystemExit as exc:  # --help, --version and usage errors (argparse exits 2)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        if args.command not in ("compare", "windows"):  # paths: any bytes will do
            from matcher.failures import check_text_arguments

            check_text_arguments(arguments)
        _tolerate_unencodable(sys.stdout)
        code: int = args.run(args, sys.stdout)
        return code
    except BrokenPipeError:  # the reader went away (`parity compare ... | head`)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that exiting does not fail to flush
        return EXIT_ERROR
    except (ParityError, OSError) as exc:
        return _error(exc)
    except KeyboardInterrupt:
        print("parity: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # never exit 1 (divergent) on a crash, nor with a traceback
        from matcher.failures import internal_error_line
        from matcher.spark.failures import known_failure

        known = known_failure(exc)
        if known is not None:
            return _error(known)
        print(printable(internal_error_line(exc, "parity")), file=sys.stderr)
        return EXIT_ERROR


def _error(exc: BaseException) -> int:
    """The one way an error reaches stderr: one line, control characters escaped (an
    exception's text may quote a hostile value or what a spec's function raised)."""
    print(error_line("parity", str(exc).strip() or type(exc).__name__), file=sys.stderr)
    return EXIT_ERROR


def _tolerate_unencodable(stream: TextIO) -> None:
    """Let a strict stream write what it cannot encode as escapes: an output path that is
    not UTF-8 is shown, not a crash (a UTF-8 locale already writes its bytes back)."""
    if getattr(stream, "errors", None) == "strict":
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    sys.exit(main())
