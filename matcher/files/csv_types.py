"""CSV values typed as Spark types them: its ``inferSchema`` and its readers' conversions,
in Python, so that the core reads a CSV output to the values the Spark engine reads.

    inference = CsvInference(3)
    for row in rows:                      # texts; None for an unquoted empty field
        inference.add(row)
    inference.types()                     # ('int', 'double', 'date')
    convert = converter("double")         # text -> value; ValueError: not of the type
    convert("1e5")                        # 100000.0

**Inference** is Spark 4's ``CSVInferSchema`` with its default options, value by value in
file order: a column's type so far decides which parsers its next value tries
(``infer_field``), and the type the value gives merges with it (``compatible``). The
parsers are Java's, whose grammars differ from Python's: ``Integer.parseInt`` and
``Long.parseLong`` (a sign, then decimal digits of any script; no space, no ``_``), then
``new BigDecimal`` (a decimal only when its scale is 0 and it has at most 38 digits:
``9223372036854775808``, ``1.``, ``1.5e1``; ``1e5`` has a negative scale and falls through),
then ``Double.parseDouble`` (ASCII digits, surrounding spaces and control characters
ignored, a ``d``/``f`` suffix, hexadecimal ``0x1p3``, ``NaN``, ``Infinity``) or Spark's
``NaN``, ``Inf``, ``-Inf``; then a date in the pattern ``yyyy-MM-dd``; then a timestamp;
then ``true``/``false`` in any case; else a string. Types merge by Spark's widening
(``int`` and ``bigint`` make ``bigint``, a number and ``double`` make ``double``, an integral
type and a decimal a decimal wide enough for both, anything and ``string`` make
``string``); types that do not merge (a number and a date, a boolean and a number) make
``string``. Empty fields never count; a column with no value is ``string``.

One rule is Parity's own: **a column Spark would infer as a timestamp is read as text**
(``string``). Spark's timestamp parsing takes a bare time as a time of *today* and
resolves zones by the session's, so the same file would read differently tomorrow or
elsewhere; as text, timestamps compare exactly as written. A timestamp merges with
nothing but a timestamp, so the rule changes no other column's type.

Spark infers in parallel and merges its partitions' types as they finish. In one case its
own answer depends on that split: a column mixing integers with decimals narrower than
them (``1.`` then ``12345``: ``decimal(5,0)`` in that order, ``decimal(10,0)`` in the
other), or a boolean and a number in different partitions. The core reads the output as
one partition, in file order, which is Spark's answer for an output read in one split.

**Conversions** are Spark's CSV reader's (``UnivocityParser``): the same Java parsers, a
decimal rounded half up to its scale (too many digits: not of the type), a date in the
pattern ``yyyy-MM-dd`` or else Spark's lenient date (``2020-1-2``, ``2020-01-02T10:00``).
``converter`` raises ``ValueError`` for a text that is not of its type: for an inferred
type, that only happens to a value Spark reads as null (a quoted empty field in a number
column; ``٣`` in a double column, an integer to Java but no double); for a declared one,
it is the reader's error.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

#: a column with no value yet (Spark's ``NullType``)
VOID = "void"
STRING = "string"
#: Spark's ``nullValue`` when Parity reads CSV: a quoted empty field stays ``""`` (the
#: default, ``""``, would make it null); an unquoted empty field is null
NULL_TEXT = "\u0000"
_MAX_PRECISION = 38
#: a decimal digit of any script in Java's ``char`` range (Java parses UTF-16 units, so a
#: digit beyond the Basic Multilingual Plane is two of them, neither a digit)
_D = r"[^\D\U00010000-\U0010ffff]"
_INTEGER = re.compile(rf"[+-]?{_D}+")
_ASCII_INT = re.compile(r"-?[0-9]{1,9}")
#: the doubles most writers write, which Python's ``float`` reads as Java does: a fast path
_PLAIN_DOUBLE = re.compile(r"-?[0-9]+\.[0-9]+(?:[eE]-?[0-9]+)?")
#: the spellings of ``true`` and ``false`` most writers write: a fast path
_BOOLEANS = {"true": True, "false": False, "True": True, "False": False, "TRUE": True,
             "FALSE": False}  # fmt: skip
_BIG_DECIMAL = re.compile(rf"[+-]?(?:{_D}+\.?{_D}*|\.{_D}+)(?:[eE][+-]?{_D}+)?")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)"
)
#: Spark's ``nanValue``, ``positiveInf`` and ``negativeInf`` reading options
_SPECIAL_DOUBLES = {"NaN": float("nan"), "Inf": float("inf"), "-Inf": float("-inf")}
#: ``yyyy-MM-dd`` as Spark's date formatter parses it (a year of more than 4 digits signed)
_DATE = re.compile(r"(-?[0-9]{4}|[+-][0-9]{5,9})-([0-9]{2})-([0-9]{2})")
_JAVA_SPACE = "".join(chr(c) for c in range(0x21))  # what Java's String.trim() removes
_SPARK_SPACE = _JAVA_SPACE + "\x7f"  # what Spark's UTF8String trims (ISO controls too)
_DECIMAL_TYPE = re.compile(r"decimal\((\d+),(\d+)\)")
_INTEGRAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
_INTEGRAL_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_NUMERIC_ORDER = ("tinyint", "smallint", "int", "bigint", "double")
_EXACT = Context(prec=10_000, Emax=10**9, Emin=-(10**9))


# -- Java's parsers -------------------------------------------------------------------------


def java_integer(text: str, bits: int) -> int | None:
    """``Integer.parseInt`` (32 bits), ``Long.parseLong`` (64) and kin: ``None`` when Java
    throws."""
    if _INTEGER.fullmatch(text) is None:
        return None
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-")
    if not digits.isascii():
        digits = "".join(str(unicodedata.digit(c)) for c in digits)
    digits = digits.lstrip("0") or "0"
    if len(digits) > 20:  # out of range; int() would also refuse very long texts
        return None
    value = sign * int(digits)
    bound = 1 << (bits - 1)
    return value if -bound <= value < bound else None


def java_big_decimal(text: str) -> Decimal | None:
    """``new java.math.BigDecimal(text)``: ``None`` when Java throws."""
    if _BIG_DECIMAL.fullmatch(text) is None:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or abs(exponent) > 2**31 - 1:  # Java's scale is an int
        return None
    return value


def java_double(text: str) -> float | None:
    """``Double.parseDouble`` after Spark's ``NaN``/``Inf``/``-Inf``: ``None`` when it throws."""
    if _PLAIN_DOUBLE.fullmatch(text):
        return float(text)
    special = _SPECIAL_DOUBLES.get(text)
    if special is not None:
        return special
    trimmed = text.strip(_JAVA_SPACE)
    if _JAVA_DOUBLE.fullmatch(trimmed) is None:
        return None
    body = trimmed.lstrip("+-")
    if body in ("NaN", "Infinity"):
        return float(trimmed)
    if trimmed[-1] in "fFdD":
        trimmed = trimmed[:-1]
    if "x" in body[:2] or "X" in body[:2]:
        return float.fromhex(trimmed)
    return float(trimmed)


def java_boolean(text: str) -> bool | None:
    """Scala's ``toBoolean``: ``true`` or ``false`` by Java's ``equalsIgnoreCase``."""
    known = _BOOLEANS.get(text)
    if known is not None or len(text) not in (4, 5):
        return known
    for word, value in (("true", True), ("false", False)):
        if len(text) == len(word) and all(
            c == w or c.upper() == w.upper() for c, w in zip(text, word, strict=True)
        ):
            return value
    return None


def spark_date(text: str) -> dt.date | None:
    """A date in Spark's ``yyyy-MM-dd`` (strictly: two-digit month and day, a real date);
    ``None`` when it is not one. A year outside Python's (1 to 9999) is refused by the
    caller: Spark holds it, Python cannot."""
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    return _date(text, int(match[1]), int(match[2]), int(match[3]))


def lenient_date(text: str) -> dt.date | None:
    """Spark's fallback for a date it cannot parse with its pattern (``stringToDate``,
    after ``GMT`` is removed): ``[+-]yyyy[y..]``, ``-[m]m``, ``-[d]d``, then anything after
    a space or ``T``; spaces and control characters around it ignored."""
    s = text.replace("GMT", "").strip(_SPARK_SPACE)
    if not s:
        return None
    sign, j = 1, 0
    if s[0] in "+-":
        sign, j = (-1 if s[0] == "-" else 1), 1
    segments, i, value, digits = [1, 1, 1], 0, 0, 0
    while j < len(s) and s[j] not in " T":
        c = s[j]
        if i < 2 and c == "-":
            if not _segment_ok(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif "0" <= c <= "9":
            value, digits = value * 10 + ord(c) - 48, digits + 1
        else:
            return None
        j += 1
    if not _segment_ok(i, digits) or (i < 2 and j < len(s)):
        return None
    segments[i] = value
    return _date(text, sign * segments[0], segments[1], segments[2])


def _segment_ok(segment: int, digits: int) -> bool:
    return 4 <= digits <= 7 if segment == 0 else 1 <= digits <= 2


def _date(text: str, year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError as exc:
        if 1 <= month <= 12 and 1 <= day <= 31 and not 1 <= year <= 9999:
            raise OutOfRange(
                f"date {text!r} is outside the years Python holds (1 to 9999)"
            ) from exc
        return None


class OutOfRange(ValueError):
    """A value of its type that Python cannot hold (a date before year 1 or after 9999)."""


# -- inference ------------------------------------------------------------------------------


def infer_field(so_far: str, text: str | None) -> str:
    """The type of a column of type ``so_far`` that also holds ``text`` (``CSVInferSchema``'s
    ``inferField``): an empty field or a null changes nothing."""
    if not text or text == NULL_TEXT or so_far == STRING:
        return so_far
    if so_far in (VOID, "int"):
        found = "int" if _ASCII_INT.fullmatch(text) else _try_integer(text)
    elif so_far == "bigint":
        found = _try_long(text)
    elif so_far == "double":
        if _PLAIN_DOUBLE.fullmatch(text):
            return so_far
        found = _try_double(text)
    elif so_far == "date":
        found = _try_date(text)
    elif so_far == "boolean":
        found = "boolean" if java_boolean(text) is not None else STRING
    else:  # a decimal
        found = _try_decimal(text)
    return compatible(so_far, found) or STRING


def _try_integer(text: str) -> str:
    return "int" if java_integer(text, 32) is not None else _try_long(text)


def _try_long(text: str) -> str:
    return "bigint" if java_integer(text, 64) is not None else _try_decimal(text)


def _try_decimal(text: str) -> str:
    value = java_big_decimal(text)
    if value is not None:
        exponent = value.as_tuple().exponent
        precision = len(value.as_tuple().digits)
        if exponent == 0 and precision <= _MAX_PRECISION:
            return f"decimal({precision},0)"
        # a fraction goes on to double; a negative scale or 39 digits fail as a decimal type
    return _try_double(text)


def _try_double(text: str) -> str:
    return "double" if java_double(text) is not None else _try_date(text)


def _try_date(text: str) -> str:
    try:
        if spark_date(text) is not None:
            return "date"
    except OutOfRange:
        return "date"
    # a timestamp is text to Parity (see the module's docstring); a boolean never is one
    return "boolean" if java_boolean(text) is not None else STRING


def _decimal(type_: str) -> tuple[int, int] | None:
    if type_ in _INTEGRAL_DIGITS:
        return _INTEGRAL_DIGITS[type_], 0
    match = _DECIMAL_TYPE.fullmatch(type_)
    return (int(match[1]), int(match[2])) if match else None


def compatible(a: str, b: str) -> str | None:
    """Spark's ``compatibleType`` for CSV: its tightest common type, else CSV's own rules;
    ``None``: none (the caller makes it ``string``)."""
    if a == b or b == VOID:
        return a
    if a == VOID:
        return b
    if STRING in (a, b):
        return STRING
    x, y = _decimal(a), _decimal(b)
    if a in _NUMERIC_ORDER and b in _NUMERIC_ORDER:
        return max(a, b, key=_NUMERIC_ORDER.index)
    if x is not None and y is not None:  # decimals, or an integral type and a decimal
        if a in _INTEGRAL_DIGITS and y[0] - y[1] >= x[0] and y[1] >= 0:
            return b  # the decimal is wider than the integral type
        if b in _INTEGRAL_DIGITS and x[0] - x[1] >= y[0] and x[1] >= 0:
            return a
        scale = max(x[1], y[1])
        digits = max(x[0] - x[1], y[0] - y[1])
        return "double" if digits + scale > _MAX_PRECISION else f"decimal({digits + scale},{scale})"
    if "double" in (a, b) and (x is not None or y is not None):
        return "double"  # a double and a decimal
    return None


#: a column of type ``so_far`` that holds only texts matching these (each followed by
#: ``_SEP``) keeps its type: a whole batch of a column checked by one match
_KEEPS = {
    VOID: re.compile("\x00*"),
    "int": re.compile(r"(?:(?:-?[0-9]{1,9})?\x00)*"),
    "bigint": re.compile(r"(?:(?:-?[0-9]{1,18})?\x00)*"),
    "double": re.compile(r"(?:(?:-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)?\x00)*"),
    "boolean": re.compile(r"(?:(?:true|false|True|False|TRUE|FALSE)?\x00)*"),
}
_SEP = "\x00"


class CsvInference:
    """The types of a CSV output's columns, inferred record by record in file order."""

    def __init__(self, width: int) -> None:
        self._types = [VOID] * width
        #: the columns not yet ``string``, which no value changes any more
        self._open = list(range(width))

    def add(self, row: Sequence[str | None]) -> None:
        types = self._types
        width = len(row)  # a short row leaves the rest alone
        closed = False
        for i in self._open:
            if i < width:
                text = row[i]
                if text:
                    found = types[i] = infer_field(types[i], text)
                    closed = closed or found == STRING
        if closed:
            self._open = [i for i in self._open if types[i] != STRING]

    def add_rows(self, rows: Sequence[Sequence[str]]) -> None:
        """``add`` each of ``rows`` in order; a column whose batch of texts keeps its type
        (``_KEEPS``) is settled by one match over them, the rest value by value."""
        types = self._types
        width = len(types)
        if not rows:
            return
        if any(len(row) != width for row in rows):
            for row in rows:
                self.add(row)
            return
        columns = list(zip(*rows, strict=True))
        for i in self._open:
            texts = columns[i]
            keeps = _KEEPS.get(types[i])
            if keeps is not None:
                joined = _SEP.join(texts) + _SEP
                if joined.count(_SEP) == len(texts) and keeps.fullmatch(joined):
                    continue
            type_ = types[i]
            for text in texts:
                if text:
                    type_ = infer_field(type_, text)
            types[i] = type_
        self._open = [i for i in self._open if types[i] != STRING]

    def types(self) -> tuple[str, ...]:
        """The inferred types, a column with no value as ``string`` (Spark's last pass)."""
        return tuple(STRING if t == VOID else t for t in self._types)


# -- conversions ----------------------------------------------------------------------------


def converter(type_: str) -> Callable[[str], Any]:
    """The function that reads a non-null CSV text as a value of ``type_`` as Spark's CSV
    reader does; it raises ``ValueError`` when the text is not of the type."""
    if type_ == STRING:
        return str
    if type_ in _INTEGRAL_BITS:
        return _integral(_INTEGRAL_BITS[type_])
    if type_ == "double":
        return _checked(java_double)
    if type_ == "boolean":
        return _checked(java_boolean)
    if type_ == "date":
        return _date_value
    decimal = _decimal(type_)
    if decimal is None:
        raise ValueError(f"CSV values cannot be read as {type_}")
    return _decimal_value(*decimal)


def _checked(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        value = parse(text)
        if value is None:
            raise ValueError(text)
        return value

    return convert


def _integral(bits: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        if bits >= 32 and _ASCII_INT.fullmatch(text):
            return int(text)
        value = java_integer(text, bits)
        if value is None:
            raise ValueError(text)
        return value

    return convert


def _date_value(text: str) -> dt.date:
    value = spark_date(text) or lenient_date(text)
    if value is None:
        raise ValueError(text)
    return value


def _decimal_value(precision: int, scale: int) -> Callable[[str], Decimal]:
    quantum = Decimal(1).scaleb(-scale)

    def convert(text: str) -> Decimal:
        value = java_big_decimal(text)
        if value is None:
            raise ValueError(text)
        try:
            rounded = value.quantize(quantum, rounding=ROUND_HALF_UP, context=_EXACT)
        except InvalidOperation as exc:  # more digits than any decimal type holds
            raise ValueError(text) from exc
        if len(rounded.as_tuple().digits) > precision:
            raise ValueError(text)
        return rounded

    return convert
