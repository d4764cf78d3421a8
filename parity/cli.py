"""The ``parity`` command.

    parity compare REFERENCE CANDIDATE --spec SPEC.yaml [--json] [--limit N]
                   [--engine auto|core|spark]
    parity gate VALIDATION [--candidate VERSION] [--db URL] [--json]   (parity.gate)
    parity report RUN_ID [--html PATH] [--json] [--db URL]            (parity.report_cli)
    parity history [--validation V] [--verdict X] [--trigger T] [--since YYYY-MM-DD]
                   [--limit N] [--json] [--db URL]                     (parity.history)
    parity db upgrade [--db URL]                                       (parity.store_cli)
    parity runs expire [--db URL]                                      (parity.store_cli)

Exit codes: 0 equivalent, 1 divergent, 2 error (bad spec, unreadable output, bad usage,
a spec's function that raised, a bug). Exit 1 means divergent and nothing else. An error
is one line on stderr, ``parity: error: <message>``, never a traceback: the messages
already name the file, key or line to fix. An unexpected exception is a bug in Parity:
``parity: internal error: <exception> (a bug in Parity; traceback in <file>)``, the
traceback written to that file in the temporary directory.

Subcommands are subparsers so that ``gate``, ``report`` and ``history`` can join
``compare`` without changing how it is called.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

from matcher.errors import InputError, ParityError
from matcher.online import StreamMatcher
from matcher.schema import judge
from matcher.spec import Spec, load_spec
from matcher.verdict import Verdict
from parity import __version__
from parity.gate import add_gate_command
from parity.history import add_history_parser
from parity.output_schema import schema_plan
from parity.readers import read_columns, read_events
from parity.render import Comparison, render_json, render_text
from parity.report_cli import add_report_parser
from parity.store_cli import add_store_commands

EXIT_EQUIVALENT = 0
EXIT_DIVERGENT = 1
EXIT_ERROR = 2
DEFAULT_LIMIT = 10


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="parity",
        description="Decide whether a candidate pipeline's output is equivalent to the "
        "reference's, up to the reorderings its consumer does not care about.",
    )
    parser.add_argument("--version", action="version", version=f"parity {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    compare = commands.add_parser(
        "compare",
        help="compare two outputs under a validation spec",
        description="Compare two outputs (files or Spark output directories) under the "
        "dependence and equality of a validation spec. Exit 0 if equivalent, 1 if "
        "divergent, 2 on error.",
    )
    compare.add_argument("reference", help="the reference output: a file or a directory")
    compare.add_argument("candidate", help="the candidate output: a file or a directory")
    compare.add_argument("--spec", required=True, metavar="SPEC.yaml", help="validation spec")
    compare.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a report"
    )
    compare.add_argument(
        "--limit",
        type=_count,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"keep witnesses for the first N divergences (default {DEFAULT_LIMIT}); "
        "all are counted",
    )
    compare.add_argument(
        "--engine",
        choices=("auto", "core", "spark"),
        default="auto",
        help="core: stream both outputs through the matcher in this process; spark: match "
        "on a local Spark partitioned by the dependence key; auto (default): spark when "
        "either output is a directory, core otherwise",
    )
    compare.set_defaults(run=run_compare)
    add_gate_command(commands)
    add_report_parser(commands)
    add_history_parser(commands)
    add_store_commands(commands)
    return parser


#: the largest count an argument takes: a store's integers are 64-bit
MAX_COUNT = 2**63 - 1


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected a whole number <= {MAX_COUNT}, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(arguments)
    except SystemExit as exc:  # --help, --version and usage errors (argparse exits 2)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        if args.command != "compare":  # compare's arguments are paths, any bytes will do
            from parity.engine import check_text_arguments

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
        from parity.engine import internal_error_line, known_failure

        known = known_failure(exc)
        if known is not None:
            return _error(known)
        print(internal_error_line(exc, "parity"), file=sys.stderr)
        return EXIT_ERROR


def _error(exc: BaseException) -> int:
    message = " ".join(str(exc).split()) or type(exc).__name__
    print(f"parity: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _tolerate_unencodable(stream: TextIO) -> None:
    """Let a strict stream write what it cannot encode as escapes: an output path that is
    not UTF-8 is shown, not a crash (a UTF-8 locale already writes its bytes back)."""
    if getattr(stream, "errors", None) == "strict":
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def run_compare(args: argparse.Namespace, out: TextIO) -> int:
    spec = load_spec(args.spec)
    try:
        return _run_compare(spec, args, out)
    except Exception as exc:  # a spec's function that raised is the user's to fix
        from parity.engine import known_failure

        known = known_failure(exc, spec.functions)
        if known is None or known is exc:
            raise
        raise known from exc


def _run_compare(spec: Spec, args: argparse.Namespace, out: TextIO) -> int:
    dependence, equality = spec.build_dependence(), spec.build_equality()
    engine = args.engine
    if engine == "auto":
        directories = os.path.isdir(args.reference) or os.path.isdir(args.candidate)
        engine = "spark" if directories else "core"
    if engine == "spark":
        verdict = _compare_on_spark(spec, args.reference, args.candidate, args.limit)
    else:
        verdict = _compare_on_core(spec, args.reference, args.candidate, args.limit)
    comparison = Comparison(
        spec_name=spec.name,
        spec_file=spec.source,
        reference=args.reference,
        candidate=args.candidate,
        dependence=dependence.describe(),
        equality=equality,
    )
    render = render_json if args.json else render_text
    out.write(render(comparison, verdict))
    out.flush()
    return EXIT_EQUIVALENT if verdict.equivalent else EXIT_DIVERGENT


def _compare_on_core(spec: Spec, reference: str, candidate: str, limit: int) -> Verdict:
    fmt = spec.output.format
    known = [read_columns(path, fmt) or () for path in (reference, candidate)]
    for side, path, columns, other in (
        ("reference", reference, known[0], known[1]),
        ("candidate", candidate, known[1], known[0]),
    ):
        if columns:
            spec.check_columns(columns, where=f"{side} {path}", other=other)
    schemas = schema_plan(spec, reference, candidate)  # findings, and the compared columns
    matcher = StreamMatcher(spec.build_dependence(), spec.build_equality(), limit=limit)
    # A JSON object lacking one of its output's columns holds a null there.
    matcher.feed(
        schemas.events(0, _events(spec, reference, known[0])),
        schemas.events(1, _events(spec, candidate, known[1])),
    )
    return judge(matcher.finish(), schemas.diff)


def _compare_on_spark(spec: Spec, reference: str, candidate: str, limit: int) -> Verdict:
    from parity.engine import compare_on_spark, first_line, is_spark_error, local_session

    for path in (reference, candidate):
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or directory")
    try:
        return compare_on_spark(local_session(), spec, reference, candidate, limit=limit).verdict
    except Exception as exc:  # Spark's own errors: translate at the boundary
        if is_spark_error(exc):
            raise InputError(first_line(exc)) from exc
        raise


def _events(spec: Spec, path: str, columns: Sequence[str]) -> Iterable[dict[str, Any]]:
    """The output's events in stream order: as written, or sorted by ``output.order_by``.

    Sorting needs the whole output in memory; without ``order_by`` the stream is read
    lazily and memory follows the unmatched events only.
    """
    events = read_events(path, spec.output.format, columns)
    if not spec.output.order_by:
        return events
    return _sorted(events, spec.output.order_by, path)


def _sorted(events: Iterator[dict[str, Any]], order_by: Sequence[str], path: str) -> list[Any]:
    def sort_key(event: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
        # Nulls first, as Spark's ascending sort puts them.
        return tuple((event.get(c) is not None, event.get(c)) for c in order_by)

    rows = list(events)
    try:
        rows.sort(key=sort_key)
    except TypeError as exc:
        raise InputError(f"{path}: cannot sort by {', '.join(order_by)}: {exc}") from exc
    return rows


if __name__ == "__main__":
    sys.exit(main())
