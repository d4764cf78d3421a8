"""What a test is made of, and what running one gives back.

A test is a sequence of *elements*: a data item (a row, as a mapping of column to value) or
a *punctuation* (the paper's ``•``: a window boundary; ``flush()`` for a stream operator,
the end of a partition for a ``mapPartitions`` function), each on an input port (0, or 0
and 1 for a two-input operator). Running a test gives a ``Run``: the outputs of every firing
(one firing per element) where the shape lets them be told apart, and always the whole
output. Outputs are *frozen* (hashable, comparable) so that runs can be compared exactly.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


@dataclass(frozen=True, slots=True)
class Element:
    """One input element: ``item`` on ``port``, or a punctuation when ``item`` is None."""

    port: int
    item: Mapping[str, Any] | None

    @property
    def is_punctuation(self) -> bool:
        return self.item is None

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"port": self.port}
        if self.item is None:
            shown["punctuation"] = True
        else:
            shown["item"] = plain(dict(self.item))
        return shown


def item(row: Mapping[str, Any], port: int = 0) -> Element:
    return Element(port, dict(row))


def punctuation(port: int = 0) -> Element:
    return Element(port, None)


Test = tuple[Element, ...]


@dataclass(frozen=True, slots=True)
class Run:
    """What one run of a test produced.

    ``firings`` holds the frozen outputs of each element's firing, in order, when the shape
    shows firings (stream operators); ``None`` for DataFrame operators, which see the whole
    input at once. ``output`` is every output in order (streams) or sorted (DataFrames,
    whose row order Spark does not define: they are compared as multisets). ``stalled_at``
    is the element whose firing did not return within the blocking time limit.
    """

    output: tuple[Any, ...]
    firings: tuple[tuple[Any, ...], ...] | None = None
    stalled_at: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def bag(self) -> Counter[Any]:
        return Counter(self.output)


def freeze(value: Any) -> Any:
    """A hashable, exactly comparable form of an output value: rows and mappings become
    sorted tuples of pairs, sequences tuples; NaN becomes a marker equal to itself."""
    if hasattr(value, "asDict"):  # pyspark.sql.Row
        value = value.asDict(recursive=True)
    if isinstance(value, Mapping):
        return ("{}", tuple(sorted((str(k), freeze(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, set | frozenset):
        return ("set", tuple(sorted((freeze(v) for v in value), key=repr)))
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value


def thaw(value: Any) -> Any:
    """``freeze`` undone into JSON-friendly values (for evidence shown to a user)."""
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == "{}" and isinstance(value[1], tuple):
            return {k: thaw(v) for k, v in value[1]}
        if len(value) == 2 and value[0] == "set":
            return [thaw(v) for v in value[1]]
        if value == ("nan",):
            return "NaN"
        return [thaw(v) for v in value]
    return plain(value)


def plain(value: Any) -> Any:
    """A JSON value: datetimes as ISO 8601, decimals and bytes as strings."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal | bytes | bytearray):
        return str(value) if isinstance(value, Decimal) else bytes(value).hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def sorted_bag(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(sorted(values, key=repr))


def data_outputs(outputs: Sequence[Any]) -> int:
    """How many data items a firing's outputs hold (every output is a data item)."""
    return len(outputs)


def items_of(test: Sequence[Element]) -> list[Element]:
    return [e for e in test if not e.is_punctuation]


def show_test(test: Sequence[Element]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in test]


def bag_difference(left: Iterable[Any], right: Iterable[Any]) -> dict[str, list[Any]]:
    """The outputs only one side has (multiset difference), thawed for showing."""
    a, b = Counter(left), Counter(right)
    return {
        "only_first": [thaw(v) for v in sorted_bag((a - b).elements())],
        "only_second": [thaw(v) for v in sorted_bag((b - a).elements())],
    }
