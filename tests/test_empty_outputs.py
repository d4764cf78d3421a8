"""Two empty outputs: equivalent, but nothing was compared. Both engines say so with the
same verdict and its own warning (text, JSON, and the stored run's report and HTML page);
whether such a run passes the gate is ``gate.empty`` (``tests/test_gate.py``).

The Spark engine once failed on two empty directories (Spark cannot read a schema from no
file) where the core called them equivalent without a word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from matcher.store import RunOutcome, RunStart, Store
from matcher.verdict import EMPTY_WARNING, Verdict
from parity.cli import main
from parity.cli.report_text import render_summary
from parity.views.report import render_report_html, report_document

pytest_plugins = ("tests.spark_fixtures", "store_fixtures")

SPEC = "name: nothing\noutput: {format: parquet}\ndependence: {key: [k]}\n"
ENGINES = ("core", "spark")


def spec_file(tmp_path: Path) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return str(path)


def empty_directories(tmp_path: Path) -> tuple[str, str]:
    """What a job that wrote nothing leaves: a directory with only Spark's marker."""
    sides = []
    for side in ("reference", "candidate"):
        directory = tmp_path / side
        directory.mkdir()
        (directory / "_SUCCESS").write_text("")
        sides.append(str(directory))
    return sides[0], sides[1]


def zero_row_outputs(tmp_path: Path) -> tuple[str, str]:
    """Parquet files with a schema and no row."""
    table = pa.table({"k": pa.array([], pa.int64()), "v": pa.array([], pa.string())})
    sides = []
    for side in ("reference", "candidate"):
        directory = tmp_path / side
        directory.mkdir()
        pq.write_table(table, directory / "part-00000.parquet")
        sides.append(str(directory))
    return sides[0], sides[1]


def compare(
    capsys: pytest.CaptureFixture[str], spec: str, sides: tuple[str, str], *options: str
) -> tuple[int, str]:
    code = main(["compare", *sides, "--spec", spec, *options])
    out, err = capsys.readouterr()
    assert err == ""
    return code, out


def as_json(capsys: pytest.CaptureFixture[str], spec: str, sides: tuple[str, str]) -> list[Any]:
    documents = []
    for engine in ENGINES:
        code, out = compare(capsys, spec, sides, "--json", "--engine", engine)
        assert code == 0
        documents.append(json.loads(out))
    return documents


@pytest.mark.spark
@pytest.mark.slow
def test_empty_directories_are_the_same_empty_verdict_on_both_engines(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, sides = spec_file(tmp_path), empty_directories(tmp_path)
    core, on_spark = as_json(capsys, spec, sides)
    assert core == on_spark
    assert {k: core[k] for k in ("verdict", "empty", "warnings", "side_stats")} == {
        "verdict": "equivalent",
        "empty": True,
        "warnings": [EMPTY_WARNING],
        "side_stats": {"reference": {"rows": 0}, "candidate": {"rows": 0}},
    }
    for engine in ENGINES:
        code, out = compare(capsys, spec, sides, "--engine", engine)
        assert code == 0
        assert out.splitlines()[6:] == [
            "verdict: equivalent",
            "counts: loss 0, duplication 0, reordering 0, corruption 0",
            "rows: reference 0, candidate 0, matched 0, peak unmatched 0",
            "warning: both outputs are empty: there was no output to compare",
        ]


@pytest.mark.spark
@pytest.mark.slow
def test_outputs_with_a_schema_and_no_row_warn_on_both_engines(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    core, on_spark = as_json(capsys, spec_file(tmp_path), zero_row_outputs(tmp_path))
    for document in (core, on_spark):
        assert (document["verdict"], document["empty"], document["warnings"]) == (
            "equivalent",
            True,
            [EMPTY_WARNING],
        )
    del core["side_stats"], on_spark["side_stats"]  # Spark also counts keys and barriers
    assert core == on_spark


def test_a_stored_empty_run_warns_in_its_report(sqlite_url: str) -> None:
    outcome = RunOutcome.from_verdict(Verdict(True, dependence="by_key(k)"))
    with Store.open(sqlite_url) as store:
        store.start_run(RunStart("empty-run", "nothing"))
        store.record_run("empty-run", outcome)
        record = store.get_run("empty-run")
    assert record is not None

    document = report_document(record)
    assert (document["empty"], document["warnings"]) == (True, [EMPTY_WARNING])
    page = render_report_html(record)
    assert f'<p class="warning">Warning: {EMPTY_WARNING}</p>' in page
    assert f"warning: {EMPTY_WARNING}\n" in render_summary(record)
