"""``parity db`` and ``parity runs``: looking after the results store itself.

    parity db upgrade [--db URL]     create the schema, or bring it to this Parity's revision
    parity runs expire [--db URL]    record as failed the running runs whose job died

Readers (``report``, ``gate``, ``history``) never migrate: a database behind this Parity is
refused in one line that names ``parity db upgrade``. ``runs expire`` writes what readers
already show of a run whose lease expired (``matcher.store.lease``): run it from cron, or
by hand; it prints each run it failed and exits 0, having failed some or none.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from parity.cli.commands import SUMMARY
from parity.views.printable import printable


def add_store_commands(commands: Any) -> None:
    """Register ``db`` and ``runs`` on the ``parity`` command's subparsers."""
    db = commands.add_parser("db", help=SUMMARY["db"])
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = db_commands.add_parser(
        "upgrade",
        help="create the schema, or migrate it to this Parity's revision",
        description="Create the results database's schema, or migrate it to this Parity's "
        "revision. Exit 0, or 2 when the database refuses.",
    )
    _database_option(upgrade)
    upgrade.set_defaults(run=run_db_upgrade)

    runs = commands.add_parser("runs", help=SUMMARY["runs"])
    runs_commands = runs.add_subparsers(dest="runs_command", required=True, metavar="COMMAND")
    expire = runs_commands.add_parser(
        "expire",
        help="record as failed the running runs whose job stopped renewing its lease",
        description="Record as failed every running run whose lease expired: its job died "
        "(killed, lost node) without a word. Prints each run failed; exit 0.",
    )
    _database_option(expire)
    expire.set_defaults(run=run_expire)


def _database_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")


def run_db_upgrade(args: argparse.Namespace, out: TextIO) -> int:
    from matcher.store import Store
    from matcher.store.migrate import head_revision

    with Store.open(args.db) as store:
        out.write(f"{store.url}: at revision {head_revision()}\n")
    return 0


def run_expire(args: argparse.Namespace, out: TextIO) -> int:
    from matcher.store import Store

    with Store.open(args.db) as store:
        expired = store.expire_runs()
        for run in expired:
            out.write(f"failed {printable(run.run_id)} ({printable(run.validation)}): ")
            out.write(f"{run.reason}\n")
        out.write(f"{len(expired)} expired run(s) failed in {store.url}\n")
    return 0
