"""``parity validate``: check pipeline spec files as the DAG factory and the plan would.

    parity validate SPEC... [--root DIR] [--no-files]

One line per spec on stdout: ``PATH: what is wrong`` (the spec loader's one-line messages:
``dags/validations/x.yaml: airflow.pol: unknown key ...``, a schedule Airflow's timetable
refuses, a DAG that cannot be built, a run that cannot be planned, a missing application or
capture), else ``PATH: OK (validation NAME, DAG DAG_ID, schedule S)``. Exit 0 when every
spec is OK, 2 when any is not: what an Airflow import error would show, before a deploy.

The checks need Airflow (its timetables decide what a schedule is; the DAG is built), which
the CLI never imports: they run in a child process, ``python -m parity.airflow.validate``
(its docstring lists them in order). Relative paths in specs start from ``--root``, by
default the directory the DAG factory uses: the parent of the dags folder
(``AIRFLOW__CORE__DAGS_FOLDER``, else ``./dags``). ``--no-files`` skips the existence
checks of the applications and the captures (a machine without the data).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from matcher.errors import InputError
from parity.cli.commands import SUMMARY
from parity.views.spec_binding import DAGS_FOLDER_VARIABLE

#: the child that runs the checks (Airflow is imported there, never here)
CHILD = "parity.airflow.validate"


def add_validate_parser(commands: Any) -> None:
    """Register ``validate`` on the ``parity`` command's subparsers."""
    validate = commands.add_parser(
        "validate",
        help=SUMMARY["validate"],
        description="Check validation spec files as the DAG factory and the plan task do: "
        "the spec's keys and values, the schedule, the DAG, a planned run, the applications "
        "and the capture. One line per spec; exit 0 when all are OK, 2 otherwise.",
    )
    validate.add_argument("specs", nargs="+", metavar="SPEC", help="a validation spec file")
    validate.add_argument(
        "--root",
        metavar="DIR",
        help="where relative paths in specs start (default: the dags folder's parent, "
        f"${DAGS_FOLDER_VARIABLE}/.. else .)",
    )
    validate.add_argument(
        "--no-files",
        action="store_true",
        help="do not check that the applications and the captures exist",
    )
    validate.set_defaults(run=run_validate)


def default_root(environ: Mapping[str, str] = os.environ) -> Path:
    """The DAG factory's root: the dags folder's parent."""
    dags = environ.get(DAGS_FOLDER_VARIABLE) or "dags"
    return Path(dags).expanduser().resolve().parent


def child_argv(args: argparse.Namespace) -> list[str]:
    """The child's command line (pure, so a test can assert it whole)."""
    root = Path(args.root).expanduser().resolve() if args.root else default_root()
    argv = [sys.executable, "-m", CHILD, "--root", str(root)]
    if args.no_files:
        argv.append("--no-files")
    return [*argv, "--", *args.specs]


def run_validate(args: argparse.Namespace, out: TextIO) -> int:
    if args.root is not None and not Path(args.root).expanduser().is_dir():
        raise InputError(f"--root: no such directory: {args.root}")
    done = subprocess.run(child_argv(args), capture_output=True, text=True, check=False)
    out.write(done.stdout)
    out.flush()
    if done.returncode not in (0, 2) or (done.returncode == 2 and not done.stdout):
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InputError(f"validate: the checks stopped (exit {done.returncode}): {last}")
    return done.returncode
