"""The dependence relation's contract: what every form gives the matcher and the classifier.

A form is a symmetric ``depends(x, y)`` plus the unmatched-set structure that makes matching
cheap, and for the classifier its *chains* (mutually ordered events, compared as sequences)
and *barriers* (events dependent with everything). The forms are in ``matcher.dependence``.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from matcher.equality import NAN, Equality, Event, freeze
from matcher.errors import SpecError
from matcher.pools import Pool

Route = Callable[[Event], Hashable]
EventTest = Callable[[Event], bool]
Relation = Callable[[Event, Event], bool]


class Dependence(ABC):
    """A symmetric dependence relation over events, with its matching structure."""

    #: the columns ``depends`` is known to read (checked against the equality), or ``None``
    #: when it is an opaque function and the user vouches for compatibility
    columns: frozenset[str] | None = frozenset()
    #: events of different chains never depend on each other (barriers aside)
    chains_independent: bool = False
    has_barriers: bool = False

    @abstractmethod
    def depends(self, x: Event, y: Event) -> bool:
        """Whether the consumer cares about the order of ``x`` and ``y``."""

    @abstractmethod
    def new_pool(self, equality: Equality) -> Pool:
        """A fresh unmatched set for one side."""

    def route(self, equality: Equality) -> Route:
        """The function giving an event's routing key in the pools."""
        return no_route

    def chain(self, event: Event) -> Hashable | None:
        """The chain of mutually ordered events ``event`` belongs to; ``None`` if unordered."""
        return None

    def key(self, event: Event) -> Any:
        """The key a witness shows for ``event`` (``None`` when the form has no key)."""
        return None

    def is_barrier(self, event: Event) -> bool:
        return False

    def describe(self) -> str:
        return type(self).__name__

    def event_type(self) -> tuple[tuple[str, ...] | None, bool] | None:
        """As one type of a typed dependence: its key columns and whether its events are
        ordered among themselves; ``None`` when the form is not that simple."""
        return None


def no_route(event: Event) -> Hashable:
    return None


def single_route(event: Event) -> Hashable:
    return ()


def key_route(columns: Sequence[str]) -> Route:
    """A key getter that is fast for one column and NaN-stable for all."""
    if len(columns) == 1:
        (column,) = columns

        def one(event: Event) -> Hashable:
            value = event[column]
            if value != value:  # NaN: every NaN is the same key
                return NAN
            return value  # type: ignore[no-any-return]

        return one
    getter = operator.itemgetter(*columns)

    def many(event: Event) -> Hashable:
        return freeze(getter(event))  # type: ignore[no-any-return]

    return many


def checked_columns(columns: Iterable[str], what: str) -> tuple[str, ...]:
    names = tuple(columns)
    if not names or not all(isinstance(c, str) and c for c in names):
        raise SpecError(f"{what}: expected one or more column names, got {list(names)!r}")
    return names
