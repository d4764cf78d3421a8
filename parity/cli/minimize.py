"""``parity minimize``: a divergent pipeline run shrunk to the smallest part of its replayed
slice on which the candidate still diverges, with a regression test (``parity.minimize``).

    parity minimize RUN_ID [--budget 60] [--budget 30m] [--keep same|exact|divergent]
                    [--out DIR] [--workspace DIR] [--master URL] [--db URL] [--json]
                    [--progress | --no-progress]

The run's reference and candidate applications (and its reference reruns, for noise) are
re-run on subsets of its slice, first by dependence key, then by record (delta debugging);
a subset is kept when the verdict there is divergent with the run's kinds on the run's
columns, no other (``--keep exact``: all of them; ``--keep divergent``: divergent at
all). ``--budget`` bounds the runs and the time; when it is spent, the smallest subset
found so far is the answer. The result goes to ``--out`` (default: the run's workspace,
``RUN/minimized``): the input, both outputs, the witness, the spec and a pytest file; the
store keeps its summary with the run, which ``parity report`` and the Parity page show. A
line per run goes to stderr (``--no-progress``: none); the summary to stdout. Exit 0 when
a reproducing subset was written, 2 when none could be (the run is not divergent, its
workspace is gone, no subset reproduced it).
"""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import Any, TextIO

from matcher import uris
from matcher.errors import InputError
from parity.cli.commands import SUMMARY
from parity.cli.progress import Progress, add_progress_option
from parity.views.printable import printable

#: JVM options for a trial's ``spark-submit`` (a few seconds' run on a few rows): compile
#: less, collect with one thread, no Spark UI
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dspark.ui.enabled=false"


def add_minimize_parser(commands: Any) -> None:
    """Register ``minimize`` on the ``parity`` command's subparsers."""
    minimize = commands.add_parser(
        "minimize",
        help=SUMMARY["minimize"],
        description="Shrink a divergent pipeline run to the smallest part of its replayed "
        "slice on which the candidate still diverges the same way (delta debugging over "
        "keys, then records), and write it with both outputs, the witness and a pytest "
        "file that fails while the bug is there. Exit 0 when written, 2 on error.",
    )
    minimize.add_argument("run_id", metavar="RUN_ID", help="a divergent pipeline run")
    minimize.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="RUNS_OR_TIME",
        help="stop after this many runs (40) or this long (900s, 15m, 1h); give both to "
        "bound both (default: 60 runs)",
    )
    minimize.add_argument(
        "--keep",
        choices=("same", "exact", "divergent"),
        default="same",
        help="which subsets reproduce the run: same (default), divergent only of the run's "
        "kinds on the run's columns; exact, with all of them; divergent, any divergence",
    )
    minimize.add_argument(
        "--out", metavar="DIR", help="where the result goes (default: RUN_WORKSPACE/minimized)"
    )
    minimize.add_argument(
        "--workspace",
        metavar="DIR",
        help="the run's workspace (default: the folder of its report, as stored)",
    )
    minimize.add_argument("--master", default="local[2]", metavar="URL", help="Spark master")
    minimize.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    minimize.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_progress_option(minimize)
    minimize.set_defaults(run=run_minimize)


def run_minimize(args: argparse.Namespace, out: TextIO) -> int:
    from matcher.store import Store
    from parity.cli.report import load_record
    from parity.minimize.runner import Budget, minimize
    from parity.minimize.trials import Settings
    from parity.minimize.workspace import open_workspace
    from parity.recovery.runner import find_spark_submit, spark_env

    budget = Budget.parse(args.budget)
    record = load_record(args.run_id, args.db)
    workspace = open_workspace(record, args.workspace)
    target = _out_dir(args.out, workspace.run_dir)
    choice = True if args.progress is None else args.progress
    progress = Progress.start("minimize", choice)
    settings = Settings(
        keep=args.keep,
        master=args.master,
        spark_submit=find_spark_submit(),
        env=_trial_env(spark_env()),
        packages=target.parent / "packages",
    )
    # SIGTERM (a CI job's timeout, `kill`) as Ctrl-C: the applications running are killed on
    # the way out, as their process groups are their own and would otherwise run on.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with progress.heartbeat():
            found = minimize(
                workspace, budget, settings, target, record=record, progress=progress.step
            )
    finally:
        signal.signal(signal.SIGTERM, previous)
    document = found.document()
    with Store.open(args.db) as store:
        store.set_stat(record.run_id, "minimized", document)
    if args.json:
        out.write(json.dumps({"run_id": record.run_id, **document}, ensure_ascii=False) + "\n")
    else:
        out.write("".join(f"{printable(line)}\n" for line in summary(record.run_id, document)))
    out.flush()
    return 0


def _trial_env(env: dict[str, str]) -> dict[str, str]:
    """The applications' environment: this one, plus a JVM tuned for the short runs of
    small inputs a search makes (``QUICK_JVM``) unless ``SPARK_SUBMIT_OPTS`` is set."""
    env.setdefault("SPARK_SUBMIT_OPTS", QUICK_JVM)
    return env


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def summary(run_id: str, document: dict[str, Any]) -> list[str]:
    """The result in a few lines: rows before and after, runs, time, where it is."""
    keys = ""
    if document.get("keys_before") is not None:
        unit = document.get("unit") or "keys"
        keys = f" ({document['keys_before']:,} → {document['keys_after']:,} {unit})"
    return [
        f"minimize: run {run_id}: {document['rows_before']:,} → {document['rows_after']:,} "
        f"rows{keys} in {document['runs']} runs, {_duration(document['seconds'])} "
        f"({document['status']})",
        f"  reproduces: {document['reproduces']}",
        f"  input:      {document['input']}",
        f"  witness:    {Path(document['directory']) / 'witness.txt'}",
        f"  test:       {document['test']}",
    ]


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def _out_dir(given: str | None, run_dir: str) -> Path:
    if given is not None:
        return Path(given).expanduser().resolve()
    local = uris.local_path(uris.join(run_dir, "minimized"))
    if local is None:
        raise InputError(f"the run's workspace {run_dir} is not on this machine: give --out DIR")
    return local
