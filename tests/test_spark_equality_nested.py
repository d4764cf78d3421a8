"""Equality of nested values on Spark (issue 10, items 2, 3, 4, 5 and 8): the SQL of
``matcher.spark.equality_sql`` against the core's ``Equality`` on the same Python values,
then the Spark matcher against the core matcher on streams with arrays, maps and structs.

* ``pair_equal`` (the grouped plan's comparison of a pair) is the core's ``equal``, for every
  pair of a small set of values of each nested type, under exact, NaN-unequal and tolerant
  equalities; the values the core sees are the ones Spark hands back through Arrow
  (``matcher.spark.events``), as on the per-partition path;
* ``key_value`` (what the multiset plan groups by and screening hashes) is shared by equal
  values and, the equality being exact, only by them; ``is_nan`` finds a NaN at any depth;
* ``compare_dataframes`` gives ``compare``'s verdict on generated streams of nested values
  with NaN, -0.0, nulls and near numbers, under the same equalities.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from matcher import Equality, Tolerance, compare
from matcher.dependence import by_key, ordered, unordered
from matcher.files.compare import compare_files
from matcher.spark import SparkComparison, compare_dataframes
from matcher.spark.conform import conformed
from matcher.spark.equality_sql import is_nan, key_value, pair_equal
from matcher.spark.events import arrow_events
from matcher.spark.outputs import compare_on_spark
from matcher.spec import Spec, load_spec
from tests.test_spark_differential import streams, summary

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

NAN = math.nan
FORMS = {"ordered": ordered, "by_key": lambda: by_key("k"), "unordered": unordered}


# ---------------------------------------------------------------------------------------------
# The SQL text (no Spark)


def test_exact_nested_values_compare_with_spark_equality() -> None:
    field = StructField("x", ArrayType(DoubleType()))
    assert pair_equal("a", "b", field, Equality()) == "(a <=> b)"
    # a zero tolerance is no tolerance
    assert pair_equal("a", "b", field, Equality(tolerance={"x": Tolerance(abs=0)})) == "(a <=> b)"


def test_nan_unequal_walks_an_array() -> None:
    field = StructField("x", ArrayType(DoubleType()))
    assert pair_equal("a", "b", field, Equality(nan_equal=False)) == (
        "(CASE WHEN a IS NULL OR b IS NULL THEN a IS NULL AND b IS NULL"
        " ELSE size(a) = size(b) AND forall(zip_with(a, b, (__p_x0, __p_y0) ->"
        " (__p_x0 <=> __p_y0 AND NOT coalesce(isnan(__p_x0), FALSE))), __p_z0 -> __p_z0) END)"
    )


def test_maps_compare_key_by_key() -> None:
    field = StructField("x", MapType(StringType(), LongType()))
    assert pair_equal("a", "b", field, Equality()) == (
        "(CASE WHEN a IS NULL OR b IS NULL THEN a IS NULL AND b IS NULL"
        " ELSE forall(map_values(map_zip_with(a, b, (__p_k0, __p_x0, __p_y0) ->"
        " (__p_x0 <=> __p_y0))), __p_z0 -> __p_z0) END)"
    )


def test_grouping_values_of_nested_types() -> None:
    assert key_value("`x`", ArrayType(LongType())) == "`x`"
    assert key_value("`x`", ArrayType(DoubleType())) == (
        "to_json(transform(`x`, __p_n0 -> (CASE WHEN __p_n0 = 0 THEN 0.0D ELSE __p_n0 END)))"
    )
    assert key_value("`x`", MapType(StringType(), LongType())) == (
        "array_sort(map_entries(map_filter(`x`, (__p_k0, __p_n0) -> __p_n0 IS NOT NULL)))"
    )
    assert is_nan("`x`", ArrayType(LongType())) == "FALSE"
    assert is_nan("`x`", ArrayType(DoubleType())) == (
        "coalesce(exists(`x`, __p_q0 -> coalesce(isnan(__p_q0), FALSE)), FALSE)"
    )


# ---------------------------------------------------------------------------------------------
# Values: the SQL against the core on every pair


STRUCT = StructType(
    [
        StructField("x", DoubleType()),
        StructField("s", StringType()),
        StructField("a", ArrayType(IntegerType())),
    ]
)
DEEP = ArrayType(MapType(StringType(), ArrayType(DoubleType())))
CASES: dict[str, tuple[DataType, list[Any]]] = {
    "array<double>": (
        ArrayType(DoubleType()),
        [
            None,
            [],
            [1.0],
            [1.2],
            [NAN],
            [-0.0],
            [0.0],
            [None],
            [1.0, 2.0],
            [math.inf],
            [84.34],
            [84.341],
            [1.0, NAN],
        ],
    ),
    "map<string,double>": (
        MapType(StringType(), DoubleType()),
        [
            None,
            {},
            {"x": 1.0},
            {"x": 1.2},
            {"x": None},
            {"x": NAN},
            {"y": 1.0},
            {"x": -0.0},
            {"x": 0.0},
            {"x": 1.0, "y": 2.0},
            {"y": 2.0, "x": 1.0},
        ],
    ),
    "struct": (
        STRUCT,
        [
            None,
            {"x": 1.0, "s": "p", "a": [1]},
            {"x": 1.2, "s": "p", "a": [1]},
            {"x": NAN, "s": "p", "a": [1]},
            {"x": None, "s": "p", "a": [1]},
            {"x": 1.0, "s": "q", "a": [1]},
            {"x": 1.0, "s": "p", "a": [2]},
            {"x": 1.0, "s": "p", "a": None},
            {"x": -0.0, "s": None, "a": []},
            {"x": 0.0, "s": None, "a": []},
        ],
    ),
    "array<map<string,array<double>>>": (
        DEEP,
        [
            None,
            [],
            [{}],
            [{"x": [1.0]}],
            [{"x": [1.2]}],
            [{"x": [NAN]}],
            [{"x": None}],
            [{"x": [-0.0]}],
            [{"x": [0.0]}],
            [{"x": [1.0], "y": [NAN]}],
            [None],
        ],
    ),
    "map<bigint,struct<v:float>>": (
        MapType(LongType(), StructType([StructField("v", FloatType())])),
        [
            None,
            {},
            {1: {"v": 1.0}},
            {1: {"v": 1.25}},
            {1: {"v": NAN}},
            {1: None},
            {2: {"v": 1.0}},
            {1: {"v": -0.0}},
            {1: {"v": 0.0}},
            {1: {"v": None}},
        ],
    ),
    "array<decimal(10,2)>": (
        ArrayType(DecimalType(10, 2)),
        [None, [], [Decimal("1.30")], [Decimal("1.31")], [Decimal("1.80")], [None]],
    ),
    "array<bigint>": (ArrayType(LongType()), [None, [], [1], [2], [None], [1, 2]]),
    "array<boolean>": (ArrayType(BooleanType()), [None, [True], [False], [None]]),
}
EQUALITIES = {
    "exact": Equality(),
    "nan_unequal": Equality(nan_equal=False),
    "abs": Equality(tolerance={"x": Tolerance(abs=0.25)}),
    "rel_nan_unequal": Equality(tolerance={"x": Tolerance(rel=0.01)}, nan_equal=False),
    "zero": Equality(tolerance={"x": Tolerance(abs=0)}),
}


def _holds_nan(value: Any) -> bool:
    if isinstance(value, float):
        return value != value
    if isinstance(value, list):
        return any(_holds_nan(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_nan(v) for v in value.values())
    return False


@pytest.fixture(scope="module")
def evaluated(spark: SparkSession) -> dict[str, list[dict[str, Any]]]:
    """Per type, every pair of its values as Spark sees them, with the SQL's verdicts."""
    out = {}
    for name, (dtype, values) in CASES.items():
        schema = StructType([StructField("a", dtype), StructField("b", dtype)])
        df = spark.createDataFrame([(a, b) for a in values for b in values], schema)
        field = StructField("x", dtype)
        columns = ["a", "b"]
        for label, equality in EQUALITIES.items():
            columns.append(f"{pair_equal('a', 'b', field, equality)} AS {label}")
        columns += [f"{key_value('a', dtype)} AS ka", f"{key_value('b', dtype)} AS kb"]
        columns += [f"{is_nan('a', dtype)} AS na"]
        table = df.selectExpr(*columns).toArrow()
        values_seen = arrow_events(table, ["a", "b"])  # what the core's paths get
        flags = table.select([*EQUALITIES, "ka", "kb", "na"]).to_pylist()
        out[name] = [{**seen, **flag} for seen, flag in zip(values_seen, flags, strict=True)]
    return out


@pytest.mark.spark
@pytest.mark.parametrize("equality", list(EQUALITIES))
@pytest.mark.parametrize("case", list(CASES))
def test_nested_equality_in_sql_is_the_cores(
    evaluated: dict[str, list[dict[str, Any]]], case: str, equality: str
) -> None:
    eq = EQUALITIES[equality]
    for row in evaluated[case]:
        a, b = row["a"], row["b"]
        assert row[equality] is eq.equal({"x": a}, {"x": b}), (a, b)


@pytest.mark.spark
@pytest.mark.parametrize("case", list(CASES))
def test_grouping_values_are_shared_by_exactly_the_equal_values(
    evaluated: dict[str, list[dict[str, Any]]], case: str
) -> None:
    exact = Equality()
    for row in evaluated[case]:
        a, b = row["a"], row["b"]
        assert (row["ka"] == row["kb"]) is exact.equal({"x": a}, {"x": b}), (a, b)
        assert row["na"] is _holds_nan(a), a


@pytest.mark.spark
def test_the_cases_hold_what_they_should(evaluated: dict[str, list[dict[str, Any]]]) -> None:
    """The value sets are not degenerate: some pairs are equal only under a tolerance, and
    NaN makes some pairs unequal only when ``nan_equal`` is off."""
    rows = [row for rows in evaluated.values() for row in rows]
    assert any(r["abs"] and not r["exact"] for r in rows)
    assert any(r["exact"] and not r["nan_unequal"] for r in rows)
    assert any(r["ka"] == r["kb"] and r["a"] != r["b"] for r in rows)  # -0.0, NaN, map order


# ---------------------------------------------------------------------------------------------
# Streams: the Spark matcher against the core matcher


NESTED = StructType(
    [
        StructField("k", LongType()),
        StructField("a", ArrayType(DoubleType())),
        StructField("m", MapType(StringType(), DoubleType())),
        StructField(
            "s", StructType([StructField("x", DoubleType()), StructField("y", LongType())])
        ),
    ]
)
NUMBERS = st.sampled_from([None, 0.0, -0.0, 1.0, 1.2, 2.0, 84.34, 84.341, NAN])
NESTED_EVENTS = st.fixed_dictionaries(
    {
        "k": st.sampled_from([1, 2, 3]),
        "a": st.none() | st.lists(NUMBERS, max_size=2),
        "m": st.none() | st.dictionaries(st.sampled_from(["x", "y"]), NUMBERS, max_size=2),
        "s": st.none() | st.fixed_dictionaries({"x": NUMBERS, "y": st.sampled_from([None, 0, 1])}),
    }
)
STREAM_EQUALITIES = st.sampled_from(
    [
        Equality(),
        Equality(nan_equal=False),
        Equality(tolerance={"a": Tolerance(abs=0.3), "m": Tolerance(rel=0.2)}),
        Equality(tolerance={"s": Tolerance(rel=1e-2), "a": Tolerance(rel=1e-2)}, nan_equal=False),
        Equality(tolerance={"a": Tolerance(abs=0), "s": Tolerance(rel=0)}),
        Equality(ignore=frozenset({"m"})),
    ]
)
EXAMPLES = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def frames(
    spark: SparkSession,
    schema: StructType,
    reference: Sequence[Mapping[str, Any]],
    candidate: Sequence[Mapping[str, Any]],
) -> tuple[DataFrame, DataFrame]:
    """Both streams as DataFrames with ``__pos`` (list order), from one ``createDataFrame``
    (``stream_frames`` for a schema whose types hold commas)."""
    names = schema.fieldNames()
    full = StructType(
        [StructField("__side", IntegerType()), StructField("__pos", LongType()), *schema.fields]
    )
    rows = [
        (side, pos, *(event.get(name) for name in names))
        for side, events in enumerate((reference, candidate))
        for pos, event in enumerate(events)
    ]
    both = spark.createDataFrame(rows, full)
    ref, cand = (both.where(f"__side = {side}").select(*names, "__pos") for side in (0, 1))
    return ref, cand


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("form", list(FORMS))
@EXAMPLES
@given(data=st.data(), equality=STREAM_EQUALITIES)
def test_nested_streams_agree_with_the_core(
    spark: SparkSession, form: str, data: st.DataObject, equality: Equality
) -> None:
    dependence = FORMS[form]()
    pair = data.draw(streams(NESTED_EVENTS, dependence))
    # Spark has every column in every row, in the schema's order: give the core the same
    names = NESTED.fieldNames()
    reference, candidate = ([{n: e.get(n) for n in names} for e in side] for side in pair)
    expected = compare(reference, candidate, dependence, equality)
    got = compare_dataframes(*frames(spark, NESTED, reference, candidate), dependence, equality)
    assert summary(got) == summary(expected)


@pytest.mark.spark
@pytest.mark.parametrize("form", list(FORMS))
def test_the_issues_examples_on_spark(spark: SparkSession, form: str) -> None:
    dependence = FORMS[form]()
    same_nan = [{"k": 1, "a": [NAN], "m": {"x": NAN}, "s": {"x": NAN, "y": 1}}]
    ref, cand = frames(spark, NESTED, same_nan, same_nan)
    assert compare_dataframes(ref, cand, dependence, Equality(nan_equal=False)).equivalent is False
    assert compare_dataframes(ref, cand, dependence, Equality()).equivalent is True
    near = frames(spark, NESTED, [{"k": 1, "a": [84.34]}], [{"k": 1, "a": [84.341]}])
    tolerant = Equality(tolerance={"a": Tolerance(rel=1e-2)})
    assert compare_dataframes(*near, dependence, tolerant).equivalent is True
    assert compare_dataframes(*near, dependence, Equality()).equivalent is False
    zero = Equality(tolerance={"a": Tolerance(abs=0, rel=0)})
    assert compare_dataframes(*near, dependence, zero).equivalent is False


@pytest.mark.spark
def test_a_nested_tolerance_of_a_chain_is_said_in_sql(spark: SparkSession) -> None:
    """``ordered`` and ``by_key`` under a tolerance on an array keep the grouped SQL plan
    (the tolerance is in its SQL, not dropped); multisets take the core's equality."""
    ref, cand = frames(spark, NESTED, [], [])
    tolerant = Equality(tolerance={"a": Tolerance(rel=1e-2)})
    for dependence, path in ((ordered(), "grouped"), (by_key("k"), "grouped")):
        comparison = SparkComparison(ref, cand, dependence, tolerant)
        assert comparison.route(comparison.streams()).path == path
    comparison = SparkComparison(ref, cand, unordered(), tolerant)
    assert comparison.route(comparison.streams()).path == "per-partition"


# ---------------------------------------------------------------------------------------------
# Types that differ (issue 10, items 5 and 8): each side's value made one type
# (``matcher.spark.conform``), then the SQL against the core on the values as read


def test_a_decimal_and_a_double_are_a_tagged_pair() -> None:
    pair = conformed("`v`", "`v`", DecimalType(10, 2), DoubleType())
    assert pair.reference == (
        "(CASE WHEN `v` IS NULL THEN NULL ELSE named_struct('__p_ref', `v`,"
        " '__p_cand', CAST(NULL AS double)) END)"
    )
    assert pair.candidate == (
        "(CASE WHEN `v` IS NULL THEN NULL ELSE named_struct('__p_ref',"
        " CAST(NULL AS decimal(10,2)), '__p_cand', `v`) END)"
    )
    assert pair.dtype.simpleString() == "struct<__p_ref:decimal(10,2),__p_cand:double>"
    assert pair.exact is True
    widened = conformed("`a`", "`a`", ArrayType(IntegerType()), ArrayType(LongType()))
    assert (widened.reference, widened.candidate) == (
        "transform(`a`, __p_e0 -> CAST(__p_e0 AS bigint))",
        "`a`",
    )
    # the core reads a struct and a map alike (mappings): only its rule can compare them
    mixed = conformed("`m`", "`m`", STRUCT, MapType(StringType(), DoubleType()))
    assert mixed.exact is False


CROSS_CASES: dict[str, tuple[DataType, DataType, list[Any], list[Any]]] = {
    "decimal vs double": (
        DecimalType(10, 2),
        DoubleType(),
        [None, Decimal("1.50"), Decimal("2.25")],
        [None, 1.5, 1.6, NAN],
    ),
    "array<decimal> vs array<double>": (
        ArrayType(DecimalType(10, 2)),
        ArrayType(DoubleType()),
        [None, [], [Decimal("1.50")], [None], [Decimal("1.50"), None]],
        [None, [], [1.5], [1.6], [None], [NAN]],
    ),
    "struct<x:decimal> vs struct<x:double,y:bigint>": (
        StructType([StructField("x", DecimalType(10, 2))]),
        StructType([StructField("x", DoubleType()), StructField("y", LongType())]),
        [None, {"x": Decimal("1.50")}, {"x": None}],
        [None, {"x": 1.5, "y": None}, {"x": 1.5, "y": 1}, {"x": None, "y": None}],
    ),
    "string vs bigint": (StringType(), LongType(), [None, "1", "x"], [None, 1, 2]),
    "boolean vs bigint": (BooleanType(), LongType(), [None, True, False], [None, 1, 0]),
    "array<int> vs array<bigint>": (
        ArrayType(IntegerType()),
        ArrayType(LongType()),
        [None, [], [1], [None], [1, 2]],
        [None, [], [1], [2], [None], [1, 2]],
    ),
    "map<string,int> vs map<string,double>": (
        MapType(StringType(), IntegerType()),
        MapType(StringType(), DoubleType()),
        [None, {}, {"x": 1}, {"x": None}],
        [None, {}, {"x": 1.0}, {"x": 1.2}, {"y": None}],
    ),
    "array<string> vs array<bigint>": (
        ArrayType(StringType()),
        ArrayType(LongType()),
        [None, [], ["1"], [None]],
        [None, [], [1], [None]],
    ),
}


@pytest.fixture(scope="module")
def evaluated_across(spark: SparkSession) -> dict[str, list[dict[str, Any]]]:
    """Per pair of types, every pair of a reference's and a candidate's value as Spark sees
    them, with the SQL's verdicts on the values made one type."""
    out = {}
    for name, (ta, tb, values_a, values_b) in CROSS_CASES.items():
        schema = StructType([StructField("a", ta), StructField("b", tb)])
        df = spark.createDataFrame([(a, b) for a in values_a for b in values_b], schema)
        pair = conformed("a", "b", ta, tb)
        assert pair.exact
        both = df.selectExpr("a", "b", f"{pair.reference} AS ca", f"{pair.candidate} AS cb")
        field = StructField("x", pair.dtype)
        columns = ["a", "b"]
        for label, equality in EQUALITIES.items():
            columns.append(f"{pair_equal('ca', 'cb', field, equality)} AS {label}")
        columns += [f"{key_value('ca', pair.dtype)} AS ka", f"{key_value('cb', pair.dtype)} AS kb"]
        table = both.selectExpr(*columns).toArrow()
        values_seen = arrow_events(table, ["a", "b"])
        flags = table.select([*EQUALITIES, "ka", "kb"]).to_pylist()
        out[name] = [{**seen, **flag} for seen, flag in zip(values_seen, flags, strict=True)]
    return out


@pytest.mark.spark
@pytest.mark.parametrize("equality", list(EQUALITIES))
@pytest.mark.parametrize("case", list(CROSS_CASES))
def test_values_of_types_that_differ_compare_in_sql_as_on_the_core(
    evaluated_across: dict[str, list[dict[str, Any]]], case: str, equality: str
) -> None:
    eq = EQUALITIES[equality]
    for row in evaluated_across[case]:
        a, b = row["a"], row["b"]
        assert row[equality] is eq.equal({"x": a}, {"x": b}), (a, b)
        if equality == "exact":
            assert (row["ka"] == row["kb"]) is row["exact"], (a, b)


@pytest.mark.spark
def test_the_cross_cases_hold_what_they_should(
    evaluated_across: dict[str, list[dict[str, Any]]],
) -> None:
    """Some pairs of different types are equal exactly (a widened element, a struct
    field one side lacks), some only within a tolerance (a decimal and a double)."""
    rows = evaluated_across["array<int> vs array<bigint>"]
    assert any(r["exact"] and r["a"] for r in rows)
    rows = evaluated_across["decimal vs double"]
    assert any(r["abs"] and not r["exact"] for r in rows)
    rows = evaluated_across["struct<x:decimal> vs struct<x:double,y:bigint>"]
    assert any(r["exact"] and r["a"] is not None for r in rows)  # {"x": None} vs all nulls


DECIMALS = st.sampled_from([None, Decimal("1.50"), Decimal("2.25"), Decimal("0.10")])
DECIMAL_EVENTS = st.fixed_dictionaries(
    {
        "k": st.sampled_from([1, 2, 3]),
        "v": DECIMALS,
        "a": st.none() | st.lists(DECIMALS, max_size=2),
    }
)
DECIMAL_EQUALITIES = st.sampled_from(
    [Equality(), Equality(tolerance={"v": Tolerance(abs=0.01), "a": Tolerance(rel=1e-6)})]
)


def _as_double(value: Any) -> Any:
    if isinstance(value, list):
        return [_as_double(v) for v in value]
    return None if value is None else float(value)


@pytest.mark.spark
@pytest.mark.slow
@settings(EXAMPLES, max_examples=5)
@given(data=st.data(), equality=DECIMAL_EQUALITIES, form=st.sampled_from(list(FORMS)))
def test_decimals_against_doubles_agree_with_the_core(
    spark: SparkSession, data: st.DataObject, equality: Equality, form: str
) -> None:
    """The reference writes decimal(10,2), the candidate double: never equal exactly,
    equal within a tolerance when the values are."""
    dependence = FORMS[form]()
    pair = data.draw(streams(DECIMAL_EVENTS, dependence))
    # the columns in the frames' order, so that witnesses list differing columns alike
    reference = [{"k": e["k"], "v": e["v"], "a": e["a"]} for e in pair[0]]
    candidate = [{"k": e["k"], "v": _as_double(e["v"]), "a": _as_double(e["a"])} for e in pair[1]]
    expected = compare(reference, candidate, dependence, equality)
    rows = [
        [(e["k"], e["v"], e["a"], pos) for pos, e in enumerate(side)]
        for side in (reference, candidate)
    ]
    ref = spark.createDataFrame(
        rows[0], "k long, v decimal(10,2), a array<decimal(10,2)>, __pos long"
    )
    cand = spark.createDataFrame(rows[1], "k long, v double, a array<double>, __pos long")
    got = compare_dataframes(ref, cand, dependence, equality, schema_mode="ignore")
    assert summary(got) == summary(expected)


MIXED_KINDS = st.sampled_from(
    [None, 1, "1", 1.0, 2.5, "x", True, [1, "1"], ["1"], {"a": 1}, {"a": "1"}]
)
JSON_EVENTS = st.fixed_dictionaries({"k": st.sampled_from([1, 2, 3]), "v": MIXED_KINDS})


@pytest.mark.spark
@pytest.mark.slow
@settings(EXAMPLES, max_examples=4)
@given(data=st.data(), form=st.sampled_from(["{key: [k]}", "unordered", "ordered"]))
def test_json_values_of_mixed_kinds_agree_with_the_core(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, form: str
) -> None:
    """JSON lines whose ``v`` mixes kinds (at the top and inside arrays and objects),
    through both engines' readers: ``parity compare``'s core and Spark paths."""
    spec = load_spec_text(tmp_path_factory, f"output: {{format: json}}\ndependence: {form}\n")
    dependence = spec.build_dependence()
    reference, candidate = data.draw(streams(JSON_EVENTS, dependence))
    assume(reference or candidate)  # two empty outputs: Spark reads no columns to key by
    root = tmp_path_factory.mktemp("json")
    paths = []
    for name, events in (("reference", reference), ("candidate", candidate)):
        (root / name).mkdir()
        lines = "".join(json.dumps(e, sort_keys=True) + "\n" for e in events)
        (root / name / "part-00000.json").write_text(lines)
        paths.append(str(root / name))
    expected = compare_files(spec, paths[0], paths[1], 10)
    got = compare_on_spark(spark, spec, paths[0], paths[1], limit=10).verdict
    assert summary(got) == summary(expected)


def load_spec_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> Spec:
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_text(text)
    return load_spec(path)
