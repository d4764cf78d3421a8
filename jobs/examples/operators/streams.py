"""Stream-shape operators with known properties (``parity properties --shape stream``).

Items are rows ``key, offset, x, y`` (``items.jsonl``). Objects with ``process(item)`` and,
for windowed ones, ``flush()`` (the window's end); classes are their own factories.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Iterator
from typing import Any

Out = list[tuple[Any, ...]]


class Identity:
    """A Functor: every item as it is."""

    def process(self, item: Any) -> Out:
        return [(item.key, item.x, item.y)]


class FilterPositive:
    """A Filter: items with ``x > 0``."""

    def process(self, item: Any) -> Out:
        return [(item.key, item.x)] if item.x > 0 else []


class Split:
    """A Split duplicating every item (to two output ports, here one stream)."""

    def process(self, item: Any) -> Out:
        return [(0, item.key, item.x), (1, item.key, item.x)]


class RunningCount:
    """SPL's counting Custom operator: the number of items so far, with the item."""

    def __init__(self) -> None:
        self.count = 0

    def process(self, item: Any) -> Out:
        self.count += 1
        return [(item.key, item.x, self.count)]


class RunningCountPerKey:
    """The count so far of the item's key."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def process(self, item: Any) -> Out:
        self.counts[item.key] = self.counts.get(item.key, 0) + 1
        return [(item.key, item.x, self.counts[item.key])]


class RunningSumPerKey:
    """The sum of ``x`` so far for the item's key."""

    def __init__(self) -> None:
        self.sums: dict[str, int] = {}

    def process(self, item: Any) -> Out:
        self.sums[item.key] = self.sums.get(item.key, 0) + item.x
        return [(item.key, self.sums[item.key])]


class Deduplicate:
    """SPL's DeDuplicate (count-based): an item the first time its ``(key, x)`` is seen."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, int]] = set()

    def process(self, item: Any) -> Out:
        if (item.key, item.x) in self.seen:
            return []
        self.seen.add((item.key, item.x))
        return [(item.key, item.x)]


class WindowSumPerKey:
    """A tumbling window's Aggregate: at each punctuation, the sum of ``x`` per key."""

    def __init__(self) -> None:
        self.sums: dict[str, int] = {}

    def process(self, item: Any) -> Out:
        self.sums[item.key] = self.sums.get(item.key, 0) + item.x
        return []

    def flush(self) -> Out:
        out = [(k, s) for k, s in sorted(self.sums.items())]
        self.end_window()
        return out

    def end_window(self) -> None:
        """The window is over: the next one starts from nothing."""
        self.sums = {}


class WindowMax:
    """At each punctuation, the largest ``x`` of the window, all keys together."""

    def __init__(self) -> None:
        self.best: int | None = None

    def process(self, item: Any) -> Out:
        self.best = item.x if self.best is None else max(self.best, item.x)
        return []

    def flush(self) -> Out:
        out = [] if self.best is None else [(self.best,)]
        self.best = None
        return out


class WindowLast:
    """At each punctuation, the window's last item (order matters, keys interfere)."""

    def __init__(self) -> None:
        self.last: Any = None

    def process(self, item: Any) -> Out:
        self.last = (item.key, item.x)
        return []

    def flush(self) -> Out:
        out = [] if self.last is None else [self.last]
        self.last = None
        return out


class WindowSumLeaky(WindowSumPerKey):
    """A mutant of ``WindowSumPerKey`` that forgets to reset between windows, and differs
    from it in nothing else."""

    def end_window(self) -> None:
        pass  # the leak: this window's sums carry into the next


class RandomSample:
    """A Bernoulli sampler (``random.random() < 0.5``): non-deterministic."""

    def process(self, item: Any) -> Out:
        return [(item.key, item.x)] if random.random() < 0.5 else []


class Timestamp:
    """Each item with the wall-clock time it was processed at (microseconds)."""

    def process(self, item: Any) -> Out:
        return [(item.key, item.x, time.time_ns() // 1000)]


class TimeWindowCount:
    """A count over wall-clock windows of 10 ms: at each item, the items of its window
    so far. Non-deterministic in the inter-arrival times (the paper's main source)."""

    def __init__(self) -> None:
        self.window = -1
        self.count = 0

    def process(self, item: Any) -> Out:
        now = time.monotonic_ns() // 10_000_000
        if now != self.window:
            self.window, self.count = now, 0
        self.count += 1
        return [(item.key, self.count)]


def reducer(name: str) -> Any:
    """One of DiffStream's MapReduce reducers (``jobs.examples.reducers``) as a
    ``mapPartitions`` function: every key's result at the partition's end."""
    from jobs.examples.reducers import REDUCERS, run_reducer

    def reduce(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        yield from run_reducer(REDUCERS[name], rows)

    reduce.__name__ = reduce.__qualname__ = name
    return reduce


singleitem = reducer("singleitem")
indexvaluepair = reducer("indexvaluepair")
maxrow = reducer("maxrow")
firstn = reducer("firstn")
strconcat = reducer("strconcat")
strconcat_stream = reducer("strconcat_stream")
