"""Schemas of the two streams: the core's findings (``matcher.schema``), ``reconcile``,
required columns.

A ``StructType`` becomes the core's neutral ``Schema`` (types in ``simpleString``), and the
core's ``diff_schemas`` says what differs: the same findings as on the core path. Spark's
file readers call every column nullable, so the nullability a Parquet output declares comes
from its first file's footer (``parquet_nullability``), as the core reads it. Both streams
are then reduced to the columns the core would compare (``comparison_plan``), a side whose
type is narrower cast to the common type, in the reference's order, which witnesses show.
A column whose two types have no common type is compared too, as the core compares it
(as read): both sides become one type (``matcher.spark.conform``). A column that is JSON
text on one side (``matcher.spark.kinds``: JSON values of mixed kinds) is JSON text on
both, its schema type the one Spark inferred.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from matcher.errors import InputError, SpecError
from matcher.schema import (
    DEFAULT_MODE,
    Field,
    Mode,
    Schema,
    SchemaDiff,
    comparison_plan,
    diff_schemas,
    tolerance_problem,
)
from matcher.spark.conform import conformed
from matcher.spark.equality_sql import ident
from matcher.spark.kinds import (
    INFERRED_FROM_TEXT,
    INFERRED_TYPE,
    JSON_TEXT,
    as_json_text,
    is_json_text,
)

POS = "__pos"
#: a stream's order, when it is cheaper than ``__pos`` (``read_stream`` of Parquet): not
#: dense, only increasing along the stream; a stream without it is ordered by ``__pos``
ORD = "__p_ord"
#: a Parquet stream's natural order is its file's index shifted by this, plus the row's
#: index in its file (rows per file below 2^40, files below 2^23)
ROW_BITS = 40
#: every internal column starts with this; a data column may not
RESERVED = "__p_"


@dataclass(frozen=True, slots=True)
class Streams:
    """Both streams reduced to the same data columns (in the reference's order, at their
    common types), ``__pos`` and ``__p_ord``; ``schema``: how the schemas differ;
    ``uncommon``: the columns whose types have no common type (compared as read, but no
    key); ``core_only``: ``(column, why)`` for the columns whose SQL comparison is not
    exactly the core's rule, which only the per-partition path may compare."""

    reference: DataFrame
    candidate: DataFrame
    fields: tuple[StructField, ...]
    warnings: tuple[str, ...] = ()
    schema: SchemaDiff = field(default_factory=SchemaDiff)
    uncommon: frozenset[str] = frozenset()
    core_only: tuple[tuple[str, str], ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


def column(name: str) -> Column:
    """The column called ``name``, even when the name holds dots or backticks."""
    return F.col("`" + name.replace("`", "``") + "`")


def data_fields(df: DataFrame, side: str) -> list[StructField]:
    """The data columns of a stream; fails when ``__pos`` is missing or a name is reserved."""
    names = df.columns
    if POS not in names:
        raise InputError(
            f"{side} stream lacks the {POS} column: read it with matcher.spark.read_stream"
        )
    for name in names:
        if name.startswith(RESERVED) and name != ORD:
            raise InputError(f"{side} column {name!r}: names starting with {RESERVED} are reserved")
    return [f for f in df.schema.fields if f.name not in (POS, ORD)]


def neutral_schema(
    fields: Sequence[StructField], nullability: Mapping[str, bool] | None = None
) -> Schema:
    """The core's description of ``fields``; ``nullability`` (a file's declaration) wins
    over the fields' own, which Spark's file readers set to nullable everywhere."""
    declared = nullability or {}
    return Schema(
        tuple(
            Field(
                f.name,
                f.metadata.get(INFERRED_TYPE) or f.dataType.simpleString(),
                declared.get(f.name, f.nullable),
                bool(f.metadata.get(INFERRED_FROM_TEXT)),
            )
            for f in fields
        )
    )


def parquet_nullability(spark: Any, path: str) -> dict[str, bool] | None:
    """Whether each top-level column of the Parquet output at ``path`` may hold nulls, as
    the footer of its first file (in name order) declares; ``None`` when it cannot be read
    (no file, not Parquet, no JVM to ask: Spark Connect). The footer is read by the JVM's
    Parquet reader, so any file system Spark reads works."""
    try:
        files = sorted(spark.read.parquet(path).inputFiles(), key=urllib.parse.unquote)
        if not files:
            return None
        jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
            jvm.org.apache.hadoop.fs.Path(files[0]), conf
        )
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
        try:
            message = reader.getFooter().getFileMetaData().getSchema()
            return {
                str(f.getName()): str(f.getRepetition().toString()) != "REQUIRED"
                for f in message.getFields()
            }
        finally:
            reader.close()
    except Exception:  # best effort: the DataFrame's own nullability stands instead
        return None


def reconcile(
    reference: DataFrame,
    candidate: DataFrame,
    mode: Mode = DEFAULT_MODE,
    exempt: Iterable[str] = (),
    nullability: tuple[Mapping[str, bool] | None, Mapping[str, bool] | None] = (None, None),
    tolerant: Iterable[str] = (),
) -> Streams:
    """Both streams over the columns the core compares, and the schema findings; a
    ``tolerant`` column (``equality.tolerance``) that holds no number in either stream is
    an error (``matcher.schema.tolerance_problem``), as on the core."""
    ref_fields = data_fields(reference, "reference")
    cand_fields = data_fields(candidate, "candidate")
    if not ref_fields or not cand_fields:
        # Nothing to tell (JSON lines without an object), as on the core: no findings, and
        # the empty side takes the other's columns (as nulls) so that the events compare.
        fields = ref_fields or cand_fields
        return Streams(
            _filled(reference, fields, bool(ref_fields)),
            _filled(candidate, fields, bool(cand_fields)),
            tuple(fields),
            (),
            SchemaDiff(mode),
        )
    ref_schema = neutral_schema(ref_fields, nullability[0])
    cand_schema = neutral_schema(cand_fields, nullability[1])
    problem = tolerance_problem(tolerant, ref_schema, cand_schema)
    if problem is not None:
        raise SpecError(problem)
    diff = diff_schemas(ref_schema, cand_schema, mode, exempt)
    ref_types = {f.name: f for f in ref_fields}
    cand_types = {f.name: f for f in cand_fields}
    ref_columns, cand_columns, fields = [], [], []
    uncommon, core_only = set(), []
    for c in comparison_plan(ref_schema, cand_schema):
        r, k = ref_types[c.name], cand_types[c.name]
        if c.type is None:
            uncommon.add(c.name)
        if is_json_text(r.dataType) or is_json_text(k.dataType):
            ref_columns.append(_expr(as_json_text(ident(c.name), r.dataType), c.name))
            cand_columns.append(_expr(as_json_text(ident(c.name), k.dataType), c.name))
            fields.append(StructField(c.name, JSON_TEXT, True))
            core_only.append((c.name, "holds JSON values of different kinds"))
        elif c.type is None:
            both = conformed(ident(c.name), ident(c.name), r.dataType, k.dataType)
            ref_columns.append(_expr(both.reference, c.name))
            cand_columns.append(_expr(both.candidate, c.name))
            fields.append(StructField(c.name, both.dtype, True))
            if not both.exact:
                why = f"holds {c.reference} and {c.candidate}, which SQL cannot compare"
                core_only.append((c.name, why))
        else:
            dtype = (
                r.dataType
                if c.reference == c.type
                else k.dataType
                if c.candidate == c.type
                else DataType.fromDDL(c.type)
            )
            ref_columns.append(_as(c.name, c.reference, c.type))
            cand_columns.append(_as(c.name, c.candidate, c.type))
            fields.append(StructField(c.name, dtype, r.nullable or k.nullable))
    return Streams(
        reference.select(*ref_columns, POS, _order(reference)),
        candidate.select(*cand_columns, POS, _order(candidate)),
        tuple(fields),
        (),
        diff,
        frozenset(uncommon),
        tuple(core_only),
    )


def _filled(df: DataFrame, fields: Sequence[StructField], own: bool) -> DataFrame:
    data = [column(f.name) if own else F.lit(None).cast(f.dataType).alias(f.name) for f in fields]
    return df.select(*data, POS, _order(df))


def _as(name: str, own: str, common: str) -> Column:
    return column(name) if own == common else column(name).cast(common).alias(name)


def _expr(sql: str, name: str) -> Column:
    return column(name) if sql == ident(name) else F.expr(sql).alias(name)


def _order(df: DataFrame) -> Column:
    return F.col(ORD) if ORD in df.columns else F.col(POS).alias(ORD)


def require_columns(
    columns: Iterable[str],
    needed: Iterable[tuple[str, str, bool]],
    schemas: tuple[StructType, StructType] | None = None,
    uncommon: frozenset[str] = frozenset(),
) -> None:
    """Fail with ``InputError`` naming the first ``(what, column, keyed)`` not compared as
    it needs: one the outputs lack, or, ``keyed`` (the dependence reads it), one both
    outputs have (``schemas``) but whose types have no common type (``uncommon``)."""
    known = list(columns)
    present = set(known)
    for what, column, keyed in needed:
        if column in present and not (keyed and column in uncommon):
            continue
        types = [
            {f.name: f.type for f in neutral_schema(schema.fields).fields}.get(column)
            for schema in schemas or ()
        ]
        if len(types) == 2 and types[0] is not None and types[1] is not None:
            raise InputError(
                f"{what} needs column {column!r}, whose values cannot be compared: "
                f"{types[0]} in the reference, {types[1]} in the candidate"
            )
        if column not in present:
            shown = ", ".join(known[:30]) + (", ..." if len(known) > 30 else "")
            raise InputError(
                f"{what} needs column {column!r}, which the outputs lack "
                f"(compared columns: {shown or 'none'})"
            )
