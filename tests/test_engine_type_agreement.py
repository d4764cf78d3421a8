"""The two engines give the same verdict whatever the types (issue 10, items 5 and 8).

Exact equality means same kind and value; the core decides on the values as read, and the
Spark engine must say the same, whether it reads a file or a directory:

* a JSON column that mixes kinds (``1`` and ``"1"``, at the top or inside an array) keeps
  them apart on Spark too, though Spark's reader infers such a column as ``string``;
* a decimal never equals a double without a tolerance, and is compared in double precision
  within one, at the top level and inside arrays and structs;
* a column whose two types have no common type (``string`` vs ``bigint``, ``boolean`` vs
  ``bigint``, a struct that gained a field) is compared under every ``schema.mode``: values
  of different kinds differ (null vs null aside); a key column without a common type is
  an error (exit 2) on both engines.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from matcher import Equality, InputError, Tolerance, compare
from matcher.dependence import by_key
from matcher.files.compare import compare_files
from matcher.spark import SparkComparison, compare_dataframes, read_stream
from matcher.spark.kinds import mixes_kinds
from matcher.spark.outputs import compare_on_spark
from matcher.spec import load_spec
from matcher.verdict import Verdict
from parity.cli import main

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = pytest.mark.spark

Witness = tuple[str, Any, tuple[str, ...], dict[str, Any] | None, dict[str, Any] | None]


def engines(
    spark: SparkSession, tmp_path: Path, spec: str, reference: str, candidate: str
) -> tuple[Verdict, Verdict]:
    """The verdicts of the core and of Spark on the same outputs under the same spec."""
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    loaded = load_spec(path)
    core = compare_files(loaded, reference, candidate, 10)
    on_spark = compare_on_spark(spark, loaded, reference, candidate, limit=10).verdict
    return core, on_spark


def counts(corruption: int = 0, loss: int = 0, duplication: int = 0) -> dict[str, int]:
    return {"loss": loss, "duplication": duplication, "reordering": 0, "corruption": corruption}


def witnesses(verdict: Verdict) -> list[Witness]:
    return [
        (
            d.kind,
            d.key,
            d.columns,
            None if d.reference_event is None else dict(d.reference_event),
            None if d.candidate_event is None else dict(d.candidate_event),
        )
        for d in verdict.divergences
    ]


def json_lines(directory: Path, *lines: str) -> str:
    """An output directory with one JSON lines file holding ``lines`` as written."""
    directory.mkdir(parents=True)
    (directory / "part-00000.json").write_text("".join(line + "\n" for line in lines))
    return str(directory)


def parquet(directory: Path, table: pa.Table) -> str:
    directory.mkdir(parents=True)
    pq.write_table(table, directory / "part-00000.parquet")
    return str(directory)


# -- 1. JSON columns that mix kinds ------------------------------------------------------------


# fields in Spark's order (sorted), so that both engines list differing columns alike
MIXED_REFERENCE = ('{"a":[1,"x"],"k":1,"v":1}', '{"a":[2],"k":2,"v":"x"}', '{"k":3,"v":2.5}')


@pytest.mark.parametrize("dependence", ["{key: [k]}", "ordered", "unordered"])
def test_a_json_column_mixing_kinds_keeps_them_apart(
    spark: SparkSession, tmp_path: Path, dependence: str
) -> None:
    reference = json_lines(tmp_path / "ref", *MIXED_REFERENCE)
    # v: "1" for 1; a: "1" for 1 inside the array; the other rows agree
    candidate = json_lines(
        tmp_path / "cand",
        '{"a":["1","x"],"k":1,"v":"1"}',
        '{"a":[2],"k":2,"v":"x"}',
        '{"k":3,"v":2.5}',
    )
    spec = f"output: {{format: json}}\ndependence: {dependence}\n"
    core, on_spark = engines(spark, tmp_path, spec, reference, candidate)
    ref_event = {"a": [1, "x"], "k": 1, "v": 1}
    cand_event = {"a": ["1", "x"], "k": 1, "v": "1"}
    if dependence == "unordered":  # two columns of three differ: too far apart to pair
        expected = (counts(loss=1, duplication=1), [
            ("loss", None, (), ref_event, None),
            ("duplication", None, (), None, cand_event),
        ])  # fmt: skip
    else:
        key = 1 if dependence.startswith("{") else None
        expected = (counts(corruption=1), [("corruption", key, ("a", "v"), ref_event, cand_event)])
    for verdict in (core, on_spark):
        assert (verdict.equivalent, dict(verdict.counts), witnesses(verdict)) == (False, *expected)
        assert verdict.schema is None  # both sides infer a: array<string>, v: string


def test_json_values_of_one_kind_agree_on_both_engines(spark: SparkSession, tmp_path: Path) -> None:
    reference = json_lines(tmp_path / "ref", *MIXED_REFERENCE)
    # the same values written otherwise: 2.50 is 2.5; the fields in another order
    candidate = json_lines(
        tmp_path / "cand",
        '{"v":1,"k":1,"a":[1,"x"]}',
        '{"k":2,"a":[2],"v":"x"}',
        '{"k":3,"v":2.50,"a":null}',
    )
    spec = "output: {format: json}\ndependence: {key: [k]}\n"
    for verdict in engines(spark, tmp_path, spec, reference, candidate):
        assert (verdict.equivalent, dict(verdict.counts)) == (True, counts())


def test_only_the_columns_that_mix_kinds_leave_the_typed_path(
    spark: SparkSession, tmp_path: Path
) -> None:
    plain = json_lines(tmp_path / "plain", '{"k":1,"s":"1","n":1}', '{"k":2,"s":"x","n":2}')
    mixed = json_lines(tmp_path / "mixed", '{"k":1,"s":1,"n":1}', '{"k":2,"s":"x","n":2}')
    typed = read_stream(spark, plain)
    assert typed.schema.simpleString() == "struct<k:bigint,n:bigint,s:string,__pos:bigint>"
    comparison = SparkComparison(typed, typed, by_key("k"))
    assert comparison.route(comparison.streams()).path == "grouped"
    kept = read_stream(spark, mixed)
    assert [f.name for f in kept.schema.fields] == ["k", "n", "s", "__pos"]
    assert kept.schema["n"].dataType.simpleString() == "bigint"
    comparison = SparkComparison(kept, typed, by_key("k"))
    route = comparison.route(comparison.streams())
    assert (route.path, route.reason) == (
        "per-partition",
        "column 's' holds JSON values of different kinds: compared by the core's rule",
    )
    assert compare_dataframes(kept, typed, by_key("k")).counts["corruption"] == 1


# -- 2. Decimal vs double -----------------------------------------------------------------------


def decimal_double(tmp_path: Path) -> tuple[str, str]:
    """``v``: decimal(10,2) vs double, ``a``: arrays of them, ``s``: structs of them; row 1
    holds the same numbers, row 2 numbers 0.004 apart, row 3 nulls."""
    dec = pa.decimal128(10, 2)
    reference = pa.table(
        {
            "k": pa.array([1, 2, 3], pa.int64()),
            "v": pa.array([Decimal("1.50"), Decimal("2.25"), None], dec),
            "a": pa.array([[Decimal("1.50")], [Decimal("2.25")], [None]], pa.list_(dec)),
            "s": pa.array(
                [{"x": Decimal("1.50")}, {"x": Decimal("2.25")}, None],
                pa.struct([("x", dec)]),
            ),
        }
    )
    candidate = pa.table(
        {
            "k": pa.array([1, 2, 3], pa.int64()),
            "v": pa.array([1.5, 2.254, None]),
            "a": pa.array([[1.5], [2.254], [None]], pa.list_(pa.float64())),
            "s": pa.array([{"x": 1.5}, {"x": 2.254}, None], pa.struct([("x", pa.float64())])),
        }
    )
    return parquet(tmp_path / "ref", reference), parquet(tmp_path / "cand", candidate)


@pytest.mark.parametrize("mode", ["ignore", "compatible"])
def test_a_decimal_never_equals_a_double_exactly(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    reference, candidate = decimal_double(tmp_path)
    spec = f"output: {{format: parquet}}\ndependence: {{key: [k]}}\nschema: {{mode: {mode}}}\n"
    for verdict in engines(spark, tmp_path, spec, reference, candidate):
        assert (verdict.equivalent, dict(verdict.counts)) == (False, counts(corruption=2))
        assert [(d.kind, d.key, d.columns) for d in verdict.divergences] == [
            ("corruption", 1, ("v", "a", "s")),
            ("corruption", 2, ("v", "a", "s")),
        ]
        assert dict(verdict.column_mismatches) == {"v": 2, "a": 2, "s": 2}
        if mode == "compatible":
            assert verdict.schema is not None
            assert [f.explain() for f in verdict.schema.findings] == [
                f"column {c!r} changed type {r} -> {k} (not widening; values compared as read)"
                for c, r, k in (
                    ("v", "decimal(10,2)", "double"),
                    ("a", "array<decimal(10,2)>", "array<double>"),
                    ("s", "struct<x:decimal(10,2)>", "struct<x:double>"),
                )
            ]


@pytest.mark.parametrize("dependence", ["{key: [k]}", "unordered"])
def test_a_decimal_and_a_double_within_a_tolerance_are_equal(
    spark: SparkSession, tmp_path: Path, dependence: str
) -> None:
    reference, candidate = decimal_double(tmp_path)
    within = ", ".join(f"{c}: {{abs: 0.01}}" for c in "vas")
    spec = (
        f"output: {{format: parquet}}\ndependence: {dependence}\n"
        f"equality: {{tolerance: {{{within}}}}}\nschema: {{mode: ignore}}\n"
    )
    for verdict in engines(spark, tmp_path, spec, reference, candidate):
        assert (verdict.equivalent, dict(verdict.counts)) == (True, counts())
    tight = spec.replace("0.01", "0.001")
    expected = (  # under unordered, three columns of four differ: too far apart to pair
        [("loss", ()), ("duplication", ())]
        if dependence == "unordered"
        else [("corruption", ("v", "a", "s"))]
    )
    for verdict in engines(spark, tmp_path, tight, reference, candidate):
        assert verdict.equivalent is False
        assert [(d.kind, d.columns) for d in verdict.divergences] == expected


def test_the_matcher_apis_agree_on_decimals_and_doubles(spark: SparkSession) -> None:
    reference = [{"k": 1, "v": Decimal("1.50")}, {"k": 2, "v": None}]
    candidate = [{"k": 1, "v": 1.5}, {"k": 2, "v": None}]
    ref = spark.createDataFrame(
        [(1, Decimal("1.50"), 0), (2, None, 1)], "k long, v decimal(10,2), __pos long"
    )
    cand = spark.createDataFrame([(1, 1.5, 0), (2, None, 1)], "k long, v double, __pos long")
    for equality, equivalent in (
        (Equality(), False),
        (Equality(tolerance={"v": Tolerance(abs=1e-9)}), True),
    ):
        core = compare(reference, candidate, by_key("k"), equality)
        on_spark = compare_dataframes(ref, cand, by_key("k"), equality, schema_mode="ignore")
        assert core.equivalent is on_spark.equivalent is equivalent
        assert dict(core.counts) == dict(on_spark.counts)


# -- 3. Columns without a common type ----------------------------------------------------------


def uncommon(tmp_path: Path) -> tuple[str, str]:
    """``s``: string vs bigint; ``b``: boolean vs bigint; ``t``: a struct that gained a
    field (null in row 1); ``l``: array<int> vs array<bigint>, the same values."""
    reference = pa.table(
        {
            "k": pa.array([1, 2, 3], pa.int64()),
            "s": pa.array(["1", None, "3"]),
            "b": pa.array([True, None, None]),
            "t": pa.array([{"x": 1}, {"x": 2}, {"x": 3}], pa.struct([("x", pa.int64())])),
            "l": pa.array([[1], [2], None], pa.list_(pa.int32())),
        }
    )
    candidate = pa.table(
        {
            "k": pa.array([1, 2, 3], pa.int64()),
            "s": pa.array([1, None, 3], pa.int64()),
            "b": pa.array([1, None, None], pa.int64()),
            "t": pa.array(
                [{"x": 1, "y": None}, {"x": 2, "y": 5}, {"x": 3, "y": None}],
                pa.struct([("x", pa.int64()), ("y", pa.int64())]),
            ),
            "l": pa.array([[1], [2], None], pa.list_(pa.int64())),
        }
    )
    return parquet(tmp_path / "ref", reference), parquet(tmp_path / "cand", candidate)


@pytest.mark.parametrize("mode", ["ignore", "compatible", "strict"])
def test_columns_without_a_common_type_are_compared(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    reference, candidate = uncommon(tmp_path)
    spec = f"output: {{format: parquet}}\ndependence: {{key: [k]}}\nschema: {{mode: {mode}}}\n"
    for verdict in engines(spark, tmp_path, spec, reference, candidate):
        assert (verdict.equivalent, dict(verdict.counts)) == (False, counts(corruption=3))
        assert [(d.kind, d.key, d.columns) for d in verdict.divergences] == [
            ("corruption", 1, ("s", "b")),
            ("corruption", 2, ("t",)),
            ("corruption", 3, ("s",)),
        ]
        assert dict(verdict.column_mismatches) == {"s": 2, "b": 1, "t": 1}
        assert (verdict.schema is None) is (mode == "ignore")


def test_a_key_without_a_common_type_is_an_error_on_both_engines(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, candidate = uncommon(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text("output: {format: parquet}\ndependence: {key: [s]}\nschema: {mode: ignore}\n")
    assert main(["compare", reference, candidate, "--spec", str(spec), "--engine", "core"]) == 2
    assert capsys.readouterr().err == (
        "parity: error: dependence.key needs column 's', whose values cannot be compared: "
        "string in the reference, bigint in the candidate\n"
    )
    with pytest.raises(InputError) as raised:
        compare_on_spark(spark, load_spec(spec), reference, candidate, limit=10)
    assert str(raised.value) == (
        "the dependence needs column 's', whose values cannot be compared: "
        "string in the reference, bigint in the candidate"
    )


def test_a_struct_and_a_map_are_compared_by_the_cores_rule(spark: SparkSession) -> None:
    # the core reads both as mappings, compared key by key; SQL cannot say that
    reference = [{"k": 1, "m": {"a": 1}}, {"k": 2, "m": {"a": 2}}]
    candidate = [{"k": 1, "m": {"a": 1}}, {"k": 2, "m": {"a": 3}}]
    ref = spark.createDataFrame(
        [(1, {"a": 1}, 0), (2, {"a": 2}, 1)], "k long, m struct<a:bigint>, __pos long"
    )
    cand = spark.createDataFrame(
        [(1, {"a": 1}, 0), (2, {"a": 3}, 1)], "k long, m map<string,bigint>, __pos long"
    )
    comparison = SparkComparison(ref, cand, by_key("k"), schema_mode="ignore")
    assert comparison.route(comparison.streams()).reason == (
        "column 'm' holds struct<a:bigint> and map<string,bigint>, which SQL cannot compare: "
        "compared by the core's rule"
    )
    core, on_spark = compare(reference, candidate, by_key("k")), comparison.run()
    for verdict in (core, on_spark):
        assert (verdict.equivalent, dict(verdict.counts)) == (False, counts(corruption=1))
        assert witnesses(verdict) == [
            ("corruption", 2, ("m",), {"k": 2, "m": {"a": 2}}, {"k": 2, "m": {"a": 3}})
        ]


def test_what_a_variant_schema_says_about_kinds() -> None:
    assert mixes_kinds("VARIANT") and mixes_kinds("ARRAY<VARIANT>")
    assert mixes_kinds("OBJECT<a: BIGINT, b: OBJECT<x: VARIANT>>")
    assert not mixes_kinds("OBJECT<VARIANT: STRING>")  # a field named VARIANT
    assert not mixes_kinds("STRING") and not mixes_kinds("ARRAY<VOID>") and not mixes_kinds(None)
