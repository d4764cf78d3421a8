"""The column names of a Parquet file's Arrow schema, checked by ``matcher.columns``' rules
(no name twice in one place, none twice but for its case): the core's Parquet reader and
the Spark engine both refuse a file that breaks them, with the same message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from matcher.columns import Group, check_groups, join


def arrow_groups(schema: Any) -> Iterator[Group]:
    """The places of a ``pyarrow.Schema``: its columns, and the fields of every struct
    inside them (in lists and maps too)."""
    yield "", list(schema.names)
    for field in schema:
        yield from _arrow_type_groups(field.name, field.type)


def _arrow_type_groups(path: str, type_: Any) -> Iterator[Group]:
    import pyarrow as pa  # imported when a Parquet file is read, not for JSON or CSV

    if pa.types.is_struct(type_):
        fields = [type_.field(i) for i in range(type_.num_fields)]
        yield path, [f.name for f in fields]
        for f in fields:
            yield from _arrow_type_groups(join(path, f.name), f.type)
    elif pa.types.is_map(type_):
        yield from _arrow_type_groups(path + "{}", type_.key_type)
        yield from _arrow_type_groups(path + "{}", type_.item_type)
    elif (
        pa.types.is_list(type_)
        or pa.types.is_large_list(type_)
        or pa.types.is_fixed_size_list(type_)
    ):
        yield from _arrow_type_groups(path + "[]", type_.value_type)
    elif pa.types.is_dictionary(type_):
        yield from _arrow_type_groups(path, type_.value_type)


def check_arrow_schema(where: str, schema: Any) -> None:
    """Refuse a Parquet file's schema that names a column (or a struct's field) twice, or
    two that differ only in case."""
    check_groups(where, "Parquet schema", arrow_groups(schema))
