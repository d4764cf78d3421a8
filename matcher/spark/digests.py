"""The SQL of screening's digests: an event's canonical values hashed to 64 bits.

``matcher.spark.screen`` hashes each event of both streams (``digest_columns``) and its
group (``group_hashes``); ``matcher.spark.chains_run`` works on the same digests, and on
one per compared column (``column_digests``) to say which columns a corruption changed.
Equal canonical values (``Equality.canonical`` said in SQL) give equal digests; different
ones give the same digest with a chance of about 2^-64.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    FloatType,
    MapType,
    StructField,
    StructType,
)

from matcher.equality import Equality
from matcher.spark.equality_sql import canonical_value, compared_fields, ident, is_nan
from matcher.spark.grouped_sql import GROUP

DIGEST, NAN = "__p_h1", "__p_nan"
GH, GH2 = "__p_gh", "__p_gh2"
#: hashed in first, a second seed: for the group's second hash and the second XOR
SALT = "'parity-screen'"


def digest_columns(fields: tuple[StructField, ...], equality: Equality) -> list[str]:
    """SQL for an event's digest and its NaN flag (a NaN equals nothing when
    ``nan_equal`` is off, so its group always goes to the full plan)."""
    compared = compared_fields(fields, equality)
    values = [_hashable(ident(f.name), f, equality) for f in compared]
    nulls = [f"{ident(f.name)} IS NULL" for f in compared]
    inputs = ", ".join([*values, *nulls]) or "0"
    if equality.nan_equal:
        nan = "FALSE"
    else:
        nan = " OR ".join(is_nan(ident(f.name), f.dataType) for f in compared) or "FALSE"
    return [f"xxhash64({inputs}) AS {DIGEST}", f"{nan} AS {NAN}"]


def _hashable(expr: str, field: StructField, equality: Equality) -> str:
    """The canonical value of a column, as ``xxhash64`` should see it.

    A top-level float stays a number, NaN and -0.0 folded (``xxhash64`` hashes a double's
    bits, and every NaN has the same bits once folded): cheaper than the text that
    ``canonical_value`` makes of it for grouping. A nested value is JSON text: ``xxhash64``
    skips null elements and fields, so ``[null, 1]`` and ``[1, null]`` would hash alike."""
    dtype = field.dataType
    if isinstance(dtype, (DoubleType, FloatType)):
        zero = "CAST(0 AS FLOAT)" if isinstance(dtype, FloatType) else "0.0D"
        nan = "CAST('NaN' AS FLOAT)" if isinstance(dtype, FloatType) else "CAST('NaN' AS DOUBLE)"
        return f"(CASE WHEN isnan({expr}) THEN {nan} WHEN {expr} = 0 THEN {zero} ELSE {expr} END)"
    canonical = canonical_value(expr, field, equality)
    nested = isinstance(dtype, (ArrayType, MapType, StructType))
    if nested and not canonical.startswith("to_json("):  # ``key_value`` may have made it JSON
        return f"to_json({canonical})"
    return canonical


def column_digests(fields: tuple[StructField, ...], equality: Equality) -> list[str]:
    """SQL for one digest per compared column, in their order (``column_digest(i)``): a
    column's canonical value and whether it is null, hashed. Separate longs rather than one
    array: Spark turns an array into Arrow element by element, a long column at once."""
    compared = compared_fields(fields, equality)
    return [
        f"xxhash64({_hashable(ident(f.name), f, equality)}, {ident(f.name)} IS NULL)"
        f" AS {column_digest(i)}"
        for i, f in enumerate(compared)
    ]


def column_digest(index: int) -> str:
    """The name of the digest of the ``index``-th compared column (``column_digests``)."""
    return f"__p_c{index}"


def group_hashes() -> list[str]:
    """SQL for the group's two 64-bit hashes. Two groups with the same 128 bits would be
    screened as one (about one chance in 2^64 for a billion groups): their events would
    be ranked together, and since the digests hash the key's values too, the merged group
    agrees only if each of them does."""
    return [f"xxhash64({GROUP}) AS {GH}", f"xxhash64({SALT}, {GROUP}) AS {GH2}"]
