"""Dependence relations: which pairs of output events the consumer needs in order.

``x D y`` (symmetric) means swapping ``x`` and ``y`` changes what the consumer computes.
Two streams are equivalent when one becomes the other by swapping adjacent independent
events and replacing events by equal ones (Mazurkiewicz trace equivalence).

The forms, from simple to general, each with the general ``depends(x, y)`` and the
efficient unmatched-set structure the online matcher uses:

=========================  ============================================  ====================
form                       dependence                                    structure, per event
=========================  ============================================  ====================
``unordered()``            none (a multiset)                             hash buckets, O(1)
``ordered()``              every pair (a sequence)                       one queue, O(1)
``by_key(*cols)``          same key                                      queue per key, O(1)
``with_barriers(...)``     same key, or either is a barrier              typed, O(1)
``typed(...)``             a graph between event types                   typed, O(#types)
``punctuation(...)``       a punctuation and any earlier-timestamped     list, O(unmatched)
``predicate(fn)``          ``fn(x, y)``                                  list, O(unmatched)
=========================  ============================================  ====================

Each form also tells the classifier how to explain a divergence: its *chains* (sets of
mutually ordered events compared as sequences) and its *barriers*.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matcher.equality import Equality, Event
from matcher.errors import InputError
from matcher.pools import GeneralPool, KeyedPool, MultisetPool, Pool
from matcher.relation import (
    Dependence,
    EventTest,
    Relation,
    Route,
    checked_columns,
    key_route,
    single_route,
)
from matcher.typed import EventType, Typed, WithBarriers
from matcher.user_code import guarded

__all__ = [
    "ByKey",
    "ColumnEquals",
    "Dependence",
    "EventTest",
    "EventType",
    "Ordered",
    "Predicate",
    "Punctuation",
    "Relation",
    "Route",
    "Typed",
    "Unordered",
    "WithBarriers",
    "by_key",
    "column_equals",
    "ordered",
    "predicate",
    "punctuation",
    "typed",
    "unordered",
    "with_barriers",
]


class Unordered(Dependence):
    """No two events are dependent: the outputs are compared as multisets."""

    chains_independent = True

    def depends(self, x: Event, y: Event) -> bool:
        return False

    def new_pool(self, equality: Equality) -> Pool:
        return MultisetPool(equality)

    def route(self, equality: Equality) -> Route:
        return equality.canonical

    def describe(self) -> str:
        return "unordered"

    def event_type(self) -> tuple[tuple[str, ...] | None, bool] | None:
        return None, False


class Ordered(Dependence):
    """Every two events are dependent: the outputs are compared as sequences."""

    chains_independent = True

    def depends(self, x: Event, y: Event) -> bool:
        return True

    def new_pool(self, equality: Equality) -> Pool:
        return KeyedPool(equality)  # one key: a single queue

    def route(self, equality: Equality) -> Route:
        return single_route

    def chain(self, event: Event) -> Hashable | None:
        return ()

    def describe(self) -> str:
        return "ordered"

    def event_type(self) -> tuple[tuple[str, ...] | None, bool] | None:
        return None, True


class ByKey(Dependence):
    """Events with the same key are dependent; different keys are independent."""

    chains_independent = True

    def __init__(self, columns: Sequence[str]) -> None:
        self.key_columns = checked_columns(columns, "by_key")
        self.columns = frozenset(self.key_columns)
        self._route = key_route(self.key_columns)

    def depends(self, x: Event, y: Event) -> bool:
        return bool(self._route(x) == self._route(y))

    def new_pool(self, equality: Equality) -> Pool:
        return KeyedPool(equality)

    def route(self, equality: Equality) -> Route:
        return self._route

    def chain(self, event: Event) -> Hashable | None:
        # Wrapped: a null key is a chain like any other, where a bare ``None`` would tell
        # the classifier "no chain" and compare the key's events as a multiset.
        return (self._route(event),)

    def key(self, event: Event) -> Any:
        if len(self.key_columns) == 1:
            return event.get(self.key_columns[0])
        return tuple(event.get(c) for c in self.key_columns)

    def describe(self) -> str:
        return f"by_key({', '.join(self.key_columns)})"

    def event_type(self) -> tuple[tuple[str, ...] | None, bool] | None:
        return self.key_columns, True


class Punctuation(Dependence):
    """A punctuation depends on every event with an earlier timestamp (DiffStream Fig. 7);
    other events are independent of each other."""

    def __init__(
        self,
        is_punctuation: EventTest,
        timestamp: str,
        punctuation_columns: Iterable[str] | None = None,
    ) -> None:
        self._is_punctuation = guarded(is_punctuation)  # a spec's function: matcher.user_code
        self.timestamp = timestamp
        self.columns = frozenset(punctuation_columns or ()) | frozenset([timestamp])

    def _ts(self, event: Event) -> Any:
        try:
            return event[self.timestamp]
        except KeyError as exc:
            raise InputError(
                f"punctuation: event lacks timestamp column {self.timestamp!r}"
            ) from exc

    def depends(self, x: Event, y: Event) -> bool:
        tx, ty = self._ts(x), self._ts(y)
        try:
            return bool(
                (self._is_punctuation(x) and ty < tx) or (self._is_punctuation(y) and tx < ty)
            )
        except TypeError as exc:  # null, or a string against a number
            raise InputError(
                f"punctuation: timestamps {tx!r} and {ty!r} in column {self.timestamp!r} "
                "cannot be compared"
            ) from exc

    def new_pool(self, equality: Equality) -> Pool:
        return GeneralPool(equality, self.depends)

    def route(self, equality: Equality) -> Route:
        return self._ts  # unused by the pool; reading it checks every event has a timestamp

    def describe(self) -> str:
        return f"punctuation({self.timestamp})"


class Predicate(Dependence):
    """Any symmetric ``fn(x, y) -> bool``; ``columns`` names what it reads, if known."""

    def __init__(self, fn: Relation, columns: Iterable[str] | None = None, name: str = "") -> None:
        self.name = name or getattr(fn, "__qualname__", "predicate")
        # a spec's function: a sys.exit() in it or a result not a bool is an error naming it
        self._fn: Relation = guarded(fn, bool, name or None)
        self.columns = None if columns is None else frozenset(columns)

    def depends(self, x: Event, y: Event) -> bool:
        return self._fn(x, y)

    def new_pool(self, equality: Equality) -> Pool:
        return GeneralPool(equality, self._fn)

    def describe(self) -> str:
        return f"predicate({self.name})"


def unordered() -> Dependence:
    """No order matters: compare as multisets."""
    return Unordered()


def ordered() -> Dependence:
    """All order matters: compare as sequences."""
    return Ordered()


def by_key(*columns: str) -> Dependence:
    """Events with equal values in ``columns`` keep their order; others may interleave."""
    return ByKey(columns)


@dataclass(frozen=True, slots=True)
class ColumnEquals:
    """The event test ``event[column] in values`` (an absent column: False).

    A value rather than a closure, so that the Spark matcher can say the same in SQL.
    """

    column: str
    values: frozenset[Any]

    def __call__(self, event: Event) -> bool:
        try:
            return event.get(self.column) in self.values
        except TypeError:  # a list or a map: never one of the spec's scalar values
            return False

    def __repr__(self) -> str:
        return f"{self.column} in {sorted(map(repr, self.values))}"


def column_equals(column: str, *values: Any) -> EventTest:
    """An event test ``event[column] in values`` (missing column: False)."""
    return ColumnEquals(column, frozenset(values))


def with_barriers(
    base: Dependence, is_barrier: EventTest, columns: Iterable[str] | None = None
) -> Dependence:
    """``base`` plus barrier events, recognised by ``is_barrier``, dependent with everything.

    ``columns``: what ``is_barrier`` reads, so that the equality can be checked against it.
    """
    return WithBarriers(base, guarded(is_barrier), columns)


def typed(
    classify: str | Callable[[Event], str],
    types: Mapping[str, Sequence[str] | None],
    edges: Iterable[Sequence[str]],
    classify_columns: Iterable[str] | None = None,
) -> Dependence:
    """Typed events (``classify`` is a column name or a function giving the type name) with
    a dependence graph between types; see ``Typed``."""
    return Typed(guarded(classify, str), types, edges, classify_columns)


def punctuation(
    is_punctuation: EventTest, timestamp: str, columns: Iterable[str] | None = None
) -> Dependence:
    """A punctuation depends on every event with a smaller ``timestamp``."""
    return Punctuation(is_punctuation, timestamp, columns)


def predicate(fn: Relation, columns: Iterable[str] | None = None) -> Dependence:
    """Wrap any symmetric ``fn(x, y) -> bool``."""
    return Predicate(fn, columns)
