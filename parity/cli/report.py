"""``parity report``: one stored run as a summary, a JSON document, or an HTML page.

    parity report RUN_ID [--html PATH] [--json] [--db URL]

Without options it prints a short summary; ``--json`` prints the report document
(``parity.views.report.report_document``) as one JSON object; ``--html PATH`` writes the
self-contained page (``-`` for standard output). An unknown run id is an error (exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from matcher import uris
from parity.cli.commands import SUMMARY

if TYPE_CHECKING:  # the store and Jinja2 are imported when the command runs
    from matcher.store import RunRecord


def add_report_parser(commands: Any) -> None:
    """Register ``report`` on the ``parity`` command's subparsers."""
    report = commands.add_parser(
        "report",
        help=SUMMARY["report"],
        description="Show a run from the results store: its verdict, witnesses, statistics "
        "and expectation results. Exit 0, or 2 when there is no such run.",
    )
    report.add_argument("run_id", metavar="RUN_ID", help="the run's id (parity history lists them)")
    report.add_argument(
        "--html",
        metavar="PATH",
        help="write the report as a self-contained HTML page ('-': stdout)",
    )
    report.add_argument("--json", action="store_true", help="print the report as one JSON object")
    report.add_argument(
        "--db", metavar="URL", help="results database (default: PARITY_DB_URL, ...)"
    )
    report.set_defaults(run=run_report)


def run_report(args: argparse.Namespace, out: TextIO) -> int:
    from parity.views.report import render_report_html, report_document

    record = load_record(args.run_id, args.db)
    if args.html is not None:
        links = _relative_data_docs(record, args.html)
        page = render_report_html(record, links=links)
        if args.html == "-":
            out.write(page)
        else:
            _write_atomically(Path(args.html), page)
            if not args.json:
                out.write(f"wrote {args.html}\n")
    if args.json:
        document = report_document(record)
        out.write(json.dumps(document, allow_nan=False, ensure_ascii=False) + "\n")
    if args.html is None and not args.json:
        from parity.cli.report_text import render_summary

        out.write(render_summary(record))
    out.flush()
    return 0


def load_record(run_id: str, db: str | None) -> RunRecord:
    from matcher.store import Store, UnknownRunError

    with Store.open_readonly(db) as store:  # a reader: it never migrates nor writes
        record = store.get_run(run_id)
        if record is None:
            raise UnknownRunError(f"no run {run_id!r} in {store.url}")
    return record


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


def _write_atomically(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory: no half-written page is left."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
