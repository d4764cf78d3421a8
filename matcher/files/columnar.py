"""JSON lines read a block at a time with pyarrow, to the very events the per-line reader
gives (``matcher.files.readers``), at a fraction of its cost: ``json_batches``.

    for batch in json_batches(Path("out/part-00000.json"), decode_line):
        yield from batch.events
        if batch.error is not None:
            raise batch.error

Why the events are the same, line for line: pyarrow's own JSON reader infers types its way
(an integer in a double column comes back a float, a missing field a null), so it is not
used. A block's lines are instead matched, by RE2 inside Arrow, against one pattern: the
*layout* of the block's first flat line (its keys in order, each value a JSON number,
string without escapes, or boolean). A line the pattern matches is a JSON object with
exactly those keys in that order, once each, whatever the whitespace; so ``json.loads``
would give a dict of them in that order, and each value is known from its text alone: an
integer literal (at most 18 digits: it fits Arrow's int64) is that ``int``, a number with a
fraction or an exponent is the ``float`` Arrow's correctly rounded parser gives (the same
as Python's), a string without ``"``, ``\\`` or control characters is its text, and
``true``/``false`` the booleans. Every other line (blank, escaped, nested, null, a BOM,
malformed, a key twice...) goes through ``decode_line``, the per-line reader's own code,
so its event or its error is the old one. A block that is not UTF-8 goes entirely through
``decode_line``, which names the line and byte.

Memory: one block of ``BLOCK_BYTES`` and its events at a time. Imports pyarrow and numpy
when a block is read, not on import (the CLI imports this module to start).
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcher.errors import InputError

#: bytes read at a time (whole lines): large enough that Arrow's per-call cost vanishes
BLOCK_BYTES = 1 << 20
#: lines of a block tried for its layout before the block is read line by line
LAYOUT_TRIES = 8
#: the longest integer literal read columnar: 18 digits always fit a signed 64-bit integer
_MAX_DIGITS = 18

_WS = r"[ \t\r]*"  # JSON's whitespace, but for the newline that ends the line
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_STRING = r'"(?P<{group}>[^"\\\x00-\x1f]*)"'
_BOOLEAN = r"(?P<{group}>true|false)"
_SAFE_NAME = re.compile(r'[^"\\\x00-\x1f]*')

#: a line's event, or ``None`` for a blank line; raises the line's ``InputError``
DecodeLine = Callable[[int, bytes], "dict[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class JsonBatch:
    """A block's events in file order, up to its first bad line (``error``, raised by the
    caller after the events, so that reading stays as lazy as line by line).

    ``column_types``: the Spark type of each column over the rows read columnar (``bigint``,
    ``double``, ``string``, ``boolean``; a column holding both integers and fractions
    appears twice); ``decoded``: the indexes in ``events`` of the rows ``decode_line`` gave,
    whose types the caller infers from their values."""

    events: list[dict[str, Any]]
    column_types: tuple[tuple[str, str], ...]
    decoded: tuple[int, ...]
    error: InputError | None = None

    def complete(self, columns: frozenset[str]) -> bool:
        """Whether every event surely has every one of ``columns`` (all rows columnar)."""
        return not self.decoded and columns <= {name for name, _ in self.column_types}


@dataclass(frozen=True, slots=True)
class _Layout:
    """The keys of a flat line in order, and each value's kind: ``number``, ``string`` or
    ``boolean``; ``pattern`` is the RE2 pattern of every line with that layout."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    pattern: str


def json_batches(path: Path, decode_line: DecodeLine) -> Iterator[JsonBatch]:
    """The file's events a block at a time (see the module's docstring).

    Read in the caller's thread: reading ahead in another one (Arrow lets go of the GIL
    while it matches a block's lines) made a loaded two-core machine slower, not faster."""
    for block, before in _blocks(path):
        batch = _batch(block, before, decode_line)
        yield batch
        if batch.error is not None:
            return


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A block of JSON lines that all have one flat layout, as texts: each column's kind
    (``number``, ``string`` or ``boolean``) and the text of its values as an Arrow
    ``large_string`` array (a string's without its quotes, a number's as written, which
    names its value: a text the per-line reader would read otherwise is not here), and
    the columns' Spark types, as ``JsonBatch.column_types``."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    texts: tuple[Any, ...]
    column_types: tuple[tuple[str, str], ...]
    rows: int


def text_blocks(path: Path) -> Iterator[TextBlock | None]:
    """The file's lines a block at a time as ``TextBlock``s, without a Python object per
    value; ``None`` for a block with a line that does not have the layout of the block's
    first line (or is not UTF-8, or holds a number Arrow cannot convert): the caller reads
    such a file with ``json_batches``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    const = _constants()
    for block, _ in _blocks(path):
        offsets, lines = _raw_lines(block)
        layout = _layout(block[offsets[0] : offsets[1]]) if lines is not None else None
        if layout is None:
            yield None
            continue
        texts, fits, floats = _texts(lines, layout)
        if not pc.all(fits).as_py():
            yield None
            continue
        types: list[tuple[str, str]] = []
        try:
            for i, (name, kind) in enumerate(zip(layout.names, layout.kinds, strict=True)):
                if kind != "number":
                    types.append((name, kind))
                    continue
                is_float = floats[i]
                if pc.any(is_float).as_py():
                    pc.cast(pc.if_else(is_float, texts[i], const["0.0"]), pa.float64())
                    types.append((name, "double"))
                if not pc.all(is_float).as_py():
                    types.append((name, "bigint"))
        except pa.ArrowInvalid:  # a number Arrow will not convert (1e999)
            yield None
            continue
        yield TextBlock(layout.names, layout.kinds, tuple(texts), tuple(types), len(lines))


def _blocks(path: Path) -> Iterator[tuple[bytes, int]]:
    """The file in blocks of whole lines of about ``BLOCK_BYTES``, each with the number of
    lines before it."""
    number = 0  # lines before the block
    with _open(path) as stream:
        rest = b""
        while True:
            try:
                chunk = stream.read(BLOCK_BYTES)
            except OSError as exc:  # as the per-line reader says it
                raise InputError(f"{path}: cannot read: {exc}") from exc
            block = rest + chunk
            if not chunk:
                if block:
                    yield block, number
                return
            end = block.rfind(b"\n") + 1
            if end == 0:  # no whole line yet: read on
                rest = block
                continue
            rest = block[end:]
            yield block[:end], number
            number += block.count(b"\n", 0, end)


def _open(path: Path) -> io.BufferedIOBase:
    try:
        return path.open("rb")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file or directory") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _raw_lines(block: bytes) -> tuple[list[int], Any]:
    """The offsets of the block's lines (each line's ``\\n`` is in it) and the lines as an
    Arrow ``large_string`` array, ``None`` when the block is not UTF-8."""
    import numpy as np
    import pyarrow as pa

    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + 1
    offsets = np.concatenate((np.zeros(1, dtype=np.int64), ends.astype(np.int64)))
    if offsets[-1] != len(block):  # the file's last line, without its newline
        offsets = np.append(offsets, len(block))
    count = len(offsets) - 1
    lines = pa.LargeStringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(block))
    try:
        lines.validate(full=True)  # UTF-8, which ``decode_line`` reports line by line
    except pa.ArrowInvalid:
        return offsets.tolist(), None
    return offsets.tolist(), lines


def _batch(block: bytes, before: int, decode_line: DecodeLine) -> JsonBatch:
    offsets, lines = _raw_lines(block)
    count = len(offsets) - 1
    layout = None
    if lines is not None:
        for i in range(min(count, LAYOUT_TRIES)):
            layout = _layout(block[offsets[i] : offsets[i + 1]])
            if layout is not None:
                break
    if layout is None:
        return _decoded(block, offsets, range(count), before, decode_line, [], [], ())
    import pyarrow as pa

    try:
        columns, ok, types = _columns(lines, layout)
    except pa.ArrowInvalid:  # a number Arrow will not convert (1e999): line by line
        return _decoded(block, offsets, range(count), before, decode_line, [], [], ())
    if ok is None:  # every line has the layout: the common case, a dict per row and no more
        rows = _rows(layout.names)(columns)
        return JsonBatch(rows, types, ())
    events: list[dict[str, Any]] = []
    decoded: list[int] = []
    names = layout.names
    for i in range(count):
        if ok[i]:
            events.append(dict(zip(names, (c[i] for c in columns), strict=True)))
            continue
        batch = _decoded(block, offsets, (i,), before, decode_line, events, decoded, types)
        if batch.error is not None:
            return batch
    return JsonBatch(events, types if len(decoded) < len(events) else (), tuple(decoded))


@functools.lru_cache(maxsize=64)
def _rows(names: tuple[str, ...]) -> Callable[[list[list[Any]]], list[dict[str, Any]]]:
    """A function from columns to their rows as dicts: a dict display with the names
    written in builds each row twice as fast as ``dict(zip(names, row))``, the reader's
    main cost. ``repr`` of a ``str`` is a Python literal of it, whatever it holds."""
    values = [f"_{i}" for i in range(len(names))]
    row = ", ".join(f"{name!r}: {value}" for name, value in zip(names, values, strict=True))
    source = f"lambda columns: [{{{row}}} for {', '.join(values)}, in zip(*columns)]"
    return eval(source, {"__builtins__": {"zip": zip}})  # type: ignore[no-any-return]


def _decoded(
    block: bytes,
    offsets: list[int],
    indexes: range | tuple[int, ...],
    before: int,
    decode_line: DecodeLine,
    events: list[dict[str, Any]],
    decoded: list[int],
    types: tuple[tuple[str, str], ...],
) -> JsonBatch:
    """Lines through ``decode_line``, appended to ``events``; stops at the first error."""
    for i in indexes:
        try:
            event = decode_line(before + i + 1, block[offsets[i] : offsets[i + 1]])
        except InputError as exc:
            return JsonBatch(events, types, tuple(decoded), exc)
        if event is not None:
            decoded.append(len(events))
            events.append(event)
    return JsonBatch(events, types, tuple(decoded))


def _layout(raw: bytes) -> _Layout | None:
    """The layout of one line, when it is a flat object the pattern can stand for (the
    line's own event comes from the pattern, like every other line's)."""
    import json

    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    if type(value) is not dict or not value:
        return None
    names: list[str] = []
    kinds: list[str] = []
    parts: list[str] = []
    for name, item in value.items():
        if not _SAFE_NAME.fullmatch(name):
            return None
        if type(item) is bool:
            kind, part = "boolean", _BOOLEAN
        elif type(item) in (int, float):
            kind, part = "number", f"(?P<{{group}}>{_NUMBER})"
        elif type(item) is str:
            kind, part = "string", _STRING
        else:
            return None
        names.append(name)
        kinds.append(kind)
        group = f"c{len(parts)}"  # Arrow's extraction wants named groups
        parts.append(f'"{_literal(name)}"{_WS}:{_WS}' + part.replace("{group}", group))
    body = f"{_WS},{_WS}".join(parts)
    pattern = f"^{_WS}\\{{{_WS}{body}{_WS}\\}}{_WS}\\n?$"
    return _Layout(tuple(names), tuple(kinds), pattern)


def _literal(name: str) -> str:
    """``name`` as an RE2 pattern that matches it alone (``re.escape`` writes escapes RE2
    refuses, such as ``\\ ``)."""
    return "".join(c if c.isalnum() else f"\\x{{{ord(c):x}}}" for c in name)


def text_scalar(value: str) -> Any:
    """``value`` as an Arrow ``large_string`` scalar, built from buffers: ``pa.scalar`` (and
    a Python value passed to a compute function) imports pandas to check for its types, a
    third of a second for nothing."""
    import struct

    import pyarrow as pa

    data = value.encode()
    offsets = pa.py_buffer(struct.pack("<2q", 0, len(data)))
    return pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(data)])[0]


@functools.cache
def _constants() -> dict[str, Any]:
    """The Arrow scalars ``_columns`` compares with (``text_scalar``)."""
    import struct

    import pyarrow as pa

    digits = pa.py_buffer(struct.pack("<q", _MAX_DIGITS))
    constants = {v: text_scalar(v) for v in ("", "0", "0.0", "true")}
    constants["digits"] = pa.Array.from_buffers(pa.int64(), 1, [None, digits])[0]
    return constants


def _texts(lines: Any, layout: _Layout) -> tuple[list[Any], Any, dict[int, Any]]:
    """The text of each of the layout's values, as Arrow arrays; which rows have the layout
    (an Arrow boolean array: a row without it has a harmless text, ``0`` or empty); and,
    for each number column by index, which of its texts are fractions or exponents."""
    import pyarrow.compute as pc

    const = _constants()
    matched = pc.extract_regex(lines, pattern=layout.pattern)
    fits = matched.is_valid()
    texts = []
    floats = {}
    for i, kind in enumerate(layout.kinds):
        text = matched.field(i)
        if matched.null_count:  # a row without the layout has no text: read a harmless one
            text = pc.if_else(fits, text, const["0"] if kind == "number" else const[""])
        if kind == "number":
            # an int literal longer than int64 holds is left to the per-line reader
            floats[i] = is_float = pc.match_substring_regex(text, r"[.eE]")
            if pc.max(pc.binary_length(text)).as_py() > _MAX_DIGITS:  # else none is too long
                digits = pc.utf8_length(pc.utf8_ltrim(text, characters="-"))
                fits = pc.and_(fits, pc.or_(is_float, pc.less_equal(digits, const["digits"])))
        texts.append(text)
    return texts, fits, floats


def _columns(lines: Any, layout: _Layout) -> tuple[list[list[Any]], list[bool] | None, Any]:
    """The layout's columns as Python lists, which rows have the layout (``None``: all),
    and the Spark types of the columns over those rows. Raises ``pyarrow.ArrowInvalid``
    for a value Arrow cannot convert (the caller then reads the block line by line)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    const = _constants()
    texts, fits, floats = _texts(lines, layout)
    all_fit = pc.all(fits).as_py()
    columns: list[list[Any]] = []
    types: list[tuple[str, str]] = []
    for i, (name, kind, text) in enumerate(zip(layout.names, layout.kinds, texts, strict=True)):
        if kind == "string":
            columns.append(text.to_pylist())
            types.append((name, "string"))
        elif kind == "boolean":
            columns.append(pc.equal(text, const["true"]).to_pylist())
            types.append((name, "boolean"))
        else:
            is_float = floats[i]
            any_float = pc.any(pc.and_(is_float, fits)).as_py()
            any_int = pc.any(pc.and_(pc.invert(is_float), fits)).as_py()
            safe_int = pc.if_else(pc.and_(pc.invert(is_float), fits), text, const["0"])
            if not any_int:
                values = pc.cast(pc.if_else(is_float, text, const["0.0"]), pa.float64())
                values = values.to_pylist()
            elif not any_float:
                values = pc.cast(safe_int, pa.int64()).to_pylist()
            else:  # a column of both: each value as its literal says
                reals = pc.cast(pc.if_else(is_float, text, const["0.0"]), pa.float64())
                reals = reals.to_pylist()
                ints = pc.cast(safe_int, pa.int64()).to_pylist()
                chosen = is_float.to_pylist()
                values = [r if c else n for r, n, c in zip(reals, ints, chosen, strict=True)]
            columns.append(values)
            types.extend(
                (name, t) for t, seen in (("bigint", any_int), ("double", any_float)) if seen
            )
    if all_fit:
        return columns, None, tuple(types)
    return columns, fits.to_pylist(), tuple(types)
