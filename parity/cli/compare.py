"""``parity compare``: two outputs under a validation spec, on the core or on a local Spark.

    parity compare REFERENCE CANDIDATE --spec SPEC.yaml [--json] [--limit N]
                   [--engine auto|core|spark] [--db URL] [--progress | --no-progress]

``core`` streams both outputs through the matcher in this process
(``matcher.files.compare``); ``spark`` matches them on a local Spark partitioned by the
dependence key (``matcher.spark.outputs``); ``auto`` takes Spark when either output is a
directory. An output may be a store's URI (``s3a://``, ``hdfs://``, ``file://``): Spark reads
it where it is, the core from a temporary local copy. Exit 0 equivalent, 1 divergent, 2
error. A spec with ``properties:`` is first held against the stored properties runs of its
operators: a warning line on stderr for each it contradicts (``--db``: that store; one that
cannot be read is an error, exit 2, since the spec asks for the check). On a
terminal, stderr shows which step runs and for how long (``parity.cli.progress``;
``--progress``/``--no-progress`` to choose).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from matcher import uris
from matcher.arguments import whole_number
from matcher.errors import InputError
from matcher.files.compare import compare_files
from matcher.files.output_paths import check_output_path
from matcher.spec import Spec, load_spec
from matcher.verdict import Verdict
from parity.cli.commands import SUMMARY
from parity.cli.progress import Progress, add_progress_option
from parity.cli.render import Comparison, render_json, render_text
from parity.views.printable import printable

EXIT_EQUIVALENT = 0
EXIT_DIVERGENT = 1
DEFAULT_LIMIT = 10


def add_compare_parser(commands: Any) -> None:
    """Register ``compare`` on the ``parity`` command's subparsers."""
    compare = commands.add_parser(
        "compare",
        help=SUMMARY["compare"],
        description="Compare two outputs (files or Spark output directories) under the "
        "dependence and equality of a validation spec. Exit 0 if equivalent, 1 if "
        "divergent, 2 on error.",
    )
    compare.add_argument("reference", help="the reference output: a file or a directory")
    compare.add_argument("candidate", help="the candidate output: a file or a directory")
    compare.add_argument("--spec", required=True, metavar="SPEC.yaml", help="validation spec")
    compare.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a report"
    )
    compare.add_argument(
        "--limit",
        type=whole_number(0),
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"keep witnesses for the first N divergences (default {DEFAULT_LIMIT}); "
        "all are counted",
    )
    compare.add_argument(
        "--engine",
        choices=("auto", "core", "spark"),
        default="auto",
        help="core: stream both outputs through the matcher in this process; spark: match "
        "on a local Spark partitioned by the dependence key; auto (default): spark when "
        "either output is a directory, core otherwise",
    )
    compare.add_argument(
        "--differences",
        metavar="PATH",
        help="also write every difference (kind, key, positions, both events) to PATH: "
        "Parquet or CSV by its extension",
    )
    compare.add_argument(
        "--db",
        metavar="URL",
        help="results database whose properties runs the spec's properties: are held "
        "against (default: PARITY_DB_URL, ...)",
    )
    add_progress_option(compare)
    compare.set_defaults(run=run_compare)


#: the largest count an argument takes: a store's integers are 64-bit


def run_compare(args: argparse.Namespace, out: TextIO) -> int:
    progress = Progress.start("compare", getattr(args, "progress", None))
    with progress.heartbeat():
        progress.step(f"reading the spec {args.spec}")
        spec = load_spec(args.spec)
        if spec.properties:
            progress.step("holding the spec against the stored properties runs")
        for line in property_warnings(spec, getattr(args, "db", None)):
            print(printable(line), file=sys.stderr)
        return _run_guarded(spec, args, out, progress)


def _run_guarded(spec: Spec, args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    try:
        return _run_compare(spec, args, out, progress)
    except Exception as exc:  # a spec's function that raised is the user's to fix
        from matcher.spark.failures import known_failure

        known = known_failure(exc, spec.functions)
        if known is None or known is exc:
            raise
        raise known from exc


def property_warnings(spec: Spec, db: str | None) -> list[str]:
    """The spec held against the stored properties runs of its ``properties:`` operators
    (``parity.views.properties``): a warning line each it contradicts. A spec without the
    section never opens the store. A SQLite store not created yet holds no properties run,
    like a store where the operators were never tested: nothing to warn of. A spec with the
    section asks for the check, so a store that exists but cannot be read (down, another
    revision) is an error naming the section, before anything is compared: a check that
    cannot run is never skipped without a word."""
    if not spec.properties:
        return []
    from matcher.store import Store, StoreError
    from matcher.store.config import database_url
    from matcher.store.engine import sqlite_file
    from parity.views.properties import spec_warnings

    path = sqlite_file(database_url(db))
    if path is not None and not path.exists():
        return []
    try:
        with Store.open_readonly(db) as store:
            return spec_warnings(spec, store)
    except StoreError as exc:  # the message masks the URL's password (matcher.store.errors)
        raise StoreError(
            f"{spec.source}: properties: cannot hold the spec against the stored properties "
            f"runs: {exc} (remove the section, or point --db at the store that has them)"
        ) from exc


def _run_compare(spec: Spec, args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    dependence, equality = spec.build_dependence(), spec.build_equality()
    engine = args.engine
    if engine == "auto":
        directories = os.path.isdir(args.reference) or os.path.isdir(args.candidate)
        engine = "spark" if directories else "core"
    differences = getattr(args, "differences", None)
    # pyarrow is imported when a table is asked for (``parity --help`` stays light)
    from matcher.files.differences import copy_table, export_format, write_verdict_differences

    if differences is not None:
        export_format(differences)  # before anything runs: a wrong extension is an error
        check_output_path(differences, "--differences")
    if engine == "spark":
        with tempfile.TemporaryDirectory(prefix="parity-differences-") as staging:
            table = None if differences is None else str(Path(staging) / "differences")
            verdict = _compare_on_spark(
                spec, args.reference, args.candidate, args.limit, progress, table
            )
            if differences is not None:
                progress.step(f"writing every difference to {differences}")
                copy_table(table if Path(str(table)).exists() else None, differences)
    else:
        with _local_copies((args.reference, args.candidate), progress) as (reference, candidate):
            # The core streams both outputs through the matcher: reading is matching.
            progress.step(
                f"reading and matching {reference} (reference) and {candidate} "
                "(candidate) in this process"
            )
            verdict = compare_files(spec, reference, candidate, args.limit)
        if differences is not None:
            progress.step(f"writing every difference to {differences}")
            write_verdict_differences(verdict, differences)
    progress.step(
        f"done: {'equivalent' if verdict.equivalent else 'divergent'} "
        f"({verdict.total_divergences} divergences)"
    )
    comparison = Comparison(
        spec_name=spec.name,
        spec_file=spec.source,
        reference=args.reference,
        candidate=args.candidate,
        dependence=dependence.describe(),
        equality=equality,
    )
    render = render_json if args.json else render_text
    out.write(render(comparison, verdict))
    out.flush()
    return EXIT_EQUIVALENT if verdict.equivalent else EXIT_DIVERGENT


@contextlib.contextmanager
def _local_copies(outputs: Sequence[str], progress: Progress) -> Iterator[list[str]]:
    """The outputs as local paths: an output on a store (``s3a://``, ``hdfs://``, ...) is
    copied to a temporary folder first (``matcher.files.locations``), removed afterwards."""
    paths = [uris.local_path(output) for output in outputs]
    if all(path is not None for path in paths):
        yield [str(path) for path in paths]
        return
    from matcher.files.locations import download

    with tempfile.TemporaryDirectory(prefix="parity-compare-") as staging:
        local = []
        for n, (output, path) in enumerate(zip(outputs, paths, strict=True)):
            if path is None:
                progress.step(f"copying {output} to {staging}")
                folder = Path(staging) / ("reference", "candidate")[n]
                folder.mkdir()
                path = download(output, folder)
            local.append(str(path))
        yield local


def _compare_on_spark(
    spec: Spec,
    reference: str,
    candidate: str,
    limit: int,
    progress: Progress,
    differences: str | None = None,
) -> Verdict:
    progress.step("loading PySpark")
    from matcher.failures import first_line
    from matcher.spark.failures import is_spark_error
    from matcher.spark.outputs import compare_on_spark
    from matcher.spark.session import local_session

    for path in (reference, candidate):
        local = uris.local_path(path)  # a store's URI: Spark says whether it is there
        if local is not None and not local.exists():
            raise InputError(f"{path}: no such file or directory")
    try:
        progress.step("starting a local Spark")
        session = local_session()
        progress.step(
            f"reading and matching {reference} (reference) and {candidate} (candidate) "
            "on Spark, partitioned by the dependence key"
        )
        return compare_on_spark(
            session, spec, reference, candidate, limit=limit, differences=differences
        ).verdict
    except Exception as exc:  # Spark's own errors: translate at the boundary
        if is_spark_error(exc):
            raise InputError(first_line(exc)) from exc
        raise
