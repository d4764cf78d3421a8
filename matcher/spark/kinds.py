"""JSON columns that mix kinds: kept apart on Spark, as the core keeps them.

Spark's JSON reader infers a column that holds values of different kinds (``1`` and
``"x"``; an array holding ``1`` and ``"1"``; an object in one row and a number in another)
as ``string`` and hands every non-string value back as its text, so ``1`` would equal
``"1"``. The core reads the values as they are, and ``1`` is not ``"1"`` (exact equality is
same kind and value). ``keep_json_kinds`` finds such columns and reads them as *JSON text*
instead: the struct ``<__p_json: string>`` holding each value's JSON (``to_json`` of the
value read as a variant), which ``matcher.spark.events`` turns back into the value
``json.loads`` gives, the core reader's value. Those columns are compared by the core's
rule, on the per-partition path (``SparkComparison.route``).

Only columns whose inferred type holds a ``string`` can mix kinds (every other conflict
Spark's inference resolves to ``string``, numbers aside), and only JSON outputs have them.
Finding them costs one aggregation over the output reading just those columns, as
variants (``schema_of_variant_agg``: ``VARIANT`` where kinds mix, at any depth); a column
that does not mix kinds (the normal case) keeps its type, and its comparison its plan.
The JSON text of a number is the variant's (``1.50`` is ``1.5``, ``1.0`` is ``1``), equal
numbers compare equal; NaN and infinities (non-standard JSON) keep their spelling at the
top level of a value.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StringType,
    StructField,
    StructType,
    VariantType,
)

from matcher.spark.equality_sql import holds, ident, literal

JSON_SLOT = "__p_json"
#: the type of JSON text
JSON_TEXT = StructType([StructField(JSON_SLOT, StringType(), True)])
#: a JSON text column's metadata: the type Spark's inference gave it (its schema's type)
INFERRED_TYPE = "parity.inferred_type"
#: a column's metadata: its type was inferred from text, JSON lines or CSV
#: (``matcher.schema.Field.inferred``)
INFERRED_FROM_TEXT = "parity.inferred_from_text"
#: ``VARIANT`` as a type in a variant schema (not a field name: that is followed by ``:``)
_MIXED = re.compile(r"(?:^|[<,:]\s*)VARIANT\s*(?:[>,]|$)")


def is_json_text(dtype: DataType) -> bool:
    return isinstance(dtype, StructType) and dtype.names == [JSON_SLOT]


def mixes_kinds(variant_schema: str | None) -> bool:
    """Whether ``schema_of_variant_agg`` found values of different kinds somewhere."""
    return variant_schema is not None and _MIXED.search(variant_schema) is not None


def keep_json_kinds(spark: SparkSession, df: DataFrame, source: str) -> DataFrame:
    """``df`` (the JSON lines at ``source``, read with an inferred schema) with every
    column that mixes kinds as JSON text; ``df`` itself when none does."""
    corrupt = spark.conf.get("spark.sql.columnNameOfCorruptRecord", "_corrupt_record")
    suspects = [
        f.name
        for f in df.schema.fields
        if f.name != corrupt and holds(f.dataType, lambda t: isinstance(t, StringType))
    ]
    if not suspects:
        return df
    probe = StructType([StructField(name, VariantType(), True) for name in suspects])
    found = (
        spark.read.schema(probe)
        .json(source)
        .select(*[F.expr(f"schema_of_variant_agg({ident(n)})") for n in suspects])
        .first()
    )
    mixed = {n for n, schema in zip(suspects, found or (), strict=False) if mixes_kinds(schema)}
    if not mixed:
        return df
    schema = StructType(
        [StructField(f.name, VariantType(), True) if f.name in mixed else f for f in df.schema]
    )
    as_variants = spark.read.schema(schema).json(source)
    return as_variants.select(
        *[
            F.expr(json_text(ident(f.name))).alias(
                f.name, metadata={**f.metadata, INFERRED_TYPE: f.dataType.simpleString()}
            )
            if f.name in mixed
            else F.col(ident(f.name))
            for f in df.schema
        ]
    )


def json_text(variant: str) -> str:
    """SQL: a variant as JSON text (null for SQL's NULL and JSON's null)."""
    double = f"variant_get({variant}, '$', 'double')"
    text = (
        f"CASE WHEN schema_of_variant({variant}) = 'DOUBLE' AND NOT abs({double}) < {_INF}"
        f" THEN CAST({double} AS STRING) ELSE to_json({variant}) END"
    )
    return (
        f"(CASE WHEN {variant} IS NULL OR is_variant_null({variant}) THEN NULL"
        f" ELSE named_struct({literal(JSON_SLOT)}, {text}) END)"
    )


_INF = "CAST('Infinity' AS DOUBLE)"


def as_json_text(expr: str, dtype: DataType) -> str:
    """SQL: a typed value (the other side of a JSON text column) as JSON text."""
    if is_json_text(dtype):
        return expr
    if isinstance(dtype, (ArrayType, MapType, StructType)):
        return json_text(f"to_variant_object({expr})")
    return json_text(f"CAST({expr} AS VARIANT)")
