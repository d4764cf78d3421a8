"""CSV outputs read to typed events, as the Spark engine reads them.

    types = csv_types([Path("out/part-00000.csv")])          # inferred, one pass
    types = csv_types(files, declared=(("day", "date"), ("total", "double")))
    for event in csv_events(Path("out/part-00000.csv"), types):
        ...                                                  # {'day': date(...), 'total': 1.5}

A CSV output's column types are inferred from every value as Spark's ``inferSchema`` infers
them, or declared by the spec's ``output.schema`` (``matcher.ddl``); the values are then
read to those types by Spark's conversions (``matcher.files.csv_types``). Both engines read
the same output to the same values: Spark with its reader (``matcher.spark.streams``), the
core here.

**Nulls and empty fields**, as Spark writes and reads them: an unquoted empty field is
null (Spark writes a null so), a quoted empty field (``""``) is the empty string in a
``string`` column (Spark writes ``""`` so) and null in any other inferred column (no number
is empty; Spark's reader makes it null too). In a declared column other than ``string``, a
quoted empty field is not of the type: an error, as every other text that is not.

Each file's first record is its header. With declared columns, every file's header must
name them, in order; without, a file's values are typed by column position (Spark reads
part files by the first file's columns) and named by its own header.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from matcher.columns import check_groups
from matcher.errors import InputError
from matcher.files.csv_types import (
    NULL_TEXT,
    STRING,
    CsvInference,
    OutOfRange,
    converter,
    java_boolean,
)
from matcher.files.lines import lines, open_file

#: a record's fields: the text of each, ``None`` for an unquoted empty field
Fields = list[str | None]
#: records inferred or read at a time (``CsvInference.add_rows``, ``csv_events``)
_BATCH = 4096
_SEP = "\x00"
#: the texts of a type most writers write, which Python reads as Java does, and how: a
#: batch of a column that holds only these is read by one match and a plain conversion
_FAST: dict[str, tuple[re.Pattern[str], Callable[[str], Any]]] = {
    "int": (re.compile(r"(?:-?[0-9]{1,9}\x00)*"), int),
    "bigint": (re.compile(r"(?:-?[0-9]{1,18}\x00)*"), int),
    "double": (re.compile(r"(?:-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\x00)*"), float),
    "boolean": (re.compile(r"(?:(?:true|True|TRUE)\x00|(?:false|False|FALSE)\x00)*"), java_boolean),
}


@dataclass(frozen=True, slots=True)
class CsvTypes:
    """A CSV output's columns (its first header's names) and their types (``simpleString``);
    ``declared``: by the spec's ``output.schema``, so a text not of its type is an error."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    declared: bool = False


def csv_records(path: Path) -> Iterator[tuple[int, Fields]]:
    """Non-blank CSV records, each with the line it ends on, an unquoted empty field as
    ``None`` (public: the schema reader takes the header from here, so both read a CSV file
    the same way)."""
    where = [0]
    consumed: list[str] = []

    def texts(numbered: Iterable[tuple[int, str]]) -> Iterator[str]:
        for number, text in numbered:
            where[0] = number
            consumed.append(text)
            yield text

    reader = csv.reader(texts(lines(path)), strict=True)
    try:
        for row in reader:
            record: Fields = list(row)
            if "" in row:
                quoted = _quoted_fields("".join(consumed))
                if len(quoted) == len(row):
                    record = [
                        None if not t and not q else t for t, q in zip(row, quoted, strict=True)
                    ]
            consumed.clear()
            if row:
                yield where[0], record
    except csv.Error as exc:
        raise InputError(f"{path}: line {where[0]}: malformed CSV: {exc}") from exc


def _quoted_fields(text: str) -> list[bool]:
    """Whether each field of the record ``text`` (as Python's ``csv`` read it: ``,``
    between fields, ``"`` around them, ``""`` inside) was quoted."""
    quoted: list[bool] = []
    at_start, in_quotes, i, n = True, False, 0, len(text)
    while i < n:
        c = text[i]
        if in_quotes:
            if c == '"':
                if i + 1 < n and text[i + 1] == '"':
                    i += 1
                else:
                    in_quotes = False
        elif c in "\r\n":
            break
        elif at_start:
            quoted.append(c == '"')
            in_quotes, at_start = c == '"', c == ","
        elif c == ",":
            at_start = True
        i += 1
    if at_start:
        quoted.append(False)
    return quoted


def header(path: Path) -> tuple[int, list[str]] | None:
    """A CSV file's header (its first record) and its line, checked for names that repeat
    or differ only in case; ``None`` for a file without one."""
    first = next(csv_records(path), None)
    if first is None:
        return None
    number, fields = first
    names = [name or "" for name in fields]
    check_groups(f"{path}: line {number}", "header", [("", names)])
    return number, names


def csv_types(
    files: Sequence[Path], declared: Sequence[tuple[str, str]] | None = None
) -> CsvTypes | None:
    """The columns of the CSV output made of ``files``: declared (every header checked
    against them), or inferred from every value (a pass over the output); ``None`` when no
    file has a header."""
    headers = [(file, header(file)) for file in files]
    first = next(((file, found) for file, found in headers if found is not None), None)
    if first is None:
        return None
    names = tuple(first[1][1])
    if declared is not None:
        wanted = [name for name, _ in declared]
        for file, found in headers:
            if found is not None and found[1] != wanted:
                raise InputError(
                    f"{file}: line {found[0]}: the header names {', '.join(found[1])}; "
                    f"output.schema declares {', '.join(wanted)}"
                )
        return CsvTypes(names, tuple(type_ for _, type_ in declared), True)
    inference = CsvInference(len(names))
    for file, found in headers:
        if found is not None:
            rows = _rows(file)
            next(rows)
            while batch := list(itertools.islice(rows, _BATCH)):
                inference.add_rows(batch)
    return CsvTypes(names, inference.types())


def _rows(path: Path) -> Iterator[list[str]]:
    """The file's non-blank records as ``csv`` reads them, for inference, which needs
    neither lines nor quotes (an empty field counts for nothing): read straight through, at
    the ``csv`` module's speed. A file it cannot read is read again by ``csv_records``,
    which raises the error naming the line."""
    try:
        with (
            open_file(path) as raw,
            io.TextIOWrapper(cast(Any, raw), "utf-8-sig", newline="") as text,
        ):
            for row in csv.reader(text, strict=True):
                if row:
                    yield row
    except (ValueError, csv.Error, OSError, EOFError) as exc:  # UnicodeError is a ValueError
        for _ in csv_records(path):
            pass
        raise InputError(f"{path}: cannot read: {exc}") from exc


def csv_events(path: Path, types: CsvTypes | None) -> Iterator[dict[str, Any]]:
    """The events of one CSV file of an output whose columns are ``types`` (``None``: every
    column a ``string``)."""
    records = csv_records(path)
    first = next(records, None)
    if first is None:
        return
    number, fields = first
    names = [name or "" for name in fields]
    check_groups(f"{path}: line {number}", "header", [("", names)])
    kinds = types.types if types is not None else (STRING,) * len(names)
    if len(kinds) != len(names):
        raise InputError(
            f"{path}: line {number}: the header has {len(names)} columns, the output's "
            f"first header {len(kinds)}"
        )
    typed = [
        (i, names[i], kinds[i], converter(kinds[i]))
        for i in range(len(kinds))
        if kinds[i] != STRING
    ]
    declared = types is not None and types.declared
    width = len(names)
    while batch := list(itertools.islice(records, _BATCH)):
        for number, row in batch:
            if len(row) != width:
                raise InputError(
                    f"{path}: line {number}: expected {width} fields as in the header, "
                    f"got {len(row)}"
                )
        columns: list[Sequence[Any]] = list(zip(*(row for _, row in batch), strict=True))
        for i, column in enumerate(columns):
            if NULL_TEXT in column:  # Spark's null text when Parity reads CSV: null
                columns[i] = [None if text == NULL_TEXT else text for text in column]
        for i, name, kind, convert in typed:
            texts = columns[i]
            fast = _FAST.get(kind)
            if fast is not None and "" not in texts:
                plain = [t for t in texts if t is not None] if None in texts else texts
                joined = _SEP.join(plain) + _SEP
                if joined.count(_SEP) == len(plain) and fast[0].fullmatch(joined):
                    read = fast[1]
                    columns[i] = [None if t is None else read(t) for t in texts]
                    continue
            columns[i] = [
                None if text is None else _value(path, number, name, kind, text, convert, declared)
                for (number, _), text in zip(batch, texts, strict=True)
            ]
        for values in zip(*columns, strict=True):
            yield dict(zip(names, values, strict=True))


def _value(
    path: Path,
    number: int,
    name: str,
    kind: str,
    text: str,
    convert: Callable[[str], Any],
    declared: bool,
) -> Any:
    try:
        return convert(text)
    except ValueError as exc:
        return _not_of_type(path, number, name, kind, text, declared, exc)


def _not_of_type(
    path: Path, number: int, name: str, kind: str, text: str, declared: bool, exc: ValueError
) -> None:
    """The value of a text ``convert`` refused: null (Spark's permissive reading of an
    inferred column), else the error."""
    if isinstance(exc, OutOfRange):
        raise InputError(f"{path}: line {number}: column {name!r}: {exc}") from exc
    if declared:
        raise InputError(
            f"{path}: line {number}: column {name!r}: {text!r} is not a {kind.upper()} "
            "(output.schema)"
        ) from exc
    return None
