"""``parity gate``: does the latest completed run of a validation pass its deploy gate?

    parity gate VALIDATION [--candidate VERSION] [--db URL] [--json]

exits 0 when the latest completed run of the validation (of that candidate version) passes
the gate, 1 when it does not, 2 when there is no completed run (or on error), and prints
why: one line, then a few details (``parity.views.gate.GateStatus``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from matcher.store import Store
from parity.cli.commands import SUMMARY
from parity.views.gate import GateStatus, gate_status


def add_gate_command(commands: Any) -> None:
    """Register ``parity gate`` on the ``parity`` command's subparsers."""
    gate = commands.add_parser(
        "gate",
        help=SUMMARY["gate"],
        description="Exit 0 if the latest completed run of VALIDATION (of the candidate "
        "VERSION, when given) passes the gate, 1 if it does not, 2 if there is no "
        "completed run; print why.",
    )
    gate.add_argument("validation", metavar="VALIDATION", help="the validation's name")
    gate.add_argument("--candidate", metavar="VERSION", help="the candidate version to gate")
    gate.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    gate.add_argument("--json", action="store_true", help="print one JSON object")
    gate.set_defaults(run=run_gate)


def run_gate(args: argparse.Namespace, out: TextIO) -> int:
    with Store.open_readonly(args.db) as store:  # a reader: it never migrates nor writes
        status = gate_status(store, args.validation, args.candidate)
    if args.json:
        out.write(json.dumps(status.to_dict(), allow_nan=False, ensure_ascii=False) + "\n")
    else:
        out.write("".join(f"{line}\n" for line in _text(status)))
    out.flush()
    return status.exit_code


def _text(status: GateStatus) -> list[str]:
    return [status.headline(), *(f"  {line}" for line in status.details())]
