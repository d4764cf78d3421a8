"""The core's ``Equality`` said in Spark SQL, column by column, as SQL text.

Pure functions from column types and the equality to SQL expressions (so they are tested
without Spark, and a plan is built in a few calls rather than thousands). Each rule
mirrors ``matcher.equality`` on the Python values Spark hands back. Both streams have the
same type in every compared column (``matcher.spark.schema.reconcile``), so values are
compared as they are: nothing is cast to compare, a string never to a number, a boolean
never to a number (the core's kinds, which Spark's types already separate).

* exact columns: ``a <=> b`` (Spark already has NaN = NaN and 0.0 = -0.0, element by
  element in arrays and structs, like the core); with ``nan_equal=False`` a NaN, at any
  depth, equals nothing;
* maps, at any depth: key by key (``map_zip_with``), an absent key reading as null, as in
  the core (Spark cannot compare maps with ``=``);
* tolerance: on every number in the column, at any depth (arrays pairwise with
  ``zip_with``, maps key by key, structs field by field): null only equals null, NaN only
  NaN (when ``nan_equal``), equal values are close, an infinity is only close to itself,
  else ``|a - b| <= abs`` or ``<= rel * greatest(|a|, |b|)``, all in double precision like
  ``Tolerance.close``; other values in the column compare exactly;
* normalisation of string columns: ``trim`` strips exactly the characters Python's
  ``str.strip()`` strips (a regular expression over them; Spark's ``trim`` strips spaces
  only), ``lower``/``upper`` are Spark's, which agree with Python's, casing rules included.
  ``casefold`` has no SQL counterpart: such an equality goes to the per-partition path.

* a *tagged pair* (``matcher.spark.conform``: a column whose two sides' types have no
  common type, each side's value in its own slot of a ``struct<__p_ref, __p_cand>``) is a
  struct like any other, so values of different sides are never equal, null vs null aside;
  under a tolerance, a tagged pair of numbers (a decimal and a double) is compared in
  double precision, as the core compares a ``Decimal`` and a float.

Grouping needs a value that equal events share (``Equality.canonical``), and the multiset
plan and screening take sharing it for being equal, so it is exact: normalised strings,
floating point numbers as text with NaN and -0.0 folded (Spark hashes -0.0 and 0.0 apart
when it repartitions, and wraps raw doubles in a normalisation that would cost a second
exchange), nested values as JSON text of their normal form (-0.0 folded at every depth,
maps as their entries sorted, null values left out).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    FloatType,
    MapType,
    NumericType,
    StringType,
    StructField,
    StructType,
)

from matcher.equality import ALL_COLUMNS, Equality, Tolerance

SQL_STEPS = frozenset({"trim", "lower", "upper"})
#: the slots of a tagged pair (``matcher.spark.conform``)
REFERENCE_SLOT, CANDIDATE_SLOT = "__p_ref", "__p_cand"
_PY_SPACE = "".join(f"\\u{c:04x}" for c in range(0x10000) if chr(c).isspace())
#: Java regular expression for what ``str.strip()`` removes
TRIM_PATTERN = rf"\A[{_PY_SPACE}]+|[{_PY_SPACE}]+\z"


def ident(name: str) -> str:
    """A column name as a SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def literal(value: Any) -> str:
    """A Python scalar (str, bool, int, float, None) as a SQL literal of the same value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return f"CAST('{'' if value > 0 else '-'}Infinity' AS DOUBLE)"
        return f"{value!r}D"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def in_list(expr: str, values: Sequence[Any]) -> str:
    """``expr IN (values)``, false for no values."""
    if not values:
        return "FALSE"
    return f"{expr} IN ({', '.join(literal(v) for v in values)})"


def sql_unsupported(equality: Equality) -> str | None:
    """Why ``equality`` cannot be said in SQL, or ``None`` when it can."""
    if equality.function is not None:
        return f"the equality is a Python function ({equality.function_name or 'function'})"
    for column, steps in equality.normalize.items():
        for step in steps:
            if step not in SQL_STEPS:
                return f"normalisation {step!r} of {column!r} has no SQL counterpart"
    return None


def compared_fields(fields: Sequence[StructField], equality: Equality) -> list[StructField]:
    """The columns the equality looks at."""
    return [f for f in fields if f.name not in equality.ignore]


def _steps(equality: Equality, name: str) -> tuple[str, ...]:
    return equality.normalize.get(name) or equality.normalize.get(ALL_COLUMNS) or ()


def normalised(expr: str, field: StructField, equality: Equality) -> str:
    """``expr`` after the column's normalisation steps (strings only)."""
    if not isinstance(field.dataType, StringType):
        return expr
    for step in _steps(equality, field.name):
        if step == "trim":
            expr = f"regexp_replace({expr}, {literal(TRIM_PATTERN)}, '')"
        else:
            expr = f"{step}({expr})"
    return expr


def _is_floating(dtype: DataType) -> bool:
    return isinstance(dtype, (DoubleType, FloatType))


def _is_number(dtype: DataType) -> bool:
    return isinstance(dtype, NumericType)  # BooleanType is not one


def holds(dtype: DataType, test: Callable[[DataType], bool]) -> bool:
    """Whether ``dtype`` or a type nested in it (elements, keys, values, fields) passes."""
    if test(dtype):
        return True
    if isinstance(dtype, ArrayType):
        return holds(dtype.elementType, test)
    if isinstance(dtype, MapType):
        return holds(dtype.keyType, test) or holds(dtype.valueType, test)
    if isinstance(dtype, StructType):
        return any(holds(f.dataType, test) for f in dtype.fields)
    return False


def _holds_floating(dtype: DataType) -> bool:
    return holds(dtype, _is_floating)


def _is_map(dtype: DataType) -> bool:
    return isinstance(dtype, MapType)


def is_tagged(dtype: DataType) -> bool:
    """Whether ``dtype`` is a tagged pair: each side's value in its own slot."""
    return isinstance(dtype, StructType) and dtype.names == [REFERENCE_SLOT, CANDIDATE_SLOT]


def _tagged_numbers(dtype: StructType) -> bool:
    return is_tagged(dtype) and all(_is_number(f.dataType) for f in dtype.fields)


def _tagged_number(expr: str) -> str:
    """A tagged pair's value, whichever side's slot holds it, in double precision."""
    return (
        f"coalesce(CAST({_field(expr, REFERENCE_SLOT)} AS DOUBLE),"
        f" CAST({_field(expr, CANDIDATE_SLOT)} AS DOUBLE))"
    )


def _lambda(name: str, depth: int) -> str:
    """A lambda variable of nesting ``depth`` (data columns never start with ``__p_``)."""
    return f"__p_{name}{depth}"


def _field(expr: str, name: str) -> str:
    return f"{expr}.{ident(name)}"


def _both_null_or(a: str, b: str, test: str) -> str:
    """``test`` when neither of ``a`` and ``b`` is null, else whether both are (never null)."""
    return (
        f"(CASE WHEN {a} IS NULL OR {b} IS NULL THEN {a} IS NULL AND {b} IS NULL ELSE {test} END)"
    )


def tolerance_equal(a: str, b: str, tolerance: Tolerance, nan_equal: bool) -> str:
    """``Tolerance.close`` (after the core's NaN rule) on two numeric expressions."""
    x, y = f"CAST({a} AS DOUBLE)", f"CAST({b} AS DOUBLE)"
    diff = f"abs({x} - {y})"
    nan = "TRUE" if nan_equal else "FALSE"
    inf = literal(math.inf)
    return (
        f"(CASE WHEN {a} IS NULL OR {b} IS NULL THEN {a} IS NULL AND {b} IS NULL"
        f" WHEN isnan({x}) OR isnan({y}) THEN {nan} AND isnan({x}) AND isnan({y})"
        f" WHEN {x} = {y} THEN TRUE"
        f" WHEN abs({x}) = {inf} OR abs({y}) = {inf} THEN FALSE"
        f" ELSE {diff} <= {literal(float(tolerance.abs))}"
        f" OR {diff} <= {literal(float(tolerance.rel))} * greatest(abs({x}), abs({y})) END)"
    )


def values_equal(
    a: str,
    b: str,
    dtype: DataType,
    tolerance: Tolerance | None,
    nan_equal: bool,
    depth: int = 0,
) -> str:
    """``matcher.equality.same`` on two values of type ``dtype`` (never null).

    Spark's ``<=>`` already is the rule for values of one type, nested ones included (NaN
    equals NaN, -0.0 equals 0.0, element by element), except for what it cannot say: maps
    (not comparable in Spark), a tolerance on the numbers inside, and ``nan_equal=False``.
    Those are compared by walking the type with higher-order functions: arrays pairwise
    (``zip_with``), maps key by key (``map_zip_with``, which reads an absent key as null,
    as the core does), structs field by field.
    """
    tolerant = tolerance is not None and not tolerance.exact
    careful = (
        holds(dtype, _is_map)
        or (tolerant and holds(dtype, _is_number))
        or (not nan_equal and _holds_floating(dtype))
    )
    if not careful:
        return f"({a} <=> {b})"
    if _is_number(dtype):
        if tolerant:
            assert tolerance is not None
            return tolerance_equal(a, b, tolerance, nan_equal)
        return f"({a} <=> {b} AND NOT coalesce(isnan({a}), FALSE))"  # floating, NaN unequal
    if tolerant and isinstance(dtype, StructType) and _tagged_numbers(dtype):
        assert tolerance is not None
        return tolerance_equal(_tagged_number(a), _tagged_number(b), tolerance, nan_equal)
    x, y, z = _lambda("x", depth), _lambda("y", depth), _lambda("z", depth)
    if isinstance(dtype, ArrayType):
        inner = values_equal(x, y, dtype.elementType, tolerance, nan_equal, depth + 1)
        pairs = f"zip_with({a}, {b}, ({x}, {y}) -> {inner})"
        return _both_null_or(a, b, f"size({a}) = size({b}) AND forall({pairs}, {z} -> {z})")
    if isinstance(dtype, MapType):
        k = _lambda("k", depth)
        inner = values_equal(x, y, dtype.valueType, tolerance, nan_equal, depth + 1)
        pairs = f"map_values(map_zip_with({a}, {b}, ({k}, {x}, {y}) -> {inner}))"
        return _both_null_or(a, b, f"forall({pairs}, {z} -> {z})")
    assert isinstance(dtype, StructType)
    fields = [
        values_equal(_field(a, f.name), _field(b, f.name), f.dataType, tolerance, nan_equal, depth)
        for f in dtype.fields
    ]
    return _both_null_or(a, b, " AND ".join(fields) or "TRUE")


def pair_equal(a: str, b: str, field: StructField, equality: Equality) -> str:
    """Whether one column's values ``a`` and ``b`` are equal under ``equality`` (never
    null). Both are of the column's one type: nothing is cast to compare (``reconcile``
    gives both streams the same types)."""
    if isinstance(field.dataType, StringType):
        return f"({normalised(a, field, equality)} <=> {normalised(b, field, equality)})"
    tolerance = equality.tolerance.get(field.name)
    return values_equal(a, b, field.dataType, tolerance, equality.nan_equal)


def _normal(expr: str, dtype: DataType, depth: int) -> str:
    """``expr`` with every float's -0.0 made 0.0 and every map its entries (null values left
    out, as an absent key reads as null), sorted: a value equal values share, and that Spark
    can group by (a map cannot be)."""
    if not (_holds_floating(dtype) or holds(dtype, _is_map)):
        return expr
    if _is_floating(dtype):
        zero = "CAST(0 AS FLOAT)" if isinstance(dtype, FloatType) else "0.0D"
        return f"(CASE WHEN {expr} = 0 THEN {zero} ELSE {expr} END)"
    x = _lambda("n", depth)
    if isinstance(dtype, ArrayType):
        return f"transform({expr}, {x} -> {_normal(x, dtype.elementType, depth + 1)})"
    if isinstance(dtype, MapType):
        k = _lambda("k", depth)
        kept = f"map_filter({expr}, ({k}, {x}) -> {x} IS NOT NULL)"
        entry = StructType(
            [StructField("key", dtype.keyType), StructField("value", dtype.valueType)]
        )
        entries = _normal(f"map_entries({kept})", ArrayType(entry), depth)
        return f"array_sort({entries})"
    assert isinstance(dtype, StructType)
    fields = ", ".join(
        f"{literal(f.name)}, {_normal(_field(expr, f.name), f.dataType, depth)}"
        for f in dtype.fields
    )
    return f"(CASE WHEN {expr} IS NULL THEN NULL ELSE named_struct({fields}) END)"


def key_value(expr: str, dtype: DataType) -> str:
    """A value to group and hash by that equal values share (NaN is one value, -0.0 is
    0.0, maps are their sorted entries), without floating point types: Spark hashes -0.0
    and 0.0 apart when it repartitions, and wraps raw doubles in a normalisation that would
    cost a second exchange."""
    if _is_floating(dtype):
        return (
            f"(CASE WHEN isnan({expr}) THEN 'NaN' WHEN {expr} = 0 THEN '0'"
            f" ELSE CAST({expr} AS STRING) END)"
        )
    normal = _normal(expr, dtype, 0)
    return f"to_json({normal})" if _holds_floating(dtype) else normal


def canonical_value(expr: str, field: StructField, equality: Equality) -> str:
    """``key_value`` of the normalised value: equal events share it (no tolerance)."""
    return key_value(normalised(expr, field, equality), field.dataType)


def is_nan(expr: str, dtype: DataType, depth: int = 0) -> str:
    """Whether a value holds a NaN, at any depth (for ``nan_equal=False``; never null)."""
    if _is_floating(dtype):
        return f"coalesce(isnan({expr}), FALSE)"
    if not _holds_floating(dtype):
        return "FALSE"
    x = _lambda("q", depth)
    if isinstance(dtype, ArrayType):
        inner = is_nan(x, dtype.elementType, depth + 1)
        return f"coalesce(exists({expr}, {x} -> {inner}), FALSE)"
    if isinstance(dtype, MapType):
        keys = is_nan(x, dtype.keyType, depth + 1)
        values = is_nan(x, dtype.valueType, depth + 1)
        return (
            f"coalesce(exists(map_keys({expr}), {x} -> {keys})"
            f" OR exists(map_values({expr}), {x} -> {values}), FALSE)"
        )
    assert isinstance(dtype, StructType)
    fields = [f for f in dtype.fields if _holds_floating(f.dataType)]
    return "(" + " OR ".join(is_nan(_field(expr, f.name), f.dataType, depth) for f in fields) + ")"
