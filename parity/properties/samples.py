"""The sample: the operator's input as a file (JSON lines, CSV or Parquet), read into rows.

The sample gives the input's columns and their types (what tests are made of) and the
values pool-based generation draws from. CSV carries no types: a CSV column whose every
value reads as an integer (or a number, or ``true``/``false``) is typed so; the rest stay
strings. A value's type is its Python type: ``int``, ``float``, ``str``, ``bool``,
``datetime``, ``date``, or ``other`` (nested values: passed on as they are, never
generated).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcher.errors import InputError
from matcher.files.readers import data_files, read_columns, read_events

#: the most rows a sample contributes (the pools and the schema need no more)
MAX_ROWS = 10_000
TYPES = ("int", "float", "str", "bool", "datetime", "date", "other")


@dataclass(frozen=True, slots=True)
class Sample:
    """A sample's rows (as read, types inferred for CSV), its columns and their types."""

    path: str
    columns: tuple[str, ...]
    types: Mapping[str, str]
    rows: tuple[Mapping[str, Any], ...]
    nullable: frozenset[str]

    def values(self, column: str) -> list[Any]:
        """The distinct non-null values of ``column``, in order of first appearance."""
        seen: dict[Any, None] = {}
        for row in self.rows:
            value = row.get(column)
            if value is not None:
                try:
                    seen.setdefault(value, None)
                except TypeError:  # nested values are unhashable: keep their text
                    continue
        return list(seen)


def read_sample(path: str) -> Sample:
    """Read ``path``; an unreadable or empty sample is an ``InputError`` naming it."""
    if not Path(path).exists():
        raise InputError(f"{path}: no such sample file or directory")
    formats = {fmt for _, fmt in data_files(path)}
    columns = read_columns(path)
    rows: list[dict[str, Any]] = []
    for event in read_events(path, columns=columns or ()):
        rows.append(dict(event))
        if len(rows) >= MAX_ROWS:
            break
    if not rows or not columns:
        raise InputError(f"{path}: the sample has no rows: give at least one input row")
    if formats == {"csv"}:
        rows = _typed_csv(rows, columns)
    types = {
        column: _column_type(path, column, [r.get(column) for r in rows]) for column in columns
    }
    nullable = frozenset(c for c in columns if any(r.get(c) is None for r in rows))
    return Sample(path, tuple(columns), types, tuple(rows), nullable)


def check_keys(sample: Sample, keys: Sequence[str]) -> None:
    """Every key column must be in the sample's schema."""
    for key in keys:
        if key not in sample.columns:
            raise InputError(
                f"--key {key}: not a column of the sample {sample.path} "
                f"(columns: {', '.join(sample.columns)})"
            )


def _column_type(path: str, column: str, values: list[Any]) -> str:
    kinds = {_kind(v) for v in values if v is not None}
    if kinds <= {"int"} and kinds:
        return "int"
    if kinds and kinds <= {"int", "float"}:
        return "float"
    if len(kinds) == 1:
        return kinds.pop()
    if not kinds:
        return "str"  # all null: a string column is the least surprising guess
    raise InputError(
        f"{path}: column {column!r} mixes kinds of values ({', '.join(sorted(kinds))}): "
        "a sample's column must have one type"
    )


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dt.datetime):
        return "datetime"
    if isinstance(value, dt.date):
        return "date"
    return "other"


def _typed_csv(rows: list[dict[str, Any]], columns: Sequence[str]) -> list[dict[str, Any]]:
    converters = {c: _csv_converter([r.get(c) for r in rows]) for c in columns}
    return [
        {c: (None if r.get(c) in (None, "") else converters[c](r[c])) for c in columns}
        for r in rows
    ]


def _csv_converter(values: list[Any]) -> Any:
    texts = [v for v in values if v not in (None, "")]
    for convert in (int, float, _boolean):
        try:
            for text in texts:
                convert(text)
        except ValueError:
            continue
        return convert
    return str


def _boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(text)
