"""Operators that fail the way issue 29 found ``parity properties`` reading as properties: they
raise on every input, return ``None`` or ``42``, read a column the sample lacks, end the process
or stall on every firing. ``tests/test_properties_hardening.py`` tests each (items are
``jobs/examples/operators/items.jsonl``'s rows: ``key, offset, x, y``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame


class Raises:
    """Raises on every input."""

    def process(self, item: Any) -> list[Any]:
        raise ValueError(f"boom on {item.key}")


class ReturnsNone:
    """Returns ``None`` instead of a list of outputs."""

    def process(self, item: Any) -> Any:
        return None


class Returns42:
    """Returns ``42`` instead of a list of outputs."""

    def process(self, item: Any) -> Any:
        return 42


class ReadsMissing:
    """Reads ``price``, which the sample does not have."""

    def process(self, item: Any) -> list[Any]:
        return [(item.key, item.price)]


class Exits:
    """``sys.exit()`` on every input."""

    def process(self, item: Any) -> list[Any]:
        sys.exit()


class ExitsOne:
    """``sys.exit(1)`` on every input."""

    def process(self, item: Any) -> list[Any]:
        sys.exit(1)


class Interrupts:
    """Raises ``KeyboardInterrupt`` on every input."""

    def process(self, item: Any) -> list[Any]:
        raise KeyboardInterrupt


class FlushRaises:
    """Processes fine, fails at the window's end."""

    def process(self, item: Any) -> list[Any]:
        return []

    def flush(self) -> list[Any]:
        raise RuntimeError("flush failed")


class BadFactory:
    """A class whose constructor exits."""

    def __init__(self) -> None:
        sys.exit(3)

    def process(self, item: Any) -> list[Any]:
        return [item]


def partitions_raise(rows: Iterable[Any]) -> Iterator[Any]:
    """A ``mapPartitions`` generator that fails on its first row."""
    for row in rows:
        raise ZeroDivisionError(f"row {row.offset}")
        yield row


def partitions_none(rows: Iterable[Any]) -> Any:
    """A ``mapPartitions`` function that returns ``None`` (``--shape stream``)."""
    return None


class PairExits:
    """A two-input operator whose firings (on their own thread) call ``sys.exit(0)``."""

    def process(self, port: int, item: Any) -> list[Any]:
        sys.exit(0)


class PairStalls:
    """A two-input operator every firing of which outlasts any small blocking limit."""

    def process(self, port: int, item: Any) -> list[Any]:
        time.sleep(0.3)
        return [(port, item.key)]


def frame_none(df: DataFrame) -> Any:
    """A DataFrame operator that returns ``None``."""
    return None


def frame_missing_column(df: DataFrame) -> DataFrame:
    """A DataFrame operator that selects a column the sample lacks."""
    return df.select("key", "price")


class Slow:
    """An identity that takes a fifth of a second per item: still testing when killed."""

    def process(self, item: Any) -> list[Any]:
        time.sleep(0.2)
        return [(item.key, item.x)]
