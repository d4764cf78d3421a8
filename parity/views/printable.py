"""Text from users and their data, made safe to show: the one escape every command and
page uses before a name, path, version, error or value reaches a terminal (``printable``
itself lives in ``matcher.printable``, so that the jobs' error lines share it).

    printable("bad\x1b[2Jname")          # 'bad\\x1b[2Jname'
    show("a long value ...", width=40)   # "'a long value ...'", cut to 40 characters
"""

from __future__ import annotations

import json
from typing import Any

from matcher.printable import printable
from matcher.serialize import json_safe

__all__ = ["compact", "printable", "show"]


def show(value: Any, *, width: int, documents: bool = False) -> str:
    """A data value as one line: strings quoted with control characters escaped (``repr``),
    null/true/false as in JSON, values longer than ``width`` cut with ``...``.
    ``documents``: objects and arrays as compact JSON rather than Python's ``repr``."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif documents and isinstance(value, dict | list):
        text = compact(value)
    else:
        text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def compact(value: Any) -> str:
    """A JSON document on one line (kwargs, observed values, slices)."""
    return json.dumps(json_safe(value), ensure_ascii=False, separators=(", ", ": "))
