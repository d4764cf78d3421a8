"""The match job: is the candidate's output equivalent to the reference's? Decided on Spark,
or, with ``--engine core``, by the core matcher in this process.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' jobs/match.py \\
        --reference out/reference --candidate out/candidate --spec validations/taxi.yaml \\
        [--rerun-reference out/rerun] [--run-id ID] [--db URL] [--json-out verdict.json] \\
        [--limit N] [--noise-limit N] [--common-columns] [--record-only] \\
        [--trigger scheduled|adhoc|manual|cli] [--reference-version V] [--candidate-version V] \\
        [--dag-id D --dag-run-id R [--task-try N]] [--slice-json JSON] [--report-dir DIR]
        [--engine spark|core]

Reads both outputs in stream order (``output.order_by``, else files by name and rows in
file order), matches them partitioned by the dependence key (``matcher.spark``; with
``--engine core``, streamed through the core matcher, ``matcher.files.compare``: the same
verdict, for outputs small enough for one process, run with ``python`` rather than
``spark-submit``, so that no JVM starts), and writes
the verdict with its witnesses to the results store in one transaction under ``--run-id``
(default ``DAG_ID/DAG_RUN_ID`` when both are given: a retried run replaces its earlier
attempt). A job that fails leaves the run marked failed; a job killed outright stops renewing
the run's lease (a heartbeat thread, every ``PARITY_RUN_LEASE_SECONDS``/6, default 20 s), and
the run reads as failed once the lease expired (``matcher.store.lease``). The versions
recorded are ``--reference-version``/``--candidate-version``, else the spec's
``reference.version``/``candidate.version``.

With ``--rerun-reference`` (the reference run again, with other partition counts), the
reference is first compared with its rerun: where they differ is noise, and a candidate
whose every divergence lies in that noise is ``noisy`` rather than ``divergent``
(``matcher.noise`` states the rule). ``--report-dir`` receives ``match.json`` (the verdict
document ``--json-out`` writes) and becomes the run's ``report_path``. Both documents are
written under a temporary name first and put in place only after the store committed the
run, never through or over a symbolic link, device or FIFO (``matcher.files.output_paths``).

Exit codes: 0 equivalent, 1 divergent or noisy, 2 error; with ``--record-only`` (the Airflow
pipeline: its gate decides later), 0 whenever a verdict was recorded. Exit 1 means divergent
or noisy and nothing else. A user's error (bad spec, unreadable output, incompatible
schemas, bad or non-UTF-8 arguments, a spec's function that raised) is one line on stderr,
``match: error: ...``, no traceback; any other exception is a bug, one line
``match: internal error: ...`` naming the file its traceback was written to. Either way a
run that had started is stored as failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from jobs.entry import StartingSession, load_spec_at, run_job, session
from matcher import uris
from matcher.arguments import whole_number
from matcher.errors import InputError
from matcher.failures import check_text_arguments
from matcher.files import locations
from matcher.files.compare import compare_files_with_noise
from matcher.files.differences import DIFFERENCES_FILE, write_verdict_differences
from matcher.files.output_paths import StagedOutput, StagedRemote, stage_output
from matcher.noise import NOISE_LIMIT, NoisyComparison
from matcher.printable import printable
from matcher.serialize import json_safe
from matcher.spark.failures import known_failure
from matcher.spec import ApplicationSpec, Spec
from matcher.spec_digest import verdict_digest
from matcher.store import Heartbeat, RunOutcome, RunStart, Store
from matcher.store.records import COMPARISON, MATCHED_KINDS
from matcher.store.run_ids import adhoc_run_id, pipeline_run_id
from matcher.user_code import note_interrupts

EXIT_EQUIVALENT, EXIT_DIVERGENT, EXIT_ERROR = 0, 1, 2
TRIGGERS = ("scheduled", "adhoc", "manual", "cli")
SPARK, CORE = "spark", "core"
REPORT_FILE = "match.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="match", description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, metavar="PATH", help="reference output")
    parser.add_argument("--candidate", required=True, metavar="PATH", help="candidate output")
    parser.add_argument("--spec", required=True, metavar="SPEC.yaml", help="validation spec")
    parser.add_argument(
        "--rerun-reference",
        action="append",
        default=[],
        metavar="PATH",
        help="the reference's output from a rerun on the same slice (repeatable): where it "
        "differs from --reference is noise",
    )
    parser.add_argument(
        "--engine",
        choices=(SPARK, CORE),
        default=SPARK,
        help="spark (default): on Spark, partitioned by the dependence key; core: the core "
        "matcher in this process, no Spark session (local outputs; the DAG's match task runs "
        "it so, without spark-submit, when the outputs are small: PARITY_CORE_MATCH_BYTES)",
    )
    parser.add_argument("--run-id", help="the run's key in the store (default: a new one)")
    parser.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    parser.add_argument("--json-out", metavar="PATH", help="also write the verdict as JSON")
    parser.add_argument("--report-dir", metavar="DIR", help=f"write {REPORT_FILE} here")
    parser.add_argument(
        "--limit",
        type=whole_number(0),
        default=100,
        metavar="N",
        help="witnesses kept (default 100)",
    )
    parser.add_argument(
        "--noise-limit",
        type=whole_number(0),
        default=NOISE_LIMIT,
        metavar="N",
        help=f"witnesses examined to find noisy keys (default {NOISE_LIMIT})",
    )
    parser.add_argument("--trigger", choices=TRIGGERS, default="manual", help="what started it")
    parser.add_argument("--reference-version", metavar="V", help="the reference's version")
    parser.add_argument("--candidate-version", metavar="V", help="the candidate's version")
    parser.add_argument("--dag-id", metavar="D", help="the Airflow DAG that ran it")
    parser.add_argument("--dag-run-id", metavar="R", help="the Airflow DAG run")
    parser.add_argument(
        "--task-try", type=whole_number(0), metavar="N", help="the Airflow task try"
    )
    parser.add_argument("--slice-json", metavar="JSON", help="the input slice, a JSON object")
    parser.add_argument(
        "--kind",
        choices=MATCHED_KINDS,
        default=COMPARISON,
        help="the kind of run stored (recovery: a crashed run against an uninterrupted one)",
    )
    parser.add_argument(
        "--started-at",
        type=_instant,
        metavar="ISO",
        help="when the run began, if before this job (a recovery run's crashed runs)",
    )
    parser.add_argument(
        "--stats-json",
        metavar="PATH",
        help="a JSON object stored with the run's statistics (a recovery run's crash log)",
    )
    parser.add_argument(
        "--record-only",
        action="store_true",
        help="exit 0 whenever the verdict was recorded (the gate decides later)",
    )
    parser.add_argument(
        "--common-columns",
        action="store_true",
        help="kept for old callers, no effect: a schema difference is a finding of the "
        "verdict (schema.mode in the spec), never a failure",
    )
    return parser


#: the largest count an argument takes: the store's integers are 64-bit


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments, checked beyond what argparse can say (exits 2 with one line)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:  # the arguments reach the results store, which holds text only
        check_text_arguments(sys.argv[1:] if argv is None else argv)
    except InputError as exc:
        parser.error(str(exc))
    if (args.dag_id is None) != (args.dag_run_id is None):
        parser.error("--dag-id and --dag-run-id go together")
    if args.slice_json is not None:
        try:
            args.slice = json.loads(args.slice_json)
        except ValueError as exc:
            parser.error(f"--slice-json: not JSON: {exc}")
        if not isinstance(args.slice, dict):
            parser.error("--slice-json: expected a JSON object")
    else:
        args.slice = None
    args.extra_stats = _stats_document(parser, args.stats_json)
    return args


def _instant(text: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 instant, got {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"expected an instant with its zone, got {text!r}")
    return value


def _stats_document(parser: argparse.ArgumentParser, path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        document = json.loads(locations.read_text(path))
    except (OSError, ValueError, InputError) as exc:
        parser.error(f"--stats-json: cannot read {path}: {exc}")
    if not isinstance(document, dict):
        parser.error(f"--stats-json: {path}: expected a JSON object")
    return document


def build_run_start(args: argparse.Namespace, spec: Spec) -> RunStart:
    """The run as it begins: its key, what started it, and the documents kept with it (the
    slice; the spec's file, dependence, gate policy and expectation suites)."""
    run_id = args.run_id
    if run_id is None and args.dag_id is not None:
        run_id = pipeline_run_id(args.dag_id, args.dag_run_id)
    return RunStart(
        run_id=run_id or adhoc_run_id("match"),
        validation=spec.name,
        trigger=args.trigger,
        reference_version=args.reference_version or _version(spec.reference),
        candidate_version=args.candidate_version or _version(spec.candidate),
        slice=args.slice,
        spec={
            "file": spec.source,
            "dependence": spec.build_dependence().describe(),
            "gate": spec.gate.to_dict(),
            "expectations": list(spec.expectations.suites),
            "reference_runs": 1 + len(args.rerun_reference),
            **(
                {"recovery": spec.recovery.model_dump(mode="json")}
                if spec.recovery is not None
                else {}
            ),
        },
        started_at=args.started_at,
        dag_id=args.dag_id,
        dag_run_id=args.dag_run_id,
        task_try=args.task_try,
        engine=args.engine,
        kind=args.kind,
        spec_hash=_spec_hash(args, spec),
    )


def _spec_hash(args: argparse.Namespace, spec: Spec) -> str | None:
    """The verdict digest of the spec the run is bound to (``matcher.spec_digest``). Under a
    DAG the plan task stored the digest of the DAG's own spec, and the job's spec may be the
    run's effective one (the spec with the trigger's overrides, which are recorded and gated
    on their own): ``None`` keeps the plan's."""
    return None if args.dag_id is not None else verdict_digest(spec)


def _version(application: ApplicationSpec | None) -> str | None:
    """The version a spec's ``reference``/``candidate`` section names, if any."""
    return None if application is None else application.version


def build_outcome(
    result: NoisyComparison, report_path: str | None, extra: Mapping[str, Any] | None = None
) -> RunOutcome:
    """What the store keeps of the comparison: verdict (``noisy`` too), witnesses flagged
    when noise explains them, the noise report, statistics (and ``extra`` ones)."""
    verdict, report = result.verdict, result.report
    stats: dict[str, Any] = {
        **(extra or {}),
        **verdict.to_dict()["side_stats"],
        "seconds": round(result.seconds, 3),
    }
    if report is not None:
        stats["noise_seconds"] = round(result.noise_seconds, 3)
    return RunOutcome.from_verdict(
        verdict,
        verdict_name=result.status,
        noisy_ordinals=() if report is None else report.noisy_ordinals(),
        stats=stats,
        noise=None if report is None else report.to_dict(),
        report_path=report_path,
    )


def verdict_document(run_id: str, result: NoisyComparison) -> dict[str, Any]:
    """What ``--json-out`` and ``--report-dir`` write: the verdict, and the noise report."""
    report = result.report
    return {
        "run_id": run_id,
        **result.verdict.to_dict(),
        "verdict": result.status,
        "noise": None if report is None else report.to_dict(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    note_interrupts()  # a KeyboardInterrupt from a spec's function is not a Ctrl-C
    args = parse_args(argv)
    return run_job("match", lambda: run(args))


def run(args: argparse.Namespace) -> int:
    """Compare and record; raises on failure, after marking a started run failed."""
    spec = load_spec_at(args.spec)
    # Under spark-submit the JVM is already up (its gateway is in the environment): Spark
    # starts on it while this process opens the store and imports the matcher.
    starting = None
    if args.engine == SPARK and os.environ.get("PYSPARK_GATEWAY_PORT"):
        starting = StartingSession("match")
    store = Store.open(args.db)
    try:
        start = build_run_start(args, spec)
    except BaseException:
        store.close()
        raise
    runs = spec.noise.reference_runs
    if runs > 1 and not args.rerun_reference:
        say(f"match: note: noise.reference_runs is {runs} but no --rerun-reference was given")
    try:
        # The heartbeat renews the run's lease: if this process is killed, the run reads as
        # failed once the lease expires (matcher.store.lease), instead of running forever.
        with store.running(start), Heartbeat(store, start.run_id):
            table = differences_path(args, spec)
            result = compare(args, spec, table, starting)
            extra = args.extra_stats
            if table is not None:
                rows = result.verdict.total_divergences
                extra = {**(extra or {}), "differences": {"path": table, "rows": rows}}
            # Staged before the run is recorded (a file that cannot be written fails the run),
            # placed only once the store holds the verdict: a kill in between leaves no
            # finished document beside a run that reads failed.
            staged = stage_documents(args, verdict_document(start.run_id, result))
            try:
                outcome = build_outcome(result, args.report_dir, extra)
                store.record_run(start.run_id, outcome)
                for document in staged:
                    document.place()
            except BaseException:
                for document in staged:
                    document.discard()
                raise
    except Exception as exc:  # Spark's errors and a spec's function: translate at the boundary
        known = known_failure(exc, spec.functions)
        if known is None or known is exc:
            raise
        raise known from exc
    finally:
        store.close()
    verdict = result.verdict
    counts = ", ".join(f"{kind} {n}" for kind, n in verdict.counts.items())
    say(f"match: {start.run_id}: {result.status} ({counts}) in {result.seconds:.1f}s")
    if verdict.schema is not None and verdict.schema.findings:
        say(f"match: schema: {verdict.schema.summary()} under {verdict.schema.mode}")
    if result.report is not None:
        say(f"match: noise: {result.report.summary()}")
    return exit_code(result.status, record_only=args.record_only)


def differences_path(args: argparse.Namespace, spec: Spec) -> str | None:
    """Where the run's every difference goes (``output.differences``): the report folder's
    ``differences.parquet`` (a file from the core, a directory of Parquet files from
    Spark); ``None``: not asked for, or no report folder (said on stderr)."""
    if not spec.output.differences:
        return None
    if not args.report_dir:
        say("match: note: output.differences is set but no --report-dir was given: not written")
        return None
    return uris.join(args.report_dir, DIFFERENCES_FILE)


def compare(
    args: argparse.Namespace,
    spec: Spec,
    differences: str | None = None,
    starting: StartingSession | None = None,
) -> NoisyComparison:
    """The reference against its reruns and the candidate, on the engine ``--engine`` names;
    every difference written at ``differences`` when given. ``starting``: the Spark session
    already on its way (else one starts here)."""
    outputs = [args.reference, args.candidate, *args.rerun_reference]
    if args.engine == CORE:
        local = [uris.local_path(output) for output in outputs]
        for output, path in zip(outputs, local, strict=True):
            if path is None:
                raise InputError(f"{output}: --engine core reads local outputs only")
        reference, candidate, *reruns = [str(path) for path in local]
        result = compare_files_with_noise(
            spec,
            reference,
            candidate,
            reruns=reruns,
            limit=args.limit,
            noise_limit=args.noise_limit,
        )
        if differences is not None:
            target = uris.local_path(differences)
            if target is None:
                raise InputError(f"{differences}: --engine core writes local files only")
            write_verdict_differences(result.verdict, target)
        return result
    from matcher.spark.noise import compare_with_noise
    from matcher.spark.session import fit_shuffle_partitions, let_cached_plans_coalesce

    spark = session("match") if starting is None else starting.get()
    let_cached_plans_coalesce(spark)
    partitions = fit_shuffle_partitions(spark, outputs)
    if partitions is not None:
        say(f"match: note: small outputs: {partitions} shuffle partitions")
    return compare_with_noise(
        spark,
        spec,
        args.reference,
        args.candidate,
        reruns=args.rerun_reference,
        limit=args.limit,
        noise_limit=args.noise_limit,
        common=args.common_columns,
        differences=differences,
    )


def say(line: str) -> None:
    """Print one line of the job's log, control characters escaped: run ids, column names
    and noisy keys are users' and their data's text (``matcher.printable``)."""
    print(printable(line))


def exit_code(status: str, *, record_only: bool) -> int:
    """0 when equivalent (or, with ``--record-only``, whenever recorded), else 1."""
    return EXIT_EQUIVALENT if record_only or status == "equivalent" else EXIT_DIVERGENT


def stage_documents(
    args: argparse.Namespace, document: Mapping[str, Any]
) -> list[StagedOutput | StagedRemote]:
    """The verdict document staged for ``--json-out`` and ``--report-dir``'s ``match.json``
    (``matcher.files.output_paths``: never through or over a symbolic link, device or
    FIFO); ``place()`` each once the run is recorded."""
    text = json.dumps(json_safe(document), allow_nan=False, ensure_ascii=False) + "\n"
    targets = [(args.json_out, "--json-out")] if args.json_out else []
    if args.report_dir:
        targets.append((uris.join(args.report_dir, REPORT_FILE), "--report-dir"))
    staged: list[StagedOutput | StagedRemote] = []
    try:
        for target, what in targets:
            staged.append(stage_output(target, text, what))
    except BaseException:
        for done in staged:
            done.discard()
        raise
    return staged


if __name__ == "__main__":
    sys.exit(main())
