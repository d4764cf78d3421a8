"""``parity report``: one stored run as a summary, a JSON document, or an HTML page.

    parity report RUN_ID [--html PATH] [--json] [--db URL]
    parity report --latest VALIDATION [--html PATH] [--json] [--db URL]

Without options it prints a short summary; ``--json`` prints the report document
(``parity.views.report.report_document``) as one JSON object; ``--html PATH`` writes the
self-contained page (``-`` for standard output, then without ``--json``: two documents on
one stream would be neither). The page is written whole, and only to a new file or over a
regular file with one link: a symbolic link, device, FIFO or folder at PATH is refused
(``matcher.files.output_paths``). ``--latest VALIDATION`` shows that validation's newest
attempt (the run ``parity gate VALIDATION`` answers from: completed, failed or running). An
unknown run id, or a validation without a run, is an error (exit 2). Every form shows
the run's approvals (``parity approve``): who accepted which divergences, when and why, and
any revocation (``parity.views.approvals``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from matcher import uris
from matcher.errors import InputError, OutputPathError
from matcher.files.output_paths import check_output_path, write_output
from parity.cli.commands import SUMMARY

if TYPE_CHECKING:  # the store and Jinja2 are imported when the command runs
    from matcher.store import RunRecord
    from parity.views.approvals import RunApprovals


def add_report_parser(commands: Any) -> None:
    """Register ``report`` on the ``parity`` command's subparsers."""
    report = commands.add_parser(
        "report",
        help=SUMMARY["report"],
        description="Show a run from the results store: its verdict, witnesses, statistics "
        "and expectation results. Exit 0, or 2 when there is no such run.",
    )
    report.add_argument(
        "run_id", nargs="?", metavar="RUN_ID", help="the run's id (parity history lists them)"
    )
    report.add_argument(
        "--latest",
        metavar="VALIDATION",
        help="instead of RUN_ID: the validation's newest run (the one its gate answers from)",
    )
    report.add_argument(
        "--html",
        metavar="PATH",
        help="write the report as a self-contained HTML page ('-': stdout)",
    )
    report.add_argument("--json", action="store_true", help="print the report as one JSON object")
    report.add_argument(
        "--differences",
        metavar="PATH",
        help="write every difference of the run (kind, key, positions, both events) to PATH, "
        "Parquet or CSV by its extension, from the table its match job wrote "
        "(output.differences: true in its spec)",
    )
    report.add_argument(
        "--db", metavar="URL", help="results database (default: PARITY_DB_URL, ...)"
    )
    report.set_defaults(run=run_report)


def run_report(args: argparse.Namespace, out: TextIO) -> int:
    from parity.views.report import render_report_html, report_document

    if args.html == "-" and args.json:  # two documents on one stream: neither is readable
        raise OutputPathError(
            "report: --html - and --json would both write to standard output: give --html a "
            "file name, or leave out one of them"
        )
    if (args.run_id is None) == (args.latest is None):
        raise InputError("report: give RUN_ID or --latest VALIDATION (one of them)")
    if args.html is not None and args.html != "-":
        check_output_path(args.html, "--html")  # before the store is read: nothing to undo
    differences = getattr(args, "differences", None)
    if differences is not None:
        from matcher.files.differences import export_format

        export_format(differences)
        check_output_path(differences, "--differences")
    if args.latest is not None:
        record, approvals = load_latest(args.latest, args.db)
    else:
        record, approvals = load_record_and_approvals(args.run_id, args.db)
    if differences is not None:
        rows = export_differences(record, differences)
        out.write(f"wrote {rows:,} differences to {differences}\n")
    if args.html is not None:
        links = _relative_data_docs(record, args.html)
        page = render_report_html(record, links=links, approvals=approvals)
        if args.html == "-":
            out.write(page)
        else:
            write_output(args.html, page, "--html")
            if not args.json:
                out.write(f"wrote {args.html}\n")
    if args.json:
        document = report_document(record, approvals)
        out.write(json.dumps(document, allow_nan=False, ensure_ascii=False) + "\n")
    if args.html is None and not args.json:
        from parity.cli.report_text import render_summary

        out.write(render_summary(record, approvals))
    out.flush()
    return 0


def load_record(run_id: str, db: str | None) -> RunRecord:
    return load_record_and_approvals(run_id, db)[0]


def load_record_and_approvals(run_id: str, db: str | None) -> tuple[RunRecord, RunApprovals]:
    """The run and its approvals, read from one store; an unknown run is an error."""
    from matcher.store import Store, UnknownRunError
    from parity.views.approvals import run_approvals

    with Store.open_readonly(db) as store:  # a reader: it never migrates nor writes
        record = store.get_run(run_id)
        if record is None:
            raise UnknownRunError(f"no run {run_id!r} in {store.url}")
        approvals = run_approvals(store, record)
    return record, approvals


def load_latest(validation: str, db: str | None) -> tuple[RunRecord, RunApprovals]:
    """The newest run of ``validation`` (``Store.latest_run``, completed or not) and its
    approvals; a validation without a run is an error naming the store."""
    from matcher.store import Store, UnknownRunError
    from parity.views.approvals import run_approvals

    with Store.open_readonly(db) as store:
        newest = store.latest_run(validation, completed_only=False)
        record = None if newest is None else store.get_run(newest.run_id)
        if record is None:
            raise UnknownRunError(f"no run of validation {validation!r} in {store.url}")
        approvals = run_approvals(store, record)
    return record, approvals


def _relative_data_docs(record: RunRecord, html: str) -> dict[str, str]:
    """The Data Docs link as seen from where the page is written, so that it still works
    when the report folder and the page are moved together."""
    from parity.views.report import DATA_DOCS_LINK, data_docs_path, path_link

    docs = data_docs_path(record)
    if docs is None or html == "-" or uris.local_path(docs) is None:  # on shared storage
        return {}
    start = os.path.dirname(os.path.abspath(html))
    relative = Path(os.path.relpath(os.path.abspath(docs), start)).as_posix()
    return {DATA_DOCS_LINK: path_link(relative)}


def export_differences(record: RunRecord, path: str) -> int:
    """Copy the run's table of every difference (``output.differences``) to ``path``; the
    rows written. A run stored without one is an error that says how to get it."""
    from matcher.errors import InputError
    from matcher.files.differences import copy_table

    stored = (record.stats or {}).get("differences")
    if not isinstance(stored, dict):
        raise InputError(
            f"run {record.run_id} kept no table of its differences: set "
            "'output.differences: true' in its spec and run it again, or compare its "
            "outputs with 'parity compare ... --differences PATH'"
        )
    source = stored.get("path")
    if source is None or not stored.get("rows"):
        return copy_table(None, path)
    local = uris.local_path(source)
    if local is None:
        raise InputError(
            f"run {record.run_id}: its differences are at {source}: copy them from there "
            "(this command reads local tables)"
        )
    if not local.exists():
        raise InputError(f"run {record.run_id}: its differences table {local} is gone")
    return copy_table(local, path)
