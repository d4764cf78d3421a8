"""Every difference as a table (``matcher.files.differences``, ``matcher.spark.differences``): as
many rows as the verdict counts, by kind, with the events of both sides; the same rows on
Spark (its exact path and its path for large differences, explained where the data is) as
from the core; Parquet and CSV; a clear error where Spark does not write it."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from matcher import compare
from matcher.dependence import by_key, ordered
from matcher.errors import InputError
from matcher.files.differences import copy_table, write_divergences
from matcher.spark import compare_dataframes
from matcher.spark import screen as screen_module
from matcher.verdict import Verdict
from tests.spark_fixtures import stream_frames

pytest_plugins = ("tests.spark_fixtures",)

SCHEMA = "k long, seq long, v double, s string"
KEYS = 40


def outputs() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """40 keys of 25 events; the candidate loses, adds, alters and moves events in some."""
    rng = random.Random(7)
    reference = [
        {"k": i % KEYS, "seq": i, "v": round(rng.uniform(0, 100), 2), "s": f"s{i % 5}"}
        for i in range(KEYS * 25)
    ]
    candidate = [dict(e) for e in reference]
    for i in sorted(rng.sample(range(len(candidate)), 12), reverse=True):
        del candidate[i]  # losses
    for i in rng.sample(range(len(candidate)), 10):
        candidate[i] = {**candidate[i], "v": candidate[i]["v"] + 1.5}  # corruptions
    for i in rng.sample(range(len(candidate)), 6):
        candidate[i] = {**candidate[i], "s": None}
    for i in rng.sample(range(len(candidate)), 5):
        candidate.insert(i, {**candidate[i], "v": -1.0})  # duplications
    for i in rng.sample(range(len(candidate) - 1), 4):
        if candidate[i]["k"] == candidate[i + 40]["k"]:
            candidate[i], candidate[i + 40] = candidate[i + 40], candidate[i]  # reorderings
    return reference, candidate


def small(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """The rows without their events, as a multiset."""
    return Counter(
        (
            r["kind"],
            r["key"],
            r["reference_position"],
            r["candidate_position"],
            tuple(r["columns"]),
        )
        for r in rows
    )


def core_verdict() -> Verdict:
    reference, candidate = outputs()
    return compare(reference, candidate, by_key("k"), limit=5)


def test_the_core_writes_every_difference_not_the_first_few(tmp_path: Path) -> None:
    verdict = core_verdict()
    assert verdict.every_divergence is not None
    assert len(verdict.divergences) == 5 < verdict.total_divergences
    rows = write_divergences(verdict.every_divergence, tmp_path / "d.parquet")
    table = pq.read_table(tmp_path / "d.parquet").to_pylist()
    assert rows == len(table) == verdict.total_divergences
    assert Counter(r["kind"] for r in table) == {k: n for k, n in verdict.counts.items() if n}
    for row in table:
        assert (row["reference"] is None) == (row["kind"] == "duplication")
        assert (row["candidate"] is None) == (row["kind"] == "loss")
        assert json.loads(row["key"]) == (row["reference"] or row["candidate"])["k"]
    corrupted = [r for r in table if r["kind"] == "corruption"]
    assert all(
        {c for c in r["reference"] if r["reference"][c] != r["candidate"][c]} == set(r["columns"])
        for r in corrupted
    )


def test_csv_spreads_the_events_into_columns(tmp_path: Path) -> None:
    verdict = core_verdict()
    assert verdict.every_divergence is not None
    write_divergences(verdict.every_divergence, tmp_path / "d.csv")
    with (tmp_path / "d.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == verdict.total_divergences
    assert list(rows[0])[:5] == [
        "kind",
        "key",
        "reference_position",
        "candidate_position",
        "columns",
    ]
    assert {"reference.k", "reference.v", "candidate.s"} <= set(rows[0])
    loss = next(r for r in rows if r["kind"] == "loss")
    assert loss["candidate.k"] == "" and loss["reference.k"] != ""
    assert json.loads(next(r for r in rows if r["kind"] == "corruption")["columns"])


def test_a_path_of_another_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"d\.json: expected a path ending in \.parquet or \.csv"):
        write_divergences([], tmp_path / "d.json")
    assert not list(tmp_path.iterdir())


def test_no_difference_writes_an_empty_table(tmp_path: Path) -> None:
    assert write_divergences([], tmp_path / "d.parquet") == 0
    assert pq.read_table(tmp_path / "d.parquet").num_rows == 0


@pytest.mark.parametrize("path", ["exact", "chains"])
def test_spark_writes_the_core_rows_where_the_data_is(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path == "chains":
        monkeypatch.setattr(screen_module, "EXACT_LIMIT", 0)
    reference, candidate = outputs()
    frames = stream_frames(spark, SCHEMA, reference, candidate)
    target = tmp_path / "differences"
    verdict = compare_dataframes(*frames, by_key("k"), limit=5, differences=str(target))
    core = core_verdict()
    assert verdict.counts == core.counts
    table = pq.read_table(target).to_pylist()
    assert len(table) == verdict.total_divergences
    assert core.every_divergence is not None
    write_divergences(core.every_divergence, tmp_path / "core.parquet")
    expected = pq.read_table(tmp_path / "core.parquet").to_pylist()
    assert small(table) == small(expected)
    by_position = {
        (r["kind"], r["reference_position"], r["candidate_position"]): r for r in expected
    }
    for row in table:
        twin = by_position[(row["kind"], row["reference_position"], row["candidate_position"])]
        assert row["reference"] == twin["reference"] and row["candidate"] == twin["candidate"]
    # and out again, as a user exports it from the run
    assert copy_table(target, tmp_path / "out.csv") == len(table)


def test_spark_says_where_it_does_not_write_the_table(spark: SparkSession, tmp_path: Path) -> None:
    reference, candidate = outputs()
    frames = stream_frames(spark, SCHEMA, reference, candidate)
    with pytest.raises(InputError, match=r"output\.differences: on Spark, the table of every"):
        compare_dataframes(*frames, ordered(), differences=str(tmp_path / "d"))
    assert not (tmp_path / "d").exists()


MATCH_SPEC = """\
name: diff_job
dependence: {key: [k]}
output: {format: parquet, differences: true}
"""


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["spark", "core"])
def test_the_match_job_keeps_the_table_and_report_exports_it(tmp_path: Path, engine: str) -> None:
    """Through real ``spark-submit`` (and ``--engine core``): the table lands in the run's
    report folder, the run says where and how many rows, ``parity report --differences``
    writes it as CSV and Parquet, and the page links to it."""
    import pyarrow as pa

    from matcher.store import Store
    from parity.cli import main
    from tests.test_match_job import output, submit

    reference, candidate = outputs()
    for side, rows in (("reference", reference), ("candidate", candidate)):
        (tmp_path / side).mkdir()
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / side / "part-00000.parquet")
    (tmp_path / "spec.yaml").write_text(MATCH_SPEC)
    db = f"sqlite:///{tmp_path / 'results.db'}"
    result = submit(
        tmp_path,
        *("--reference", str(tmp_path / "reference"), "--candidate", str(tmp_path / "candidate")),
        *("--spec", str(tmp_path / "spec.yaml"), "--db", db, "--run-id", "run-diff"),
        *("--report-dir", str(tmp_path / "report"), "--engine", engine),
    )
    assert result.returncode == 1, output(result)[-3000:]
    with Store(db) as store:
        run = store.get_run("run-diff")
    assert run is not None
    stored = run.stats["differences"]
    assert stored == {
        "path": str(tmp_path / "report" / "differences.parquet"),
        "rows": run.total_divergences,
    }
    assert run.total_divergences == core_verdict().total_divergences
    for name in ("every.csv", "every.parquet"):
        assert main(["report", "run-diff", "--db", db, "--differences", str(tmp_path / name)]) == 0
    assert pq.read_table(tmp_path / "every.parquet").num_rows == run.total_divergences
    with (tmp_path / "every.csv").open(newline="") as f:
        assert sum(1 for _ in csv.DictReader(f)) == run.total_divergences
    page = tmp_path / "page.html"
    assert main(["report", "run-diff", "--db", db, "--html", str(page)]) == 0
    assert (tmp_path / "report" / "differences.parquet").as_uri() in page.read_text()


def test_report_says_how_to_get_a_table_a_run_did_not_keep(tmp_path: Path) -> None:
    from matcher.store import RunOutcome, RunStart, Store
    from parity.cli import main

    db = f"sqlite:///{tmp_path / 'results.db'}"
    with Store.open(db) as store:
        store.start_run(RunStart("run-plain", "v", trigger="adhoc", engine="core"))
        store.record_run("run-plain", RunOutcome.from_verdict(core_verdict()))
    code = main(["report", "run-plain", "--db", db, "--differences", str(tmp_path / "d.csv")])
    assert code == 2
    assert not (tmp_path / "d.csv").exists()


@pytest.mark.parametrize("engine", ["core", "spark"])
def test_compare_writes_every_difference(
    tmp_path: Path, engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow as pa

    from parity.cli import main

    reference, candidate = outputs()
    for side, rows in (("reference", reference), ("candidate", candidate)):
        (tmp_path / side).mkdir()
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / side / "part-00000.parquet")
    (tmp_path / "spec.yaml").write_text(MATCH_SPEC)
    target = tmp_path / "out" / "every.csv"
    code = main(
        [
            "compare",
            str(tmp_path / "reference" / "part-00000.parquet"),
            str(tmp_path / "candidate" / "part-00000.parquet"),
            *("--spec", str(tmp_path / "spec.yaml"), "--engine", engine),
            *("--json", "--differences", str(target)),
        ]
    )
    assert code == 1
    total = json.loads(capsys.readouterr().out)["total_divergences"]
    with target.open(newline="") as f:
        assert sum(1 for _ in csv.DictReader(f)) == total == core_verdict().total_divergences
