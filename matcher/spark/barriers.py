"""Barriers: found in SQL, aligned on the driver, and turned into a unit for every event.

Barriers (end-of-day markers) are few, so both sides' barriers are collected and aligned
with the core's own ``align`` (Myers' diff under the equality), exactly as the core's
classifier aligns them. The aligned pairs cut each stream into *units*; an event's unit is
the number of paired barriers before it on its side, its *epoch* the number of barriers of
any kind before it. Both are found per row with a binary search over the collected barrier
positions (a vectorised pandas UDF: no sort, no shuffle): this is the two-pass prefix count,
its first pass being the barrier collection.

Up to the first barrier that differs, units and epochs coincide (``start``), which is what
lets the online part of the core (matched barrier by barrier) and its classification
(unit by unit) be computed from the same groups (see ``matcher.spark.grouped_sql``).
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DecimalType,
    FractionalType,
    IntegralType,
    StringType,
    StructField,
)

from matcher.diff import align, entry_key
from matcher.equality import Equality
from matcher.pools import Entry
from matcher.spark.equality_sql import ident, in_list
from matcher.spark.events import collect_tagged
from matcher.spark.schema import POS

_EXACT_FLOAT = 2**53

UNIT_SCHEMA = "unit int, first boolean, rank long"


@dataclass(frozen=True, slots=True)
class Barriers:
    """Both sides' barriers (stream position, event), aligned.

    ``paired``: per side, the barrier indexes of the aligned pairs, in order; ``start``: how
    many barriers lead both sequences equally; ``identical``: the sequences are equal.
    """

    entries: tuple[tuple[Entry, ...], tuple[Entry, ...]]
    paired: tuple[tuple[int, ...], tuple[int, ...]]
    start: int
    identical: bool

    def count(self, side: int) -> int:
        return len(self.entries[side])

    def unit_columns(self, side: Column, pos: Column) -> Column:
        """A struct ``(unit, first, rank)`` per event: its unit, whether it lies in the
        unit's first epoch, and its rank among the unit's non-barrier events."""
        tables = [self._side_table(s) for s in (0, 1)]

        def units(sides: pa.Array, positions: pa.Array) -> pa.Array:
            side_of = sides.to_numpy(zero_copy_only=False)
            pos_of = positions.to_numpy(zero_copy_only=False)
            unit = np.zeros(len(pos_of), dtype="int32")
            first = np.zeros(len(pos_of), dtype=bool)
            rank = np.zeros(len(pos_of), dtype="int64")
            for s in (0, 1):
                barrier_pos, paired_pos, first_epoch, first_rank = tables[s]
                mask = side_of == s
                p = pos_of[mask]
                epoch = np.searchsorted(barrier_pos, p, "left")
                u = np.searchsorted(paired_pos, p, "left")
                unit[mask] = u
                first[mask] = epoch == first_epoch[u]
                rank[mask] = p - epoch - first_rank[u]
            return pa.StructArray.from_arrays(
                [pa.array(unit), pa.array(first), pa.array(rank)], names=["unit", "first", "rank"]
            )

        # the stubs only know the older call with an explicit type; type hints are preferred
        udf = F.arrow_udf(units, UNIT_SCHEMA)  # type: ignore[call-overload]
        return udf(side, pos)  # type: ignore[no-any-return]

    def _side_table(self, side: int) -> tuple[Any, Any, Any, Any]:
        """Per side: barrier positions, paired barrier positions, and per unit its first
        epoch and the rank (among non-barrier events) of its first event."""
        positions = np.array([e.pos for e in self.entries[side]], dtype="int64")
        paired = self.paired[side]
        paired_pos = positions[list(paired)] if paired else np.array([], dtype="int64")
        # unit u starts after paired barrier u-1: its first epoch is that barrier's index + 1,
        # and non-barrier events before it number (its position - its index)
        first_epoch = np.array([0, *(i + 1 for i in paired)], dtype="int64")
        first_rank = np.array(
            [0, *(int(positions[i]) - i for i in paired)],
            dtype="int64",
        )
        return positions, paired_pos, first_epoch, first_rank


def barrier_test(field: StructField, values: Sequence[Any]) -> str | None:
    """SQL for the core's ``event[column] in values`` (never null), or ``None`` when the
    values cannot be compared in SQL with Python's semantics (``1 == 1.0 == True``)."""
    kept: list[Any] = []
    for value in values:
        if value is None:
            continue
        converted = _as_column_type(value, field)
        if converted is _NO_MATCH:
            continue
        if converted is _UNSUPPORTED:
            return None
        kept.append(converted)
    name = ident(field.name)
    test = in_list(name, kept)
    if any(v is None for v in values):
        test = f"{test} OR {name} IS NULL"
    return f"coalesce({test}, FALSE)"


_NO_MATCH = object()  # the value can never equal a value of this column
_UNSUPPORTED = object()


def _as_column_type(value: Any, field: StructField) -> Any:
    dtype = field.dataType
    number = isinstance(value, (int, float, decimal.Decimal))  # bool is an int
    if isinstance(dtype, StringType):
        return value if isinstance(value, str) else _NO_MATCH
    if isinstance(dtype, BooleanType):
        if number and value in (0, 1):
            return bool(value)
        return _NO_MATCH
    if isinstance(dtype, IntegralType):
        if number and value == value and abs(value) != float("inf") and value == int(value):
            return int(value)
        return _NO_MATCH
    if isinstance(dtype, FractionalType) and not isinstance(dtype, DecimalType):
        if number and value == value and abs(value) < _EXACT_FLOAT:
            return float(value)
        return _NO_MATCH if not number else _UNSUPPORTED
    return _UNSUPPORTED


def collect_barriers(
    reference: DataFrame,
    candidate: DataFrame,
    test: str,
    columns: Sequence[str],
    equality: Equality,
) -> Barriers:
    """Collect (in one job) and align both sides' barriers."""
    union = reference.selectExpr("*", "0 AS __p_side").unionByName(
        candidate.selectExpr("*", "1 AS __p_side")
    )
    found: tuple[list[Entry], list[Entry]] = ([], [])
    for (pos, side), event in collect_tagged(union.where(test), columns, [POS, "__p_side"]):
        found[side].append(Entry(pos, event, None))
    entries = (tuple(sorted(found[0], key=_by_pos)), tuple(sorted(found[1], key=_by_pos)))
    ref, cand = entries[0], entries[1]
    ops = align(ref, cand, lambda x, y: equality.equal(x.event, y.event), entry_key(equality))
    pairs = [(i, j) for i, j in ops if i is not None and j is not None]
    start = 0
    while start < min(len(ref), len(cand)) and equality.equal(ref[start].event, cand[start].event):
        start += 1
    return Barriers(
        (ref, cand),
        (tuple(i for i, _ in pairs), tuple(j for _, j in pairs)),
        start,
        start == len(ref) == len(cand),
    )


def _by_pos(entry: Entry) -> int:
    return entry.pos
