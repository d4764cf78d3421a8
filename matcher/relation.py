"""The dependence relation's contract: what every form gives the matcher and the classifier.

A form is a symmetric ``depends(x, y)`` plus the unmatched-set structure that makes matching
cheap, and for the classifier its *chains* (mutually ordered events, compared as sequences)
and *barriers* (events dependent with everything). The forms are in ``matcher.dependence``.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from matcher.equality import MAX_NESTING, NAN, Equality, Event, too_deep
from matcher.errors import InputError, SpecError
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
    """A key getter that is fast for one column, NaN-stable, and hashable for every value
    (``key_form``); a null key is a key like any other."""
    if len(columns) == 1:
        (column,) = columns

        def one(event: Event) -> Hashable:
            value = event[column]
            if value.__class__ in _SCALARS:
                return value  # type: ignore[no-any-return]
            return key_form(value)

        return one
    getter = operator.itemgetter(*columns)

    def many(event: Event) -> Hashable:
        return tuple(map(key_form, getter(event)))

    return many


#: key values that are hashable and NaN-free as they are (the fast path of ``key_route``)
_SCALARS = frozenset({str, int, bool, type(None)})


class _MapTag:
    """Marks a map's entries in ``key_form``, so that a map and a list of pairs differ."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "map"


_MAP = _MapTag()


def key_form(value: Any, depth: int = 0) -> Hashable:
    """A hashable stand-in for a key value, equal exactly when the values are equal: every
    NaN is one key, lists become tuples, a map (or struct) its entries sorted by key.

    Events hold arrays as lists, structs and maps as dicts (a Spark ``Row`` is a tuple),
    whichever engine read them; a key must hash to group events by key. The Spark engine
    groups the same way in SQL (``matcher.spark.grouped_sql.group_key``). At most
    ``MAX_NESTING`` levels deep, each one frame (loops, not comprehensions)."""
    if value.__class__ in _SCALARS:
        return value  # type: ignore[no-any-return]
    if isinstance(value, float):
        return NAN if value != value else value
    if isinstance(value, list | tuple | Mapping | set | frozenset) and depth >= MAX_NESTING:
        raise too_deep()
    if isinstance(value, list | tuple | set | frozenset):
        items = []
        for item in value:
            items.append(key_form(item, depth + 1))
        return frozenset(items) if isinstance(value, set | frozenset) else tuple(items)
    if isinstance(value, Mapping):
        entries = []
        for k, v in value.items():
            entries.append((key_form(k, depth + 1), key_form(v, depth + 1)))
        entries.sort(key=_entry_order)
        # flat, (tag, k1, v1, k2, v2, ...): one tuple per level, as hashing and comparing
        # keys recurses in C once per tuple level (a key at MAX_NESTING must not overflow)
        return (_MAP, *(part for entry in entries for part in entry))
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    try:
        hash(value)
    except TypeError as exc:
        raise InputError(
            f"a key value of type {type(value).__name__} cannot be grouped by"
        ) from exc
    return value  # type: ignore[no-any-return]


def _entry_order(entry: tuple[Hashable, Hashable]) -> tuple[str, str]:
    # Map keys of one map share a type in Spark, but not always in JSON: order by type
    # name first, so that sorting never compares a string with a number.
    return type(entry[0]).__name__, repr(entry[0])


def checked_columns(columns: Iterable[str], what: str) -> tuple[str, ...]:
    names = tuple(columns)
    if not names or not all(isinstance(c, str) and c for c in names):
        raise SpecError(f"{what}: expected one or more column names, got {list(names)!r}")
    return names
