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
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from matcher import compare
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


def faulty(spark: SparkSession, order_by: bool) -> DataFrame:
    """The reference with one fault of each kind; ``o`` is the candidate's stream order
    (under ``order_by`` it becomes ``seq``, which the spec then ignores)."""
    base = rows(spark).withColumn("o", F.col("o") * 4)
    moved_to = (MOVED + 2 * KEYS) * 4 + 1
    events = (
        base.where(F.col("seq") != LOST)
        .withColumn("v", F.when(F.col("seq") == ALTERED, F.col("v") + 1).otherwise(F.col("v")))
        .withColumn("o", F.when(F.col("seq") == MOVED, F.lit(moved_to)).otherwise(F.col("o")))
        .unionByName(base.where(F.col("seq") == DUPLICATED).withColumn("o", F.col("o") + 1))
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
        write(faulty(session, order_by=False), layout, root / "faulty")
        write(faulty(session, order_by=True), layout, root / "faulty_ob")
        written[layout.name] = root
    return written


@pytest.fixture
def reads(session: SparkSession, request: pytest.FixtureRequest) -> Iterator[Layout]:
    layout: Layout = request.param
    old = session.conf.get("spark.sql.files.maxPartitionBytes")
    if layout.split_bytes:
        session.conf.set("spark.sql.files.maxPartitionBytes", str(layout.split_bytes))
    yield layout
    session.conf.set("spark.sql.files.maxPartitionBytes", old)


def judge(session: SparkSession, spec: Spec, reference: Path, candidate: Path) -> Verdict:
    return compare_on_spark(session, spec, str(reference), str(candidate), limit=100).verdict


def core_on_faulty_keys(
    session: SparkSession, spec: Spec, reference: Path, candidate: Path
) -> Verdict:
    """The core's verdict on the faulty keys' events alone, read in stream order by the
    core's own reader semantics: ``seq`` order under ``order_by``, else file then row."""
    sides = []
    for path in (reference, candidate):
        frame = session.read.parquet(str(path)).where(F.col("k").isin(FAULTY_KEYS))
        if spec.output.order_by:
            frame = frame.orderBy("seq")
        else:  # files in name order, rows in file order
            frame = frame.select(
                "*",
                F.col("_metadata.file_name").alias("f"),
                F.col("_metadata.row_index").alias("r"),
            ).orderBy("f", "r")
        sides.append([{c: r[c] for c in ("k", "seq", "v", "payload")} for r in frame.collect()])
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
