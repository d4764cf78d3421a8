"""Two-input operators with known properties (``parity properties --shape pair``): joins on
two DataFrames (left ``key, offset, x, y``; right ``key, w``) and two-port objects."""

from __future__ import annotations

import threading
from typing import Any

from pyspark.sql import DataFrame


def inner_join(left: DataFrame, right: DataFrame) -> DataFrame:
    """An inner join: rows of one side wait for the other's (blocking on both ports)."""
    return left.join(right, "key").select("key", "x", "w")


def left_join(left: DataFrame, right: DataFrame) -> DataFrame:
    """A left outer join: left rows come out alone; right rows only with left ones."""
    return left.join(right, "key", "left").select("key", "x", "w")


def union(left: DataFrame, right: DataFrame) -> DataFrame:
    """A union of the two keys: nothing waits."""
    return left.select("key").unionByName(right.select("key"))


class Gate:
    """SPL's Gate: an item on port 0 passes only after an acknowledgement on port 1; it
    waits (up to 5 s) until one arrives."""

    def __init__(self) -> None:
        self.acks = threading.Semaphore(0)

    def process(self, port: int, item: Any) -> list[Any]:
        if port == 1:
            self.acks.release()
            return []
        if not self.acks.acquire(timeout=5):
            return []
        return [(item.key, item.x)]


class Merge:
    """Items of both ports, as they come: never waits."""

    def process(self, port: int, item: Any) -> list[Any]:
        return [(port, item.key)]
