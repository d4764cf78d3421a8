"""Schemas of the two streams: the one-line diff, ``common_columns``, required columns.

Both sides must have the same data columns with the same types (nullability aside: Spark's
writers and readers change it freely), because an event that gained or lost a column is
not "the same event" to the core either. ``common_columns`` compares what both share and
says in a warning what it dropped. Columns are compared by name; the reference's column
order is the one witnesses show.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField

from matcher.errors import InputError

POS = "__pos"
#: a stream's order, when it is cheaper than ``__pos`` (``read_stream`` of Parquet): not
#: dense, only increasing along the stream; a stream without it is ordered by ``__pos``
ORD = "__p_ord"
#: every internal column starts with this; a data column may not
RESERVED = "__p_"


@dataclass(frozen=True, slots=True)
class Streams:
    """Both streams reduced to the same data columns (in the reference's order), ``__pos``
    and ``__p_ord``."""

    reference: DataFrame
    candidate: DataFrame
    fields: tuple[StructField, ...]
    warnings: tuple[str, ...] = ()

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


def _type(dtype: DataType) -> str:
    return dtype.simpleString()


def schema_diff(reference: Sequence[StructField], candidate: Sequence[StructField]) -> str:
    """``missing in candidate: a (int); extra in candidate: b (string); retyped: c int ->
    bigint``, or ``""`` when the data columns agree."""
    ref = {f.name: f for f in reference}
    cand = {f.name: f for f in candidate}
    missing = [f"{f.name} ({_type(f.dataType)})" for f in reference if f.name not in cand]
    extra = [f"{f.name} ({_type(f.dataType)})" for f in candidate if f.name not in ref]
    retyped = [
        f"{f.name} {_type(f.dataType)} -> {_type(cand[f.name].dataType)}"
        for f in reference
        if f.name in cand and _type(f.dataType) != _type(cand[f.name].dataType)
    ]
    parts = [
        f"{label}: {', '.join(items)}"
        for label, items in (
            ("missing in candidate", missing),
            ("extra in candidate", extra),
            ("retyped", retyped),
        )
        if items
    ]
    return "; ".join(parts)


def reconcile(reference: DataFrame, candidate: DataFrame, common_columns: bool) -> Streams:
    """Both streams over the same columns, or ``InputError`` with the schema diff."""
    ref_fields = data_fields(reference, "reference")
    cand_fields = data_fields(candidate, "candidate")
    diff = schema_diff(ref_fields, cand_fields)
    warnings: tuple[str, ...] = ()
    fields = ref_fields
    if diff:
        if not common_columns:
            raise InputError(f"schemas differ: {diff}")
        cand_types = {f.name: _type(f.dataType) for f in cand_fields}
        fields = [f for f in ref_fields if cand_types.get(f.name) == _type(f.dataType)]
        if not fields:
            raise InputError(f"schemas share no column: {diff}")
        warnings = (f"compared only the columns both outputs share ({diff})",)
    names = [f.name for f in fields]
    return Streams(
        reference.select(*[column(n) for n in names], POS, _order(reference)),
        candidate.select(*[column(n) for n in names], POS, _order(candidate)),
        tuple(fields),
        warnings,
    )


def _order(df: DataFrame) -> Column:
    return F.col(ORD) if ORD in df.columns else F.col(POS).alias(ORD)


def require_columns(columns: Iterable[str], needed: Iterable[tuple[str, str]]) -> None:
    """Fail with ``InputError`` naming the first ``(what, column)`` the outputs lack."""
    known = list(columns)
    present = set(known)
    for what, column in needed:
        if column not in present:
            shown = ", ".join(known[:30]) + (", ..." if len(known) > 30 else "")
            raise InputError(
                f"{what} needs column {column!r}, which the outputs lack "
                f"(compared columns: {shown or 'none'})"
            )
