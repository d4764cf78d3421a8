"""``parity history``: the recorded runs, newest first, as a table or JSON.

    parity history [--validation V] [--verdict X] [--trigger T] [--since YYYY-MM-DD]
                   [--until YYYY-MM-DD] [--limit N] [--json] [--db URL]

``--trigger`` takes the values runs are stored with (``parity.views.history.TRIGGERS``).
``--since`` and ``--until`` are UTC days, both inclusive, as the Parity page's HTTP API
takes them (``/parity/api/runs?since=&until=``).

The rows are ``parity.views.history``'s, the same the Parity page shows: the GATE column is
the gate now, marked when an approval opens it or was revoked (``open (approved #3)``), and
each JSON entry has the run's approvals under ``approval``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import Any, TextIO

from matcher.arguments import whole_number
from parity.cli.commands import SUMMARY
from parity.views.history import (
    DEFAULT_LIMIT,
    TRIGGERS,
    TRIGGERS_HELP,
    VERDICTS,
    history_entry,
    history_row,
    render_table,
)


def add_history_parser(commands: Any) -> None:
    """Register ``history`` on the ``parity`` command's subparsers."""
    history = commands.add_parser(
        "history",
        help=SUMMARY["history"],
        description="List the runs in the results store, newest first.",
    )
    history.add_argument("--validation", metavar="V", help="only this validation's runs")
    history.add_argument("--verdict", choices=VERDICTS, help="only runs with this verdict")
    history.add_argument(
        "--trigger", choices=TRIGGERS, help=f"only runs triggered so: {TRIGGERS_HELP}"
    )
    history.add_argument(
        "--since",
        type=_date,
        metavar="YYYY-MM-DD",
        help="only runs started that day (UTC) or later",
    )
    history.add_argument(
        "--until",
        type=_date,
        metavar="YYYY-MM-DD",
        help="only runs started that day (UTC) or earlier",
    )
    history.add_argument(
        "--limit",
        type=whole_number(1),
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most N runs (default {DEFAULT_LIMIT})",
    )
    history.add_argument("--json", action="store_true", help="print one JSON array")
    history.add_argument(
        "--db", metavar="URL", help="results database (default: PARITY_DB_URL, ...)"
    )
    history.set_defaults(run=run_history)


def _date(text: str) -> dt.datetime:
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def run_history(args: argparse.Namespace, out: TextIO) -> int:
    from matcher.errors import InputError
    from matcher.store import Store
    from parity.views.approvals import history_approvals

    if args.since is not None and args.until is not None and args.until < args.since:
        raise InputError(f"--until {args.until:%Y-%m-%d} is before --since {args.since:%Y-%m-%d}")
    until = None if args.until is None else args.until + dt.timedelta(days=1)
    with Store.open_readonly(args.db) as store:  # a reader: it never migrates nor writes
        runs = store.list_runs(
            validation=args.validation,
            verdict=args.verdict,
            trigger=args.trigger,
            since=args.since,
            until=until,  # the store's bound is exclusive: the next day's midnight
            limit=args.limit,
        )
        approvals = history_approvals(store, runs)
    if args.json:
        document = [history_entry(run, approvals.get(run.run_id)) for run in runs]
        out.write(json.dumps(document, allow_nan=False, ensure_ascii=False) + "\n")
    elif runs:
        out.write(render_table([history_row(run, approvals.get(run.run_id)) for run in runs]))
    else:
        out.write("no runs\n")
    out.flush()
    return 0
