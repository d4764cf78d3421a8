"""An output's schema without Spark, as Spark would read it: ``read_schema``.

    schema = read_schema("out/candidate/", "parquet")   # a matcher.schema.Schema

Types are spelled as Spark's ``simpleString`` (``matcher.schema``), so that the core and the
Spark engine find the same differences in the same outputs:

* Parquet: the footer of the first data file (name order). A file Spark wrote carries
  Spark's own schema (``org.apache.spark.sql.parquet.row.metadata``), used as is; another
  file's Arrow schema is translated as Spark reads it (``uint32`` as ``bigint``, a
  timestamp without a time zone as ``timestamp_ntz``). Nullability is the footer's:
  Spark's reader calls every column nullable, so the Spark engine reads footers too.
* JSON lines: inferred from every object, as Spark's JSON reader infers it
  (``matcher.files.json_schema``); where a column's type is ``double`` (``85`` and
  ``85.1``), its whole numbers are read as the doubles Spark reads (``85.0``:
  ``OutputTypes.json_numbers``), at every depth.
* CSV: the header's names, each column's type inferred from every value as Spark's
  ``inferSchema`` infers it, or declared by the spec's ``output.schema``
  (``matcher.files.csv_files``), all nullable.

JSON lines' and inferred CSV types are marked ``inferred`` (``matcher.schema.Field``): a
number column whose type moves between them (``bigint`` here, ``double`` there) is listed,
not divergent, under ``schema.mode: compatible``. A tolerance on a column that holds no
number in either output is an error when the schemas are read (``plan_schemas``).

An output with nothing to tell (no file, JSON lines without an object, CSV without a
header) has no known schema (``None``): its schema is not compared, and its events, if any,
are compared as read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matcher.errors import InputError, SpecError
from matcher.files.csv_files import CsvTypes, csv_types
from matcher.files.json_schema import Inferred, as_inferred, struct_type
from matcher.files.json_schema import JsonInference as JsonInference  # its old home
from matcher.files.readers import (
    data_files,
    json_event_batches,
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
    tolerance_problem,
)
from matcher.spec import Spec

#: a CSV output's declared columns: ``(name, type)`` (``matcher.ddl``)
Declared = tuple[tuple[str, str], ...]

#: the key-value metadata in which Spark's Parquet writer keeps its own schema
SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"
_SPARK_ATOMIC = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint",
                 "null": "void"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class OutputTypes:
    """An output's schema (``None``: nothing to tell) and how its values are read to it:
    ``csv``, a CSV output's column types, which the reader gives its texts
    (``matcher.files.readers.read_events``); ``json_numbers``, the JSON columns whose
    whole numbers become the doubles their inferred type says, with that type."""

    schema: Schema | None
    csv: CsvTypes | None = None
    json_numbers: Mapping[str, Inferred] = field(default_factory=dict)


def read_schema(
    path: str | Path, format: str | None = None, declared: Declared | None = None
) -> Schema | None:
    """The schema of the output at ``path``, ``None`` when it has nothing to tell (see the
    module's docstring); ``declared``: a CSV output's columns (``output.schema``)."""
    return read_types(path, format, declared).schema


def read_types(
    path: str | Path, format: str | None = None, declared: Declared | None = None
) -> OutputTypes:
    """``read_schema``, with how the output's values are read to it (``OutputTypes``)."""
    files = data_files(path, format)
    if not files:
        return OutputTypes(None)
    first, kind = files[0]
    if declared is not None and kind != "csv":
        raise InputError(
            f"{path}: output.schema declares a CSV output's columns; this output is {kind}"
        )
    if kind == "parquet":
        return OutputTypes(_parquet_schema(first))
    if kind == "csv":
        found = csv_types([file for file, _ in files], declared)
        if found is None:
            return OutputTypes(None)
        inferred = not found.declared
        fields = tuple(
            Field(name, type_, True, inferred)
            for name, type_ in zip(found.names, found.types, strict=True)
        )
        return OutputTypes(Schema(fields), csv=found)
    inference = JsonInference()
    for file, _ in files:
        for batch in json_event_batches(file):
            inference.add(batch)
            if batch.error is not None:
                raise batch.error
    schema = inference.schema(path, [file for file, _ in files])
    return OutputTypes(schema, json_numbers=inference.numbers())


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
    return plan_schemas(spec, *output_types(spec, reference, candidate))


def output_types(spec: Spec, reference: str, candidate: str) -> tuple[OutputTypes, OutputTypes]:
    """Both outputs' ``OutputTypes``, read as the spec's ``output`` says."""
    declared = spec.output.declared_columns()
    return (
        read_types(reference, spec.output.format, declared),
        read_types(candidate, spec.output.format, declared),
    )


def plan_schemas(spec: Spec, ref_types: OutputTypes, cand_types: OutputTypes) -> SchemaPlan:
    """``schema_plan`` of two outputs' types already read. A tolerance on a column that
    holds no number in either output is a ``SpecError`` (``matcher.schema.tolerance_problem``)."""
    ref, cand = ref_types.schema, cand_types.schema
    if ref is None or cand is None:  # an empty output: nothing to compare the other with
        reads = (_numbers(ref_types, None), _numbers(cand_types, None))
        return SchemaPlan(SchemaDiff(spec.schema.mode), reads)
    problem = tolerance_problem(spec.equality.tolerance, ref, cand)
    if problem is not None:
        raise SpecError(f"{spec.source}: {problem}")
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
    return SchemaPlan(
        diff,
        (
            _numbers(ref_types, project(plan, 0, ref.names)),
            _numbers(cand_types, project(plan, 1, cand.names)),
        ),
    )


Projection = Callable[[Mapping[str, Any]], dict[str, Any]]


def _numbers(types: OutputTypes, then: Projection | None) -> Projection | None:
    """``then`` after the JSON columns whose whole numbers are doubles are read so."""
    numbers = types.json_numbers
    if not numbers:
        return then

    def read(event: Mapping[str, Any]) -> dict[str, Any]:
        read = dict(event)
        for name, type_ in numbers.items():
            value = read.get(name)
            if value is not None:
                read[name] = as_inferred(value, type_)
        return read if then is None else then(read)

    return read


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
        return struct_type((f["name"], spark_type(f["type"])) for f in value["fields"])
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
        return struct_type(
            (t.field(i).name, arrow_type(t.field(i).type)) for i in range(t.num_fields)
        )
    return str(t)
