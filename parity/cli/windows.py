"""``parity windows``: validate a sequence-window detector's output (``matcher.windows``).

    parity windows OUTPUT [--expected N] [--at-least-once] [--format F] [--json] [--limit N]

OUTPUT is a JSON lines or Parquet file, or a directory: a Spark file sink's committed
files in batch order (``matcher.files.sink_log``); its name may be any bytes, as
``compare``'s, and ``--format`` says the files' format when their names do not. Exit 0 when
no state was lost, duplicated, reordered or corrupted, 1 when some was, 2 when OUTPUT cannot
be read::

    windows: fail: loss 2, duplication 0, reordering 0, corruption 0 (28 records, 3 keys)
      loss at record 14, key 'k2': [3, 4, 5, 8]: tail jumps from 5 to 8: updates 6, 7 ...
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from matcher.arguments import whole_number
from matcher.errors import InputError
from matcher.files.readers import data_files
from matcher.files.windows_output import read_windows
from matcher.formats import format_of_name
from matcher.verdict import KINDS
from matcher.windows import (
    DEFAULT_LIMIT,
    LARGEST_UPDATE,
    MISSING,
    Violation,
    WindowsReport,
    check_windows,
)
from parity.cli.commands import SUMMARY
from parity.views.printable import compact, printable, show

EXIT_PASS = 0
EXIT_FAIL = 1
#: the formats a window (a list) can be written in: CSV cannot hold one
FORMATS = ("jsonl", "json", "parquet")
#: how much of a window a line shows
WINDOW_WIDTH = 60


def add_windows_parser(commands: Any) -> None:
    """Register ``windows`` on the ``parity`` command's subparsers."""
    windows = commands.add_parser(
        "windows",
        help=SUMMARY["windows"],
        description="Decide from a sequence-window detector's output whether its state "
        "was lost, duplicated, reordered or corrupted. Exit 0 if not, 1 if it was, 2 on "
        "error.",
    )
    windows.add_argument(
        "output", metavar="OUTPUT", help="JSON lines or Parquet: a file or a directory"
    )
    windows.add_argument(
        "--expected",
        type=whole_number(1, LARGEST_UPDATE),
        metavar="N",
        help="every key reads 1..N: a key that stops short is a loss, a value above N a "
        f"corruption (without it, a value above {LARGEST_UPDATE})",
    )
    windows.add_argument(
        "--at-least-once",
        action="store_true",
        help="accept replays: a tail that goes back to a value already emitted and goes "
        "on by +1, with restored windows, up to where it was",
    )
    windows.add_argument(
        "--format",
        choices=FORMATS,
        help="the files' format, when their names (.jsonl, .json, .parquet) do not tell it",
    )
    windows.add_argument("--json", action="store_true", help="print one JSON object")
    windows.add_argument(
        "--limit",
        type=whole_number(0),
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"show the first N violations (default {DEFAULT_LIMIT}); all are counted",
    )
    windows.set_defaults(run=run_windows)


def run_windows(args: argparse.Namespace, out: TextIO) -> int:
    if args.format is None:
        check_names(args.output)
    report = check_windows(
        read_windows(args.output, args.format),
        expected=args.expected,
        at_least_once=args.at_least_once,
        limit=args.limit,
    )
    if args.json:
        out.write(json.dumps(report.to_dict(), allow_nan=False, ensure_ascii=False) + "\n")
    else:
        out.write("".join(f"{line}\n" for line in render_text(report)))
    out.flush()
    return EXIT_PASS if report.passed else EXIT_FAIL


def check_names(output: str) -> None:
    """Refuse a data file whose name does not tell its format, in this command's words: the
    readers' own message points at a spec's ``output.format``, and ``windows`` takes none."""
    for file, _ in data_files(output, "jsonl"):  # the files only: their names are judged here
        if format_of_name(file) is None:
            raise InputError(
                f"{file}: cannot tell the format from the name: pass --format "
                f"({', '.join(FORMATS)}) or name the files .jsonl, .json or .parquet"
            )


def render_text(report: WindowsReport) -> list[str]:
    """The headline, then one line per violation kept."""
    size = f"{report.records} records, {report.keys} keys"
    if report.at_least_once:
        size += f", {report.replayed} replayed"
    if report.passed:
        return [f"windows: pass ({size})"]
    counts = ", ".join(f"{kind} {report.counts[kind]}" for kind in KINDS)
    lines = [f"windows: fail: {counts} ({size})"]
    lines.extend(f"  {_line(violation)}" for violation in report.violations)
    hidden = report.total_violations - len(report.violations)
    if hidden:
        lines.append(f"  ... and {hidden} more (--limit)")
    return lines


def _line(violation: Violation) -> str:
    key = "no key" if violation.key is MISSING else f"key {show(violation.key, width=40)}"
    if violation.window is MISSING:
        window = "no window"
    else:
        window = compact(violation.window)
        if len(window) > WINDOW_WIDTH:
            window = window[: WINDOW_WIDTH - 3] + "..."
    where = f"{violation.kind} at record {violation.position}, {key}: {window}"
    return printable(f"{where}: {violation.detail}")
