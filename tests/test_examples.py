"""The example pipelines (``jobs/examples``): their stream operators, the capture generator,
the verdict of each of their validations (``dags/validations``), and one validation end to
end through real ``spark-submit`` and the match job.

Each validation runs its reference and candidate transforms in this process on the shared
``spark`` session (``local[2]``, as the DAG's ``local[*]`` on this two-core machine), writes
their outputs as the applications do, and matches them with the core matcher (and some with
the Spark matcher too). The verdicts and the counts per kind are exact: the parallel
candidates reorder data the same way every run (round-robin rebalancing and hash
partitioning are deterministic for a given input split and partition count).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession

from jobs.examples import common, generate, reducers, taxi, topics
from jobs.examples.equalities import same_concatenated_items
from matcher import StreamMatcher
from matcher.files.compare import compare_files_with_noise
from matcher.files.readers import read_events
from matcher.noise import NoisyComparison
from matcher.spark.noise import compare_with_noise
from matcher.spark.outputs import compare_on_spark
from matcher.spec import Spec, load_spec
from matcher.store import Store

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

ROOT = Path(__file__).resolve().parent.parent
VALIDATIONS = ROOT / "dags" / "validations"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"

NONE = {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}

#: Every bundled validation: its verdict and divergences per kind, as measured on the
#: default captures (scale 1, seed 20240501). The case-study table of
#: docs/explanation/examples.md shows the same.
EXPECTED: dict[str, tuple[str, dict[str, int]]] = {
    "taxi_parallel": ("equivalent", NONE),
    "taxi_parallel_buggy": ("divergent", {**NONE, "corruption": 1000}),
    "topics_parallel": ("equivalent", NONE),
    "topics_parallel_buggy": ("divergent", {**NONE, "loss": 20, "corruption": 138}),
    "singleitem_wellformed": ("equivalent", NONE),
    "singleitem_arbitrary": ("divergent", {**NONE, "corruption": 10}),
    "indexvaluepair_wellformed": ("equivalent", NONE),
    "indexvaluepair_arbitrary": ("divergent", {**NONE, "corruption": 153}),
    "maxrow_wellformed": ("equivalent", NONE),
    "maxrow_arbitrary": ("divergent", {**NONE, "corruption": 10}),
    "firstn_wellformed": ("equivalent", NONE),
    "firstn_arbitrary": ("divergent", {**NONE, "corruption": 29}),
    "strconcat_wellformed": ("equivalent", NONE),
    "strconcat_arbitrary": ("divergent", {**NONE, "corruption": 10}),
    "strconcat_multiset": ("equivalent", NONE),
    "strconcat_stream_ordered": ("divergent", {**NONE, "reordering": 843}),
    "strconcat_stream_unordered": ("equivalent", NONE),
}
#: Matched by the Spark matcher too (the match job's engine, which the end-to-end test runs on
#: the taxi): the barrier dependence, and the custom equality that Spark's Python workers
#: import by name. The core matcher decides the rest (the two agree: test_spark_differential).
ON_SPARK = ("topics_parallel", "strconcat_multiset")


# --- the stream operators, without Spark ------------------------------------------------


def positions(*rows: tuple[str, int, float, float]) -> list[Row]:
    return [Row(taxi_id=t, t_us=at, lat=lat, lon=lon) for t, at, lat, lon in rows]


def test_track_counts_and_sums_each_taxi_in_arrival_order() -> None:
    rows = positions(("A", 1, 0.0, 0.0), ("B", 2, 5.0, 5.0), ("A", 3, 0.0, 1.0), ("A", 4, 1.0, 1.0))
    assert list(taxi.track(rows)) == [
        ("A", 1, 1, 0.0, 0.0, 0.0, 0.0),
        ("B", 1, 2, 5.0, 5.0, 0.0, 0.0),
        ("A", 2, 3, 0.0, 1.0, 111.1950802335329, 111.1950802335329),
        ("A", 3, 4, 1.0, 1.0, 111.1950802335329, 222.3901604670658),
    ]


def test_track_gives_other_distances_when_a_taxi_arrives_out_of_order() -> None:
    rows = positions(("A", 1, 0.0, 0.0), ("A", 4, 1.0, 1.0), ("A", 3, 0.0, 1.0))
    assert list(taxi.track(rows)) == [
        ("A", 1, 1, 0.0, 0.0, 0.0, 0.0),
        ("A", 2, 4, 1.0, 1.0, 157.2495984740402, 157.2495984740402),
        ("A", 3, 3, 0.0, 1.0, 111.1950802335329, 268.4446787075731),
    ]


def words(*rows: tuple[str, str | None, str | None]) -> list[Row]:
    return [Row(kind=kind, word=word, file=file) for kind, word, file in rows]


def test_count_topics_emits_each_documents_counts_then_its_topic_at_its_eof() -> None:
    rows = words(
        ("word", "comet", None),
        ("word", "the", None),
        ("word", "bake", None),
        ("word", "star", None),
        ("EOF", None, "a.txt"),
        ("EOF", None, "empty.txt"),
        ("word", "oven", None),
        ("word", "tune", None),
        ("EOF", None, "b.txt"),
        ("word", "goal", None),  # after the last marker: no complete document
    )
    assert list(topics.count_topics(rows)) == [
        ("a.txt", "topic_count", "astronomy", 2),
        ("a.txt", "topic_count", "cooking", 1),
        ("a.txt", "topic_count", "unknown", 1),
        ("a.txt", "EOF", "astronomy", 2),
        ("empty.txt", "EOF", None, 0),
        ("b.txt", "topic_count", "cooking", 1),
        ("b.txt", "topic_count", "music", 1),
        ("b.txt", "EOF", "cooking", 1),  # a tie: the first topic by name
    ]


ITEMS = [(1, 5), (2, 9), (3, 9), (1, 7)]


@pytest.mark.parametrize(
    ("name", "in_order", "reversed_order"),
    [
        ("singleitem", [("k", 1, 5)], [("k", 1, 7)]),
        ("indexvaluepair", [("k", 1, 7), ("k", 2, 9), ("k", 3, 9)],
                           [("k", 1, 5), ("k", 2, 9), ("k", 3, 9)]),
        ("maxrow", [("k", 2, 9)], [("k", 3, 9)]),
        ("firstn", [("k", 1, 5), ("k", 2, 9), ("k", 3, 9)],
                   [("k", 1, 7), ("k", 2, 9), ("k", 3, 9)]),
        ("strconcat", [("k", "1@2@3@1")], [("k", "1@3@2@1")]),
    ],
)  # fmt: skip
def test_reducers_depend_on_the_order_of_their_items(
    name: str, in_order: list[tuple[Any, ...]], reversed_order: list[tuple[Any, ...]]
) -> None:
    reduce = reducers.REDUCERS[name].reduce
    assert reduce is not None
    assert reduce("k", ITEMS) == in_order
    assert reduce("k", ITEMS[::-1]) == reversed_order


def test_the_reduce_stage_groups_by_key_and_the_stream_emits_on_arrival() -> None:
    rows = [Row(key=k, offset=o, x=x, y=y) for k, o, x, y in [("b", 0, 1, 2), ("a", 1, 3, 4)]]
    grouped = reducers.REDUCERS["singleitem"]
    streaming = reducers.REDUCERS["strconcat_stream"]
    assert list(reducers.run_reducer(grouped, rows)) == [("a", 3, 4), ("b", 1, 2)]
    assert list(reducers.run_reducer(streaming, rows)) == [("b", 0, 1), ("a", 1, 3)]


def test_strconcat_equality_compares_items_as_multisets() -> None:
    assert same_concatenated_items({"key": "k", "items": "1@2@2"}, {"key": "k", "items": "2@1@2"})
    assert not same_concatenated_items({"key": "k", "items": "1@2@2"}, {"key": "k", "items": "1@2"})
    assert not same_concatenated_items({"key": "k", "items": "1@2"}, {"key": "j", "items": "1@2"})
    assert not same_concatenated_items({"key": "k", "items": "1"}, {"key": "k"})


# --- the capture generator ------------------------------------------------------------


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    contents = {}
    for run, seed in (("a", 7), ("b", 7), ("c", 8)):
        for name in generate.CAPTURES:
            generate.generate(name, tmp_path / run, scale=0.1, seed=seed)
        contents[run] = {
            str(p.relative_to(tmp_path / run)): p.read_bytes()
            for p in sorted((tmp_path / run).rglob("*"))
            if p.is_file()
        }
    assert len(contents["a"]) == 4 * len(generate.CAPTURES)
    assert contents["a"] == contents["b"]
    assert contents["a"].keys() == contents["c"].keys()
    assert all(contents["a"][f] != contents["c"][f] for f in contents["a"])


def rows_of(name: str, scale: float = 1.0) -> list[dict[str, Any]]:
    capture = generate.CAPTURES[name]
    return capture.rows(random.Random(f"{generate.DEFAULT_SEED}:{name}"), scale)


def by_key(rows: list[dict[str, Any]], key: str) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return groups


def test_every_capture_is_a_stream_in_time_order_over_one_day() -> None:
    for name in generate.CAPTURES:
        rows = rows_of(name)
        assert [r["offset"] for r in rows] == list(range(len(rows)))
        times = [r["event_time"] for r in rows]
        assert times == sorted(set(times)), name
        assert generate.iso_ms(times[0]) == "2024-05-01T06:00:00.000Z"
        assert times[-1] < generate.START_MS + 12 * 3600 * 1000


def test_the_captures_have_their_documented_shape() -> None:
    assert len(rows_of("taxi")) == 1000
    assert {len(v) for v in by_key(rows_of("taxi"), "taxi_id").values()} == {50}
    stream = rows_of("topics")
    assert (len(stream), stream[-1]["kind"]) == (1810, "EOF")
    assert sum(r["kind"] == "EOF" for r in stream) == 20
    assert len(rows_of("reducers_arbitrary")) == 1000
    assert len(rows_of("taxi", scale=2)) == 2000


def test_well_formed_captures_satisfy_their_reducers_input_assumption() -> None:
    single = by_key(rows_of("singleitem_wellformed"), "key")
    assert all(len({(r["x"], r["y"]) for r in items}) == 1 for items in single.values())
    pairs = {(r["key"], r["x"], r["y"]) for r in rows_of("indexvaluepair_wellformed")}
    assert len(pairs) == len({(k, x) for k, x, _ in pairs})
    maxrow = by_key(rows_of("maxrow_wellformed"), "key")
    assert all(len({r["y"] for r in items}) == len(items) for items in maxrow.values())
    firstn = by_key(rows_of("firstn_wellformed"), "key")
    assert max(len(items) for items in firstn.values()) == reducers.FIRST_N
    concat = by_key(rows_of("strconcat_wellformed"), "key")
    assert all(len({r["x"] for r in items}) == 1 for items in concat.values())
    # ... and the arbitrary one does not: ties on the maximum, repeated x with other y
    arbitrary = by_key(rows_of("reducers_arbitrary"), "key")
    assert all(sum(r["y"] == 9 for r in items) > 1 for items in arbitrary.values())


def test_generate_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "captures"
    assert generate.main(["--out", str(out), "--scale", "0.5", "taxi", "topics"]) == 0
    assert (
        capsys.readouterr().out == "taxi: 500 rows, 4 json files\ntopics: 953 rows, 4 csv files\n"
    )
    assert sorted(p.name for p in (out / "taxi").iterdir()) == [
        f"part-0000{n}.jsonl" for n in range(4)
    ]
    assert (out / "topics" / "part-00000.csv").read_text().splitlines()[:2] == [
        "offset,event_time,kind,word,file",
        "0,2024-05-01T06:00:00.000Z,word,score,",
    ]
    for argv, message in [
        (["nope"], "unknown capture 'nope' (known: " + ", ".join(generate.CAPTURES) + ")"),
        (["--scale", "0"], "--scale must be > 0, got 0.0"),
    ]:
        with pytest.raises(SystemExit) as exit:
            generate.main(["--out", str(out), *argv])
        assert exit.value.code == 2
        assert capsys.readouterr().err == f"generate: error: {message}\n"


# --- the transforms on Spark ------------------------------------------------------------


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("captures")
    for name in generate.CAPTURES:
        generate.generate(name, root)
    return root


class Runs:
    """Runs the spec's applications in this process; an output is made once per application,
    arguments and input, as several validations share a reference or a candidate."""

    def __init__(self, spark: SparkSession, captures: Path, out: Path) -> None:
        self.spark, self.captures, self.out = spark, captures, out
        self.done: dict[tuple[str, ...], str] = {}

    def output(self, spec: Spec, side: str) -> str:
        app = getattr(spec, side)
        assert spec.input is not None and app is not None
        source = str(self.captures / Path(spec.input.path).name)
        key = (app.application, source, *app.args)
        if key not in self.done:
            target = str(self.out / f"run{len(self.done)}")
            module = importlib.import_module(app.application.removesuffix(".py").replace("/", "."))
            args = [a.format(input=source, output=target) for a in app.args]
            parsed: argparse.Namespace = module.APP.parser().parse_args(args)
            common.execute(self.spark, module.APP, parsed)
            self.done[key] = target
        return self.done[key]


@pytest.fixture(scope="module")
def runs(spark: SparkSession, captures: Path, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(spark, captures, tmp_path_factory.mktemp("outputs"))


def output_rows(path: str, fmt: str, *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(event[c] for c in columns) for event in read_events(path, format=fmt)]


@pytest.mark.spark
def test_taxi_reference_is_the_tracker_in_stream_order_and_only_buggy_breaks_a_taxis_order(
    runs: Runs,
) -> None:
    stream = [
        Row(taxi_id=r["taxi_id"], t_us=r["event_time"] * 1000, lat=r["lat"], lon=r["lon"])
        for r in rows_of("taxi")
    ]
    expected = [(t, seq, lat, lon, leg, km) for t, seq, _, lat, lon, leg, km in taxi.track(stream)]
    correct, buggy = (
        load_spec(VALIDATIONS / f"{n}.yaml") for n in ("taxi_parallel", "taxi_parallel_buggy")
    )
    columns = ("taxi_id", "seq", "lat", "lon", "leg_km", "distance_km")
    reference = output_rows(runs.output(correct, "reference"), "parquet", *columns)
    parallel = output_rows(runs.output(correct, "candidate"), "parquet", *columns)
    wrong = output_rows(runs.output(buggy, "candidate"), "parquet", *columns)
    assert len(expected) == 1000
    assert reference == expected
    assert parallel != expected  # the taxis interleave differently ...
    assert by_taxi(parallel) == by_taxi(expected)  # ... each in its order
    differ = [t for t, rows in by_taxi(wrong).items() if rows != by_taxi(expected)[t]]
    assert len(differ) == 20  # every taxi's distances are wrong, ...
    positions = sorted((t, lat, lon) for t, _, lat, lon, _, _ in wrong)
    assert positions == sorted((t, lat, lon) for t, _, lat, lon, _, _ in expected)  # ... not lost


def by_taxi(rows: list[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault(row[0], []).append(row)
    return groups


@pytest.mark.spark
def test_topics_reference_and_parallel_give_the_sequential_operators_rows(runs: Runs) -> None:
    stream = [Row(kind=r["kind"], word=r["word"], file=r["file"]) for r in rows_of("topics")]
    expected = list(topics.count_topics(stream))
    assert (len(expected), expected[:2]) == (
        160,
        [
            ("doc-0000.txt", "topic_count", "astronomy", 11),
            ("doc-0000.txt", "topic_count", "cooking", 10),
        ],
    )
    assert [row for row in expected if row[1] == "EOF"][:2] == [
        ("doc-0000.txt", "EOF", "sports", 70),
        ("doc-0001.txt", "EOF", "music", 44),
    ]
    as_csv = expected  # CSV typed as Spark's inferSchema types it: the count is an int
    spec = load_spec(VALIDATIONS / "topics_parallel.yaml")
    columns = ("file", "kind", "topic", "count")
    reference = output_rows(runs.output(spec, "reference"), "csv", *columns)
    parallel = output_rows(runs.output(spec, "candidate"), "csv", *columns)
    assert reference == as_csv
    assert parallel != as_csv and sorted(parallel) == sorted(as_csv)


@pytest.mark.spark
def test_an_application_reports_a_user_error_in_one_line(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "part-00000.jsonl").write_text('{"offset": 0, "event_time": "noon", "lat": "north"}\n')
    out = str(tmp_path / "out")
    cases = [
        (taxi.APP, ["--input", str(tmp_path / "none"), "--output", out]),
        (taxi.APP, ["--input", str(bad), "--output", out, "--partitions", "0"]),
        (reducers.APP, ["--input", str(bad), "--output", out]),
        (taxi.APP, ["--input", str(bad), "--output", out]),
        (topics.APP, ["--input", str(bad), "--output", out]),
    ]
    errors = []
    for app, argv in cases:
        assert common.main(app, argv) == 2
        errors.append(capsys.readouterr().err)
    file = f"file://{bad}/part-00000.jsonl"
    assert errors == [
        f"taxi: error: input {tmp_path / 'none'} does not exist\n",
        "taxi: error: argument --partitions: expected a whole number >= 1, got '0'\n",
        "reducers: error: the following arguments are required: --reducer\n",
        f"taxi: error: input {bad}: cannot read {file}: [CAST_INVALID_INPUT] The value 'noon' of "
        'the type "STRING" cannot be cast to "TIMESTAMP" because it is malformed\n',
        f"topics: error: input {bad}: cannot read {file}: CSV header does not conform to the "
        'schema. Header: {"offset": 0, "lat": "north"}, , Schema: offset, kind, word, file '
        f'Expected: offset but found: {{"offset": 0 CSV file: {file}\n',
    ]
    assert not (tmp_path / "out").exists()


# --- every bundled validation -----------------------------------------------------------


def spec_files() -> list[Path]:
    return sorted(VALIDATIONS.glob("*.yaml"))


def test_every_validation_loads_and_states_its_expected_verdict() -> None:
    specs = {path.stem: path for path in spec_files()}
    assert set(EXPECTED) <= set(specs)  # others' validations may sit beside these
    for name, path in specs.items():
        spec = load_spec(path)
        assert spec.name == name
        stated = re.search(r"^# Expected verdict: (\w+)", path.read_text(), re.MULTILINE)
        assert stated is not None, path.name
        assert stated.group(1) == EXPECTED.get(name, (stated.group(1),))[0], path.name
        assert spec.input is not None
        if spec.recovery is not None:  # one streaming application, crashed
            assert spec.application is not None
            captures = {*generate.CAPTURES, "sequence_window"}  # the detector's input
            assert Path(spec.input.path).name in captures
            assert (ROOT / spec.application.application).is_file()
            assert {"{input}", "{output}", "{checkpoint}"} <= set(spec.application.args)
            continue
        assert spec.reference is not None and spec.candidate is not None
        assert Path(spec.input.path).name in generate.CAPTURES
        for app in (spec.reference, spec.candidate):
            assert (ROOT / app.application).is_file()
            assert {"{input}", "{output}"} <= set(app.args)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_validation_verdict(name: str, runs: Runs, spark: SparkSession) -> None:
    spec = load_spec(VALIDATIONS / f"{name}.yaml")
    reference, candidate = runs.output(spec, "reference"), runs.output(spec, "candidate")
    matcher = StreamMatcher(spec.build_dependence(), spec.build_equality(), limit=1)
    fmt = spec.output.format
    matcher.feed(read_events(reference, format=fmt), read_events(candidate, format=fmt))
    verdict = matcher.finish()
    assert (verdict.status, dict(verdict.counts)) == EXPECTED[name]
    if name in ON_SPARK:
        on_spark = compare_on_spark(spark, spec, reference, candidate, limit=1).verdict
        assert (on_spark.status, dict(on_spark.counts)) == EXPECTED[name]


#: what only one engine reports: the core's high-water mark and detection point, Spark's
#: keys and barriers per side (matcher.spark's docstring)
ENGINE_ONLY = ("peak_unmatched", "detected_at", "side_stats")


def decided(result: NoisyComparison) -> dict[str, Any]:
    """A comparison as the match job stores it, without what only one engine reports."""
    verdict = {k: v for k, v in result.verdict.to_dict().items() if k not in ENGINE_ONLY}
    noise = None if result.report is None else result.report.to_dict()
    return {"status": result.status, "verdict": verdict, "noise": noise}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_core_engine_decides_each_validation_as_spark_does(
    name: str, runs: Runs, spark: SparkSession
) -> None:
    """The DAG's match task decides small outputs on the core (parity.runs.engines): on
    every bundled validation it gets Spark's verdict, witnesses, schema findings and noise
    report, with the rerun the spec asks for (the candidate stands in for it, so that the
    reference is noisy where the candidate diverges: the noise path runs too)."""
    spec = load_spec(VALIDATIONS / f"{name}.yaml")
    reference, candidate = runs.output(spec, "reference"), runs.output(spec, "candidate")
    reruns = [candidate] if spec.noise.reference_runs > 1 else []
    core = compare_files_with_noise(spec, reference, candidate, reruns=reruns, limit=100)
    on_spark = compare_with_noise(spark, spec, reference, candidate, reruns=reruns, limit=100)
    assert decided(core) == decided(on_spark)
    status, counts = EXPECTED[name]
    assert (core.verdict.status, dict(core.verdict.counts)) == (status, counts)
    if reruns and status == "divergent":
        assert core.status == "noisy"


# --- end to end: spark-submit the applications and the match job ------------------------


def submit(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(SPARK_SUBMIT), "--master", "local[*]", "--conf", "spark.ui.enabled=false"]
    return subprocess.run(
        [*command, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.spark
@pytest.mark.slow
def test_taxi_parallel_buggy_end_to_end(runs: Runs, captures: Path, tmp_path: Path) -> None:
    """The candidate and the match job through spark-submit; the reference output is the
    in-process run of the same application (two JVMs instead of three: this box is slow)."""
    path = VALIDATIONS / "taxi_parallel_buggy.yaml"
    spec = load_spec(path)
    assert spec.candidate is not None
    reference, candidate = runs.output(spec, "reference"), str(tmp_path / "candidate")
    args = [a.format(input=captures / "taxi", output=candidate) for a in spec.candidate.args]
    done = submit(str(ROOT / spec.candidate.application), *args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"taxi: parallel_buggy: wrote {candidate}\n" in done.stdout
    verdict_json = tmp_path / "verdict.json"
    done = submit(
        str(ROOT / "jobs" / "match.py"), "--reference", reference, "--candidate", candidate,
        "--spec", str(path), "--run-id", "taxi-e2e", "--db", f"sqlite:///{tmp_path / 'p.db'}",
        "--json-out", str(verdict_json),
    )  # fmt: skip
    assert (done.returncode, verdict_json.exists()) == (1, True), done.stderr[-3000:]
    document = json.loads(verdict_json.read_text())
    assert (document["verdict"], document["counts"]) == EXPECTED["taxi_parallel_buggy"]
    first = document["divergences"][0]
    assert (first["kind"], first["key"], first["reference_position"]) == ("corruption", "T012", 0)
    assert first["reference_event"]["seq"] == first["candidate_event"]["seq"] == 1
    # The same job on the core, as the DAG's match task runs it for small outputs: python,
    # no spark-submit; the same document but for what only one engine reports.
    core_json = tmp_path / "core.json"
    done = subprocess.run(
        [
            sys.executable, str(ROOT / "jobs" / "match.py"), "--engine", "core",
            "--reference", reference, "--candidate", candidate, "--spec", str(path),
            "--run-id", "taxi-core", "--db", f"sqlite:///{tmp_path / 'p.db'}",
            "--json-out", str(core_json),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (1, ""), done.stderr[-3000:]
    on_core = json.loads(core_json.read_text())
    for kept in (document, on_core):
        for name in (*ENGINE_ONLY, "run_id"):
            kept.pop(name)
    assert on_core == document
    with Store(f"sqlite:///{tmp_path / 'p.db'}") as store:
        engines = [store.get_run(run_id) for run_id in ("taxi-e2e", "taxi-core")]
    assert [(r.engine, r.verdict) for r in engines if r is not None] == [
        ("spark", "divergent"),
        ("core", "divergent"),
    ]


@pytest.mark.spark
@pytest.mark.slow
def test_the_streaming_candidate_is_decided_on_the_core_as_on_spark(
    runs: Runs, captures: Path, tmp_path: Path, spark: SparkSession
) -> None:
    """taxi_streaming's candidate, a Structured Streaming job (spark-submit), writes one
    file set per micro-batch: the core reads that layout as Spark does."""
    spec = load_spec(VALIDATIONS / "taxi_streaming.yaml")
    assert spec.candidate is not None
    reference, candidate = runs.output(spec, "reference"), str(tmp_path / "candidate")
    values = {"input": captures / "taxi", "output": candidate, "run_dir": tmp_path}
    args = [a.format(**values) for a in spec.candidate.args]
    done = submit(str(ROOT / spec.candidate.application), *args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(Path(candidate).glob("part-*.parquet"))) > 2
    core = compare_files_with_noise(spec, reference, candidate, limit=100)
    on_spark = compare_with_noise(spark, spec, reference, candidate, limit=100)
    assert decided(core) == decided(on_spark)
    assert core.status == "equivalent"
