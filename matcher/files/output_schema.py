"""An output's schema without Spark, as Spark would read it: ``read_schema``.

    schema = read_schema("out/candidate/", "parquet")   # a matcher.schema.Schema

Types are spelled as Spark's ``simpleString`` (``matcher.schema``), so that the core and the
Spark engine find the same differences in the same outputs:

* Parquet: the footer of the first data file (name order). A file Spark wrote carries
  Spark's own schema (``org.apache.spark.sql.parquet.row.metadata``), used as is; another
  file's Arrow schema is translated as Spark reads it (``uint32`` as ``bigint``, a
  timestamp without a time zone as ``timestamp_ntz``). Nullability is the footer's:
  Spark's reader calls every column nullable, so the Spark engine reads footers too.
* JSON lines: inferred from every object, as Spark's JSON reader infers it: the union of
  the field names seen, sorted by name, all nullable; an integer is ``bigint`` (beyond 64
  bits ``decimal(p,0)``, beyond 38 digits ``double``), a fraction ``double``, text
  ``string``, ``true``/``false`` ``boolean``, a list ``array<...>`` and an object
  ``struct<...>`` (its fields sorted too). Types seen together merge: null gives way to any
  type, ``bigint`` and ``double`` make ``double``, structs and arrays merge inside, and
  anything else makes ``string``; a column that is only ever null is ``string``.
* CSV: the header's names, every column a nullable ``string`` (CSV carries no types).

An output with nothing to tell (no file, JSON lines without an object, CSV without a
header) has no known schema (``None``): its schema is not compared, and its events, if any,
are compared as read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcher.columns import Group, check_groups, join, name_problem
from matcher.equality import MAX_NESTING, too_deep
from matcher.errors import InputError
from matcher.files.columnar import JsonBatch
from matcher.files.readers import (
    csv_records,
    data_files,
    json_event_batches,
    json_name_error,
    one_line_message,
    parquet_file,
)
from matcher.schema import (
    Field,
    Schema,
    SchemaDiff,
    common_type,
    comparison_plan,
    diff_schemas,
    project,
)
from matcher.spec import Spec

#: the key-value metadata in which Spark's Parquet writer keeps its own schema
SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"
_SPARK_ATOMIC = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint",
                 "null": "void"}  # fmt: skip
_MAX_LONG = 2**63


def read_schema(path: str | Path, format: str | None = None) -> Schema | None:
    """The schema of the output at ``path``, ``None`` when it has nothing to tell (see the
    module's docstring)."""
    files = data_files(path, format)
    if not files:
        return None
    first, kind = files[0]
    if kind == "parquet":
        return _parquet_schema(first)
    if kind == "csv":
        for number, header in csv_records(first):
            check_groups(f"{first}: line {number}", "header", [("", header)])
            return Schema(tuple(Field(name, "string") for name in header))
        return None
    inference = JsonInference()
    for file, _ in files:
        for batch in json_event_batches(file):
            inference.add(batch)
            if batch.error is not None:
                raise batch.error
    return inference.schema(path, [file for file, _ in files])


class JsonInference:
    """The schema of JSON lines, inferred batch by batch (``add``) as they are read, so
    that ``matcher.files.compare`` infers it in the pass that matches the events."""

    def __init__(self) -> None:
        self._inferred: dict[str, Inferred] = {}

    def add(self, batch: JsonBatch) -> None:
        """Merge a batch's types in; before its events are changed (nulls added)."""
        inferred = self._inferred
        # The columnar rows' types are their columns' (merge is commutative and associative).
        for name, type_ in batch.column_types:
            inferred[name] = merge(inferred.get(name, _NULL), type_)
        events = batch.events
        for i in batch.decoded:
            for name, value in events[i].items():
                inferred[name] = merge(inferred.get(name, _NULL), json_type(value))

    def schema(self, path: str | Path, files: list[Path]) -> Schema | None:
        """The schema of everything added (``None``: no object), or the error of names
        that differ only in case, at the first line that has them."""
        inferred = self._inferred
        if not inferred:
            return None
        problem = name_problem(_inferred_groups("", inferred.items()))
        if problem is not None:  # names that differ only in case: find the line that says so
            raise json_name_error(files) or problem.error(str(path), "objects")
        return Schema(tuple(Field(name, render(inferred[name])) for name in sorted(inferred)))


@dataclass(frozen=True, slots=True)
class SchemaPlan:
    """What the core path does with two outputs' schemas: the findings, and per side the
    function that reduces an event to the compared columns at their common types (``None``:
    the events are compared as read)."""

    diff: SchemaDiff
    projections: tuple[
        Callable[[Mapping[str, Any]], dict[str, Any]] | None,
        Callable[[Mapping[str, Any]], dict[str, Any]] | None,
    ]

    def events(self, side: int, events: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        projection = self.projections[side]
        return events if projection is None else map(projection, events)


def schema_plan(spec: Spec, reference: str, candidate: str) -> SchemaPlan:
    """Read both outputs' schemas and diff them under ``spec.schema.mode``; a column the
    spec's dependence reads must have a common type (not ``string`` to ``bigint``): the
    other columns without one are compared as read (``matcher.schema``)."""
    ref = read_schema(reference, spec.output.format)
    cand = read_schema(candidate, spec.output.format)
    return plan_schemas(spec, ref, cand)


def plan_schemas(spec: Spec, ref: Schema | None, cand: Schema | None) -> SchemaPlan:
    """``schema_plan`` of two schemas already read."""
    if ref is None or cand is None:  # an empty output: nothing to compare the other with
        return SchemaPlan(SchemaDiff(spec.schema.mode), (None, None))
    ignored = spec.equality.ignore
    diff = diff_schemas(ref, cand, spec.schema.mode, ignored)
    plan = comparison_plan(ref, cand)
    for key, column in spec.referenced_columns():
        a, b = ref.field(column), cand.field(column)
        if key.startswith("dependence.") and a and b and common_type(a.type, b.type) is None:
            raise InputError(
                f"{key} needs column {column!r}, whose values cannot be compared: "
                f"{a.type} in the reference, {b.type} in the candidate"
            )
    return SchemaPlan(diff, (project(plan, 0, ref.names), project(plan, 1, cand.names)))


def _parquet_schema(file: Path) -> Schema:
    parquet = parquet_file(file)
    try:
        arrow = parquet.schema_arrow
    except Exception as exc:  # pyarrow's errors vary by version; any is an unreadable file
        raise InputError(f"{file}: not a readable Parquet schema: {one_line_message(exc)}") from exc
    finally:
        parquet.close()
    spark = (arrow.metadata or {}).get(SPARK_SCHEMA_KEY)
    if spark is not None:
        try:
            fields = json.loads(spark)["fields"]
            return Schema(
                tuple(Field(f["name"], spark_type(f["type"]), bool(f["nullable"])) for f in fields)
            )
        except (ValueError, KeyError, TypeError):
            pass  # not the document Spark writes: Arrow's schema says the same
    return Schema(tuple(Field(f.name, arrow_type(f.type), f.nullable) for f in arrow))


def spark_type(value: Any) -> str:
    """A type of Spark's JSON schema document as ``simpleString`` spells it."""
    if isinstance(value, str):
        if value.startswith(("char(", "varchar(")):
            return "string"  # Spark reads them back as string
        return _SPARK_ATOMIC.get(value, value)
    kind = value.get("type")
    if kind == "struct":
        return _struct((f["name"], spark_type(f["type"])) for f in value["fields"])
    if kind == "array":
        return f"array<{spark_type(value['elementType'])}>"
    if kind == "map":
        return f"map<{spark_type(value['keyType'])},{spark_type(value['valueType'])}>"
    if kind == "udt" and "sqlType" in value:
        return spark_type(value["sqlType"])
    return str(kind)


def arrow_type(t: Any) -> str:
    """An Arrow type as Spark reads its Parquet column (``simpleString``)."""
    import pyarrow as pa

    simple = {
        pa.bool_(): "boolean", pa.int8(): "tinyint", pa.int16(): "smallint",
        pa.int32(): "int", pa.int64(): "bigint", pa.uint8(): "smallint",
        pa.uint16(): "int", pa.uint32(): "bigint", pa.uint64(): "decimal(20,0)",
        pa.float16(): "float", pa.float32(): "float", pa.float64(): "double",
        pa.string(): "string", pa.large_string(): "string", pa.binary(): "binary",
        pa.large_binary(): "binary", pa.date32(): "date", pa.date64(): "date",
        pa.null(): "void",
    }  # fmt: skip
    if t in simple:
        return simple[t]
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_dictionary(t):
        return arrow_type(t.value_type)
    if pa.types.is_map(t):
        return f"map<{arrow_type(t.key_type)},{arrow_type(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"array<{arrow_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return _struct((t.field(i).name, arrow_type(t.field(i).type)) for i in range(t.num_fields))
    return str(t)


def _struct(fields: Iterable[tuple[str, str]]) -> str:
    return "struct<" + ",".join(f"{name}:{type_}" for name, type_ in fields) + ">"


# -- JSON inference (Spark's JsonInferSchema, on parsed values) ------------------------------

#: an inferred type: an atomic name, ``("array", element)`` or ``("struct", ((name, type),...))``
#: (kept as values until the end, because a field name may hold any character)
Inferred = Any
_NULL = "void"


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
    return _struct(fields)
