"""CSV typed as Spark types it (issue 31): ``matcher.files.csv_types`` against Spark 4's own
``inferSchema`` and CSV reader.

The tables below were read off Spark 4.3 (``spark.read.csv(..., inferSchema=True)``) and
are asserted as such on the core; the Spark tests then hold the core's inference and
conversions against Spark's on every one of them and on Hypothesis' columns, many columns
to a file, so that a few Spark jobs check hundreds of cases. A column Spark infers as a
timestamp is text to Parity (``csv_types``' docstring says why).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from matcher.errors import InputError
from matcher.files.csv_files import CsvTypes, csv_events, csv_records, csv_types
from matcher.files.csv_types import CsvInference, OutOfRange, converter, infer_field
from matcher.spark import read_stream

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

#: one value alone in a column, and the type Spark 4.3 infers (a timestamp as ``string``)
ALONE = [
    ("007", "int"),
    ("+1", "int"),
    ("-0", "int"),
    ("\u0663", "int"),  # Java parses digits of any script (Arabic-Indic 3)
    ("\uff11\uff12", "int"),
    ("2147483648", "bigint"),
    ("9223372036854775808", "decimal(19,0)"),
    ("12345678901234567890123456789012345678.", "decimal(38,0)"),
    ("123456789012345678901234567890123456789.", "double"),
    ("1.", "decimal(1,0)"),
    ("0.1e1", "decimal(1,0)"),
    ("1.5e1", "decimal(2,0)"),
    ("0e0", "decimal(1,0)"),
    ("1e5", "double"),  # a negative scale is no decimal type
    ("1.e1", "double"),
    ("1.0", "double"),
    (" 1", "double"),  # Java's parseDouble trims, parseInt does not
    ("1 ", "double"),
    ("1.5d", "double"),
    ("2.5F", "double"),
    ("0x1p3", "double"),
    ("NaN", "double"),
    ("-NaN", "double"),
    ("Inf", "double"),
    ("-Inf", "double"),
    ("Infinity", "double"),
    ("+Inf", "string"),
    ("nan", "string"),
    ("0x10", "string"),
    ("1_000", "string"),
    ("\u0663.\u0665", "string"),
    ("true", "boolean"),
    ("tRuE", "boolean"),
    ("FALSE", "boolean"),
    ("fal\u017fe", "boolean"),  # Java's equalsIgnoreCase: the long s is an s
    (" true", "string"),
    ("2020-01-01", "date"),
    ("0001-01-01", "date"),
    ("2020-02-30", "string"),
    ("2020-1-1", "string"),  # a timestamp to Spark
    ("2020-01-01 12:00:00", "string"),
    ("2020-01-01T12:00:00.000+01:00", "string"),
    ("12:00:00", "string"),  # a timestamp of today to Spark
    ("abc", "string"),
]
#: values in file order, and the type Spark infers: the order matters for decimals
SEQUENCES = [
    (["1.", "12345"], "decimal(5,0)"),
    (["12345", "1."], "decimal(10,0)"),
    (["9223372036854775808", "9223372036854775807"], "decimal(19,0)"),
    (["9223372036854775807", "9223372036854775808"], "decimal(20,0)"),
    (["1", "2147483648"], "bigint"),
    (["1", "1.5"], "double"),
    (["1.", "1.5"], "double"),
    (["true", "1"], "string"),
    (["1", "true"], "string"),
    (["2020-01-01", "2020-01-02 10:00:00"], "string"),
    (["2020-01-01", "5"], "string"),
    (["", "1", ""], "int"),
    (["\u0663", "1.5"], "double"),  # and \u0663 reads as null: Java's parseDouble refuses it
]


@pytest.mark.parametrize(("text", "expected"), ALONE)
def test_one_value_infers_as_spark_infers_it(text: str, expected: str) -> None:
    assert infer_field("void", text) == expected


@pytest.mark.parametrize(("texts", "expected"), SEQUENCES)
def test_values_merge_in_file_order_as_spark_merges_them(texts: list[str], expected: str) -> None:
    inference = CsvInference(1)
    for text in texts:
        inference.add([text])
    assert inference.types() == (expected,)


def test_a_column_without_a_value_is_a_string() -> None:
    inference = CsvInference(2)
    inference.add([None, "1"])
    inference.add(["", None])
    assert inference.types() == ("string", "int")


@pytest.mark.parametrize(
    ("type_", "text", "value"),
    [
        ("int", "\u0663", 3),
        ("bigint", "-007", -7),
        ("tinyint", "-128", -128),
        ("double", "1.5d", 1.5),
        ("double", " 0x1.8p1 ", 3.0),
        ("double", "Inf", math.inf),
        ("double", "-Infinity", -math.inf),
        ("boolean", "fal\u017fe", False),
        ("decimal(5,2)", "123.455", Decimal("123.46")),  # half up
        ("decimal(5,2)", "-0.005", Decimal("-0.01")),
        ("decimal(5,2)", "1e2", Decimal("100.00")),
        ("decimal(20,0)", "9223372036854775808", Decimal("9223372036854775808")),
        ("date", "2020-01-02", dt.date(2020, 1, 2)),
        ("date", "2020-1-2", dt.date(2020, 1, 2)),  # Spark's lenient fallback
        ("date", " 2020-01-03 ", dt.date(2020, 1, 3)),
        ("date", "2020-01-04T23:59:59Z", dt.date(2020, 1, 4)),
        ("date", "2020-01-05GMT", dt.date(2020, 1, 5)),
        ("date", "2020", dt.date(2020, 1, 1)),
    ],
)
def test_values_convert_as_sparks_reader_converts_them(type_: str, text: str, value: Any) -> None:
    converted = converter(type_)(text)
    assert (converted, type(converted)) == (value, type(value))


@pytest.mark.parametrize(
    ("type_", "text"),
    [
        ("int", "2147483648"),
        ("int", " 1"),
        ("tinyint", "128"),
        ("double", "+Inf"),
        ("double", "\u0663"),
        ("double", ""),
        ("boolean", "yes"),
        ("decimal(5,2)", "1234.5"),  # four digits before the point: too many
        ("decimal(5,2)", "1,5"),
        ("date", "2020-02-30"),
        ("date", "20200101"),
        ("date", "today"),
    ],
)
def test_a_text_not_of_its_type_does_not_convert(type_: str, text: str) -> None:
    with pytest.raises(ValueError):
        converter(type_)(text)


@given(
    columns=st.lists(
        st.lists(
            st.one_of(
                st.sampled_from(["1", "-2", "2147483648", "1.5", "true", "", "x"]),
                st.text(max_size=3),
            ),
            min_size=1,
            max_size=30,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_batch_infers_what_its_records_one_by_one_infer(columns: list[list[str]]) -> None:
    rows = [[c[r % len(c)] for c in columns] for r in range(max(len(c) for c in columns))]
    one_by_one, batched = CsvInference(len(columns)), CsvInference(len(columns))
    for row in rows:
        one_by_one.add(row)
    batched.add_rows(rows[:7])
    batched.add_rows(rows[7:])
    assert batched.types() == one_by_one.types()


def test_a_date_python_cannot_hold_is_said_so() -> None:
    with pytest.raises(OutOfRange, match="outside the years Python holds"):
        converter("date")("10000-01-01")


def test_unquoted_empty_fields_are_null_and_quoted_ones_empty(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text('a,b,c\n,"",x\n"","a\n""b""",\n"",,""\n', encoding="utf-8")
    assert list(csv_records(path)) == [
        (1, ["a", "b", "c"]),
        (2, [None, "", "x"]),
        (4, ["", 'a\n"b"', None]),
        (5, ["", None, ""]),
    ]
    types = csv_types([path])
    assert types == CsvTypes(("a", "b", "c"), ("string", "string", "string"))
    assert list(csv_events(path, types)) == [
        {"a": None, "b": "", "c": "x"},
        {"a": "", "b": 'a\n"b"', "c": None},
        {"a": "", "b": None, "c": ""},
    ]


def test_a_quoted_empty_field_is_null_in_an_inferred_number_column_and_an_error_in_a_declared_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.csv"
    path.write_text('n\n1\n""\n', encoding="utf-8")
    assert list(csv_events(path, csv_types([path]))) == [{"n": 1}, {"n": None}]
    declared = csv_types([path], (("n", "int"),))
    with pytest.raises(InputError) as info:
        list(csv_events(path, declared))
    assert str(info.value) == f"{path}: line 3: column 'n': '' is not a INT (output.schema)"


def test_declared_columns_must_be_every_files_header(tmp_path: Path) -> None:
    (tmp_path / "part-0.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "part-1.csv").write_text("a,c\n1,2\n", encoding="utf-8")
    files = [tmp_path / "part-0.csv", tmp_path / "part-1.csv"]
    with pytest.raises(InputError) as info:
        csv_types(files, (("a", "int"), ("b", "int")))
    assert str(info.value) == (
        f"{files[1]}: line 1: the header names a, c; output.schema declares a, b"
    )


# --- against Spark ------------------------------------------------------------------------

#: texts Hypothesis draws cells from: the cases above, and short texts of number-ish bits
ATOMS = [text for text, _ in ALONE] + [t for texts, _ in SEQUENCES for t in texts]
BITS = st.text(alphabet="0123456789+-.eEdDxXpPfFInaNy tT:\u0663", max_size=6)
CELLS = st.one_of(st.sampled_from(ATOMS), BITS, st.none())
SPARK_EXAMPLES = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def write_columns(path: Path, columns: list[list[str | None]]) -> None:
    """A CSV file whose column ``i`` holds ``columns[i]`` (``None``: an unquoted empty
    field; ``""``: a quoted one; a shorter column ends in unquoted empty fields)."""

    def cell(text: str | None) -> str:
        if text is None:
            return ""
        return f'"{text}"' if text == "" or "," in text else text

    rows = max(len(c) for c in columns)
    lines = [",".join(f"c{i}" for i in range(len(columns)))]
    lines += [",".join(cell(c[r] if r < len(c) else None) for c in columns) for r in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def same(a: Any, b: Any) -> bool:
    """Equal values of one class; floats by their bits (NaN is NaN, -0.0 is not 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return type(a) is type(b) and a == b


def assert_spark_reads_as_the_core(spark: SparkSession, path: Path) -> None:
    types = csv_types([path])
    assert types is not None
    stream = read_stream(spark, str(path))
    # dates Python cannot hold are compared as Spark's text of them
    shown = [
        F.col(f"`{f.name}`").cast("string").alias(f.name)
        if f.dataType.simpleString() == "date"
        else F.col(f"`{f.name}`")
        for f in stream.schema.fields
    ]
    on_spark = [f.dataType.simpleString() for f in stream.schema.fields if f.name != "__pos"]
    assert on_spark == list(types.types)
    rows = sorted(stream.select(*shown).collect(), key=lambda r: r["__pos"])
    try:
        core = list(csv_events(path, types))
    except InputError:  # a date Python cannot hold: the core refuses it, Spark has it
        return
    assert len(rows) == len(core)
    for row, event in zip(rows, core, strict=True):
        for name, kind in zip(types.names, types.types, strict=True):
            value = event[name]
            if kind == "date" and value is not None:
                value = value.isoformat()
            assert same(row[name], value) or (row[name] is None and value is None), (
                name,
                row[name],
                value,
            )


@pytest.mark.spark
def test_the_tables_are_what_spark_infers_and_reads(spark: SparkSession, tmp_path: Path) -> None:
    columns: list[list[str | None]] = [[text] for text, _ in ALONE]
    columns += [list(texts) for texts, _ in SEQUENCES]
    write_columns(tmp_path / "tables.csv", columns)
    types = csv_types([tmp_path / "tables.csv"])
    assert types is not None
    assert list(types.types) == [t for _, t in ALONE] + [t for _, t in SEQUENCES]
    assert_spark_reads_as_the_core(spark, tmp_path / "tables.csv")


@pytest.mark.spark
@pytest.mark.slow
@SPARK_EXAMPLES
@given(columns=st.lists(st.lists(CELLS, min_size=1, max_size=4), min_size=100, max_size=150))
def test_spark_infers_and_reads_every_column_as_the_core_does(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, columns: list[list[str | None]]
) -> None:
    path = tmp_path_factory.mktemp("columns") / "out.csv"
    write_columns(path, columns)
    assert_spark_reads_as_the_core(spark, path)


DECLARED = ["tinyint", "smallint", "int", "bigint", "double", "boolean", "decimal(5,2)", "date"]


@pytest.mark.spark
def test_declared_types_convert_as_sparks_reader_converts(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Spark reads permissively here, so that one file checks every case: a text not of its
    # type is null to Spark and a ValueError to the core (output.schema makes it an error)
    atoms = sorted(set(ATOMS) | {"127", "128", "-129", "32768", "123.455", "-0.005", "1234.5"})
    atoms = [a for a in atoms if a]
    cases = [(kind, atom) for kind in DECLARED for atom in atoms]
    write_columns(tmp_path / "declared.csv", [[atom] for _, atom in cases])
    schema = ", ".join(f"c{i} {kind}" for i, (kind, _) in enumerate(cases))
    frame = (
        spark.read.option("header", True)
        .option("nullValue", "\u0000")
        .schema(schema)
        .csv(str(tmp_path / "declared.csv"))
    )
    shown = [
        F.col(f"c{i}").cast("string") if kind == "date" else F.col(f"c{i}")
        for i, (kind, _) in enumerate(cases)
    ]
    [row] = frame.select(*shown).collect()
    for i, (kind, atom) in enumerate(cases):
        try:
            value: Any = converter(kind)(atom)
        except OutOfRange:
            continue  # Spark holds the date; Python cannot
        except ValueError:
            value = None
        if isinstance(value, dt.date):
            value = value.isoformat()
        assert same(row[i], value) or (row[i] is None and value is None), (kind, atom, row[i])
