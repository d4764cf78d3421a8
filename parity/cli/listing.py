"""``parity list``: the validations this deployment has, their schedule, last verdict and gate.

    parity list [--json] [--db URL]

The validations are the spec files of the validations folder the DAGs are built from
(``PARITY_VALIDATIONS_DIR``, else ``$AIRFLOW__CORE__DAGS_FOLDER/validations``, else
``./dags/validations``: ``parity.views.spec_binding.validations_folder``), by file name. For
each: its schedule, its newest run's verdict (``running``, ``failed`` for an attempt that
did not finish; ``-``: never ran) and start, and its gate as ``parity gate VALIDATION``
answers it, bound to today's spec (``open``, ``closed``, ``no usable verdict``; ``-``: no
run). A spec that does not load is listed as such, and its one-line error follows the
table (as ``parity validate`` words it); the command still exits 0. No folder: exit 2.

With ``--json``: one array, an object per validation (``validation``, ``file``,
``schedule``, ``kind``, ``error``, ``last_run``: the newest run's id, verdict, status and
start, or ``null``; ``gate``: ``parity gate --json``'s document, or ``null``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from parity.cli.commands import SUMMARY

if TYPE_CHECKING:  # the store is imported when the command runs
    from matcher.store import RunSummary, Store
    from parity.views.gate import GateStatus

COLUMNS = ("validation", "schedule", "last run", "verdict", "gate", "run id")
NONE = "-"


@dataclass(frozen=True, slots=True)
class Listed:
    """One validation of the folder: its spec's file, name and schedule (or why it does not
    load), its newest run and its gate."""

    file: str
    validation: str
    kind: str | None
    schedule: str | None
    error: str | None
    last: RunSummary | None
    gate: GateStatus | None


def add_list_parser(commands: Any) -> None:
    """Register ``list`` on the ``parity`` command's subparsers."""
    listing = commands.add_parser(
        "list",
        help=SUMMARY["list"],
        description="List the validations in the validations folder (PARITY_VALIDATIONS_DIR, "
        "else $AIRFLOW__CORE__DAGS_FOLDER/validations, else ./dags/validations) with their "
        "schedule, newest run's verdict and gate.",
    )
    listing.add_argument("--json", action="store_true", help="print one JSON array")
    listing.add_argument(
        "--db", metavar="URL", help="results database (default: PARITY_DB_URL, ...)"
    )
    listing.set_defaults(run=run_list)


def run_list(args: argparse.Namespace, out: TextIO) -> int:
    from matcher.errors import InputError
    from matcher.store import Store
    from parity.views.printable import printable
    from parity.views.spec_binding import validations_folder

    folder, chosen = validations_folder()
    if not folder.is_dir():
        raise InputError(f"no validations folder {folder} ({chosen}): set PARITY_VALIDATIONS_DIR")
    with Store.open_readonly(args.db) as store:  # a reader: it never migrates nor writes
        listed = [_listed(store, folder, path) for path in _spec_files(folder)]
    if args.json:
        document = [_entry(item) for item in listed]
        out.write(json.dumps(document, allow_nan=False, ensure_ascii=False) + "\n")
    elif listed:
        out.write(render_table([_row(item) for item in listed]))
        broken = [item.error for item in listed if item.error is not None]
        if broken:
            out.write("".join(f"\n{printable(error)}" for error in broken) + "\n")
    else:
        out.write(f"no validations in {folder}\n")
    out.flush()
    return 0


def _spec_files(folder: Path) -> list[Path]:
    return sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])


def _listed(store: Store, folder: Path, path: Path) -> Listed:
    from matcher.errors import SpecError
    from matcher.spec import parse_spec, parse_yaml
    from parity.views.gate import CurrentSpec, gate_status
    from parity.views.spec_binding import read_spec_text

    shown = str(path)
    try:
        text = read_spec_text(path, folder, shown)
        spec = parse_spec(parse_yaml(text, shown), shown, base_dir=path.parent)
    except (SpecError, OSError, UnicodeDecodeError) as exc:
        error = " ".join(str(exc).split())
        return Listed(shown, path.stem, None, None, error, None, None)
    last = store.latest_run(spec.name, completed_only=False)
    gate = None
    if last is not None:
        gate = gate_status(store, spec.name, current=CurrentSpec.of(spec))
    kind = "recovery" if spec.recovery is not None else "comparison"
    return Listed(shown, spec.name, kind, spec.schedule, None, last, gate)


def _verdict(run: RunSummary | None) -> str:
    if run is None:
        return NONE
    return run.verdict if run.status == "completed" and run.verdict else run.status


def _row(item: Listed) -> tuple[str, ...]:
    from parity.views.gate import WORDS
    from parity.views.printable import printable

    if item.error is not None:
        cells = (item.validation, "does not load (below)", NONE, NONE, NONE, NONE)
    else:
        last = item.last
        cells = (
            item.validation,
            item.schedule or "none (ad hoc)",
            NONE if last is None else f"{last.started_at.astimezone(dt.UTC):%Y-%m-%d %H:%M}",
            _verdict(last),
            NONE if item.gate is None else WORDS[item.gate.state],
            NONE if last is None else last.run_id,
        )
    return tuple(printable(cell) for cell in cells)


def _entry(item: Listed) -> dict[str, Any]:
    last = item.last
    return {
        "validation": item.validation,
        "file": item.file,
        "kind": item.kind,
        "schedule": item.schedule,
        "error": item.error,
        "last_run": None
        if last is None
        else {
            "run_id": last.run_id,
            "status": last.status,
            "verdict": last.verdict,
            "started_at": last.started_at.isoformat(),
        },
        "gate": None if item.gate is None else item.gate.to_dict(),
    }


def render_table(rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns, two spaces apart, under an upper-case header."""
    header = tuple(name.upper() for name in COLUMNS)
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    return "\n".join(lines) + "\n"
