"""The core's ``Equality`` said in Spark SQL, column by column, as SQL text.

Pure functions from column types and the equality to SQL expressions (so they are tested
without Spark, and a plan is built in a few calls rather than thousands). Each rule
mirrors ``matcher.equality`` on the Python values Spark hands back:

* plain columns: ``a <=> b`` (Spark already has NaN = NaN and 0.0 = -0.0, like the core);
  with ``nan_equal=False`` a NaN equals nothing;
* tolerance (numeric columns): null only equals null, NaN only NaN (when ``nan_equal``),
  equal values are close, an infinity is only close to itself, else ``|a - b| <= abs`` or
  ``<= rel * greatest(|a|, |b|)``, all in double precision like ``Tolerance.close``;
* normalisation of string columns: ``trim`` strips exactly the characters Python's
  ``str.strip()`` strips (a regular expression over them; Spark's ``trim`` strips spaces
  only), ``lower``/``upper`` are Spark's, which agree with Python's, casing rules included.
  ``casefold`` has no SQL counterpart: such an equality goes to the per-partition path.

Grouping needs a value that equal events share (``Equality.canonical``): normalised
strings, and floating point numbers as text with NaN and -0.0 folded, because Spark
hashes -0.0 and 0.0 apart when it repartitions, and wraps raw doubles in a normalisation
that would cost a second exchange.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
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


def _holds_floating(dtype: DataType) -> bool:
    if _is_floating(dtype):
        return True
    if isinstance(dtype, ArrayType):
        return _holds_floating(dtype.elementType)
    if isinstance(dtype, MapType):
        return _holds_floating(dtype.keyType) or _holds_floating(dtype.valueType)
    if isinstance(dtype, StructType):
        return any(_holds_floating(f.dataType) for f in dtype.fields)
    return False


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


def pair_equal(a: str, b: str, field: StructField, equality: Equality) -> str:
    """Whether one column's values ``a`` and ``b`` are equal under ``equality`` (never
    null)."""
    dtype = field.dataType
    tolerance = equality.tolerance.get(field.name)
    if (
        tolerance is not None
        and isinstance(dtype, NumericType)
        and not isinstance(dtype, BooleanType)
    ):
        return tolerance_equal(a, b, tolerance, equality.nan_equal)
    if isinstance(dtype, StringType):
        return f"({normalised(a, field, equality)} <=> {normalised(b, field, equality)})"
    if isinstance(dtype, MapType):  # maps are not comparable in Spark; their entries are
        return f"(array_sort(map_entries({a})) <=> array_sort(map_entries({b})))"
    if _is_floating(dtype) and not equality.nan_equal:
        return f"({a} <=> {b} AND NOT coalesce(isnan({a}), FALSE))"
    return f"({a} <=> {b})"


def key_value(expr: str, dtype: DataType) -> str:
    """A value to group and hash by that keeps the core's key identity (NaN is one key,
    -0.0 is 0.0) without floating point types."""
    if _is_floating(dtype):
        return (
            f"(CASE WHEN isnan({expr}) THEN 'NaN' WHEN {expr} = 0 THEN '0'"
            f" ELSE CAST({expr} AS STRING) END)"
        )
    if isinstance(dtype, MapType):  # maps cannot be grouped by; their sorted entries can
        expr = f"array_sort(map_entries({expr}))"
    if _holds_floating(dtype):
        return f"to_json({expr})"
    return expr


def canonical_value(expr: str, field: StructField, equality: Equality) -> str:
    """``key_value`` of the normalised value: equal events share it (no tolerance)."""
    return key_value(normalised(expr, field, equality), field.dataType)


def is_nan(expr: str, dtype: DataType) -> str:
    """Whether a top-level floating point value is NaN (for ``nan_equal=False``)."""
    if _is_floating(dtype):
        return f"coalesce(isnan({expr}), FALSE)"
    return "FALSE"
