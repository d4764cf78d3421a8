"""Text from users and their data, made safe to show: the one escape every command and
page uses before a name, path, version, error or value reaches a terminal (``printable``
itself lives in ``matcher.printable``, so that the jobs' error lines share it).

    printable("bad\x1b[2Jname")          # 'bad\\x1b[2Jname'
    show("a long value ...", width=40)   # "'a long value ...'", cut to 40 characters
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

from matcher.printable import printable
from matcher.serialize import json_safe

__all__ = ["compact", "printable", "show"]


def show(value: Any, *, width: int, documents: bool = False) -> str:
    """A data value as one line: strings quoted with control characters escaped (``repr``),
    null/true/false as in JSON, times in ISO 8601 and decimals as written, NaN and the
    infinities as the JSON documents spell them, values longer than ``width`` cut with
    ``...``. The same value prints the same way whichever engine read it (Spark gives
    ``datetime`` objects where a JSON document holds strings). ``documents``: objects and
    arrays as compact JSON rather than Python's ``repr``."""
    text = compact(value) if documents and isinstance(value, dict | list) else _text(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, tuple):
        inside = ", ".join(_text(v) for v in value)
        return f"({inside},)" if len(value) == 1 else f"({inside})"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


def compact(value: Any) -> str:
    """A JSON document on one line (kwargs, observed values, slices)."""
    return json.dumps(json_safe(value), ensure_ascii=False, separators=(", ", ": "))
