"""Rows to events: Arrow batches turned into the Python dicts the core compares.

Every path of the Spark matcher reads rows through Arrow (``DataFrame.toArrow`` on the
driver, ``mapInArrow``/``applyInArrow`` on executors), so that an event looks the same
whichever path found it, and the same as ``Row.asDict(recursive=True)`` would give:
structs and maps become dicts, timestamps naive local times. Two structs of the engine's
own are values as read again: a tagged pair (``matcher.spark.conform``) is the value in
its filled slot, and JSON text (``matcher.spark.kinds``, a JSON column that mixes kinds) is
the value ``json.loads`` gives, as the core's reader gives it.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from matcher.equality import Event
from matcher.spark.equality_sql import CANDIDATE_SLOT, REFERENCE_SLOT
from matcher.spark.kinds import JSON_SLOT
from matcher.spark.schema import column

_TAGGED = [REFERENCE_SLOT, CANDIDATE_SLOT]


def _needs_fixing(dtype: pa.DataType) -> bool:
    if pa.types.is_timestamp(dtype) and dtype.tz is not None:
        return True
    if pa.types.is_map(dtype):
        return True
    if pa.types.is_struct(dtype):
        return _own_struct(dtype) or any(
            _needs_fixing(dtype.field(i).type) for i in range(dtype.num_fields)
        )
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return bool(_needs_fixing(dtype.value_type))
    return False


def _own_struct(dtype: pa.StructType) -> bool:
    names = [dtype.field(i).name for i in range(dtype.num_fields)]
    return names == _TAGGED or names == [JSON_SLOT]


def _fix(value: Any, dtype: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_timestamp(dtype) and dtype.tz is not None:
        return value.astimezone().replace(tzinfo=None)
    if pa.types.is_map(dtype):
        return {_fix(k, dtype.key_type): _fix(v, dtype.item_type) for k, v in value}
    if pa.types.is_struct(dtype) and _own_struct(dtype):
        if dtype.num_fields == 1:  # JSON text
            text = value[JSON_SLOT]
            return None if text is None else json.loads(text)
        slot = 0 if value[REFERENCE_SLOT] is not None else 1
        return _fix(value[_TAGGED[slot]], dtype.field(slot).type)
    if pa.types.is_struct(dtype):
        return {
            dtype.field(i).name: _fix(value[dtype.field(i).name], dtype.field(i).type)
            for i in range(dtype.num_fields)
        }
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [_fix(v, dtype.value_type) for v in value]
    return value


def arrow_events(table: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> list[Event]:
    """The rows of ``table`` as events over ``columns`` (in that order)."""
    values = [arrow_values(table, name) for name in columns]
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


def arrow_values(table: pa.Table | pa.RecordBatch, name: str) -> list[Any]:
    """Column ``name`` of ``table`` as the events' values (``arrow_events``)."""
    array = table.column(name)
    dtype = array.type
    items = array.to_pylist()
    if _needs_fixing(dtype):
        items = [_fix(v, dtype) for v in items]
    return items  # type: ignore[no-any-return]


def arrow_column(table: pa.Table | pa.RecordBatch, name: str) -> list[Any]:
    return table.column(name).to_pylist()  # type: ignore[no-any-return]


def collect_tagged(
    df: DataFrame, columns: Sequence[str], tags: Sequence[str]
) -> Iterator[tuple[list[Any], Event]]:
    """``([tag values...], event)`` for every row of ``df``."""
    table = df.select(*[column(c) for c in columns], *tags).toArrow()
    tag_values = [arrow_column(table, t) for t in tags]
    for index, event in enumerate(arrow_events(table, columns)):
        yield [values[index] for values in tag_values], event


def dumps(value: Any) -> bytes:
    """Pickle for moving events and divergences between executors and the driver."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loads(blob: bytes) -> Any:
    return pickle.loads(blob)
