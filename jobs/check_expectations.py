"""The expectations job: data-quality expectations on the outputs, stored beside the verdict.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' \\
        jobs/check_expectations.py --run-id RUN_ID --db URL --spec validations/taxi.yaml \\
        --candidate out/candidate [--reference out/reference] --report-dir RUN_DIR/report \\
        [--root REPO]

Runs the spec's suites (``expectations.suites``, JSON files relative to ``--root``, default
the repository holding this job) on each side of ``expectations.sides``, and the
expectations derived from the reference output (``expectations.derived``, needs
``--reference``) on the candidate, with Great Expectations 1.x; stores every result with
``Store.record_expectations`` (replacing the run's earlier ones) and writes the GX Data Docs
site to ``REPORT_DIR/data_docs/index.html``. The gate policy decides later whether failed
expectations close the gate. Great Expectations is imported in a thread while the Spark
session starts and the outputs load (``import_in_background``): 4-5 s of a 21 s job.

Exit codes: 0 when the expectations ran (even if some failed), 2 on error: a missing or
malformed suite file, a suite naming a column the output lacks, an unreadable output, a run
that was never started. An error is one line on stderr, ``expectations: error: ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from expectations.suites import (
    Suite,
    check_columns,
    load_suite,
    referenced_columns,
)
from jobs.entry import load_spec_at, run_job, session
from matcher import uris
from matcher.errors import InputError, SpecError
from matcher.files import locations
from matcher.spec import Spec
from matcher.store import DATA_DOCS_DIR, ExpectationRecord, Store, UnknownRunError

EXIT_OK, EXIT_ERROR = 0, 2
ROOT = Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="expectations", description=__doc__.splitlines()[0])
    parser.add_argument("--run-id", required=True, help="the run the results belong to")
    parser.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    parser.add_argument("--spec", required=True, metavar="SPEC.yaml", help="validation spec")
    parser.add_argument("--candidate", required=True, metavar="PATH", help="candidate output")
    parser.add_argument("--reference", metavar="PATH", help="reference output")
    parser.add_argument("--report-dir", metavar="DIR", help="the run's report folder")
    parser.add_argument(
        "--root", default=str(ROOT), metavar="DIR", help="where relative suite paths start"
    )
    return parser


@dataclass(frozen=True, slots=True)
class Plan:
    """What to run: each user suite with the sides it runs on; whether to derive."""

    suites: tuple[tuple[Suite, str], ...]
    derive: bool


def plan_expectations(spec: Spec, root: Path, *, has_reference: bool) -> Plan:
    """Read the spec's suite files and decide what runs where (no Spark, no GX)."""
    settings = spec.expectations
    suites = []
    names: dict[str, str] = {}
    for i, path in enumerate(settings.suites):
        where = f"{spec.source}: expectations.suites[{i}]"
        suite = load_suite(Path(path) if Path(path).is_absolute() else root / path, where)
        if names.setdefault(suite.name, suite.source) != suite.source:
            raise SpecError(
                f"{where}: suite name {suite.name!r} is also the name of {names[suite.name]}"
            )
        suites.append(suite)
    if "reference" in settings.sides and suites and not has_reference:
        raise InputError(
            f"{spec.source}: expectations.sides: lists reference, but no --reference was given"
        )
    return Plan(
        suites=tuple((suite, side) for side in settings.sides for suite in suites),
        derive=settings.derived.enabled and has_reference,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_job("expectations", lambda: _check(args))


def _check(args: argparse.Namespace) -> int:
    spec = load_spec_at(args.spec)
    plan = plan_expectations(spec, Path(args.root), has_reference=args.reference is not None)
    with Store.open(args.db) as store:
        if store.get_run(args.run_id) is None:
            raise UnknownRunError(f"no run {args.run_id!r} in {store.url}")
        docs = uris.join(args.report_dir, DATA_DOCS_DIR) if args.report_dir else None
        with _docs_folder(docs) as folder:
            results = _run(spec, plan, args.candidate, args.reference, folder, args.run_id)
        store.record_expectations(args.run_id, results)
    print(summary(args.run_id, results, docs))
    return EXIT_OK


@contextlib.contextmanager
def _docs_folder(docs: str | None) -> Iterator[Path | None]:
    """The local folder Great Expectations writes the Data Docs to (it writes only local
    files): ``docs`` itself when local, else a temporary folder copied to ``docs`` (a
    workspace on shared storage) once they are written."""
    local = None if docs is None else uris.local_path(docs)
    if docs is None or local is not None:
        yield local
        return
    with tempfile.TemporaryDirectory(prefix="parity-data-docs-") as staging:
        yield Path(staging)
        locations.upload_tree(Path(staging), docs)


def _run(
    spec: Spec,
    plan: Plan,
    candidate: str,
    reference: str | None,
    docs: Path | None,
    run_id: str,
) -> list[ExpectationRecord]:
    if not plan.suites and not plan.derive:
        return []
    from expectations.derived import derive_suite, profile_output
    from expectations.runner import run_expectations
    from matcher.spark.session import fit_shuffle_partitions
    from matcher.spark.streams import load_output  # the match job's reader: same formats

    gx = import_in_background("great_expectations")
    spark = session("expectations")
    fit_shuffle_partitions(spark, [candidate] + ([reference] if reference is not None else []))
    declared = spec.output.declared_columns()
    outputs = {"candidate": load_output(spark, candidate, spec.output.format, declared)}
    if reference is not None:
        outputs["reference"] = load_output(spark, reference, spec.output.format, declared)
    for suite, side in plan.suites:
        check_columns(suite, outputs[side].columns, suite.source, side)
    work = list(plan.suites)
    if plan.derive:
        profile = profile_output(outputs["reference"], spec.dependence.key or ())
        tolerances = {c: (t.abs, t.rel) for c, t in spec.equality.tolerance.items()}
        derived = derive_suite(
            profile,
            spec.expectations.derived,
            ignore=spec.equality.ignore,
            tolerances=tolerances,
        )
        work.append((_present(derived, outputs["candidate"].columns), "candidate"))
    gx.join()  # its error, if any, is the one run_expectations's own import raises
    return run_expectations(outputs, work, docs, run_name=run_id)


#: imported before the background import starts: modules both threads would otherwise
#: import at once (pandas imports pyarrow, which a Spark reader may be importing), the one
#: way two threads' imports can deadlock
SHARED_MODULES = ("numpy", "pyarrow", "pandas", "pydantic", "pyspark.sql.functions")


def import_in_background(name: str) -> threading.Thread:
    """Import ``name`` in a daemon thread and return it (``join`` it before use).

    Great Expectations takes 4 to 6 s to import, all of it Python; the Spark session's
    start and the outputs' loading that come first are the JVM's work, during which this
    process only waits. Importing it beside them takes those seconds off the job. An error
    is left for the module's next import to raise again, in the main thread."""
    for shared in SHARED_MODULES:
        importlib.import_module(shared)

    def load() -> None:
        with contextlib.suppress(Exception):
            importlib.import_module(name)

    thread = threading.Thread(target=load, name=f"import {name}", daemon=True)
    thread.start()
    return thread


def _present(suite: Suite, columns: Sequence[str]) -> Suite:
    """The derived suite without expectations on columns the candidate lacks: its
    column-set expectation already fails for them, and GX would raise on each."""
    known = set(columns)
    kept = tuple(e for e in suite.expectations if all(c in known for _, c in referenced_columns(e)))
    return replace(suite, expectations=kept)


def summary(run_id: str, results: Sequence[ExpectationRecord], docs: str | None) -> str:
    """One line: how many expectations were met, per suite and side."""
    if not results:
        return f"expectations: {run_id}: nothing to run"
    groups: dict[tuple[str, str], list[bool]] = {}
    for r in results:
        groups.setdefault((r.suite, r.side), []).append(r.success)
    parts = ", ".join(
        f"{suite} on {side} {sum(ok)}/{len(ok)}" for (suite, side), ok in groups.items()
    )
    met = sum(r.success for r in results)
    where = f"; Data Docs {uris.join(docs, 'index.html')}" if docs is not None else ""
    return f"expectations: {run_id}: {met} of {len(results)} met ({parts}){where}"


if __name__ == "__main__":
    sys.exit(main())
