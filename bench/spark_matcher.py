"""Benchmark of the Spark match job against what a user would otherwise run, on the same files.

    .venv/bin/python bench/spark_matcher.py [--rows 5000000] [--keys 100003] [--data DIR]
        [--cases identical faulty_keys every_key every_row] [--processes] [--profile]

Writes Parquet outputs of ``--rows`` rows each (key, seq and a few typed columns), in stream
order by ``seq`` (the spec says ``output.order_by: [seq]``; the order column is ignored by the
equality, as a candidate numbers its own events): the reference, and as candidates:

* ``identical``: the reference's files, copied;
* ``faulty_keys``: faults in 1% of the keys per kind, at the middle event of the key (lost,
  duplicated, altered, moved after the key's next one or two events);
* ``every_key``: faults in every key: each loses one event, gains one (a copy), has one
  altered and two moved (past the key's next two and three events), at a tenth, three
  tenths, half, a fifth and seven tenths of the key;
* ``every_row``: a column bug: ``amount`` altered in every row.

On ``local[2]`` it times, on the same files and in one run:

* Parity: read both as streams, match partitioned by key, write the verdict to a store,
  and checks the counts by kind and column against the faults injected;
* (a) the order-blind multiset diff a user would write: ``a.exceptAll(b)`` and
  ``b.exceptAll(a)`` with counts (every column, ``seq`` too: a moved event is a changed row);
* (d) the floor of any order-aware check: each event's group, side and stream order as
  longs, one shuffle by group, its rank within (group, side) and an aggregate per group,
  no value read or hashed. ``exceptAll`` needs no rank; an order-aware check cannot do
  with less;
* on request (``--with b c c2``): (b) datacompy's ``SparkSQLCompare`` joined on (key, seq);
  (c) reading both with a count (footers only); (c') reading every value (``noop`` sink).

and prints each time with the ratios. With ``--processes`` it times whole processes
instead, which is what a user waits for (each pays its JVM, its imports, its session):
``spark-submit jobs/match.py`` (Parity's match job, its verdict stored in SQLite) against
``spark-submit`` of the four-line ``exceptAll`` script a user would write
(``EXCEPT_ALL_SCRIPT``), both ``--master local[2]`` with the same driver memory.
``--profile`` times the phases of Parity's faulty path in one process (screening, the
chains' job, the core's loop for keys with a NaN, the witnesses).

With ``--processes --with s n`` it also times two bounds of Parity's plan, as whole
processes (``PLAN_BOUND_SCRIPT``): its Spark work with an explanation that costs nothing,
up to the chains' job's input (every event of the disagreeing groups with its digests,
shuffled by group and sorted by position, sent to a ``noop`` sink) and no further: (s)
screening first, as the job does; (n) no screening, every group's events shuffled, as a
plan that screens and explains in one job would. What a plan's explanation may cost
before it loses to ``exceptAll`` is what these leave.

Each contender runs once untimed (the first run of anything in a fresh JVM pays for
compiling Spark's code paths, and Parity's differ from the others'), then ``--repeat``
times in a row (default 2); its median time is the one compared, as a shared machine is
noisy. Generated files are reused when present.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from matcher.dependence import by_key
from matcher.equality import Equality
from matcher.spark import compare_dataframes, read_stream
from matcher.spark.schema import ORD, POS
from matcher.store import RunOutcome, RunStart, Store

CASES = ("identical", "faulty_keys", "every_key", "every_row")
EQUALITY = Equality(ignore=frozenset({"seq"}))


def session(memory: str) -> Any:
    """``local[2]`` with ``memory`` for the driver (``default``: Spark's own, 1g)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("parity-bench")
    if memory != "default":
        builder = builder.config("spark.driver.memory", memory)
    spark = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def fault_ranks(rows: int, keys: int) -> dict[str, int]:
    """The ranks in its key of ``every_key``'s faults (a key has ``rows // keys`` events or
    one more)."""
    n = rows // keys
    if n < 10:
        raise SystemExit(f"every_key needs 10 events a key: --rows {rows} --keys {keys}")
    return {"lost": n // 10, "moved2": n // 5, "duplicated": 3 * n // 10, "altered": n // 2,
            "moved3": 7 * n // 10}  # fmt: skip


def injected(case: str, rows: int, keys: int) -> tuple[Counter[str], Counter[str]]:
    """The counts by kind and by column that the faults of ``case`` make."""
    kinds: Counter[str] = Counter()
    if case == "faulty_keys":
        per_kind = [sum(1 for k in range(keys) if k % 100 == c) for c in range(4)]
        names = ("loss", "duplication", "corruption", "reordering")
        kinds.update(dict(zip(names, per_kind, strict=True)))
    elif case == "every_key":
        kinds.update(loss=keys, duplication=keys, corruption=keys, reordering=2 * keys)
    elif case == "every_row":
        kinds.update(corruption=rows)
    return kinds, Counter(amount=kinds["corruption"]) if kinds["corruption"] else Counter()


def generate(spark: Any, data: Path, rows: int, keys: int, cases: list[str]) -> dict[str, Path]:
    """The reference and each case's candidate, as Parquet directories in ``seq`` order."""
    from pyspark.sql import functions as F

    paths = {name: data / name for name in ("reference", *cases)}
    base = spark.range(rows).select(
        F.col("id").alias("o"),
        (F.col("id") % keys).alias("key"),
        (F.col("id") * 4).alias("seq"),
        F.round(F.rand(1) * 1000, 2).alias("amount"),
        F.concat(F.lit("item-"), (F.col("id") % 97).cast("string")).alias("label"),
        (F.col("id") % 3 == 0).alias("flag"),
    )
    rank, kind, seq = F.floor(F.col("o") / keys), F.col("key") % 100, F.col("seq")

    def write(frame: Any, path: Path) -> None:
        if not (path / "_SUCCESS").exists():
            ordered = frame.repartitionByRange(2, "seq").sortWithinPartitions("seq")
            ordered.drop("o").write.mode("overwrite").parquet(str(path))

    def candidate(lost: Any, duplicated: Any, altered: Any, moved: Any, past: Any) -> Any:
        moved_to = (F.col("o") + past * keys) * 4 + 1
        return (
            base.where(~lost)
            .withColumn("amount", F.when(altered, F.col("amount") + 1).otherwise(F.col("amount")))
            .withColumn("seq", F.when(moved, moved_to).otherwise(seq))
            .unionByName(base.where(duplicated))
        )

    write(base, paths["reference"])
    no = F.lit(False)
    middle = rank == rows // keys // 2
    r = fault_ranks(rows, keys) if "every_key" in cases else {}
    faults = {
        "faulty_keys": lambda: candidate(
            middle & (kind == 0), middle & (kind == 1), middle & (kind == 2),
            middle & (kind == 3), F.when(F.col("key") % 200 == 3, 1).otherwise(2),
        ),
        "every_key": lambda: candidate(
            rank == r["lost"], rank == r["duplicated"], rank == r["altered"],
            (rank == r["moved2"]) | (rank == r["moved3"]),
            F.when(rank == r["moved2"], 2).otherwise(3),
        ),
        "every_row": lambda: candidate(no, no, F.lit(True), no, F.lit(0)),
    }  # fmt: skip
    for case in cases:
        if case == "identical":
            if not paths[case].exists():
                shutil.copytree(paths["reference"], paths[case])
        else:
            write(faults[case](), paths[case])
    return paths


SPEC = """\
name: bench_spark_matcher
output:
  format: parquet
  order_by: [seq]
dependence:
  key: [key]
equality:
  ignore: [seq]
"""

EXCEPT_ALL_SCRIPT = """\
import sys
from pyspark.sql import SparkSession
a, b = (SparkSession.builder.getOrCreate().read.parquet(p) for p in sys.argv[1:3])
print(a.exceptAll(b).count(), "only in the reference,", b.exceptAll(a).count(), "in the candidate")
"""

#: (d) as a whole process: the order-aware floor on these outputs, whose stream order is
#: ``seq`` (``output.order_by``), as ``run_order_floor`` computes it in one process
ORDER_FLOOR_SCRIPT = """\
import sys
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.getOrCreate()
a, b = (spark.read.parquet(p).select(F.xxhash64("key").alias("g"), F.lit(side).alias("side"),
        F.col("seq").alias("o")) for side, p in enumerate(sys.argv[1:3]))
rank = "row_number() OVER (PARTITION BY g, side ORDER BY o) AS r"
groups = a.unionByName(b).selectExpr("g", "side", rank).groupBy("g")
groups.agg(F.expr("bit_xor(xxhash64(side, r))")).write.format("noop").mode("overwrite").save()
"""

#: (s) and (n): Parity's plan up to the chains' job's input (see the module docstring)
PLAN_BOUND_SCRIPT = """\
import sys
from pathlib import Path
from pyspark.sql import SparkSession
from bench.spark_matcher import EQUALITY, read_both
from matcher.dependence import by_key
from matcher.spark.comparison import SparkComparison
from matcher.spark.grouped_run import grouped_plan
from matcher.spark.presorted import natural_streams
from matcher.spark.screen import Screen, chain_events, screen
from matcher.spark.session import let_cached_plans_coalesce
spark = SparkSession.builder.getOrCreate()
let_cached_plans_coalesce(spark)  # as the match job
mode, reference, candidate = sys.argv[1:4]
ref, cand = read_both(spark, Path(reference), Path(candidate))
comparison = SparkComparison(ref, cand, by_key("key"), EQUALITY)
streams = comparison.streams()
plan = grouped_plan(streams, comparison.route(streams).layout, EQUALITY)
if mode == "screened":
    found = screen(plan, streams.reference, streams.candidate)
    streams = natural_streams(streams, found.reference_runs) if found.n_bad else streams
else:  # as if screening had found every group disagreeing, without screening
    found = Screen((0, 0), (0, 0), 0, n_bad=1, bad_events=0, bad=None, groups=1)
    streams = natural_streams(streams)
if found.n_bad:
    events = chain_events(plan, streams.reference, streams.candidate, found)
    events.write.format("noop").mode("overwrite").save()
"""


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def read_both(spark: Any, reference: Path, candidate: Path) -> list[Any]:
    return [
        read_stream(spark, str(p), format="parquet", order_by=["seq"])
        for p in (reference, candidate)
    ]


def run_parity(spark: Any, reference: Path, candidate: Path, db: str, expected: Any) -> str:
    ref, cand = read_both(spark, reference, candidate)
    verdict = compare_dataframes(ref, cand, by_key("key"), EQUALITY, limit=100)
    with Store.open(db) as store:
        run = RunStart(run_id=f"bench-{candidate.name}", validation="bench", engine="spark")
        store.start_run(run)
        store.record_run(run.run_id, RunOutcome.from_verdict(verdict))
    kinds, columns = expected
    got = (+Counter(verdict.counts), +Counter(verdict.column_mismatches))
    check = "as injected" if got == (kinds, columns) else f"INJECTED {dict(kinds)} {dict(columns)}"
    counts = ", ".join(f"{k} {n:,}" for k, n in verdict.counts.items() if n)
    return f"{verdict.status} ({counts}; {check})"


def run_except_all(spark: Any, reference: Path, candidate: Path) -> str:
    a, b = spark.read.parquet(str(reference)), spark.read.parquet(str(candidate))
    only_a, only_b = a.exceptAll(b).count(), b.exceptAll(a).count()
    return f"{only_a:,} only in reference, {only_b:,} only in candidate"


def run_datacompy(spark: Any, reference: Path, candidate: Path) -> str:
    from datacompy.spark import SparkSQLCompare

    a, b = spark.read.parquet(str(reference)), spark.read.parquet(str(candidate))
    compare = SparkSQLCompare(spark, a, b, join_columns=["key", "seq"])
    return f"matches={compare.matches()}, {compare.count_matching_rows():,} matching rows"


def run_floor(spark: Any, reference: Path, candidate: Path) -> str:
    a, b = spark.read.parquet(str(reference)), spark.read.parquet(str(candidate))
    return f"{a.count():,} + {b.count():,} rows"


def run_full_read(spark: Any, reference: Path, candidate: Path) -> str:
    for path in (reference, candidate):
        spark.read.parquet(str(path)).write.format("noop").mode("overwrite").save()
    return "every value of both outputs read"


def run_order_floor(spark: Any, reference: Path, candidate: Path) -> str:
    from pyspark.sql import functions as F

    streams = read_both(spark, reference, candidate)
    sides = [
        stream.select(
            F.xxhash64("key").alias("g"),
            F.lit(side).alias("side"),
            F.col(ORD if ORD in stream.columns else POS).alias("o"),
        )
        for side, stream in enumerate(streams)
    ]
    rank = "row_number() OVER (PARTITION BY g, side ORDER BY o)"
    ranked = sides[0].unionByName(sides[1]).selectExpr("g", "side", f"{rank} AS r")
    per_group = ranked.groupBy("g").agg(F.expr("bit_xor(xxhash64(side, r))"))
    per_group.write.format("noop").mode("overwrite").save()
    return "every event ranked in its group and side"


PHASES = ("screen", "run_chains", "match_partitions", "explain_chosen")


def profiled(spark: Any, reference: Path, candidate: Path, db: str, expected: Any) -> str:
    """Parity once, with the time spent in each phase of the screened path."""
    from matcher.spark import screen as screen_module

    spent: dict[str, float] = dict.fromkeys(PHASES, 0.0)
    real = {name: getattr(screen_module, name) for name in PHASES}

    def timer(name: str) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return real[name](*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - started

        return run

    for name in PHASES:
        setattr(screen_module, name, timer(name))
    try:
        took, _ = timed(lambda: run_parity(spark, reference, candidate, db, expected))
    finally:
        for name, function in real.items():
            setattr(screen_module, name, function)
    phases = {"screening": spent["screen"]}
    if spent["run_chains"]:
        inner = spent["match_partitions"] + spent["explain_chosen"]
        phases["chains' job"] = spent["run_chains"] - inner
        phases["core loop (NaN keys)"] = spent["match_partitions"]
        phases["witnesses"] = spent["explain_chosen"]
    else:  # few events differ: the core's loop and the driver explain them exactly
        phases["core loop and driver"] = spent["match_partitions"]
    phases["read, plan, store"] = took - sum(phases.values())
    return f"{took:.1f} s: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items())


LABELS = {
    "parity": "Parity: spark-submit jobs/match.py",
    "a": "(a) exceptAll script",
    "d": "(d) order-aware floor script",
    "s": "(s) plan, screened, no explanation",
    "n": "(n) plan, unscreened, no explanation",
}


def run_processes(data: Path, paths: dict[str, Path], cases: list[str], memory: str,
                  repeat: int, bounds: list[str]) -> None:  # fmt: skip
    """Whole ``spark-submit`` processes: the match job against the ``exceptAll`` script and
    the order-aware floor's, and the plan's ``bounds`` asked for (``s``, ``n``)."""
    root = Path(__file__).resolve().parent.parent
    bin_dir = Path(sys.executable).parent
    spec, script, floor = data / "bench_spec.yaml", data / "except_all.py", data / "floor.py"
    bound = data / "plan_bound.py"
    spec.write_text(SPEC)
    script.write_text(EXCEPT_ALL_SCRIPT)
    floor.write_text(ORDER_FLOOR_SCRIPT)
    bound.write_text(PLAN_BOUND_SCRIPT)
    store_dir = Path(tempfile.mkdtemp(prefix="parity-bench-store-"))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(root))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    submit = [str(bin_dir / "spark-submit"), "--master", "local[2]"]
    if memory != "default":
        submit += ["--driver-memory", memory]
    submit += ["--conf", "spark.ui.enabled=false"]
    for case in cases:
        reference, candidate = str(paths["reference"]), str(paths[case])
        db = f"sqlite:///{store_dir / 'results.db'}"
        contenders = {
            "parity": [*submit, str(root / "jobs" / "match.py"), "--reference", reference,
                       "--candidate", candidate, "--spec", str(spec), "--db", db],
            "a": [*submit, str(script), reference, candidate],
            "d": [*submit, str(floor), reference, candidate],
            "s": [*submit, str(bound), "screened", reference, candidate],
            "n": [*submit, str(bound), "unscreened", reference, candidate],
        }  # fmt: skip
        contenders = {k: v for k, v in contenders.items() if k in ("parity", "a", "d", *bounds)}
        print(f"\ncandidate: {case}, whole spark-submit processes (median of {repeat} runs)")
        seconds = {}
        for name, argv in contenders.items():
            runs = []
            for attempt in range(repeat + 1):  # the first, untimed: the page cache
                started = time.perf_counter()
                done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
                if done.returncode not in (0, 1):
                    raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
                if attempt:
                    runs.append(time.perf_counter() - started)
            seconds[name] = statistics.median(runs)
            each = ", ".join(f"{t:.1f}" for t in runs)
            label = LABELS[name]
            print(f"  {label:<36} {seconds[name]:>7.1f} s  [{each}]  exit {done.returncode}")
        print(f"  (a) / Parity = {seconds['a'] / seconds['parity']:.2f}x, "
              f"(d) / Parity = {seconds['d'] / seconds['parity']:.2f}x")  # fmt: skip
        for name in bounds:
            print(f"  (a) / ({name}) = {seconds['a'] / seconds[name]:.2f}x")
    shutil.rmtree(store_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=100_003)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "parity-bench")
    parser.add_argument("--memory", default="8g", help="spark.driver.memory (default: Spark's)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    parser.add_argument("--skip", nargs="*", default=[], help="contenders to skip: parity a d")
    parser.add_argument(
        "--with", dest="extra", nargs="*", default=[], help="also: b c c2; with --processes: s n"
    )
    parser.add_argument("--repeat", type=int, default=2, help="runs of each, median compared")
    parser.add_argument(
        "--processes", action="store_true", help="time whole spark-submit processes instead"
    )
    parser.add_argument("--profile", action="store_true", help="Parity's phases, one process")
    args = parser.parse_args(argv)

    spark = session(args.memory)
    data = args.data / f"ob-{args.rows}-{args.keys}"
    paths = generate(spark, data, args.rows, args.keys, args.cases)
    print(f"{args.rows:,} rows per side, {args.keys:,} keys, local[2]; files in {data}")
    if args.processes:
        spark.stop()  # its JVM's memory is the processes'
        bounds = [b for b in ("s", "n") if b in args.extra]
        run_processes(data, paths, args.cases, args.memory, args.repeat, bounds)
        return 0
    store_dir = Path(tempfile.mkdtemp(prefix="parity-bench-store-"))
    db = f"sqlite:///{store_dir / 'results.db'}"
    expected = {case: injected(case, args.rows, args.keys) for case in args.cases}
    # datacompy last: it caches a join of both outputs, and the JVM is slower for a while
    # after it (its garbage), which would count against whatever ran next
    contenders: list[tuple[str, str, Callable[[str, Path, Path], str]]] = [
        ("parity", "Parity (read + match + store)",
         lambda case, r, c: run_parity(spark, r, c, db, expected[case])),
        ("a", "(a) exceptAll both ways", lambda case, r, c: run_except_all(spark, r, c)),
        ("c", "(c) floor: read + count", lambda case, r, c: run_floor(spark, r, c)),
        ("c2", "(c') floor: read every value", lambda case, r, c: run_full_read(spark, r, c)),
        ("d", "(d) floor: order-aware, longs", lambda case, r, c: run_order_floor(spark, r, c)),
        ("b", "(b) datacompy SparkSQLCompare", lambda case, r, c: run_datacompy(spark, r, c)),
    ]  # fmt: skip
    chosen = [c for c in contenders if c[0] not in args.skip and (c[0] in ("parity", "a", "d")
              or c[0] in args.extra)]  # fmt: skip
    warmed = False
    for case in args.cases:
        print(f"\ncandidate: {case} (median of {args.repeat} runs, each run's time in brackets)")
        reference, candidate = paths["reference"], paths[case]
        runs: dict[str, list[float]] = {}
        outcomes: dict[str, str] = {}
        for name, _label, run in chosen:
            if not warmed:  # one untimed run: Spark compiles its code paths
                spark.catalog.clearCache()
                run(case, reference, candidate)
            for _ in range(args.repeat):
                spark.catalog.clearCache()
                took, outcomes[name] = timed(lambda: run(case, reference, candidate))  # noqa: B023
                runs.setdefault(name, []).append(took)
        warmed = True
        seconds = {name: statistics.median(times) for name, times in runs.items()}
        for name, label, _run in chosen:
            each = ", ".join(f"{t:.1f}" for t in runs[name])
            print(f"  {label:<32} {seconds[name]:>8.1f} s  [{each}]  {outcomes[name]}")
        parity = seconds.get("parity")
        if parity:
            for name, label in (("a", "(a)"), ("b", "(b)")):
                if name in seconds:
                    print(f"  {label} / Parity = {seconds[name] / parity:.2f}x")
            for name, label in (("c", "(c)"), ("c2", "(c')"), ("d", "(d)")):
                if name in seconds:
                    print(f"  Parity / floor {label} = {parity / seconds[name]:.2f}x")
        if "a" in seconds and "d" in seconds:  # what an order-aware check can gain at most
            print(f"  (a) / floor (d) = {seconds['a'] / seconds['d']:.2f}x")
        if args.profile and case != "identical":
            print("  profile: " + profiled(spark, reference, candidate, db, expected[case]))
    shutil.rmtree(store_dir, ignore_errors=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
