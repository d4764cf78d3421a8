"""A CSV output's declared columns: a Spark DDL column list, read without Spark.

    parse_ddl("day DATE, total DOUBLE")     # (('day', 'date'), ('total', 'double'))

CSV carries no types: Parity types its values as Spark's ``inferSchema`` does
(``matcher.files.csv_types``), or by the types the spec declares in ``output.schema``, a
column list in the DDL a Spark user writes for ``spark.read.schema(...)``. It is checked
when the spec is loaded (one line naming the column and what is wrong), and both engines
then read the CSV with it: Spark with its own reader, the core with the same conversions
(``matcher.files.csv_types``).

Types are spelled as Spark spells them, in any case, with Spark's synonyms: ``STRING``,
``BOOLEAN``, ``TINYINT`` (``BYTE``), ``SMALLINT`` (``SHORT``), ``INT`` (``INTEGER``),
``BIGINT`` (``LONG``), ``DOUBLE``, ``DECIMAL(p,s)`` (``DEC``, ``NUMERIC``; ``DECIMAL`` alone
is ``DECIMAL(10,0)``, ``DECIMAL(p)`` is ``DECIMAL(p,0)``) and ``DATE``. A name may be quoted
with backticks (two backticks stand for one). Refused, each with its reason: ``FLOAT``
(Java rounds text to a float in one step, which Python cannot repeat exactly: declare
``DOUBLE``), timestamps (Spark reads a time without a date as today's, and resolves zones by
the session's: declare ``STRING`` and they compare as text), and every other type (CSV holds
no arrays, maps, structs, binary values or intervals). Constraints (``NOT NULL``,
``COMMENT``) are refused too: a CSV column is nullable.
"""

from __future__ import annotations

import re

#: Spark's DDL names of the types a declared CSV column may have, as ``simpleString`` spells them
_ATOMIC = {
    "string": "string",
    "boolean": "boolean",
    "tinyint": "tinyint",
    "byte": "tinyint",
    "smallint": "smallint",
    "short": "smallint",
    "int": "int",
    "integer": "int",
    "bigint": "bigint",
    "long": "bigint",
    "double": "double",
    "date": "date",
}
_DECIMALS = ("decimal", "dec", "numeric")
_FLOAT = (
    "(Java rounds text to a float in one step, which Parity cannot repeat exactly): declare DOUBLE"
)
_TIMESTAMP = (
    "(Spark reads a time without a date as today's, in the session's time zone): declare "
    "STRING, and timestamps compare as text"
)
_REFUSED = {
    "float": _FLOAT,
    "real": _FLOAT,
    "timestamp": _TIMESTAMP,
    "timestamp_ntz": _TIMESTAMP,
    "timestamp_ltz": _TIMESTAMP,
}
_NAME = re.compile(r"\s*(?:`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*))")
_TYPE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(?=,|$)")
_MAX_PRECISION = 38


def parse_ddl(text: str) -> tuple[tuple[str, str], ...]:
    """The ``(name, type)`` of each column ``text`` declares, types as ``simpleString``; a
    ``ValueError`` of one line naming the column (or the place) that is wrong."""
    columns: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    position = 0
    while True:
        match = _NAME.match(text, position)
        if match is None:
            if not text.strip():
                raise ValueError("expected 'name TYPE, ...' (a Spark DDL column list), got ''")
            raise ValueError(
                f"expected 'name TYPE, ...' (a Spark DDL column list): column "
                f"{len(columns) + 1} does not start with a name"
            )
        name = match[1].replace("``", "`") if match[1] is not None else match[2]
        position = match.end()
        kind = _TYPE.match(text, position)
        if kind is None:
            rest = text[position:].strip().split(",")[0].strip()
            nested = re.match(r"([A-Za-z_]+)\s*<", rest)
            if nested:
                raise ValueError(
                    f"column {name!r}: {nested[1].upper()} is not read from CSV (CSV holds no "
                    "arrays, maps or structs)"
                )
            constraint = re.search(r"\b(not\s+null|comment|default)\b", rest, re.IGNORECASE)
            why = (
                f" ({constraint[1].upper()} is not read: a CSV column is nullable, as read)"
                if constraint
                else ""
            )
            raise ValueError(
                f"column {name!r}: expected one type (as 'day DATE'), got {rest or 'nothing'!r}"
                + why
            )
        columns.append((name, _column_type(name, kind[1], kind[2], kind[3])))
        folded = name.casefold()
        if folded in seen:
            raise ValueError(
                f"column {name!r} is declared twice"
                + ("" if seen[folded] == name else f" (as {seen[folded]!r}: names ignore case)")
            )
        seen[folded] = name
        position = kind.end()
        if position >= len(text):
            return tuple(columns)
        position += 1  # the comma


def _column_type(name: str, word: str, precision: str | None, scale: str | None) -> str:
    kind = word.lower()
    if kind in _DECIMALS:
        p = 10 if precision is None else int(precision)
        s = 0 if scale is None else int(scale)
        if not 1 <= p <= _MAX_PRECISION or s > p:
            raise ValueError(
                f"column {name!r}: DECIMAL({p},{s}) is not a decimal type (precision 1 to "
                f"{_MAX_PRECISION}, scale at most the precision)"
            )
        return f"decimal({p},{s})"
    if precision is not None:
        raise ValueError(f"column {name!r}: {word.upper()} takes no precision")
    if kind in _ATOMIC:
        return _ATOMIC[kind]
    if kind in _REFUSED:
        raise ValueError(f"column {name!r}: {word.upper()} is not read from CSV {_REFUSED[kind]}")
    known = "STRING, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, DOUBLE, DECIMAL(p,s), DATE"
    raise ValueError(f"column {name!r}: unknown or unsupported type {word!r} (known: {known})")


def to_ddl(columns: tuple[tuple[str, str], ...]) -> str:
    """The column list Spark's reader takes (``spark.read.schema``), names quoted."""
    return ", ".join(f"`{name.replace('`', '``')}` {type_.upper()}" for name, type_ in columns)
