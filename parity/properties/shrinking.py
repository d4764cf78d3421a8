"""Shrinking evidence to a minimal, readable input: delta debugging, then simpler values.

``shrink(test, replay)`` first removes elements with Zeller and Hildebrandt's ``ddmin``
(complements of ever smaller chunks, keeping any that still shows the property): the result
is *1-minimal*, no single element can go. Then it tries each item's values one column at
a time against simpler ones (0, 1, ``""``, ``"a"``, ``False``, the earliest time),
keeping a replacement when the evidence survives. ``replay`` re-runs the property's check
on a candidate and returns its evidence or None; every call runs the operator, so a
``budget`` of calls bounds the work (DataFrame operators pay a Spark job per run).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from parity.properties.elements import Element, Test

Replay = Callable[[Test], Mapping[str, Any] | None]
EARLIEST = dt.datetime(2024, 1, 1)


@dataclass(frozen=True, slots=True)
class Shrunk:
    """The smallest input found, its evidence, and how many replays it took."""

    test: Test
    evidence: Mapping[str, Any]
    replays: int
    minimal: bool


def shrink(test: Test, evidence: Mapping[str, Any], replay: Replay, budget: int = 200) -> Shrunk:
    state = _Search(replay, budget)
    smallest, found = state.ddmin(test, evidence)
    smallest, found = state.simplify(smallest, found)
    return Shrunk(smallest, found, state.calls, state.calls < budget)


class _Search:
    def __init__(self, replay: Replay, budget: int) -> None:
        self.replay = replay
        self.budget = budget
        self.calls = 0

    def holds(self, test: Test) -> Mapping[str, Any] | None:
        if self.calls >= self.budget or not test:
            return None
        self.calls += 1
        try:
            return self.replay(test)
        except Exception:  # a candidate the operator chokes on is not evidence
            return None

    def ddmin(self, test: Test, evidence: Mapping[str, Any]) -> tuple[Test, Mapping[str, Any]]:
        current, found = test, evidence
        chunks = 2
        while len(current) >= 2 and self.calls < self.budget:
            size = max(1, len(current) // chunks)
            pieces = [current[i : i + size] for i in range(0, len(current), size)]
            reduced = False
            for index in range(len(pieces)):
                complement = tuple(e for j, p in enumerate(pieces) if j != index for e in p)
                result = self.holds(complement)
                if result is not None:
                    current, found = complement, result
                    chunks = max(chunks - 1, 2)
                    reduced = True
                    break
            if not reduced:
                if size == 1:
                    break
                chunks = min(len(current), chunks * 2)
        return current, found

    def simplify(self, test: Test, evidence: Mapping[str, Any]) -> tuple[Test, Mapping[str, Any]]:
        current, found = list(test), evidence
        for index, element in enumerate(test):
            if element.item is None:
                continue
            for column, value in element.item.items():
                for simpler in _simpler(value):
                    item = current[index].item
                    assert item is not None
                    candidate = list(current)
                    candidate[index] = Element(element.port, {**item, column: simpler})
                    # the same item elsewhere changes with it: statefulness repeats an item
                    for other, e in enumerate(current):
                        if other != index and e == current[index]:
                            candidate[other] = candidate[index]
                    result = self.holds(tuple(candidate))
                    if result is not None:
                        current, found = candidate, result
                        break
        return tuple(current), found


def _simpler(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        return [v for v in (0, 1) if abs(v) < abs(value) or (v == 0 and value < 0)]
    if isinstance(value, float):
        return [v for v in (0.0, 1.0) if abs(v) < abs(value)]
    if isinstance(value, str):
        return [v for v in ("", "a") if len(v) < len(value) or (v == "a" and value > "a")]
    if isinstance(value, dt.datetime):
        return [EARLIEST.replace(tzinfo=value.tzinfo)] if value != EARLIEST else []
    return []
