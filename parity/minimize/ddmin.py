"""Delta debugging's ``ddmin`` (Zeller and Hildebrandt, "Simplifying and Isolating
Failure-Inducing Input", TSE 2002): the smallest part of a failing input that still fails,
found by testing subsets and their complements at a growing granularity.

    smallest = ddmin(rows, fails)        # fails(subset) -> True when the subset still fails

``fails`` is given the candidate subsets in the input's order. The result is 1-minimal when
the search ends on its own: removing any one of its items makes the failure go away.
``fails`` may end the search early by raising ``Exhausted`` (a budget spent): the result is
then the smallest failing subset found so far, and ``Search.exhausted`` says so.

The input itself is taken as failing (``ddmin``'s precondition: the caller has seen it
fail). Each distinct subset is tested once; a repeated one is answered from what it gave.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Item = TypeVar("Item")


class Exhausted(Exception):
    """Raised by a test to end the search: the budget is spent."""


@dataclass(slots=True)
class Search(Generic[Item]):
    """A search's end: the smallest failing subset, how many tests ran (repeats not counted)
    and whether a budget stopped it before it was 1-minimal."""

    smallest: list[Item]
    tests: int = 0
    exhausted: bool = False
    answers: dict[tuple[int, ...], bool] = field(default_factory=dict, repr=False)


def ddmin(items: Sequence[Item], fails: Callable[[list[Item]], bool]) -> Search[Item]:
    """The ``ddmin`` search over ``items``, which fail as a whole."""
    search: Search[Item] = Search(list(items))

    def test(positions: list[int]) -> bool:
        key = tuple(positions)
        if key not in search.answers:
            search.answers[key] = fails([items[p] for p in positions])
            search.tests += 1
        return search.answers[key]

    current = list(range(len(items)))
    granularity = 2
    try:
        while len(current) >= 2:
            chunks = _split(current, granularity)
            reduced = next((chunk for chunk in chunks if test(chunk)), None)
            if reduced is not None:  # reduce to a subset
                current, granularity = reduced, 2
                search.smallest = [items[p] for p in current]
                continue
            if granularity > 2:  # with two chunks, each complement is the other chunk
                reduced = next(
                    (rest for rest in _complements(chunks) if test(rest)),
                    None,
                )
                if reduced is not None:  # reduce to a complement
                    current, granularity = reduced, max(granularity - 1, 2)
                    search.smallest = [items[p] for p in current]
                    continue
            if granularity >= len(current):  # every single item was tried: 1-minimal
                break
            granularity = min(len(current), 2 * granularity)
    except Exhausted:
        search.exhausted = True
    return search


def _split(positions: list[int], parts: int) -> list[list[int]]:
    """``positions`` in ``parts`` consecutive chunks whose sizes differ by at most one."""
    size, extra = divmod(len(positions), parts)
    chunks, start = [], 0
    for n in range(parts):
        end = start + size + (1 if n < extra else 0)
        chunks.append(positions[start:end])
        start = end
    return [chunk for chunk in chunks if chunk]


def _complements(chunks: list[list[int]]) -> list[list[int]]:
    return [
        [p for m, chunk in enumerate(chunks) if m != n for p in chunk] for n in range(len(chunks))
    ]
