"""Equality functions the example validation specs name (``equality.function``).

Pure Python, no Spark import: the spec loader imports them when a spec is loaded (also when
Airflow parses the DAGs), and Spark's Python workers import them by name while matching.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

#: StrConcat's separator (``jobs/examples/reducers.py`` joins with it)
SEPARATOR = "@"


def same_concatenated_items(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """StrConcat's output when the order of concatenation does not matter (DiffStream's
    custom equality for the StrConcat pattern): ``items`` are equal as multisets of their
    ``@``-separated parts; every other column must be equal."""
    if a.keys() != b.keys():
        return False
    for column, x in a.items():
        y = b[column]
        if column == "items" and isinstance(x, str) and isinstance(y, str):
            if Counter(x.split(SEPARATOR)) != Counter(y.split(SEPARATOR)):
                return False
        elif x != y:
            return False
    return True
