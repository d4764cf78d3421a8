"""The Spark engine at the scale users run it: millions of rows, on the layouts Spark writes.

Not part of the default test run (minutes, and gigabytes on disk): ``make scale`` runs it
(``pytest --scale -m scale``). ``PARITY_SCALE_ROWS`` sets the rows per output (default
3,000,000, the size at which a sort's partitions first differed between jobs and identical
outputs read as divergent).

Every layout Spark really produces is covered: the two files ``local[2]`` writes; one file;
files read in many splits (small row groups, small splits); many small files; small row
groups. On each, with and without ``output.order_by``:

* identical outputs, byte for byte: equivalent, every row counted on both sides;
* the same rows laid out otherwise (other files, other order where the spec allows it):
  equivalent;
* a known-faulty candidate (one event lost, one duplicated, one altered, one moved after
  its key's next two events, each in a key of its own): the kinds and counts are those the
  core gives on the four keys' events alone (keys are independent under ``by_key``), the
  row counts are exact, and every other event is matched.

And, on the first layout in file order, the faulty patterns of issue 31, each over
``EXACT_LIMIT`` events in disagreeing keys, so that the chains are explained on digests
where the data is (``matcher.spark.chains_run``) and none reaches the core's loop: a fault
in 1% of the keys per kind; faults in every key (one lost, one extra, one altered and two
moved events each); every row corrupted. The kinds, counts, columns, column profile and
matched events are the core's on the same events (the faulty keys' alone, or all of them).

And the table of every difference (``output.differences``), on every faulty layout and
pattern: a row per divergence the verdict counts, written by the executors.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from matcher import compare
from matcher.serialize import json_safe
from matcher.spark import screen as screen_module
from matcher.spark.grouped_run import EXACT_LIMIT
from matcher.spark.outputs import compare_on_spark
from matcher.spec import Spec, parse_spec
from matcher.verdict import Verdict

pytestmark = [pytest.mark.scale, pytest.mark.spark]

ROOT = Path(__file__).resolve().parent.parent
ROWS = int(os.environ.get("PARITY_SCALE_ROWS", "3000000"))
KEYS = 100_003
#: reference ids whose events the faulty candidate loses, duplicates, alters and moves
LOST, DUPLICATED, ALTERED, MOVED = 1_000, 2_000, 3_000, 4_000
FAULTY_KEYS = [i % KEYS for i in (LOST, DUPLICATED, ALTERED, MOVED)]
#: the rank in its key of the event that a key of the 1% case has its fault at
MIDDLE = ROWS // KEYS // 2
#: the keys of the 1% case: ``k % 100`` is 0 lost, 1 duplicated, 2 altered, 3 moved
ONE_PERCENT_KEYS = [k for k in range(KEYS) if k % 100 < 4]
#: the ranks in its key of each fault of the every-key case (a key has ``PER_KEY`` events
#: or one more)
PER_KEY = ROWS // KEYS
EVERY_KEY = {"lost": PER_KEY // 10, "moved2": PER_KEY // 5, "duplicated": 3 * PER_KEY // 10,
             "altered": PER_KEY // 2, "moved3": 7 * PER_KEY // 10}  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """How an output is written (files, Parquet row group size) and read (split size)."""

    name: str
    files: int
    row_group_bytes: int | None = None
    split_bytes: int | None = None


LAYOUTS = [
    Layout("two files as local[2] writes them", 2),
    Layout("one file", 1),
    Layout("files read in many splits", 2, row_group_bytes=1 << 20, split_bytes=4 << 20),
    Layout("many small files", 200),
    Layout("small row groups", 4, row_group_bytes=256 << 10),
]


@pytest.fixture(scope="module")
def session() -> Iterator[SparkSession]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("parity-scale")
        .config("spark.driver.memory", "6g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")  # as the match job's
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    yield spark


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scale")


def spec(order_by: bool, ignore_seq: bool = False) -> Spec:
    text: dict[str, Any] = {
        "output": {"format": "parquet", **({"order_by": ["seq"]} if order_by else {})},
        "dependence": {"key": ["k"]},
    }
    if ignore_seq:
        text["equality"] = {"ignore": ["seq"]}
    return parse_spec(text)


def rows(spark: SparkSession) -> DataFrame:
    """The issue's reference: ``ROWS`` events over 100,003 keys, ``o`` its stream order."""
    return spark.range(ROWS).select(
        F.col("id").alias("o"),
        (F.col("id") % KEYS).alias("k"),
        F.col("id").alias("seq"),
        ((F.col("id") * 7) % 1000).alias("v"),
        F.sha2(F.col("id").cast("string"), 256).substr(1, 16).alias("payload"),
    )


def write(frame: DataFrame, layout: Layout, path: Path, order: str | None = "o") -> None:
    """Write ``frame`` in ``order`` (file names and rows within files) without that column;
    ``order=None``: hash-partitioned by key, in whatever order the shuffle gives."""
    if order is None:
        frame = frame.repartition(layout.files, "k")
    else:
        frame = frame.repartitionByRange(layout.files, order).sortWithinPartitions(order)
    writer = frame.drop("o").write.mode("overwrite")
    if layout.row_group_bytes:
        writer = writer.option("parquet.block.size", layout.row_group_bytes)
    writer.parquet(str(path))


@dataclass(frozen=True, eq=False)
class Faults:
    """Which reference events a faulty candidate loses, duplicates, alters (``v + 1``) and
    moves, and past how many of its key's next events a moved one goes: conditions and a
    count on the reference's columns."""

    lost: Column
    duplicated: Column
    altered: Column
    moved: Column
    moved_past: Column


def one_of_each() -> Faults:
    """One fault of each kind, each in a key of its own; the moved event goes after its
    key's next two."""
    seq = F.col("seq")
    return Faults(seq == LOST, seq == DUPLICATED, seq == ALTERED, seq == MOVED, F.lit(2))


def one_percent() -> Faults:
    """A fault at the ``MIDDLE`` event of 1% of the keys per kind (``ONE_PERCENT_KEYS``).
    A moved event goes after its key's next one when ``k % 200 == 3`` (a swap, a shape the
    SQL classifies), after the next two when ``k % 200 == 103`` (the core's loop's)."""
    middle = F.col("seq") == F.col("k") + MIDDLE * KEYS
    kind = F.col("k") % 100
    return Faults(
        lost=middle & (kind == 0),
        duplicated=middle & (kind == 1),
        altered=middle & (kind == 2),
        moved=middle & (kind == 3),
        moved_past=F.when(F.col("k") % 200 == 3, 1).otherwise(2),
    )


def every_key() -> Faults:
    """In every key, one lost, one duplicated, one altered and two moved events (past the
    key's next two and next three), at the ranks ``EVERY_KEY``."""
    rank = F.floor(F.col("seq") / KEYS)
    return Faults(
        lost=rank == EVERY_KEY["lost"],
        duplicated=rank == EVERY_KEY["duplicated"],
        altered=rank == EVERY_KEY["altered"],
        moved=(rank == EVERY_KEY["moved2"]) | (rank == EVERY_KEY["moved3"]),
        moved_past=F.when(rank == EVERY_KEY["moved2"], 2).otherwise(3),
    )


def every_row() -> Faults:
    """A column bug: ``v`` altered in every row."""
    return Faults(F.lit(False), F.lit(False), F.lit(True), F.lit(False), F.lit(0))


def faulty(spark: SparkSession, order_by: bool, faults: Faults) -> DataFrame:
    """The reference with ``faults``; ``o`` is the candidate's stream order (under
    ``order_by`` it becomes ``seq``, which the spec then ignores)."""
    base = rows(spark).withColumn("o", F.col("o") * 4)
    moved_to = (F.col("seq") + faults.moved_past * KEYS) * 4 + 1
    events = (
        base.where(~faults.lost)
        .withColumn("v", F.when(faults.altered, F.col("v") + 1).otherwise(F.col("v")))
        .withColumn("o", F.when(faults.moved, moved_to).otherwise(F.col("o")))
        .unionByName(base.where(faults.duplicated).withColumn("o", F.col("o") + 1))
    )
    return events.withColumn("seq", F.col("o")) if order_by else events


@pytest.fixture(scope="module")
def outputs(session: SparkSession, data: Path) -> dict[str, Path]:
    """Every output, written once per layout: ``<layout>/{ref,same,relaid,faulty,faulty_ob}``."""
    written = {}
    for layout in LAYOUTS:
        root = data / re.sub(r"[^a-z0-9]+", "_", layout.name)  # no glob characters
        write(rows(session), layout, root / "ref")
        shutil.copytree(root / "ref", root / "same")
        write(rows(session), layout, root / "relaid_ob", order=None)
        relaid = rows(session).withColumn("o", F.col("k") * ROWS + F.col("seq"))
        write(relaid, layout, root / "relaid")  # keys one after another, each in order
        write(faulty(session, False, one_of_each()), layout, root / "faulty")
        write(faulty(session, True, one_of_each()), layout, root / "faulty_ob")
        written[layout.name] = root
    return written


PATTERNS = {"one_percent": one_percent, "every_key": every_key, "every_row": every_row}


@pytest.fixture(scope="module")
def pattern_outputs(session: SparkSession, data: Path) -> Path:
    """The reference and each pattern's candidate on the first layout:
    ``<root>/{ref,<pattern>}``."""
    root = data / "patterns"
    write(rows(session), LAYOUTS[0], root / "ref")
    for name, faults in PATTERNS.items():
        write(faulty(session, False, faults()), LAYOUTS[0], root / name)
    return root


@pytest.fixture
def reads(session: SparkSession, request: pytest.FixtureRequest) -> Iterator[Layout]:
    layout: Layout = request.param
    old = session.conf.get("spark.sql.files.maxPartitionBytes")
    assert old is not None  # Spark's default, 128 MiB, when nothing set it
    if layout.split_bytes:
        session.conf.set("spark.sql.files.maxPartitionBytes", str(layout.split_bytes))
    yield layout
    session.conf.set("spark.sql.files.maxPartitionBytes", old)


def judge(session: SparkSession, spec: Spec, reference: Path, candidate: Path) -> Verdict:
    return compare_on_spark(session, spec, str(reference), str(candidate), limit=100).verdict


def core_on_faulty_keys(
    session: SparkSession,
    spec: Spec,
    reference: Path,
    candidate: Path,
    keys: Sequence[int] | None = FAULTY_KEYS,
) -> Verdict:
    """The core's verdict on the faulty ``keys``' events alone (``None``: on all), read in
    stream order by the core's own reader semantics: ``seq`` order under ``order_by``, else
    file then row."""
    sides = []
    for path in (reference, candidate):
        frame = session.read.parquet(str(path))
        if keys is not None:
            frame = frame.where(F.col("k").isin(list(keys)))
        if spec.output.order_by:
            frame = frame.orderBy("seq")
        else:  # files in name order, rows in file order
            frame = frame.select(
                "*",
                F.col("_metadata.file_name").alias("f"),
                F.col("_metadata.row_index").alias("r"),
            ).orderBy("f", "r")
        sides.append(frame.select("k", "seq", "v", "payload").toArrow().to_pylist())
    return compare(sides[0], sides[1], spec.build_dependence(), spec.build_equality())


CASES = [pytest.param(layout, id=layout.name) for layout in LAYOUTS]


@pytest.mark.parametrize("order_by", [False, True], ids=["file order", "order_by seq"])
@pytest.mark.parametrize("reads", CASES, indirect=True)
def test_identical_and_relaid_outputs_are_equivalent(
    session: SparkSession, outputs: dict[str, Path], reads: Layout, order_by: bool
) -> None:
    root = outputs[reads.name]
    relaid = root / ("relaid_ob" if order_by else "relaid")
    for candidate in (root / "same", relaid):
        verdict = judge(session, spec(order_by), root / "ref", candidate)
        assert (verdict.status, verdict.reference_count, verdict.candidate_count) == (
            "equivalent",
            ROWS,
            ROWS,
        ), (candidate.name, dict(verdict.counts))
        assert verdict.matched_count == ROWS


@pytest.mark.parametrize("order_by", [False, True], ids=["file order", "order_by seq"])
@pytest.mark.parametrize("reads", CASES, indirect=True)
def test_a_faulty_candidate_gets_the_cores_kinds_and_counts(
    session: SparkSession, outputs: dict[str, Path], reads: Layout, order_by: bool
) -> None:
    root = outputs[reads.name]
    candidate = root / ("faulty_ob" if order_by else "faulty")
    rules = spec(order_by, ignore_seq=True)
    verdict = judge(session, rules, root / "ref", candidate)
    expected = core_on_faulty_keys(session, rules, root / "ref", candidate)
    assert expected.status == "divergent"
    assert sum(expected.counts.values()) >= 4  # each fault is seen
    assert verdict.status == "divergent"
    assert dict(verdict.counts) == dict(expected.counts)
    assert (verdict.reference_count, verdict.candidate_count) == (ROWS, ROWS)
    untouched = ROWS - expected.reference_count
    assert verdict.matched_count == untouched + expected.matched_count


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_faulty_patterns_get_the_cores_counts_without_the_cores_loop(
    session: SparkSession,
    pattern_outputs: Path,
    monkeypatch: pytest.MonkeyPatch,
    pattern: str,
) -> None:
    """Past ``EXACT_LIMIT`` events in disagreeing keys, every chain is explained on digests
    (a spy on the core's loop sees no event: no key holds a NaN), with the core's kinds,
    counts, columns and matched events on the same events."""
    given: list[int] = []
    real = screen_module.match_partitions  # type: ignore[attr-defined]

    def spy(partitioned: DataFrame, *args: Any, **kwargs: Any) -> Any:
        given.append(partitioned.count())
        return real(partitioned, *args, **kwargs)

    monkeypatch.setattr(screen_module, "match_partitions", spy)
    rules = spec(order_by=False)
    reference, candidate = pattern_outputs / "ref", pattern_outputs / pattern
    verdict = judge(session, rules, reference, candidate)
    explained = [re.match(r"(\d+) events of (\d+) groups that differ", w) for w in verdict.warnings]
    (events,) = [int(m[1]) for m in explained if m]
    assert events > EXACT_LIMIT, f"{ROWS} rows are too few for this case"
    assert given == [0]
    keys = ONE_PERCENT_KEYS if pattern == "one_percent" else None
    expected = core_on_faulty_keys(session, rules, reference, candidate, keys)
    injected = {
        "one_percent": {"loss": 1001, "duplication": 1001, "reordering": 1000, "corruption": 1001},
        "every_key": {
            "loss": KEYS,
            "duplication": KEYS,
            "reordering": 2 * KEYS,
            "corruption": KEYS,
        },
        "every_row": {"loss": 0, "duplication": 0, "reordering": 0, "corruption": ROWS},
    }[pattern]
    assert dict(expected.counts) == injected
    assert dict(verdict.counts) == injected
    assert dict(verdict.column_mismatches) == dict(expected.column_mismatches)
    assert dict(verdict.column_mismatches) == {"v": injected["corruption"]}
    # the column profile, over every corruption, numpy on the executors: the core's, exactly
    assert json_safe(dict(verdict.column_profiles)) == json_safe(dict(expected.column_profiles))
    assert (verdict.reference_count, verdict.candidate_count) == (ROWS, ROWS)
    untouched = ROWS - expected.reference_count
    assert verdict.matched_count == untouched + expected.matched_count


def test_the_match_job_on_identical_outputs_is_equivalent(
    outputs: dict[str, Path], data: Path
) -> None:
    """The report's own reproduction: ``spark-submit jobs/match.py`` on two identical
    outputs of ``ROWS`` rows, ``order_by: [seq]``, exits 0 with every row counted."""
    root = outputs[LAYOUTS[0].name]
    spec_file = data / "order_by.yaml"
    spec_file.write_text(
        "output: {format: parquet, order_by: [seq]}\ndependence: {key: [k]}\n", encoding="utf-8"
    )
    verdict_file = data / "verdict.json"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "spark-submit"),
            "--master",
            "local[2]",
            str(ROOT / "jobs" / "match.py"),
            "--reference",
            str(root / "ref"),
            "--candidate",
            str(root / "same"),
            "--spec",
            str(spec_file),
            "--db",
            f"sqlite:///{data / 'results.db'}",
            "--json-out",
            str(verdict_file),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    document = json.loads(verdict_file.read_text(encoding="utf-8"))
    assert (document["verdict"], document["reference_count"], document["candidate_count"]) == (
        "equivalent",
        ROWS,
        ROWS,
    )


EXPORTS = [*[pytest.param(layout.name, id=f"faulty {layout.name}") for layout in LAYOUTS]]
EXPORTS += [pytest.param(pattern, id=pattern) for pattern in PATTERNS]


@pytest.mark.parametrize("case", EXPORTS)
def test_every_difference_is_exported_where_the_data_is(
    session: SparkSession,
    outputs: dict[str, Path],
    pattern_outputs: Path,
    tmp_path: Path,
    case: str,
) -> None:
    """``output.differences`` at scale (issue 32): the table Spark writes into the run's
    folder has a row per divergence the verdict counts, kind by kind, on every faulty
    layout and every fault pattern (up to every row corrupted). It is written by executors
    (``matcher.spark.differences``): the driver reads back only the Parquet footers and the
    ``kind`` column here, in this test."""
    if case in PATTERNS:
        reference, candidate = pattern_outputs / "ref", pattern_outputs / case
    else:
        reference, candidate = outputs[case] / "ref", outputs[case] / "faulty"
    target = tmp_path / "differences.parquet"
    verdict = compare_on_spark(
        session,
        spec(order_by=False, ignore_seq=case not in PATTERNS),
        str(reference),
        str(candidate),
        limit=100,
        differences=str(target),
    ).verdict
    files = sorted(target.glob("*.parquet"))
    assert files, "no Parquet file written"
    rows = sum(pq.read_metadata(f).num_rows for f in files)
    assert rows == verdict.total_divergences
    kinds = Counter(pq.read_table(target, columns=["kind"]).column("kind").to_pylist())
    assert kinds == {kind: n for kind, n in verdict.counts.items() if n}
