"""``parity minimize``'s parts, without Spark: delta debugging (``ddmin``), a slice taken
apart and written back in each format, the budget, the signature a trial is judged by, the
regression test's text, the result stored with the run (SQLite and PostgreSQL) and shown
in its report. The search over real ``spark-submit`` runs of the bundled validations is
``tests/test_minimize_runs.py`` (``make minimize``)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matcher.dependence import by_key
from matcher.errors import InputError
from matcher.files.compare import compare_files
from matcher.noise import NoisyComparison
from matcher.online import compare
from matcher.spec import parse_spec
from matcher.store import RunOutcome, RunStart, Store
from parity.cli.report_text import render_summary
from parity.minimize.ddmin import Exhausted, ddmin
from parity.minimize.regression import job_literal, regression_file_name, write_regression_test
from parity.minimize.runner import Budget
from parity.minimize.slices import read_slice, segments, write_subset
from parity.minimize.trials import Signature
from parity.minimize.workspace import filled, template
from parity.runs.submits import SparkJob
from parity.testing import assert_equivalent
from parity.views.report import render_report_html

pytest_plugins = ["store_fixtures"]

# -- ddmin -------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=60),
    data=st.data(),
)
def test_ddmin_finds_exactly_the_items_a_failure_needs(size: int, data: st.DataObject) -> None:
    """A failure that needs a set of items (any superset fails): ddmin ends on that set,
    1-minimal, in the input's order."""
    needed = data.draw(st.sets(st.integers(0, size - 1), min_size=1, max_size=min(size, 5)))
    items = list(range(size))
    found = ddmin(items, lambda chosen: needed <= set(chosen))
    assert found.smallest == sorted(needed)
    assert not found.exhausted


@settings(max_examples=100, deadline=None)
@given(items=st.lists(st.integers(0, 9), min_size=2, max_size=40))
def test_ddmin_ends_1_minimal_for_any_failure(items: list[int]) -> None:
    """Whatever the test (here: the sum is at least 10, or the list is the whole input),
    removing any one item of the result makes the failure go away, and each distinct
    subset is tested once."""
    calls: list[tuple[int, ...]] = []

    def fails(chosen: list[int]) -> bool:
        calls.append(tuple(chosen))
        return sum(chosen) >= 10 or len(chosen) == len(items)

    found = ddmin(items, fails)
    smallest = found.smallest
    if len(smallest) > 1 and sum(smallest) >= 10:
        for n in range(len(smallest)):
            assert sum(smallest[:n] + smallest[n + 1 :]) < 10
    assert found.tests == len(calls)


def test_a_spent_budget_ends_with_the_smallest_failing_subset_so_far() -> None:
    runs: list[list[int]] = []

    def fails(chosen: list[int]) -> bool:
        if len(runs) == 3:
            raise Exhausted
        runs.append(chosen)
        return 7 in chosen

    found = ddmin(list(range(64)), fails)
    assert found.exhausted and found.tests == 3
    assert 7 in found.smallest and len(found.smallest) == 8  # 64 -> 32 -> 16 -> 8


# -- slices --------------------------------------------------------------------------------------


def _write_json_lines(folder: Path) -> None:
    folder.mkdir()
    rows = [{"k": n % 3, "v": n, "s": f"x{n}"} for n in range(9)]
    for part in range(3):
        text = "".join(json.dumps(r) + "\n" for r in rows[part * 3 : part * 3 + 3])
        (folder / f"part-0000{part}.json").write_text(text)
    (folder / "_SUCCESS").write_text("")


def test_a_json_lines_subset_keeps_bytes_files_and_order(tmp_path: Path) -> None:
    _write_json_lines(tmp_path / "slice")
    whole = read_slice(tmp_path / "slice", "jsonl", ("k",))
    assert whole.rows == 9 and len(whole.files) == 3
    assert list(whole.keys().values()) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    written = write_subset(whole, [7, 1, 4], tmp_path / "subset")
    assert written == 3
    names = sorted(p.name for p in (tmp_path / "subset").iterdir())
    assert names == ["_SUCCESS", "part-00000.json", "part-00001.json", "part-00002.json"]
    lines = [
        json.loads(line)
        for name in names[1:]
        for line in (tmp_path / "subset" / name).read_text().splitlines()
    ]
    assert [r["v"] for r in lines] == [1, 4, 7]
    times = [(tmp_path / "subset" / n).stat().st_mtime for n in names[1:]]
    assert times == sorted(times) and len(set(times)) == 3


def test_a_file_left_empty_is_not_written(tmp_path: Path) -> None:
    _write_json_lines(tmp_path / "slice")
    whole = read_slice(tmp_path / "slice", "jsonl", ("k",))
    write_subset(whole, [0], tmp_path / "subset")
    assert sorted(p.name for p in (tmp_path / "subset").iterdir()) == [
        "_SUCCESS",
        "part-00000.json",
    ]


def test_a_csv_subset_keeps_each_files_header_and_multi_line_records(tmp_path: Path) -> None:
    folder = tmp_path / "slice"
    folder.mkdir()
    for part in range(2):
        with (folder / f"part-0000{part}.csv").open("w", newline="") as sink:
            writer = csv.writer(sink)
            writer.writerow(["doc", "text"])
            writer.writerow([f"d{part}", "one\nline more"])
            writer.writerow([f"d{part}", 'a "quoted", comma'])
            writer.writerow([f"e{part}", ""])
    whole = read_slice(folder, "csv", ("doc",))
    assert whole.rows == 6
    assert list(whole.keys()) == [('"d0"',), ('"e0"',), ('"d1"',), ('"e1"',)]
    write_subset(whole, [0, 4], tmp_path / "subset")
    spec = parse_spec({"dependence": "ordered", "output": {"format": "csv"}}, "t")
    verdict = compare_files(spec, str(tmp_path / "subset"), str(tmp_path / "subset"), 10)
    assert verdict.equivalent and verdict.reference_count == 2
    rows = [
        row
        for name in ("part-00000.csv", "part-00001.csv")
        for row in csv.reader(io.StringIO((tmp_path / "subset" / name).read_text(), newline=""))
    ]
    assert rows == [
        ["doc", "text"],
        ["d0", "one\nline more"],
        ["doc", "text"],
        ["d1", 'a "quoted", comma'],
    ]


def test_a_barrier_groups_records_into_segments(tmp_path: Path) -> None:
    """Without a key, a barrier's end rows cut the slice into segments (a document's words
    and its EOF row), across files; a CSV field's text matches an ``equals`` of any type."""
    folder = tmp_path / "slice"
    folder.mkdir()
    rows = [("word", "a"), ("word", "b"), ("EOF", ""), ("word", "c")], [("EOF", ""), ("1", "")]
    for part, chunk in enumerate(rows):
        text = "kind,word\n" + "".join(f"{k},{w}\n" for k, w in chunk)
        (folder / f"part-0000{part}.csv").write_text(text)
    whole = segments(read_slice(folder, "csv", ("kind",)), ("EOF", 1))
    assert list(whole.keys().values()) == [[0, 1, 2], [3, 4], [5]]


def test_a_parquet_subset_keeps_types_and_schema(tmp_path: Path) -> None:
    folder = tmp_path / "slice"
    folder.mkdir()
    schema = pa.schema(
        [("k", pa.int64()), ("t", pa.timestamp("us", tz="UTC")), ("x", pa.float64())],
        metadata={b"org.apache.spark": b"{}"},
    )
    at = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    for part in range(2):
        table = pa.table(
            {"k": [part, part + 1], "t": [at, at], "x": [0.5, float("nan")]}, schema=schema
        )
        pq.write_table(table, folder / f"part-0000{part}.parquet")
    whole = read_slice(folder, "parquet", ("k",))
    assert list(whole.keys().values()) == [[0], [1, 2], [3]]
    write_subset(whole, [1, 2], tmp_path / "subset")
    back = [pq.read_table(p) for p in sorted((tmp_path / "subset").glob("*.parquet"))]
    assert [t.schema for t in back] == [schema, schema]
    assert [t.column("k").to_pylist() for t in back] == [[1], [1]]


def test_int96_timestamps_as_spark_writes_them_stay_int96_in_microseconds(tmp_path: Path) -> None:
    folder = tmp_path / "slice"
    folder.mkdir()
    at = dt.datetime(2024, 5, 1, 6, 16, 33, 600001, tzinfo=dt.UTC)
    table = pa.table({"k": ["a", "b"], "t": pa.array([at, at], pa.timestamp("us", tz="UTC"))})
    pq.write_table(table, folder / "part-00000.parquet", use_deprecated_int96_timestamps=True)
    whole = read_slice(folder, "parquet", ("k",))
    write_subset(whole, [1], tmp_path / "subset")
    written = pq.ParquetFile(tmp_path / "subset" / "part-00000.parquet")
    assert [c.physical_type for c in written.schema] == ["BYTE_ARRAY", "INT96"]
    back = pq.read_table(tmp_path / "subset", coerce_int96_timestamp_unit="us")
    assert back.column("t").to_pylist() == [at.replace(tzinfo=None)]  # INT96 has no zone


def test_a_key_the_slice_lacks_is_named(tmp_path: Path) -> None:
    _write_json_lines(tmp_path / "slice")
    with pytest.raises(InputError, match="the slice has no column 'taxi_id'"):
        read_slice(tmp_path / "slice", "jsonl", ("taxi_id",))


# -- budget, signature, templates ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "runs", "seconds"),
    [([], 60, None), (["40"], 40, None), (["15m"], None, 900.0), (["2h", "10"], 10, 7200.0)],
)
def test_budget(given: list[str], runs: int | None, seconds: float | None) -> None:
    budget = Budget.parse(given)
    assert (budget.runs, budget.seconds) == (runs, seconds)


@pytest.mark.parametrize("bad", ["0", "-3", "ten", "15 m", "1d", "5", "3m"])
def test_a_bad_budget_is_one_line(bad: str) -> None:
    given = ["5", bad] if bad in ("5",) else ["1m", bad] if bad == "3m" else [bad]
    with pytest.raises(InputError, match=r"^--budget: expected a number of runs"):
        Budget.parse(given)


def _comparison(
    reference: list[dict[str, object]], candidate: list[dict[str, object]]
) -> NoisyComparison:
    verdict = compare(reference, candidate, by_key("k"))
    return NoisyComparison(verdict, None, 0.0, 0.0)


def test_a_signature_is_the_kinds_and_the_corrupted_columns() -> None:
    run = Signature.of(_comparison([{"k": 1, "a": 1, "b": 1}], [{"k": 1, "a": 2, "b": 1}]))
    assert run == Signature("divergent", ("corruption",), ("a",))
    assert run.describe() == "divergent: corruption on a"
    other_column = Signature.of(_comparison([{"k": 1, "a": 1, "b": 1}], [{"k": 1, "a": 1, "b": 2}]))
    lost = Signature.of(_comparison([{"k": 1, "a": 1, "b": 1}], []))
    same = Signature.of(_comparison([{"k": 1, "a": 1, "b": 1}], [{"k": 1, "a": 2, "b": 1}]))
    equivalent = Signature.of(_comparison([{"k": 1, "a": 1}], [{"k": 1, "a": 1}]))
    both = Signature.of(
        _comparison(
            [{"k": 1, "a": 1, "b": 1}, {"k": 2, "a": 1, "b": 1}], [{"k": 1, "a": 2, "b": 2}]
        )
    )
    assert both == Signature("divergent", ("loss", "corruption"), ("a", "b"))
    assert run.reproduced_by(same, "same") and run.reproduced_by(same, "exact")
    assert both.reproduced_by(run, "same") and not both.reproduced_by(run, "exact")
    assert not run.reproduced_by(other_column, "same")
    assert not run.reproduced_by(lost, "same") and run.reproduced_by(lost, "divergent")
    assert not run.reproduced_by(equivalent, "divergent")


def test_a_jobs_paths_become_placeholders_and_back() -> None:
    run = "/ws/parity_x/run-1"
    job = SparkJob(
        "/repo/jobs/app.py",
        ("--input", f"{run}/slice", "--output", f"{run}/candidate", "--log", f"{run}/notes"),
        {"spark.sql.shuffle.partitions": "4"},
    )
    templated = template(job, run, "candidate")
    assert templated.args == (
        "--input",
        "{input}",
        "--output",
        "{output}",
        "--log",
        "{run_dir}/notes",
    )
    trial = filled(templated, Path("/t/003"), "candidate")
    assert trial.args == (
        "--input",
        "/t/003/input",
        "--output",
        "/t/003/candidate",
        "--log",
        "/t/003/notes",
    )
    assert trial.conf == job.conf


def test_the_regression_test_is_python_with_both_jobs(tmp_path: Path) -> None:
    job = SparkJob("/repo/app.py", ("--input", "{input}", "--output", "{output}"), {"a": "b"})
    path = write_regression_test(
        tmp_path,
        validation="taxi-parallel.buggy",
        run_id='run"""\\x',
        reference=job,
        candidate=SparkJob("/repo/app.py", ("--variant", "new", "--input", "{input}")),
        rows=5,
        rows_before=2000,
        reproduces='divergent: corruption on a"""b',
    )
    assert (
        path.name
        == regression_file_name("taxi-parallel.buggy")
        == "test_taxi_parallel_buggy_minimal.py"
    )
    text = path.read_text()
    compile(text, str(path), "exec")
    assert job_literal("REFERENCE", job) in text
    namespace: dict[str, object] = {"__file__": str(path)}
    exec(compile(text, str(path), "exec"), namespace)
    assert namespace["CANDIDATE"] == {
        "name": "parity",
        "application": "/repo/app.py",
        "args": ["--variant", "new", "--input", "{input}"],
        "conf": {},
        "py_files": [],
        "jars": [],
        "main_class": None,
    }
    assert "corruption on a\\u0022\\u0022\\u0022b" in text


# -- assert_equivalent on outputs on disk ---------------------------------------------------------


def test_assert_equivalent_reads_outputs_on_disk(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text('{"k": 1, "v": 1}\n{"k": 2, "v": 2}\n')
    (tmp_path / "c.jsonl").write_text('{"k": 2, "v": 2}\n{"k": 1, "v": 1}\n')
    (tmp_path / "bad.jsonl").write_text('{"k": 2, "v": 2}\n{"k": 1, "v": 5}\n')
    spec = {"dependence": {"key": ["k"]}, "output": {"format": "jsonl"}}
    assert assert_equivalent(tmp_path / "r.jsonl", str(tmp_path / "c.jsonl"), spec=spec).equivalent
    with pytest.raises(AssertionError, match="corruption 1"):
        assert_equivalent(tmp_path / "r.jsonl", tmp_path / "bad.jsonl", spec=spec)
    by_dependence = assert_equivalent(
        tmp_path / "r.jsonl", tmp_path / "c.jsonl", dependence={"key": ["k"]}
    )
    assert by_dependence.equivalent
    with pytest.raises(TypeError, match="not one of each"):
        assert_equivalent(tmp_path / "r.jsonl", [{"k": 1}], spec=spec)


# -- stored with the run, shown in its report -----------------------------------------------------


def _divergent_run(store: Store, run_id: str = "p/run-1") -> None:
    store.start_run(RunStart(run_id, "taxi"))
    verdict = compare([{"k": 1, "v": 1}], [{"k": 1, "v": 2}], by_key("k"))
    outcome = RunOutcome.from_verdict(verdict, stats={"seconds": 1.0}, report_path="/ws/r/report")
    store.record_run(run_id, outcome)


DOCUMENT = {
    "status": "1-minimal",
    "rows_before": 1000,
    "rows_after": 6,
    "keys_before": 20,
    "keys_after": 1,
    "runs": 23,
    "seconds": 412.3,
    "reproduces": "divergent: corruption on <b>v</b>",
    "input": "/ws/r/minimized/input",
    "test": "/ws/r/minimized/test_taxi_minimal.py",
}


def test_the_result_is_stored_with_the_run_keeping_its_statistics(store: Store) -> None:
    _divergent_run(store)
    store.set_stat("p/run-1", "minimized", DOCUMENT)
    store.set_stat("p/run-1", "minimized", {**DOCUMENT, "runs": 24})
    record = store.get_run("p/run-1")
    assert record is not None and record.stats is not None
    assert record.stats["seconds"] == 1.0
    assert record.stats["minimized"] == {**DOCUMENT, "runs": 24}
    with pytest.raises(Exception, match="there is no such run"):
        store.set_stat("p/nope", "minimized", DOCUMENT)


def test_the_report_shows_the_result_escaped_or_the_command(store: Store) -> None:
    _divergent_run(store)
    before = store.get_run("p/run-1")
    assert before is not None
    assert "<code>parity minimize p/run-1</code>" in render_report_html(before)
    store.set_stat("p/run-1", "minimized", DOCUMENT)
    record = store.get_run("p/run-1")
    assert record is not None
    page = render_report_html(record)
    assert "1,000 → 6 rows (20 → 1 keys), in 23 runs and 412s (1-minimal)" in page
    assert "corruption on &lt;b&gt;v&lt;/b&gt;" in page and "<b>v</b>" not in page
    assert "<code>pytest /ws/r/minimized/test_taxi_minimal.py</code>" in page
    text = render_summary(record)
    assert (
        "minimized: 1,000 → 6 rows (20 → 1 keys) in 23 runs, 412s (1-minimal); "
        "test: /ws/r/minimized/test_taxi_minimal.py"
    ) in text
