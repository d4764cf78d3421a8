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
    text = compact(value) if documents and isinstance(value, dict | list) else _text(value, width)
    return text if len(text) <= width else text[: width - 3] + "..."


class _Written(str):
    """Text already written (brackets, separators), told apart from a string value."""


def _text(value: Any, width: int) -> str:
    """``value`` written out, containers too, up to a little past ``width`` characters:
    a loop over a stack, so a value nested to the reader's bound (``MAX_NESTING`` levels)
    is written as far as it is shown, without Python's recursion."""
    out: list[str] = []
    size = 0
    stack: list[Any] = [value]
    while stack and size <= width:
        item = stack.pop()
        if isinstance(item, _Written):
            text = str(item)
        elif isinstance(item, tuple | list | dict):
            stack.extend(reversed(_parts(item)))
            continue
        else:
            text = _scalar(item)
        out.append(text)
        size += len(text)
    return "".join(out)


def _parts(container: tuple[Any, ...] | list[Any] | dict[Any, Any]) -> list[Any]:
    """A container as its brackets, separators and items, in writing order."""
    if isinstance(container, dict):
        items: list[Any] = []
        for i, (key, item) in enumerate(container.items()):
            items.extend([_Written(", ")] if i else [])
            items.extend([key, _Written(": "), item])
        return [_Written("{"), *items, _Written("}")]
    inside: list[Any] = []
    for i, item in enumerate(container):
        inside.extend([_Written(", "), item] if i else [item])
    if isinstance(container, list):
        return [_Written("["), *inside, _Written("]")]
    return [_Written("("), *inside, _Written(",)" if len(container) == 1 else ")")]


def _scalar(value: Any) -> str:
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
    return repr(value)


def compact(value: Any) -> str:
    """A JSON document on one line (kwargs, observed values, slices)."""
    return json.dumps(json_safe(value), ensure_ascii=False, separators=(", ", ": "))
