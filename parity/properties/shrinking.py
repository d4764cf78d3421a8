"""Shrinking evidence to a minimal, readable input: delta debugging, then simpler values.

``shrink(test, evidence, evaluate)`` first removes elements with Zeller and Hildebrandt's
``ddmin`` (complements of ever smaller chunks, keeping any that still shows the property):
the result is *1-minimal*, no single element can go. Then it tries each item's values one
column at a time against simpler ones (0, 1, ``""``, ``"a"``, ``False``, the earliest
time), keeping a replacement when the evidence survives. ``evaluate`` re-runs the
property's check on candidates and returns each one's evidence or None; every candidate
runs the operator, so a ``budget`` of candidates bounds the work.

``batch`` candidates are evaluated together (the first that holds, in ``ddmin``'s order, is
kept: the same choice as one at a time): a DataFrame operator runs a batch's tests in one
Spark job, where one at a time would pay a job each. An operator run in this process
evaluates one at a time, so that no candidate after the first that holds is spent. When the
time budget runs out (``OutOfTime``) the smallest input found so far is the result, not
minimal.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from parity.properties.deadline import OutOfTime
from parity.properties.elements import Element, Test

#: the evidence (or None) of each candidate, in order
Evaluate = Callable[[Sequence[Test]], Sequence[Mapping[str, Any] | None]]
EARLIEST = dt.datetime(2024, 1, 1)


@dataclass(frozen=True, slots=True)
class Shrunk:
    """The smallest input found, its evidence, and how many replays it took."""

    test: Test
    evidence: Mapping[str, Any]
    replays: int
    minimal: bool


def shrink(
    test: Test,
    evidence: Mapping[str, Any],
    evaluate: Evaluate,
    budget: int = 200,
    batch: int = 1,
) -> Shrunk:
    state = _Search(evaluate, budget, max(1, batch), test, evidence)
    try:
        state.ddmin()
        state.simplify()
    except OutOfTime:
        return Shrunk(state.current, state.found, state.calls, False)
    return Shrunk(state.current, state.found, state.calls, state.calls < budget)


def one_at_a_time(replay: Callable[[Test], Mapping[str, Any] | None]) -> Evaluate:
    """An ``Evaluate`` from a check of one test."""
    return lambda tests: [replay(t) for t in tests]


class _Search:
    def __init__(
        self,
        evaluate: Evaluate,
        budget: int,
        batch: int,
        test: Test,
        evidence: Mapping[str, Any],
    ) -> None:
        self.evaluate = evaluate
        self.budget = budget
        self.batch = batch
        self.calls = 0
        self.current = test
        self.found = evidence

    def first_holding(self, candidates: Sequence[Test]) -> tuple[Test, Mapping[str, Any]] | None:
        """The first candidate (in order) whose evidence survives, within the budget; an
        empty candidate never does."""
        at = 0
        while at < len(candidates) and self.calls < self.budget:
            size = min(self.batch, self.budget - self.calls)
            chunk = [c for c in candidates[at : at + size]]
            at += len(chunk)
            tried = [c for c in chunk if c]
            self.calls += len(tried)
            for candidate, result in zip(tried, self._results(tried), strict=True):
                if result is not None:
                    return candidate, result
        return None

    def _results(self, tests: Sequence[Test]) -> list[Mapping[str, Any] | None]:
        if not tests:
            return []
        try:
            return list(self.evaluate(tests))
        except OutOfTime:
            raise
        except Exception:  # a candidate the operator chokes on is not evidence
            if len(tests) == 1:
                return [None]
            return [r for t in tests for r in self._results([t])]

    def ddmin(self) -> None:
        chunks = 2
        while len(self.current) >= 2 and self.calls < self.budget:
            size = max(1, len(self.current) // chunks)
            pieces = [self.current[i : i + size] for i in range(0, len(self.current), size)]
            complements = [
                tuple(e for j, p in enumerate(pieces) if j != index for e in p)
                for index in range(len(pieces))
            ]
            held = self.first_holding(complements)
            if held is not None:
                self.current, self.found = held
                chunks = max(chunks - 1, 2)
                continue
            if size == 1:
                break
            chunks = min(len(self.current), chunks * 2)

    def simplify(self) -> None:
        test = self.current
        for index, element in enumerate(test):
            if element.item is None:
                continue
            for column, value in element.item.items():
                candidates = []
                for simpler in _simpler(value):
                    item = self.current[index].item
                    assert item is not None
                    candidate = list(self.current)
                    candidate[index] = Element(element.port, {**item, column: simpler})
                    # the same item elsewhere changes with it: statefulness repeats an item
                    for other, e in enumerate(self.current):
                        if other != index and e == self.current[index]:
                            candidate[other] = candidate[index]
                    candidates.append(tuple(candidate))
                held = self.first_holding(candidates)
                if held is not None:
                    self.current, self.found = held


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
