"""The ``parity`` command.

    parity compare REFERENCE CANDIDATE --spec SPEC.yaml [--json] [--limit N]
                   [--engine auto|core|spark]
    parity gate VALIDATION [--candidate VERSION] [--db URL] [--json]   (parity.gate)
    parity report RUN_ID [--html PATH] [--json] [--db URL]            (parity.report_cli)
    parity history [--validation V] [--verdict X] [--trigger T] [--since YYYY-MM-DD]
                   [--limit N] [--json] [--db URL]                     (parity.history)

Exit codes: 0 equivalent, 1 divergent, 2 error (bad spec, unreadable output, bad usage).
An error is one line on stderr, ``parity: error: <message>``, never a traceback: the
messages already name the file, key or line to fix.

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
from matcher.spec import Spec, load_spec
from matcher.verdict import Verdict
from parity import __version__
from parity.gate import add_gate_command
from parity.history import add_history_parser
from parity.readers import read_columns, read_events
from parity.render import Comparison, render_json, render_text
from parity.report_cli import add_report_parser

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
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (argparse exits 2)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        code: int = args.run(args, sys.stdout)
        return code
    except BrokenPipeError:  # the reader went away (`parity compare ... | head`)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that exiting does not fail to flush
        return EXIT_ERROR
    except (ParityError, OSError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"parity: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("parity: interrupted", file=sys.stderr)
        return 130


def run_compare(args: argparse.Namespace, out: TextIO) -> int:
    spec = load_spec(args.spec)
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
    for side, path in (("reference", reference), ("candidate", candidate)):
        columns = read_columns(path, fmt)
        if columns is not None:
            spec.check_columns(columns, where=f"{side} {path}")
    matcher = StreamMatcher(spec.build_dependence(), spec.build_equality(), limit=limit)
    matcher.feed(_events(spec, reference), _events(spec, candidate))
    return matcher.finish()


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


def _events(spec: Spec, path: str) -> Iterable[dict[str, Any]]:
    """The output's events in stream order: as written, or sorted by ``output.order_by``.

    Sorting needs the whole output in memory; without ``order_by`` the stream is read
    lazily and memory follows the unmatched events only.
    """
    events = read_events(path, spec.output.format)
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
