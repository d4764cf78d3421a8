"""Event values as JSON: what a report, the ``--json`` output and the results store write.

Spark rows carry values JSON cannot hold (NaN, datetimes, Decimal, bytes); every writer
turns them into the same strings, so a witness reads the same everywhere. A string that is
not valid Unicode (a lone surrogate: JSON's ``"\\ud800"``, or a file name's undecodable
byte) cannot be written as UTF-8: each such code point becomes the six characters of its
escape, ``\\ud800``, so that no writer fails on it.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any


def json_safe(value: Any) -> Any:
    """``value`` with everything JSON cannot hold turned into strings or lists."""
    if isinstance(value, str):
        return _encodable(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Mapping):
        return {_encodable(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((json_safe(v) for v in value), key=repr)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """``text`` with each lone surrogate spelled as its escape (see the module docstring)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
