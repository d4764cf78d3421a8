"""Expectations (``expectations/``): suite files, the spec's forms, derived expectations, and
``jobs/check_expectations.py`` through real ``spark-submit`` on ``local[2]`` with Great Expectations
and a real store.

Great Expectations computes each expectation with several Spark jobs, so the Spark tests
share one run of the job (``job_run``: a suite that passes on the reference and fails on the
candidate, the derived expectations on the candidate, the Data Docs) and assert on what it
stored and wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from expectations.derived import DERIVED_SUITE, ColumnProfile, Profile, derive_suite
from expectations.suites import ExpectationConfig, Suite, check_columns, load_suite, parse_suite
from jobs.check_expectations import main, plan_expectations, summary
from matcher.errors import InputError, SpecError
from matcher.spec import parse_spec
from matcher.spec_schema import DerivedExpectationsSpec
from matcher.store import ExpectationRecord, RunStart, Store

# Airflow's environment (a temporary home) before anything imports Airflow: the DAG task test.
pytest_plugins = ("airflow_fixtures",)

ROOT = Path(__file__).resolve().parent.parent
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
TAXI_SUITE = ROOT / "expectations" / "suites" / "taxi_output.json"

SCHEMA = pa.schema(
    [("taxi_id", pa.string()), ("seq", pa.int64()), ("km", pa.float64()), ("note", pa.string())]
)
# 40 events of 4 taxis; every tenth has no note.
REFERENCE = [
    {"taxi_id": f"T{i % 4}", "seq": i, "km": i * 0.5, "note": None if i % 10 == 0 else "ok"}
    for i in range(40)
]
# 10% fewer rows (36), one of them without a taxi, one 1000 km away.
CANDIDATE = [
    *REFERENCE[:34],
    {**REFERENCE[34], "taxi_id": None},
    {**REFERENCE[35], "km": 1000.0},
]
PASSING = {
    "name": "sane",
    "expectations": [
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "taxi_id"}},
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {"column": "km", "min_value": 0, "max_value": 100},
        },
    ],
}


# -- suite files and derived expectations, without Spark ---------------------------------


def test_suite_files_are_read_and_their_problems_named(tmp_path: Path) -> None:
    suite = load_suite(TAXI_SUITE, "taxi.yaml: expectations.suites[0]")
    assert (suite.name, len(suite.expectations), suite.source) == (
        "taxi_output",
        7,
        str(TAXI_SUITE),
    )
    assert suite.expectations[1] == ExpectationConfig(
        "expect_column_values_to_not_be_null", {"column": "taxi_id"}
    )

    where = "s.yaml: expectations.suites[0]"
    with pytest.raises(SpecError) as missing:
        load_suite(tmp_path / "nope.json", where)
    assert str(missing.value) == f"{where}: {tmp_path}/nope.json: no such suite file"
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x",\n "expectations": [}')
    with pytest.raises(SpecError) as invalid:
        load_suite(broken, where)
    assert str(invalid.value) == (
        f"{where}: {broken}: line 2, column 19: invalid JSON: Expecting value"
    )
    for document, problem in [
        ([], "expected a JSON object with 'name' and 'expectations'"),
        (
            {"name": "x", "expectation": []},
            "unknown key 'expectation' (expected name, expectations)",
        ),
        ({"expectations": []}, "name: expected a non-empty string"),
        (
            {"name": "x", "expectations": [{"kwargs": {}}]},
            "expectations[0]: type: expected an expectation type such as 'expect_...'",
        ),
        (
            {"name": "x", "expectations": [{"type": "expect_x", "kwargs": 3}]},
            "expectations[0]: kwargs: expected an object",
        ),
    ]:
        with pytest.raises(SpecError) as raised:
            parse_suite(document, "f.json")
        assert str(raised.value) == f"f.json: {problem}"


def test_a_suite_naming_a_missing_column_is_an_error() -> None:
    suite = parse_suite(PASSING, "sane.json", source="sane.json")
    check_columns(suite, ["taxi_id", "km"], "sane.json", "candidate")
    with pytest.raises(InputError) as raised:
        check_columns(suite, ["taxi", "km"], "sane.json", "candidate")
    assert str(raised.value) == (
        "sane.json: expectations[0] (expect_column_values_to_not_be_null): column: unknown "
        "column 'taxi_id' in the candidate output (columns: taxi, km)"
    )


PROFILE = Profile(
    rows=40,
    columns=(
        ColumnProfile("taxi_id", numeric=False, integral=False, nulls=0),
        ColumnProfile("seq", numeric=True, integral=True, nulls=0, minimum=0, maximum=39),
        ColumnProfile("km", numeric=True, integral=False, nulls=0, minimum=0.0, maximum=19.5),
        ColumnProfile("note", numeric=False, integral=False, nulls=4),
        ColumnProfile("ratio", numeric=True, integral=False, nulls=0, finite=False),
        ColumnProfile("emitted_at", numeric=True, integral=True, nulls=0, minimum=5, maximum=9),
    ),
    key=("taxi_id",),
    key_distinct={"taxi_id": 4},
    key_unique=False,
)


def _kinds(suite: Suite) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, dict(e.kwargs)) for e in suite.expectations]


def test_derived_expectations_from_a_profile() -> None:
    settings = DerivedExpectationsSpec(range_tolerance=0.1)
    suite = derive_suite(PROFILE, settings, ignore=["emitted_at"], tolerances={"km": (0.5, 0.0)})
    assert (suite.name, suite.source) == (DERIVED_SUITE, "derived")
    columns = ["taxi_id", "seq", "km", "note", "ratio", "emitted_at"]
    assert _kinds(suite) == [
        ("expect_table_columns_to_match_set", {"column_set": columns, "exact_match": True}),
        ("expect_table_row_count_to_be_between", {"min_value": 39, "max_value": 41}),
        ("expect_column_values_to_not_be_null", {"column": "taxi_id"}),
        (
            "expect_column_unique_value_count_to_be_between",
            {"column": "taxi_id", "min_value": 3, "max_value": 5},
        ),
        ("expect_column_values_to_not_be_null", {"column": "seq", "mostly": 0.99}),
        # 0..39 widened by 10% of 39, whole numbers outwards
        (
            "expect_column_values_to_be_between",
            {"column": "seq", "min_value": -4, "max_value": 43},
        ),
        ("expect_column_values_to_not_be_null", {"column": "km", "mostly": 0.99}),
        # 0..19.5 widened by 10% of 19.5 and the equality's abs 0.5
        (
            "expect_column_values_to_be_between",
            {"column": "km", "min_value": -2.45, "max_value": 21.95},
        ),
        ("expect_column_values_to_not_be_null", {"column": "note", "mostly": 0.89}),
        ("expect_column_values_to_not_be_null", {"column": "ratio", "mostly": 0.99}),
    ]


def test_derived_expectations_of_a_unique_compound_key_and_exact_tolerances() -> None:
    profile = Profile(
        rows=3,
        columns=(
            ColumnProfile("a", numeric=True, integral=True, nulls=0, minimum=1, maximum=3),
            ColumnProfile("b", numeric=False, integral=False, nulls=1),
        ),
        key=("a", "b"),
        key_distinct={"a": 3, "b": 2},
        key_unique=True,
    )
    settings = DerivedExpectationsSpec(
        row_count_tolerance=0, key_count_tolerance=0, null_fraction_tolerance=0
    )
    assert _kinds(derive_suite(profile, settings)) == [
        ("expect_table_columns_to_match_set", {"column_set": ["a", "b"], "exact_match": True}),
        ("expect_table_row_count_to_be_between", {"min_value": 3, "max_value": 3}),
        ("expect_column_values_to_not_be_null", {"column": "a"}),
        ("expect_compound_columns_to_be_unique", {"column_list": ["a", "b"]}),
        (
            "expect_column_unique_value_count_to_be_between",
            {"column": "a", "min_value": 3, "max_value": 3},
        ),
        (
            "expect_column_unique_value_count_to_be_between",
            {"column": "b", "min_value": 2, "max_value": 2},
        ),
        ("expect_column_values_to_be_between", {"column": "a", "min_value": 1, "max_value": 3}),
        ("expect_column_values_to_not_be_null", {"column": "b", "mostly": 0.666666666667}),
    ]


def test_the_spec_forms_of_expectations(tmp_path: Path) -> None:
    short = parse_spec({"dependence": "unordered", "expectations": "a.json"}, "s.yaml")
    assert (short.expectations.suites, short.expectations.sides) == (("a.json",), ("candidate",))
    assert short.expectations.derived == DerivedExpectationsSpec()
    full = parse_spec(
        {
            "dependence": "unordered",
            "expectations": {
                "suites": ["a.json"],
                "sides": ["candidate", "reference"],
                "derived": {"enabled": False, "row_count_tolerance": 0.05, "ignore": "note"},
            },
        },
        "s.yaml",
    )
    assert full.expectations.sides == ("candidate", "reference")
    assert full.expectations.derived == DerivedExpectationsSpec(
        enabled=False, row_count_tolerance=0.05, ignore=("note",)
    )
    for value, problem in [
        ({"sides": ["cand"]}, "expectations.sides[0]: expected 'candidate' or 'reference'"),
        ({"sides": []}, "expectations.sides: must not be empty"),
        ({"derived": {"row_count": 1}}, "expectations.derived.row_count: unknown key"),
        ({"derived": {"range_tolerance": -1}}, "expectations.derived.range_tolerance: must be >="),
        (3, "expectations: expected a list of suite files or a mapping, got 3"),
    ]:
        with pytest.raises(SpecError) as raised:
            parse_spec({"dependence": "unordered", "expectations": value}, "s.yaml")
        assert str(raised.value).startswith(f"s.yaml: {problem}"), str(raised.value)

    suite = tmp_path / "sane.json"
    suite.write_text(json.dumps(PASSING))
    both = parse_spec(
        {"dependence": "unordered", "expectations": {"suites": [str(suite)], "sides": [
            "candidate", "reference"]}},
        "s.yaml",
    )  # fmt: skip
    plan = plan_expectations(both, tmp_path, has_reference=True)
    assert [(s.name, side) for s, side in plan.suites] == [
        ("sane", "candidate"),
        ("sane", "reference"),
    ]
    assert plan.derive is True
    with pytest.raises(InputError) as no_reference:
        plan_expectations(both, tmp_path, has_reference=False)
    assert str(no_reference.value) == (
        "s.yaml: expectations.sides: lists reference, but no --reference was given"
    )


def test_an_expectation_gx_cannot_build_names_the_file_and_place() -> None:
    from expectations.runner import _gx_suite

    for config, problem in [
        ({"type": "expect_nothing", "kwargs": {}}, "expect_nothing not found"),
        (
            {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "a", "x": 1}},
            "x: extra fields not permitted",
        ),
    ]:
        suite = parse_suite({"name": "s", "expectations": [config]}, "s.json", source="s.json")
        with pytest.raises(SpecError) as raised:
            _gx_suite(suite)
        assert str(raised.value) == f"s.json: expectations[0] ({config['type']}): {problem}"


# -- the job through spark-submit: Great Expectations on Spark --------------------------------


def write_output(directory: Path, rows: list[dict[str, Any]]) -> str:
    directory.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), directory / "part-00000.parquet")
    return str(directory)


def make_job(tmp_path: Path, expectations: str) -> dict[str, str]:
    suite = tmp_path / "suites" / "sane.json"
    suite.parent.mkdir()
    suite.write_text(json.dumps(PASSING))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: taxi\ndependence: {key: [taxi_id]}\noutput: {format: parquet}\n"
        f"expectations: {expectations}\n"
    )
    db = f"sqlite:///{tmp_path / 'results.db'}"
    with Store.open(db) as store:
        store.start_run(RunStart("parity_taxi/run-1", "taxi"))
    return {
        "spec": str(spec),
        "db": db,
        "root": str(tmp_path),
        "candidate": write_output(tmp_path / "candidate", CANDIDATE),
        "reference": write_output(tmp_path / "reference", REFERENCE),
        "report": str(tmp_path / "report"),
    }


def _argv(job: Mapping[str, str], *extra: str) -> list[str]:
    return [
        *("--run-id", "parity_taxi/run-1", "--db", job["db"], "--spec", job["spec"]),
        *("--candidate", job["candidate"], "--reference", job["reference"]),
        *("--report-dir", job["report"], "--root", job["root"], *extra),
    ]


@pytest.fixture(scope="module")
def job_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real spark-submit of the job (local[2]): the suite on both sides, the derived
    expectations on the candidate, the Data Docs in the report folder."""
    tmp_path = tmp_path_factory.mktemp("job")
    job = make_job(tmp_path, "{suites: [suites/sane.json], sides: [candidate, reference]}")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    command += ["--conf", "spark.sql.shuffle.partitions=2"]
    command += [str(ROOT / "jobs" / "check_expectations.py")]
    result = subprocess.run(
        [*command, *_argv(job)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    with Store.open(job["db"]) as store:
        run = store.get_run("parity_taxi/run-1")
    return {**job, "result": result, "run": run}


def _outcomes(run: Any, suite: str, side: str) -> list[Any]:
    return [
        (r.expectation_type, r.kwargs.get("column"), r.success, r.observed)
        for r in run.expectations
        if (r.suite, r.side) == (suite, side)
    ]


ONE_IN_36 = {"element_count": 36, "unexpected_count": 1, "unexpected_percent": 100 / 36}
NONE_IN_36 = {"element_count": 36, "unexpected_count": 0, "unexpected_percent": 0.0}


@pytest.mark.spark
@pytest.mark.slow
def test_the_job_runs_and_says_what_it_found(job_run: Mapping[str, Any]) -> None:
    result = job_run["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    docs = Path(job_run["report"]) / "data_docs" / "index.html"
    assert (
        "expectations: parity_taxi/run-1: 7 of 13 met (sane on candidate 0/2, "
        f"sane on reference 2/2, derived_from_reference on candidate 5/9); Data Docs {docs}"
    ) in result.stdout.splitlines()
    run = job_run["run"]
    assert (run.expectations_total, run.expectations_failed, run.expectations_passed) == (
        13,
        6,
        False,
    )


@pytest.mark.spark
@pytest.mark.slow
def test_a_suite_that_passes_and_one_that_fails(job_run: Mapping[str, Any]) -> None:
    run = job_run["run"]
    of_40 = {"element_count": 40, "unexpected_count": 0, "unexpected_percent": 0.0}
    assert _outcomes(run, "sane", "reference") == [
        ("expect_column_values_to_not_be_null", "taxi_id", True, of_40),
        ("expect_column_values_to_be_between", "km", True, {**of_40, "missing_count": 0}),
    ]
    assert _outcomes(run, "sane", "candidate") == [
        ("expect_column_values_to_not_be_null", "taxi_id", False, ONE_IN_36),
        ("expect_column_values_to_be_between", "km", False, {**ONE_IN_36, "missing_count": 0}),
    ]
    failed = next(r for r in run.expectations if r.side == "candidate" and r.kwargs == {
        "column": "km", "min_value": 0.0, "max_value": 100.0})  # fmt: skip
    assert failed.details["partial_unexpected_list"] == [1000.0]


@pytest.mark.spark
@pytest.mark.slow
def test_derived_expectations_catch_lost_rows_null_keys_and_out_of_range_values(
    job_run: Mapping[str, Any],
) -> None:
    four_in_36 = {"element_count": 36, "unexpected_count": 4, "unexpected_percent": 400 / 36}
    assert _outcomes(job_run["run"], DERIVED_SUITE, "candidate") == [
        ("expect_table_columns_to_match_set", None, True, ["km", "note", "seq", "taxi_id"]),
        ("expect_table_row_count_to_be_between", None, False, 36),  # 10% fewer than 40
        ("expect_column_values_to_not_be_null", "taxi_id", False, ONE_IN_36),  # a null key
        ("expect_column_unique_value_count_to_be_between", "taxi_id", True, 4),
        ("expect_column_values_to_not_be_null", "seq", True, NONE_IN_36),
        ("expect_column_values_to_be_between", "seq", True, {**NONE_IN_36, "missing_count": 0}),
        ("expect_column_values_to_not_be_null", "km", True, NONE_IN_36),
        ("expect_column_values_to_be_between", "km", False, {**ONE_IN_36, "missing_count": 0}),
        # The four rows without a note stayed while four others went: 11.1% > 10% + 1%.
        ("expect_column_values_to_not_be_null", "note", False, four_in_36),
    ]
    # The bounds come from the reference's profile (one aggregation): 40 rows, seq 0..39,
    # km 0..19.5, 4 taxis, 10% notes missing.
    derived = [r.kwargs for r in job_run["run"].expectations if r.suite == DERIVED_SUITE]
    assert derived[1] == {"min_value": 39, "max_value": 41}
    assert derived[3] == {"column": "taxi_id", "min_value": 3, "max_value": 5}
    assert derived[5] == {"column": "seq", "min_value": 0.0, "max_value": 39.0}
    assert derived[7] == {"column": "km", "min_value": 0.0, "max_value": 19.5}
    assert derived[8] == {"column": "note", "mostly": 0.89}


@pytest.mark.spark
@pytest.mark.slow
def test_data_docs_are_written_to_the_report_folder(job_run: Mapping[str, Any]) -> None:
    docs = Path(job_run["report"]) / "data_docs"
    index = (docs / "index.html").read_text(encoding="utf-8")
    assert "sane" in index and DERIVED_SUITE in index
    pages = sorted(p.relative_to(docs).parts[0] for p in docs.rglob("*.html"))
    assert pages == ["expectations", "expectations", "index.html", *["validations"] * 3]
    # Each validation is filed under the Parity run that made it (a GX Checkpoint's run
    # name), not GX's "__none__", and its page lists its results
    validations = [p for p in docs.rglob("*.html") if p.relative_to(docs).parts[0] == "validations"]
    assert "__none__" not in index
    assert all("parity_taxi" in str(p.relative_to(docs)) for p in validations), validations


def test_job_errors_are_one_line_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = make_job(tmp_path, "[suites/sane.json]")
    assert main(_argv({**job, "root": str(tmp_path / "elsewhere")})) == 2
    assert capsys.readouterr().err == (
        f"expectations: error: {job['spec']}: expectations.suites[0]: "
        f"{tmp_path / 'elsewhere' / 'suites' / 'sane.json'}: no such suite file\n"
    )
    assert main([*_argv(job)[:1], "parity_taxi/nope", *_argv(job)[2:]]) == 2
    assert capsys.readouterr().err == (
        f"expectations: error: no run 'parity_taxi/nope' in {job['db']}\n"
    )


def test_nothing_to_run_clears_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = make_job(tmp_path, "{derived: {enabled: false}}")
    with Store.open(job["db"]) as store:
        store.record_expectations("parity_taxi/run-1", [ExpectationRecord("s", "c", "e", True)])
    assert main(_argv(job)) == 0
    assert capsys.readouterr().out == "expectations: parity_taxi/run-1: nothing to run\n"
    with Store.open(job["db"]) as store:
        run = store.get_run("parity_taxi/run-1")
    assert run is not None and run.expectations == ()


def test_job_summary_line() -> None:
    results = [
        ExpectationRecord("a", "candidate", "expect_x", True),
        ExpectationRecord("a", "candidate", "expect_y", False),
        ExpectationRecord("b", "reference", "expect_x", True),
    ]
    assert summary("r1", results, "/r/data_docs") == (
        "expectations: r1: 2 of 3 met (a on candidate 1/2, b on reference 1/1); "
        "Data Docs /r/data_docs/index.html"
    )


def test_the_dag_task_submits_the_job_on_the_runs_outputs() -> None:
    from parity.airflow.operators import EXPECTATIONS_TASK, ExpectationsOperator, expectations_job
    from parity.airflow.plan import RunPlan

    plan = RunPlan(
        validation="taxi",
        run_id="parity_taxi/scheduled__2024-05-02",
        run_dir="/home/p/runs/parity_taxi/run",
        trigger="scheduled",
        spec_file="/repo/dags/validations/taxi.yaml",
        overrides={},
        slice={},
        reference_version=None,
        candidate_version=None,
        jobs={},
    )
    job = expectations_job(plan, Path("/repo"))
    assert (job.application, job.name, dict(job.conf)) == (
        "/repo/jobs/check_expectations.py",
        "parity-taxi-expectations",
        {},
    )
    assert job.argv() == [
        "/repo/jobs/check_expectations.py",
        *("--run-id", "parity_taxi/scheduled__2024-05-02"),
        *("--spec", "/repo/dags/validations/taxi.yaml"),
        *("--candidate", "/home/p/runs/parity_taxi/run/candidate"),
        *("--reference", "/home/p/runs/parity_taxi/run/reference"),
        *("--report-dir", "/home/p/runs/parity_taxi/run/report"),
        *("--root", "/repo"),
    ]
    operator = ExpectationsOperator(root=Path("/repo"), conn_id="spark_default")
    assert (operator.task_id, operator.root) == (EXPECTATIONS_TASK, "/repo")


def test_derived_expectations_skip_columns_the_candidate_lacks() -> None:
    from jobs.check_expectations import _present

    suite = derive_suite(PROFILE, DerivedExpectationsSpec(), ignore=["ratio", "emitted_at"])
    kept = _present(suite, ["taxi_id", "seq"])
    assert _kinds(kept) == [
        (
            "expect_table_columns_to_match_set",
            {"column_set": [c.name for c in PROFILE.columns], "exact_match": True},
        ),
        ("expect_table_row_count_to_be_between", {"min_value": 39, "max_value": 41}),
        ("expect_column_values_to_not_be_null", {"column": "taxi_id"}),
        (
            "expect_column_unique_value_count_to_be_between",
            {"column": "taxi_id", "min_value": 3, "max_value": 5},
        ),
        ("expect_column_values_to_not_be_null", {"column": "seq", "mostly": 0.99}),
        ("expect_column_values_to_be_between", {"column": "seq", "min_value": 0, "max_value": 39}),
    ]


def test_great_expectations_is_imported_beside_the_spark_session() -> None:
    """``import_in_background`` imports the shared modules first, then the module in a
    thread; a module that fails to import leaves its error to the next import (in a fresh
    interpreter, so that this test's own imports do not count)."""
    code = """
import importlib, sys
from jobs.check_expectations import SHARED_MODULES, import_in_background
thread = import_in_background("great_expectations")
assert all(name in sys.modules for name in SHARED_MODULES)
thread.join()
assert "great_expectations" in sys.modules
import_in_background("no_such_module_of_parity").join()
try:
    importlib.import_module("no_such_module_of_parity")
except ModuleNotFoundError as exc:
    print("raised", exc.name)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout == "raised no_such_module_of_parity\n"
