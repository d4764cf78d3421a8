"""Schema findings on both engines: the core and Spark find the same differences and reach
the same verdict on the same Parquet outputs, and ``parity compare`` exits 1 when the
schema makes the run divergent, 0 when it only lists the differences."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from matcher.files.compare import compare_files
from matcher.schema import Mode, SchemaDiff, SchemaFinding
from matcher.spark.outputs import compare_on_spark
from matcher.spec import load_spec
from matcher.verdict import Verdict
from parity.cli import main

pytest_plugins = ("tests.spark_fixtures",)

KEYS = [1, 2, 3]
REFERENCE = pa.table(
    {
        "k": pa.array(KEYS, pa.int64()),
        "seq": pa.array([10, 11, 12], pa.int64()),
        "v": pa.array([5, 6, 7], pa.int32()),
        "s": pa.array(["a", "b", "c"]),
        "gone": pa.array([0, 0, 0], pa.int32()),
    },
    schema=pa.schema(
        [
            pa.field("k", pa.int64(), nullable=False),
            ("seq", pa.int64()),
            ("v", pa.int32()),
            ("s", pa.string()),
            ("gone", pa.int32()),
        ]
    ),
)
# Every kind at once: gone removed, new added, v widened to bigint (a value changed too),
# s before v (order), k nullable; seq narrowed to int, but it is in equality.ignore.
CANDIDATE = pa.table(
    {
        "k": pa.array(KEYS, pa.int64()),
        "seq": pa.array([10, 11, 12], pa.int32()),
        "s": pa.array(["a", "b", "c"]),
        "v": pa.array([5, 6, 8], pa.int64()),
        "new": pa.array([1.5, 1.5, 1.5]),
    }
)
FINDINGS = (
    SchemaFinding("nullability", "k", "not null", "nullable", False),
    SchemaFinding("retyped", "v", "int", "bigint", False, True, "bigint"),
    SchemaFinding("removed", "gone", "int", None, True),
    SchemaFinding("added", "new", None, "double", True),
    SchemaFinding("order", None, ("k", "v", "s"), ("k", "s", "v"), False),
)


def write(directory: Path, table: pa.Table) -> str:
    directory.mkdir(parents=True)
    pq.write_table(table, directory / "part-00000.parquet")
    return str(directory)


def spec_file(tmp_path: Path, mode: str | None, *, extra: str = "") -> Path:
    path = tmp_path / f"spec-{mode}.yaml"
    schema = "" if mode is None else f"schema: {{mode: {mode}}}\n"
    path.write_text(
        "output: {format: parquet, order_by: [seq]}\n"
        "dependence: {key: [k]}\n"
        "equality: {ignore: [seq]}\n" + schema + extra
    )
    return path


def outputs(tmp_path: Path, candidate: pa.Table = CANDIDATE) -> tuple[str, str]:
    return write(tmp_path / "ref", REFERENCE), write(tmp_path / "cand", candidate)


def summary(verdict: Verdict) -> tuple[bool, dict[str, int], SchemaDiff | None]:
    return verdict.equivalent, dict(verdict.counts), verdict.schema


def test_core_and_spark_find_the_same_differences(spark: SparkSession, tmp_path: Path) -> None:
    reference, candidate = outputs(tmp_path)
    spec = load_spec(spec_file(tmp_path, None))
    core = compare_files(spec, reference, candidate, 10)
    on_spark = compare_on_spark(spark, spec, reference, candidate, limit=10).verdict
    expected = (False, {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 1},
                SchemaDiff("compatible", FINDINGS))  # fmt: skip
    assert summary(core) == expected
    assert summary(on_spark) == expected
    # the values of v are compared after widening: the one that changed is the witness
    for verdict in (core, on_spark):
        (witness,) = verdict.divergences
        assert (witness.kind, witness.key, witness.columns) == ("corruption", 3, ("v",))
        assert witness.reference_event == {"k": 3, "seq": 12, "v": 7, "s": "c"}
        assert witness.candidate_event == {"k": 3, "seq": 12, "v": 8, "s": "c"}


def test_listed_only_and_strict_on_both_engines(spark: SparkSession, tmp_path: Path) -> None:
    # Same values; v widened, s moved, k nullable, seq narrowed but ignored.
    same = CANDIDATE.drop_columns(["new"]).set_column(3, "v", pa.array([5, 6, 7], pa.int64()))
    reference, candidate = outputs(tmp_path, same.append_column("gone", REFERENCE["gone"]))
    modes: tuple[tuple[Mode, bool], ...] = (("compatible", True), ("strict", False))
    for mode, equivalent in modes:
        spec = load_spec(spec_file(tmp_path, mode))
        strict = mode == "strict"
        expected = SchemaDiff(
            mode,
            (
                SchemaFinding("nullability", "k", "not null", "nullable", strict),
                SchemaFinding("retyped", "v", "int", "bigint", strict, True, "bigint"),
                SchemaFinding(
                    "order", None, ("k", "v", "s", "gone"), ("k", "s", "v", "gone"), strict
                ),
            ),
        )
        for verdict in (
            compare_files(spec, reference, candidate, 10),
            compare_on_spark(spark, spec, reference, candidate, limit=10).verdict,
        ):
            assert verdict.equivalent is equivalent
            assert verdict.total_divergences == 0
            assert verdict.schema == expected


def test_the_issues_case_a_retyped_ignored_column(spark: SparkSession, tmp_path: Path) -> None:
    # "schemas differ: retyped: seq bigint -> int" crashed the Spark job with exit 2
    narrowed = REFERENCE.set_column(1, "seq", pa.array([10, 11, 12], pa.int32()))
    reference, candidate = outputs(tmp_path, narrowed)
    spec = load_spec(spec_file(tmp_path, "strict"))
    verdict = compare_on_spark(spark, spec, reference, candidate, limit=10).verdict
    assert summary(verdict) == (
        True,
        {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0},
        None,
    )
    assert summary(compare_files(spec, reference, candidate, 10)) == summary(verdict)


def test_ignore_lists_nothing_and_compares_the_shared_columns(tmp_path: Path) -> None:
    reference, candidate = outputs(tmp_path)
    spec = load_spec(spec_file(tmp_path, "ignore"))
    verdict = compare_files(spec, reference, candidate, 10)
    assert summary(verdict) == (
        False,
        {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 1},
        None,
    )


def test_a_key_column_whose_type_cannot_be_compared_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = REFERENCE.set_column(0, "k", pa.array(["1", "2", "3"]))
    reference, candidate = outputs(tmp_path, texts)
    spec = spec_file(tmp_path, None)
    code = main(["compare", reference, candidate, "--spec", str(spec), "--engine", "core"])
    assert code == 2
    assert capsys.readouterr().err == (
        "parity: error: dependence.key needs column 'k', whose values cannot be compared: "
        "bigint in the reference, string in the candidate\n"
    )


@pytest.mark.parametrize(
    ("mode", "code"), [("compatible", 1), ("strict", 1), (None, 1), ("ignore", 0)]
)
def test_exit_1_when_divergent_by_the_schema_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str | None, code: int
) -> None:
    # Same values in every shared column; only gone is missing: divergent, nothing counted.
    reference, candidate = outputs(tmp_path, REFERENCE.drop_columns(["gone"]))
    spec = spec_file(tmp_path, mode)
    argv = ["compare", reference, candidate, "--spec", str(spec), "--engine", "core", "--json"]
    assert main(argv) == code
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == ("equivalent" if mode == "ignore" else "divergent")
    assert document["total_divergences"] == 0
    removed = {
        "kind": "removed",
        "column": "gone",
        "reference": "int",
        "candidate": None,
        "divergent": True,
        "widening": False,
        "compared_as": None,
        "inferred": False,
        "explanation": "column 'gone' (int) is missing from the candidate",
    }
    expected = {"mode": mode or "compatible", "divergent": True, "findings": [removed]}
    # schema.mode ignore lists nothing: no findings, no "schema" document
    assert document["schema"] == (None if mode == "ignore" else expected)


def test_exit_0_when_the_differences_are_only_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    widened = REFERENCE.set_column(2, "v", pa.array([5, 6, 7], pa.int64()))
    reference, candidate = outputs(tmp_path, widened)
    spec = spec_file(tmp_path, None)
    code = main(["compare", reference, candidate, "--spec", str(spec), "--engine", "core"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[6:] == [
        "verdict: equivalent",
        "counts: loss 0, duplication 0, reordering 0, corruption 0",
        "rows: reference 3, candidate 3, matched 3, peak unmatched 1",
        "schema: 1 difference (0 divergent) under schema.mode compatible",
        "  listed    retyped     column 'v' changed type int -> bigint (widening; values "
        "compared as bigint)",
    ]
    strict = spec_file(tmp_path, "strict")
    assert main(["compare", reference, candidate, "--spec", str(strict), "--engine", "core"]) == 1


def write_lines(directory: Path, rows: list[dict[str, object]]) -> str:
    directory.mkdir(parents=True)
    (directory / "part-00000.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(directory)


def test_json_schemas_are_inferred_alike(spark: SparkSession, tmp_path: Path) -> None:
    reference = write_lines(tmp_path / "ref", [{"k": 1, "v": 1, "s": {"b": 1}}, {"k": 2, "v": 2}])
    candidate = write_lines(
        tmp_path / "cand", [{"v": 1.5, "k": 1, "s": {"b": 1}}, {"k": 2, "v": 2}]
    )
    empty = write_lines(tmp_path / "empty", [])
    (tmp_path / "spec.yaml").write_text("output: {format: json}\ndependence: {key: [k]}\n")
    spec = load_spec(tmp_path / "spec.yaml")
    # JSON has one number type: bigint here, double there is listed, not divergent (issue
    # 31); the values still differ (1 is not 1.5)
    expected = SchemaDiff(
        "compatible",
        (SchemaFinding("retyped", "v", "bigint", "double", False, False, "double", True),),
    )
    for verdict in (
        compare_files(spec, reference, candidate, 10),
        compare_on_spark(spark, spec, reference, candidate, limit=10).verdict,
    ):
        assert summary(verdict) == (
            False,
            {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 1},
            expected,
        )
        assert verdict.divergences[0].candidate_event == {"k": 1, "s": {"b": 1}, "v": 1.5}
    # an output without a single object has no schema to compare: only its events count
    for verdict in (
        compare_files(spec, empty, candidate, 10),
        compare_on_spark(spark, spec, empty, candidate, limit=10).verdict,
    ):
        assert summary(verdict) == (
            False,
            {"loss": 0, "duplication": 2, "reordering": 0, "corruption": 0},
            None,
        )
