"""A column whose two sides have different types, as one type the Spark engine can compare.

The core compares such a column's values as read, by ``matcher.equality.same``
(``matcher.schema``: no common type, compared as read). Spark's plans need one type per
column, so ``conformed`` builds, from the two types, the SQL that turns each side's value
into a value of one type, so that the equality SQL (``matcher.spark.equality_sql``) says
what ``same`` says of the values as read:

* a pair of atomic types with a common type (``matcher.schema.common_type``): both cast to
  it, as at the top level;
* arrays: element by element (``transform``); maps: key by key and value by value
  (``transform_keys``, ``transform_values``); structs: field by field over the union of
  their fields, a field one side lacks null there (the core reads an absent key as null);
* anything else (``string`` vs ``bigint``, ``boolean`` vs ``bigint``, ``decimal`` vs
  ``double``, ``date`` vs ``timestamp``, an array vs a string): a *tagged pair*, the struct
  ``<__p_ref: reference type, __p_cand: candidate type>`` in which each side fills its own
  slot. Two values of different sides are then never equal, null vs null aside: the core's
  rule for values of different kinds. Under a tolerance, a tagged pair of numbers (a
  decimal and a double) is compared in double precision (``equality_sql.values_equal``),
  as ``same`` compares a ``Decimal`` and a float.

Two cases are not said exactly in SQL, and ``exact`` is then false (the comparison takes
the per-partition path, where the core's ``same`` decides on the values): a struct vs a
map (the core reads both as mappings, compared key by key), and map keys of a tagged pair
(Python finds the key ``1.5`` by a ``Decimal('1.5')``). Events read back through Arrow
show each side's value as read: ``matcher.spark.events`` unwraps tagged pairs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StructField,
    StructType,
)

from matcher.schema import common_type
from matcher.spark.equality_sql import CANDIDATE_SLOT, REFERENCE_SLOT, ident, literal

_ATOMIC: dict[str, DataType] = {
    "tinyint": ByteType(),
    "smallint": ShortType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
}
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")


@dataclass(frozen=True, slots=True)
class Conformed:
    """Each side's value as SQL over the side's own (``reference``, ``candidate``), the
    one type both then have, and whether the equality SQL on them is the core's rule."""

    reference: str
    candidate: str
    dtype: DataType
    exact: bool = True


def conformed(a: str, b: str, ta: DataType, tb: DataType, depth: int = 0) -> Conformed:
    """The SQL that turns ``a`` (of type ``ta``, the reference's) and ``b`` (``tb``, the
    candidate's) into values of one type (see the module's docstring)."""
    if ta == tb:
        return Conformed(a, b, ta)
    if _container(ta) is None and _container(tb) is None:
        common = common_type(ta.simpleString(), tb.simpleString())
        if common is not None:
            to = _atomic(common)
            return Conformed(_cast(a, ta, to), _cast(b, tb, to), to)
    if isinstance(ta, ArrayType) and isinstance(tb, ArrayType):
        x = f"__p_e{depth}"
        inner = conformed(x, x, ta.elementType, tb.elementType, depth + 1)
        return Conformed(
            _transform(a, x, inner.reference),
            _transform(b, x, inner.candidate),
            ArrayType(inner.dtype, True),
            inner.exact,
        )
    if isinstance(ta, MapType) and isinstance(tb, MapType):
        k, v = f"__p_k{depth}", f"__p_v{depth}"
        key = conformed(k, k, ta.keyType, tb.keyType, depth + 1)
        value = conformed(v, v, ta.valueType, tb.valueType, depth + 1)
        return Conformed(
            _map(a, k, v, key.reference, value.reference),
            _map(b, k, v, key.candidate, value.candidate),
            MapType(key.dtype, value.dtype, True),
            key.exact and value.exact and not _holds_tagged(key.dtype),
        )
    if isinstance(ta, StructType) and isinstance(tb, StructType):
        return _structs(a, b, ta, tb, depth)
    exact = not (_container(ta) in ("map", "struct") and _container(tb) in ("map", "struct"))
    return Conformed(_tagged(a, ta, tb, 0), _tagged(b, ta, tb, 1), tagged_type(ta, tb), exact)


def tagged_type(ta: DataType, tb: DataType) -> StructType:
    """The type of a tagged pair of a reference's ``ta`` and a candidate's ``tb``."""
    return StructType(
        [StructField(REFERENCE_SLOT, ta, True), StructField(CANDIDATE_SLOT, tb, True)]
    )


def ddl(dtype: DataType) -> str:
    """``dtype`` as SQL spells it in a ``CAST``, field names quoted."""
    if isinstance(dtype, ArrayType):
        return f"ARRAY<{ddl(dtype.elementType)}>"
    if isinstance(dtype, MapType):
        return f"MAP<{ddl(dtype.keyType)}, {ddl(dtype.valueType)}>"
    if isinstance(dtype, StructType):
        return "STRUCT<" + ", ".join(f"{ident(f.name)}: {ddl(f.dataType)}" for f in dtype) + ">"
    return dtype.simpleString()


def _container(dtype: DataType) -> str | None:
    if isinstance(dtype, ArrayType):
        return "array"
    if isinstance(dtype, MapType):
        return "map"
    if isinstance(dtype, StructType):
        return "struct"
    return None


def _atomic(name: str) -> DataType:
    match = _DECIMAL.match(name)
    if match:
        return DecimalType(int(match[1]), int(match[2]))
    return _ATOMIC[name]  # common_type of two atomic types that differ is numeric


def _null(dtype: DataType) -> str:
    return "NULL" if isinstance(dtype, NullType) else f"CAST(NULL AS {ddl(dtype)})"


def _cast(expr: str, own: DataType, to: DataType) -> str:
    return expr if own == to else f"CAST({expr} AS {ddl(to)})"


def _transform(expr: str, x: str, inner: str) -> str:
    return expr if inner == x else f"transform({expr}, {x} -> {inner})"


def _map(expr: str, k: str, v: str, key: str, value: str) -> str:
    if key != k:
        expr = f"transform_keys({expr}, ({k}, {v}) -> {key})"
    if value != v:
        expr = f"transform_values({expr}, ({k}, {v}) -> {value})"
    return expr


def _structs(a: str, b: str, ta: StructType, tb: StructType, depth: int) -> Conformed:
    """Field by field over the union of the fields (the reference's order, then the
    candidate's new ones); a field one side lacks is null on that side."""
    mine, theirs = {f.name: f.dataType for f in ta}, {f.name: f.dataType for f in tb}
    names = [*mine, *(n for n in theirs if n not in mine)]
    ref, cand, fields, exact = [], [], [], True
    for name in names:
        x, y = f"{a}.{ident(name)}", f"{b}.{ident(name)}"
        if name in mine and name in theirs:
            inner = conformed(x, y, mine[name], theirs[name], depth)
        elif name in mine:
            inner = Conformed(x, _null(mine[name]), mine[name])
        else:
            inner = Conformed(_null(theirs[name]), y, theirs[name])
        ref.append(f"{literal(name)}, {inner.reference}")
        cand.append(f"{literal(name)}, {inner.candidate}")
        fields.append(StructField(name, inner.dtype, True))
        exact = exact and inner.exact
    return Conformed(
        f"(CASE WHEN {a} IS NULL THEN NULL ELSE named_struct({', '.join(ref)}) END)",
        f"(CASE WHEN {b} IS NULL THEN NULL ELSE named_struct({', '.join(cand)}) END)",
        StructType(fields),
        exact,
    )


def _tagged(expr: str, ta: DataType, tb: DataType, side: int) -> str:
    slots = (expr, _null(tb)) if side == 0 else (_null(ta), expr)
    names = literal(REFERENCE_SLOT), literal(CANDIDATE_SLOT)
    pair = f"named_struct({names[0]}, {slots[0]}, {names[1]}, {slots[1]})"
    return f"(CASE WHEN {expr} IS NULL THEN NULL ELSE {pair} END)"


def _holds_tagged(dtype: DataType) -> bool:
    if isinstance(dtype, StructType):
        return dtype.names == [REFERENCE_SLOT, CANDIDATE_SLOT] or any(
            _holds_tagged(f.dataType) for f in dtype
        )
    if isinstance(dtype, ArrayType):
        return _holds_tagged(dtype.elementType)
    if isinstance(dtype, MapType):
        return _holds_tagged(dtype.keyType) or _holds_tagged(dtype.valueType)
    return False
