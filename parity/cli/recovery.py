"""``parity recovery``: a streaming job killed with SIGKILL and restarted from its checkpoint,
then checked (``parity.recovery``).

    parity recovery SPEC.yaml [--crashes N] [--seed S] [--kill driver|executor]
                    [--master URL] [--root DIR] [--home DIR] [--db URL] [--json]
                    [--progress | --no-progress]

Exit 0 when the crashed run's output is the one an uncrashed run gives, 1 when it is not
(loss, duplication, reordering or corruption), 2 when the run could not be completed (the
job failed on its own, stalled, ran out of time) or on a bad spec. The run is stored as kind
``recovery``: ``parity history`` lists it, ``parity report RUN_ID`` shows its crash log.
On a cluster (``--master`` not ``local[...]``) the slice and match jobs and a bundled
application ship the project's code to their executors, as the DAG's jobs do (a zip cached
in ``HOME/packages/``: ``parity.runs.package``).
The run's id and workspace go to stderr; on a terminal, so does its progress (each step,
the seconds elapsed, repeated while a step runs: ``parity.cli.progress``;
``--progress``/``--no-progress`` to choose); the verdict to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from matcher.arguments import whole_number
from matcher.spec import load_spec
from matcher.store.config import DEFAULT_HOME, HOME_VARIABLE
from matcher.store.records import RunRecord
from parity.cli.commands import SUMMARY
from parity.cli.progress import Progress, add_progress_option
from parity.recovery.runner import find_spark_submit, plan_recovery, recover, spark_env
from parity.views.crash_log import invalid_note, recovery_view
from parity.views.printable import printable
from parity.views.report import report_document

EXIT_PASSED, EXIT_FAILED = 0, 1
SHOWN_WITNESSES = 5


def add_recovery_parser(commands: Any) -> None:
    """Register ``recovery`` on the ``parity`` command's subparsers."""
    recovery = commands.add_parser(
        "recovery",
        help=SUMMARY["recovery"],
        description="Run a recovery validation: the spec's streaming application under "
        "seeded SIGKILLs, restarted from its checkpoint until it finishes, then checked. "
        "Exit 0 if its output is the one an uncrashed run gives, 1 if not, 2 on error.",
    )
    recovery.add_argument("spec", metavar="SPEC.yaml", help="a spec with a recovery section")
    recovery.add_argument(
        "--crashes", type=whole_number(1, 100), metavar="N", help="kills (the spec's)"
    )
    recovery.add_argument("--seed", type=int, metavar="S", help="where they land (the spec's)")
    recovery.add_argument(
        "--kill", choices=("driver", "executor"), help="what is killed (the spec's)"
    )
    recovery.add_argument("--master", metavar="URL", help="Spark master (default: local[2])")
    recovery.add_argument(
        "--root", metavar="DIR", help="where relative paths in the spec start (default: .)"
    )
    recovery.add_argument(
        "--home", metavar="DIR", help=f"workspace root (default: ${HOME_VARIABLE} or ~/.parity)"
    )
    recovery.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    recovery.add_argument("--json", action="store_true", help="print the run as one JSON object")
    add_progress_option(recovery)
    recovery.set_defaults(run=run_recovery)


def run_recovery(args: argparse.Namespace, out: TextIO) -> int:
    progress = Progress.start("recovery", getattr(args, "progress", None))
    spec = load_spec(args.spec)
    root = Path(args.root or ".").resolve()
    home = Path(args.home or os.environ.get(HOME_VARIABLE) or DEFAULT_HOME).expanduser()
    plan = plan_recovery(
        spec,
        root=root,
        home=home,
        crashes=args.crashes,
        seed=args.seed,
        kill=args.kill,
        master=args.master,
    )
    print(f"recovery: {printable(plan.run_id)}: workspace {plan.run_dir}", file=sys.stderr)
    # SIGTERM (a CI job's timeout, `kill`) as Ctrl-C: the jobs started are killed on the way
    # out, as their process groups are their own and would otherwise run on.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with progress.heartbeat():
            record = recover(
                plan,
                env=spark_env(),
                spark_submit=find_spark_submit(),
                db=args.db,
                progress=progress.step,
            )
            progress.step(f"done: {'pass' if record.verdict == 'equivalent' else 'fail'}")
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.json:
        out.write(json.dumps(report_document(record), allow_nan=False, ensure_ascii=False))
        out.write("\n")
    else:
        out.write("".join(f"{line}\n" for line in summary(record)))
    out.flush()
    return EXIT_PASSED if record.verdict == "equivalent" else EXIT_FAILED


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def summary(record: RunRecord) -> list[str]:
    """The verdict, the crashes and the first witnesses, one line each."""
    log = recovery_view(record) or {}  # the stored crash log, every value of its type
    verdict = "pass" if record.verdict == "equivalent" else "fail"
    counts = ", ".join(f"{kind} {n}" for kind, n in record.counts.items())
    lines = [
        f"recovery: {record.validation}: {verdict} ({counts}); "
        f"{log.get('injected') or 0} of {log.get('planned') or 0} crashes injected, "
        f"{log.get('recovered') or 0} recovered, {log.get('attempts') or 0} starts, "
        f"{log.get('batches') or 0} batches; run {record.run_id}"
    ]
    for crash in log.get("crashes", []):
        recovered = crash["recovered_in"]
        took = "never recovered" if recovered is None else f"recovered in {recovered:.1f}s"
        lines.append(
            f"  crash {crash['number']}: {crash['target']} killed at {crash['at']:.1f}s, "
            f"{crash['where']} (batch {crash['batch']}), {took}"
        )
    if log.get("invalid"):
        lines.append(f"  note: {invalid_note(log)}")
    for d in record.divergences[:SHOWN_WITNESSES]:
        lines.append(f"  {d.kind} at key {d.key!r}: {d.explain()}")
    more = record.total_divergences - min(len(record.divergences), SHOWN_WITNESSES)
    if more > 0:
        lines.append(f"  ... and {more} more (parity report {record.run_id})")
    return [printable(line) for line in lines]
