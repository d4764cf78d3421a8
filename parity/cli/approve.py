"""``parity approve`` and ``parity revoke``: accept a run's divergences as intended, or take
that back, with who and why on record.

    parity approve RUN_ID --reason TEXT [--by NAME] [--json] [--db URL]
    parity revoke RUN_ID --reason TEXT [--by NAME] [--json] [--db URL]

A release that deliberately changes its output (a bug fix, a new column) is divergent by
design. ``parity approve`` records that NAME (``--by``, else the operating system's user)
accepts exactly the divergences of the completed comparison RUN_ID (its verdict, counts per
kind, differing columns: ``matcher.approvals.divergence_signature``) and why; ``parity
gate`` then opens for that validation's candidate version while its newest run shows the
same divergences, and stays closed on any other (DESIGN.md, "The release loop").
``parity revoke`` ends the run's active approval. Nothing is ever deleted: both are rows of
the store's approvals trail.

Each prints one line (``--json``: one JSON object, ``ApprovalRecord.to_dict``), exit 0. An
error (no such run, not completed, not divergent or noisy, already approved, nothing to
revoke, an empty reason, a store that cannot be written) is one line, exit 2; with
``--json`` it is the one object on stdout, ``{"action", "run_id", "error"}``.
"""

from __future__ import annotations

import argparse
import getpass
import json
from typing import Any, TextIO

from matcher.approvals import describe_signature
from matcher.errors import ParityError
from matcher.store import ApprovalRecord, Store
from parity.cli.commands import EXIT_ERROR, SUMMARY
from parity.views.printable import printable


class ApprovalError(ParityError):
    """``parity approve``/``revoke`` cannot tell who decides."""


def add_approve_commands(commands: Any) -> None:
    """Register ``parity approve`` and ``parity revoke`` on the subparsers."""
    for action in ("approve", "revoke"):
        parser = commands.add_parser(
            action, help=SUMMARY[action], description=SUMMARY[action] + "."
        )
        parser.add_argument("run_id", metavar="RUN_ID", help="the run (parity history lists them)")
        parser.add_argument("--reason", required=True, metavar="TEXT", help="why, for the record")
        parser.add_argument(
            "--by", metavar="NAME", help="who decides (default: the operating system's user)"
        )
        parser.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.set_defaults(run=run_approval, action=action)


def run_approval(args: argparse.Namespace, out: TextIO) -> int:
    try:
        record = _record(args)
    except (ParityError, OSError) as exc:
        if not args.json:
            raise  # ``parity.cli.main``: one line on stderr, exit 2
        error = {"action": args.action, "run_id": args.run_id, "error": str(exc).strip()}
        out.write(json.dumps(error, ensure_ascii=False) + "\n")
        out.flush()
        return EXIT_ERROR
    if args.json:
        out.write(json.dumps(record.to_dict(), allow_nan=False, ensure_ascii=False) + "\n")
    else:
        out.write(printable(line(record)) + "\n")
    out.flush()
    return 0


def _record(args: argparse.Namespace) -> ApprovalRecord:
    actor = args.by if args.by is not None else _os_user()
    with Store.open(args.db) as store:
        if args.action == "approve":
            return store.approve(args.run_id, actor=actor, reason=args.reason)
        return store.revoke(args.run_id, actor=actor, reason=args.reason)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no LOGNAME/USER and no passwd entry (a bare container)
        raise ApprovalError("cannot tell who you are: give --by NAME") from None


def line(record: ApprovalRecord) -> str:
    """``approved run R (taxi, candidate 1.5.0) by alice: divergent: loss 2 (approval 3)``."""
    version = record.candidate_version or "-"
    what = f"run {record.run_id} ({record.validation}, candidate {version})"
    if record.action == "approve":
        return (
            f"approved {what} by {record.actor}: {describe_signature(record.divergences)} "
            f"(approval {record.approval_id})"
        )
    return (
        f"revoked approval {record.revokes} of {what} by {record.actor} "
        f"(revocation {record.approval_id})"
    )
