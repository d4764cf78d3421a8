"""The schema comparison of ``matcher.schema``: every finding kind, each mode, the exemption
of ignored columns, widening, and the values compared after widening; plus the schemas the
core reads from Parquet, JSON lines and CSV (``matcher.files.output_schema``)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from matcher.files.output_schema import read_schema
from matcher.schema import (
    Compared,
    Field,
    Schema,
    SchemaDiff,
    SchemaFinding,
    common_type,
    comparison_plan,
    diff_schemas,
    judge,
    project,
    widen,
    widens,
)
from matcher.verdict import Verdict


def schema(*fields: tuple[str, str] | tuple[str, str, bool]) -> Schema:
    return Schema(tuple(Field(*f) for f in fields))


REFERENCE = schema(("k", "bigint", False), ("a", "int"), ("b", "string"), ("c", "int"))
# c and a swapped, a widened, b gone, d new, k nullable now
CANDIDATE = schema(("k", "bigint"), ("c", "int"), ("a", "bigint"), ("d", "double"))


def test_every_finding_kind_under_compatible() -> None:
    diff = diff_schemas(REFERENCE, CANDIDATE)
    assert diff == SchemaDiff(
        "compatible",
        (
            SchemaFinding("nullability", "k", "not null", "nullable", False),
            SchemaFinding("retyped", "a", "int", "bigint", False, True, "bigint"),
            SchemaFinding("removed", "b", "string", None, True),
            SchemaFinding("added", "d", None, "double", True),
            SchemaFinding("order", None, ("k", "a", "c"), ("k", "c", "a"), False),
        ),
    )
    assert diff.divergent is True
    assert diff.summary() == "5 differences (2 divergent)"
    assert [f.explain() for f in diff.findings] == [
        "column 'k' is not null in the reference, nullable in the candidate",
        "column 'a' changed type int -> bigint (widening; values compared as bigint)",
        "column 'b' (string) is missing from the candidate",
        "column 'd' (double) is new in the candidate",
        "columns stand in another order: reference ['k', 'a', 'c'], candidate ['k', 'c', 'a']",
    ]


def test_strict_makes_every_finding_divergent() -> None:
    diff = diff_schemas(REFERENCE, CANDIDATE, "strict")
    assert [(f.kind, f.divergent) for f in diff.findings] == [
        ("nullability", True),
        ("retyped", True),
        ("removed", True),
        ("added", True),
        ("order", True),
    ]


def test_compatible_lists_widening_nullability_and_order_only() -> None:
    reference = schema(("k", "bigint"), ("a", "int", False), ("f", "float"))
    candidate = schema(("a", "bigint"), ("k", "bigint"), ("f", "double"))
    diff = diff_schemas(reference, candidate, "compatible")
    assert [(f.kind, f.column, f.divergent) for f in diff.findings] == [
        ("retyped", "a", False),
        ("nullability", "a", False),
        ("retyped", "f", False),
        ("order", None, False),
    ]
    assert diff.divergent is False
    assert judge(Verdict(True), diff).equivalent is True
    # no finding, nothing to add: the verdict is the one the events gave
    assert judge(Verdict(True), SchemaDiff("strict", ())) == Verdict(True)


def test_compatible_makes_narrowing_and_incomparable_retypings_divergent() -> None:
    reference = schema(("seq", "bigint"), ("s", "string"), ("n", "array<int>"))
    candidate = schema(("seq", "int"), ("s", "bigint"), ("n", "array<bigint>"))
    diff = diff_schemas(reference, candidate)
    assert diff.findings == (
        SchemaFinding("retyped", "seq", "bigint", "int", True, False, "bigint"),
        SchemaFinding("retyped", "s", "string", "bigint", True, False, None),
        SchemaFinding("retyped", "n", "array<int>", "array<bigint>", True, False, None),
    )
    assert diff.findings[1].explain() == (
        "column 's' changed type string -> bigint (not widening; values compared as read)"
    )


def test_ignore_lists_nothing() -> None:
    diff = diff_schemas(REFERENCE, CANDIDATE, "ignore")
    assert diff == SchemaDiff("ignore", ())
    assert diff.divergent is False
    assert diff.summary() == "not compared (schema.mode ignore)"


def test_ignored_columns_are_exempt_from_every_finding() -> None:
    # The case: seq bigint -> int, with seq in equality.ignore.
    reference = schema(("k", "bigint"), ("seq", "bigint", False), ("gone", "int"), ("v", "int"))
    candidate = schema(("v", "int"), ("seq", "int"), ("k", "bigint"), ("new", "int"))
    diff = diff_schemas(reference, candidate, "strict", exempt={"seq", "gone", "new"})
    assert diff.findings == (SchemaFinding("order", None, ("k", "v"), ("v", "k"), True),)
    same_order = schema(("seq", "int"), ("k", "bigint"), ("v", "int"))
    assert diff_schemas(reference, same_order, "strict", exempt={"seq", "gone"}) == SchemaDiff(
        "strict", ()
    )


def test_same_schemas_have_no_findings() -> None:
    assert diff_schemas(REFERENCE, REFERENCE, "strict") == SchemaDiff("strict", ())
    assert SchemaDiff("strict", ()).summary() == "same"


def test_a_bad_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="schema mode must be one of strict, compatible, ignore"):
        diff_schemas(REFERENCE, CANDIDATE, "loose")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("narrow", "wide"),
    [
        ("tinyint", "smallint"),
        ("tinyint", "bigint"),
        ("smallint", "int"),
        ("int", "bigint"),
        ("tinyint", "float"),
        ("smallint", "float"),
        ("int", "double"),
        ("float", "double"),
        ("int", "decimal(10,0)"),
        ("bigint", "decimal(20,0)"),
        ("smallint", "decimal(7,2)"),
        ("decimal(5,2)", "decimal(6,3)"),
        ("decimal(5,2)", "decimal(7,2)"),
    ],
)
def test_widenings(narrow: str, wide: str) -> None:
    assert widens(narrow, wide) is True
    assert widens(wide, narrow) is False


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("int", "float"),  # 24-bit mantissa
        ("bigint", "double"),  # 53-bit mantissa: Spark's canUpCast allows it, it rounds
        ("bigint", "float"),
        ("decimal(5,2)", "double"),
        ("int", "decimal(9,0)"),
        ("decimal(5,2)", "decimal(5,3)"),  # an integer digit lost
        ("date", "timestamp"),
        ("timestamp_ntz", "timestamp"),
        ("int", "string"),
        ("boolean", "int"),
        ("int", "int"),
    ],
)
def test_not_widenings(a: str, b: str) -> None:
    assert widens(a, b) is False


@pytest.mark.parametrize(
    ("a", "b", "common"),
    [
        ("int", "int", "int"),
        ("int", "bigint", "bigint"),
        ("bigint", "int", "bigint"),
        ("int", "float", "double"),
        ("bigint", "double", "double"),
        ("int", "decimal(5,2)", "decimal(12,2)"),
        ("decimal(5,2)", "decimal(4,3)", "decimal(6,3)"),
        ("decimal(38,0)", "decimal(38,10)", "double"),
        ("string", "int", None),
        ("boolean", "bigint", None),
        ("array<int>", "array<bigint>", None),
        ("date", "timestamp", None),
        # a decimal and a float: the float is the decimal's value only by rounding
        ("decimal(10,2)", "double", None),
        ("float", "decimal(5,2)", None),
        ("bigint", "decimal(10,2)", "decimal(22,2)"),
    ],
)
def test_the_type_values_are_compared_at(a: str, b: str, common: str | None) -> None:
    assert common_type(a, b) == common


def test_values_are_widened_as_spark_casts_them() -> None:
    assert widen(3, "double") == 3.0
    assert type(widen(3, "double")) is float
    assert widen(Decimal("1.5"), "double") == 1.5
    assert widen(3, "decimal(12,2)") == Decimal("3.00")
    assert str(widen(Decimal("1.5"), "decimal(6,3)")) == "1.500"
    assert widen(None, "double") is None
    assert widen(True, "double") is True
    assert widen(7, "bigint") == 7


def test_the_comparison_plan_and_projection() -> None:
    reference = schema(("k", "bigint"), ("a", "int"), ("s", "string"), ("gone", "int"))
    candidate = schema(("s", "bigint"), ("a", "float"), ("k", "bigint"), ("new", "int"))
    plan = comparison_plan(reference, candidate)
    assert plan == (
        Compared("k", "bigint", "bigint", "bigint"),
        Compared("a", "int", "float", "double"),
        Compared("s", "string", "bigint", None),  # no common type: compared as read
    )
    to_reference = project(plan, 0, reference.names)
    to_candidate = project(plan, 1, candidate.names)
    assert to_reference is not None and to_candidate is not None
    assert to_reference({"k": 1, "a": 2, "s": "x", "gone": 0}) == {"k": 1, "a": 2.0, "s": "x"}
    assert to_candidate({"s": 5, "a": 2.5, "k": 1, "new": 0}) == {"k": 1, "a": 2.5, "s": 5}
    # the same columns in the same order, nothing widened: events pass as they are
    assert project(comparison_plan(reference, reference), 0, reference.names) is None


def test_a_divergent_schema_makes_the_verdict_divergent() -> None:
    diff = diff_schemas(REFERENCE, CANDIDATE)
    verdict = judge(Verdict(True), diff)
    assert verdict.equivalent is False
    assert verdict.status == "divergent"
    assert verdict.total_divergences == 0
    assert verdict.to_dict()["schema"] == diff.to_dict()
    assert SchemaDiff.from_dict(json.loads(json.dumps(diff.to_dict()))) == diff


def test_findings_escape_control_characters_in_names_and_types() -> None:
    reference = schema(("a\nb", "struct<x\ty:int>"))
    candidate = schema(("a\nb", "struct<x\ty:bigint>"))
    (finding,) = diff_schemas(reference, candidate).findings
    assert finding.explain() == (
        "column 'a\\nb' changed type struct<x\\ty:int> -> struct<x\\ty:bigint> "
        "(not widening; values compared as read)"
    )


# -- the schemas the core reads ------------------------------------------------------------


def test_parquet_schema_from_arrow(tmp_path: Path) -> None:
    table = pa.table(
        {
            "k": pa.array([1], pa.int64()),
            "i": pa.array([1], pa.int32()),
            "u": pa.array([1], pa.uint32()),
            "f": pa.array([1.0], pa.float32()),
            "d": pa.array([Decimal("1.50")], pa.decimal128(5, 2)),
            "t": pa.array([0], pa.timestamp("us")),
            "tz": pa.array([0], pa.timestamp("us", tz="UTC")),
            "l": pa.array([[1]], pa.list_(pa.int64())),
            "s": pa.array([{"b": "x", "a": 1}]),
        },
        schema=pa.schema(
            [
                pa.field("k", pa.int64(), nullable=False),
                ("i", pa.int32()),
                ("u", pa.uint32()),
                ("f", pa.float32()),
                ("d", pa.decimal128(5, 2)),
                ("t", pa.timestamp("us")),
                ("tz", pa.timestamp("us", tz="UTC")),
                ("l", pa.list_(pa.int64())),
                ("s", pa.struct([("b", pa.string()), ("a", pa.int64())])),
            ]
        ),
    )
    pq.write_table(table, tmp_path / "out.parquet")
    assert read_schema(tmp_path / "out.parquet") == schema(
        ("k", "bigint", False),
        ("i", "int"),
        ("u", "bigint"),
        ("f", "float"),
        ("d", "decimal(5,2)"),
        ("t", "timestamp_ntz"),
        ("tz", "timestamp"),
        ("l", "array<bigint>"),
        ("s", "struct<b:string,a:bigint>"),
    )


def test_parquet_schema_that_spark_wrote_is_used_as_is(tmp_path: Path) -> None:
    spark_schema = {
        "type": "struct",
        "fields": [
            {"name": "seq", "type": "long", "nullable": False, "metadata": {}},
            {"name": "v", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "at", "type": "timestamp", "nullable": True, "metadata": {}},
        ],
    }
    table = pa.table({"seq": [1], "v": pa.array([1], pa.int32()), "at": pa.array([0], pa.int64())})
    table = table.replace_schema_metadata(
        {"org.apache.spark.sql.parquet.row.metadata": json.dumps(spark_schema)}
    )
    pq.write_table(table, tmp_path / "part-0.parquet")
    assert read_schema(tmp_path) == schema(
        ("seq", "bigint", False), ("v", "int"), ("at", "timestamp")
    )


def test_json_schema_is_inferred_as_spark_infers_it(tmp_path: Path) -> None:
    lines = [
        {"z": 1, "a": None, "n": 1, "m": [1], "s": {"y": 1}},
        {"z": 2, "n": 1.5, "m": [2.5], "s": {"x": "t"}, "b": True, "big": 2**64},
        {"z": 3, "mixed": 1, "e": []},
        {"mixed": "x"},
    ]
    (tmp_path / "part-0.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert read_schema(tmp_path) == schema(
        ("a", "string"),
        ("b", "boolean"),
        ("big", "decimal(20,0)"),
        ("e", "array<string>"),
        ("m", "array<double>"),
        ("mixed", "string"),
        ("n", "double"),
        ("s", "struct<x:string,y:bigint>"),
        ("z", "bigint"),
    )


def test_csv_schema_is_the_header_typed_as_spark_infers_or_as_declared(tmp_path: Path) -> None:
    (tmp_path / "out.csv").write_text("b,a,c,d\n1,2.5,x,\n2147483648,3,2020-01-01T10:00:00,\n")
    inferred = read_schema(tmp_path / "out.csv")
    assert inferred == schema(("b", "bigint"), ("a", "double"), ("c", "string"), ("d", "string"))
    assert inferred is not None and all(f.inferred for f in inferred.fields)
    declared = read_schema(
        tmp_path / "out.csv",
        declared=(("b", "decimal(20,0)"), ("a", "double"), ("c", "string"), ("d", "date")),
    )
    assert declared == schema(
        ("b", "decimal(20,0)"), ("a", "double"), ("c", "string"), ("d", "date")
    )
    assert declared is not None and not any(f.inferred for f in declared.fields)
    (tmp_path / "empty.csv").write_text("")
    assert read_schema(tmp_path / "empty.csv") is None
    (tmp_path / "empty.json").write_text("\n")
    assert read_schema(tmp_path / "empty.json") is None
