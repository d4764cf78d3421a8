"""JSON lines' schema as Spark's JSON reader infers it (``JsonInferSchema``), from values
already parsed: ``JsonInference``, batch by batch, as ``matcher.files.compare`` reads them.

The union of the field names seen, sorted by name, all nullable; an integer is ``bigint``
(beyond 64 bits ``decimal(p,0)``, beyond 38 digits ``double``), a fraction ``double``, text
``string``, ``true``/``false`` ``boolean``, a list ``array<...>`` and an object
``struct<...>`` (its fields sorted too). Types seen together merge: null gives way to any
type, ``bigint`` and ``double`` make ``double``, structs and arrays merge inside, and
anything else makes ``string``; a column that is only ever null is ``string``.

JSON has one number type: a column whose type is ``double`` may hold integers (``85`` and
``85.1``), which Spark's reader reads as doubles. ``JsonInference.numbers`` names such
columns and ``as_inferred`` reads their whole numbers so (``85.0``), at every depth, so that
the core's values and witnesses are Spark's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from matcher.columns import Group, join, name_problem
from matcher.equality import MAX_NESTING, too_deep
from matcher.files.columnar import JsonBatch
from matcher.files.readers import json_name_error
from matcher.schema import Field, Schema, common_type

#: an inferred type: an atomic name, ``("array", element)`` or ``("struct", ((name, type),...))``
#: (kept as values until the end, because a field name may hold any character)
Inferred = Any
_NULL = "void"
_MAX_LONG = 2**63


class JsonInference:
    """The schema of JSON lines, inferred batch by batch (``add``) as they are read, so
    that ``matcher.files.compare`` infers it in the pass that matches the events."""

    def __init__(self) -> None:
        self._inferred: dict[str, Inferred] = {}
        #: the columns that held an integer somewhere (whose type may yet become double)
        self._integers: set[str] = set()

    def add(self, batch: JsonBatch) -> None:
        """Merge a batch's types in; before its events are changed (nulls added)."""
        inferred = self._inferred
        integers = self._integers
        # The columnar rows' types are their columns' (merge is commutative and associative).
        for name, type_ in batch.column_types:
            inferred[name] = merge(inferred.get(name, _NULL), type_)
            if type_ == "bigint":
                integers.add(name)
        events = batch.events
        for i in batch.decoded:
            for name, value in events[i].items():
                type_ = json_type(value)
                inferred[name] = merge(inferred.get(name, _NULL), type_)
                if value.__class__ is int or (isinstance(type_, tuple) and _holds_integer(type_)):
                    integers.add(name)

    def schema(self, path: str | Path, files: list[Path]) -> Schema | None:
        """The schema of everything added (``None``: no object), or the error of names
        that differ only in case, at the first line that has them."""
        inferred = self._inferred
        if not inferred:
            return None
        problem = name_problem(_inferred_groups("", inferred.items()))
        if problem is not None:  # names that differ only in case: find the line that says so
            raise json_name_error(files) or problem.error(str(path), "objects")
        return Schema(
            tuple(Field(name, render(inferred[name]), True, True) for name in sorted(inferred))
        )

    def numbers(self) -> dict[str, Inferred]:
        """The columns whose whole numbers are read as doubles, with their types: those
        that held an integer and whose type holds ``double`` (``as_inferred``)."""
        return {
            name: self._inferred[name]
            for name in sorted(self._integers)
            if _holds_double(self._inferred[name])
        }


def json_type(value: Any, depth: int = 0) -> Inferred:
    """The type Spark's JSON reader gives one value (``void``: null, until merged). Every
    value read from JSON passes here first: a value nested deeper than the matcher compares
    (``matcher.equality.MAX_NESTING``) is refused here, in one line, before anything else
    recurses into it."""
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        if -_MAX_LONG <= value < _MAX_LONG:
            return "bigint"
        digits = len(str(abs(value)))
        return f"decimal({digits},0)" if digits <= 38 else "double"
    if isinstance(value, float):
        return "double"
    if isinstance(value, list | dict) and depth >= MAX_NESTING:
        raise too_deep()
    if isinstance(value, list):
        element: Inferred = _NULL
        for item in value:
            element = merge(element, json_type(item, depth + 1))
        return ("array", element)
    if isinstance(value, dict):
        fields = []
        for k, v in value.items():  # a loop, not a generator: one frame per level
            fields.append((str(k), json_type(v, depth + 1)))
        return ("struct", tuple(sorted(fields)))
    return "string"


def _holds_integer(type_: Inferred) -> bool:
    return any(a == "bigint" or a.startswith("decimal(") for a in _atoms(type_))


def _holds_double(type_: Inferred) -> bool:
    return "double" in _atoms(type_)


def _atoms(type_: Inferred) -> Iterator[str]:
    """The atomic types inside ``type_``: a loop over a stack, as a type nests as deeply
    as its values (``MAX_NESTING``)."""
    pending = [type_]
    while pending:
        type_ = pending.pop()
        if isinstance(type_, str):
            yield type_
        elif type_[0] == "array":
            pending.append(type_[1])
        else:
            pending.extend(t for _, t in type_[1])


def as_inferred(value: Any, type_: Inferred) -> Any:
    """A JSON value read as its column's inferred type reads it: an integer where the type
    is ``double`` as a float (at every depth); anything else as it is."""
    if isinstance(type_, str):
        if type_ == "double" and isinstance(value, int) and not isinstance(value, bool):
            return _double(value)
        return value
    # loops, not comprehensions: one frame per level (Python 3.11 gives a comprehension its own)
    if type_[0] == "array":
        if not isinstance(value, list):
            return value
        items = []
        for item in value:
            items.append(as_inferred(item, type_[1]))
        return items
    if isinstance(value, dict):
        fields = dict(type_[1])
        read = {}
        for k, v in value.items():
            read[k] = as_inferred(v, fields.get(k, _NULL))
        return read
    return value


def _double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:  # beyond a double: Spark's reader makes it an infinity
        return float("inf") if value > 0 else float("-inf")


def merge(a: Inferred, b: Inferred) -> Inferred:
    """The type of a column holding values of types ``a`` and ``b`` (Spark's
    ``compatibleType`` for JSON)."""
    if a == b or b == _NULL:
        return a
    if a == _NULL:
        return b
    if isinstance(a, str) and isinstance(b, str) and _numeric(a) and _numeric(b):
        if "double" in (a, b):
            return "double"
        return common_type(a, b) or "double"
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "array":
        return ("array", merge(a[1], b[1]))
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "struct":
        fields = dict(a[1])
        for name, type_ in b[1]:
            fields[name] = merge(fields.get(name, _NULL), type_)
        return ("struct", tuple(sorted(fields.items())))
    return "string"


def _inferred_groups(path: str, fields: Iterable[tuple[str, Inferred]]) -> Iterator[Group]:
    """The places of an inferred struct's fields (``matcher.columns``), depth first, each
    struct before the ones inside it: a loop over a stack rather than recursion, as a type
    nests as deeply as the values it was inferred from (``MAX_NESTING``)."""
    pending: list[tuple[str, tuple[tuple[str, Inferred], ...]]] = [(path, tuple(fields))]
    while pending:
        path, struct = pending.pop()
        yield path, [name for name, _ in struct]
        inner = []
        for name, type_ in struct:
            place = join(path, name)
            while isinstance(type_, tuple) and type_[0] == "array":
                type_, place = type_[1], place + "[]"
            if isinstance(type_, tuple) and type_[0] == "struct":
                inner.append((place, type_[1]))
        pending.extend(reversed(inner))


def _numeric(type_: str) -> bool:
    return type_ in ("bigint", "double") or type_.startswith("decimal(")


def render(type_: Inferred) -> str:
    """An inferred type as ``simpleString``; still null is ``string`` (Spark's last pass)."""
    if isinstance(type_, str):
        return "string" if type_ == _NULL else type_
    if type_[0] == "array":
        return f"array<{render(type_[1])}>"
    fields = []
    for name, t in type_[1]:  # a loop, not a generator: one frame per level
        fields.append((name, render(t)))
    return struct_type(fields)


def struct_type(fields: Iterable[tuple[str, str]]) -> str:
    """``struct<name:type,...>``, as ``simpleString`` spells it."""
    return "struct<" + ",".join(f"{name}:{type_}" for name, type_ in fields) + ">"
