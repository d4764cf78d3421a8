"""The match job: is the candidate's output equivalent to the reference's? Decided on Spark.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' jobs/match.py \\
        --reference out/reference --candidate out/candidate --spec validations/taxi.yaml \\
        [--run-id ID] [--db URL] [--json-out verdict.json] [--limit N] [--common-columns]

Reads both outputs in stream order (``output.order_by``, else files by name and rows in
file order), matches them partitioned by the dependence key (``matcher.spark``), and writes
the verdict with its witnesses to the results store in one transaction under ``--run-id``
(a retried run replaces its earlier attempt). A job that fails leaves the run marked failed.

Exit codes: 0 equivalent, 1 divergent, 2 error. A user's error (bad spec, unreadable
output, incompatible schemas) is one line on stderr, ``match: error: ...``, no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matcher.errors import InputError, ParityError
from matcher.serialize import json_safe
from matcher.spec import load_spec
from matcher.store import RunOutcome, RunStart, Store
from parity.engine import compare_on_spark, first_line, is_spark_error

EXIT_EQUIVALENT, EXIT_DIVERGENT, EXIT_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="match", description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, metavar="PATH", help="reference output")
    parser.add_argument("--candidate", required=True, metavar="PATH", help="candidate output")
    parser.add_argument("--spec", required=True, metavar="SPEC.yaml", help="validation spec")
    parser.add_argument("--run-id", help="the run's key in the store (default: a new one)")
    parser.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    parser.add_argument("--json-out", metavar="PATH", help="also write the verdict as JSON")
    parser.add_argument("--limit", type=int, default=100, help="witnesses kept (default 100)")
    parser.add_argument("--trigger", default="manual", help="scheduled, adhoc, cli, manual")
    parser.add_argument(
        "--common-columns",
        action="store_true",
        help="compare the columns both outputs have instead of failing on a schema difference",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        spec = load_spec(args.spec)
        store = Store.open(args.db)
    except ParityError as exc:
        return _fail(exc)
    run_id = args.run_id or f"match-{uuid.uuid4().hex[:12]}"
    start = RunStart(
        run_id=run_id,
        validation=spec.name,
        trigger=args.trigger,
        engine="spark",
        spec={"file": spec.source, "dependence": spec.build_dependence().describe()},
    )
    try:
        with store.running(start):
            timed = compare_on_spark(
                _session(),
                spec,
                args.reference,
                args.candidate,
                limit=args.limit,
                common=args.common_columns,
            )
            stats = {**timed.verdict.to_dict()["side_stats"], "seconds": round(timed.seconds, 3)}
            outcome = RunOutcome.from_verdict(timed.verdict, stats=stats)
            store.record_run(run_id, outcome)
    except ParityError as exc:
        return _fail(exc)
    except Exception as exc:  # Spark's own errors: translate at the boundary
        if is_spark_error(exc):
            return _fail(InputError(first_line(exc)))
        raise
    finally:
        store.close()
    if args.json_out:
        document = {"run_id": run_id, **timed.verdict.to_dict()}
        text = json.dumps(json_safe(document), allow_nan=False, ensure_ascii=False)
        Path(args.json_out).write_text(text + "\n", encoding="utf-8")
    verdict = timed.verdict
    counts = ", ".join(f"{kind} {n}" for kind, n in verdict.counts.items())
    print(f"match: {run_id}: {verdict.status} ({counts}) in {timed.seconds:.1f}s")
    return EXIT_EQUIVALENT if verdict.equivalent else EXIT_DIVERGENT


def _session() -> Any:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("parity-match").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _fail(exc: BaseException) -> int:
    message = " ".join(str(exc).split()) or type(exc).__name__
    print(f"match: error: {message}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
