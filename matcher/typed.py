"""Typed events with a dependence graph between types, and barriers (DiffStream Fig. 5).

The extended taxi example: taxi events are ordered per taxi, an end-of-day event depends on
everything, an end-of-month event on end-of-day and end-of-month events only. Barriers
(``with_barriers``) are the special case of one type that depends on everything.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matcher.equality import Equality, Event
from matcher.errors import InputError, SpecError
from matcher.pools import Pool, TypedPool, TypeRule
from matcher.relation import Dependence, EventTest, Route, checked_columns, key_route


@dataclass(frozen=True, slots=True)
class EventType:
    """One type of a typed dependence: its key columns (``None``: unkeyed)."""

    name: str
    key: tuple[str, ...] | None = None


class Typed(Dependence):
    """Events are classified into types; a graph says which types depend on which.

    An edge ``(A, A)`` orders the events of type ``A`` among themselves, per key when ``A``
    is keyed; an edge ``(A, B)`` makes every ``A`` depend on every ``B``, or only on those
    with the same key when given as ``(A, B, "same_key")``. ``"*"`` stands for every type.
    A type that depends on every type, itself included, is a *barrier*.
    """

    def __init__(
        self,
        classify: str | Callable[[Event], str],
        types: Mapping[str, Sequence[str] | None],
        edges: Iterable[Sequence[str]],
        classify_columns: Iterable[str] | None = None,
    ) -> None:
        if not types:
            raise SpecError("typed: at least one event type is needed")
        self.types = {
            name: EventType(name, None if key is None else checked_columns(key, f"types.{name}"))
            for name, key in types.items()
        }
        if isinstance(classify, str):
            self._classify: Callable[[Event], str] = operator.itemgetter(classify)
            self.classify_columns: frozenset[str] | None = frozenset([classify])
        else:
            self._classify = classify
            self.classify_columns = (
                None if classify_columns is None else frozenset(classify_columns)
            )
        self._edges = self._parse_edges(edges)
        self._key_routes = {
            name: (None if t.key is None else key_route(t.key)) for name, t in self.types.items()
        }
        self.rules = self._rules()
        # A barrier depends on every event: unconditionally on every type, itself included,
        # which a keyed type cannot (its self-dependence holds within a key only).
        self.barrier_types = frozenset(
            name
            for name, t in self.types.items()
            if t.key is None and all(self._edges.get((name, o)) is False for o in self.types)
        )
        self.has_barriers = bool(self.barrier_types)
        self.chains_independent = all(
            a == b or a in self.barrier_types or b in self.barrier_types for a, b in self._edges
        )
        key_columns = {c for t in self.types.values() for c in (t.key or ())}
        self.columns = (self.classify_columns or frozenset()) | key_columns

    def _parse_edges(self, edges: Iterable[Sequence[str]]) -> dict[tuple[str, str], bool]:
        parsed: dict[tuple[str, str], bool] = {}
        for edge in edges:
            if len(edge) not in (2, 3) or (len(edge) == 3 and edge[2] != "same_key"):
                raise SpecError(f"typed: an edge is [A, B] or [A, B, same_key], got {list(edge)!r}")
            lefts = list(self.types) if edge[0] == "*" else [edge[0]]
            rights = list(self.types) if edge[1] == "*" else [edge[1]]
            for name in (*lefts, *rights):
                if name not in self.types:
                    raise SpecError(f"typed: edge {list(edge)!r} names unknown type {name!r}")
            same_key = len(edge) == 3
            for a in lefts:
                for b in rights:
                    if same_key and (self.types[a].key is None or self.types[b].key is None):
                        raise SpecError(f"typed: same_key edge {a}-{b} needs both types keyed")
                    if same_key and len(self.types[a].key or ()) != len(self.types[b].key or ()):
                        raise SpecError(f"typed: same_key edge {a}-{b}: keys differ in length")
                    # An unconditional edge wins over a same-key one between the same types.
                    parsed[(a, b)] = parsed.get((a, b), True) and same_key
                    parsed[(b, a)] = parsed[(a, b)]
        return parsed

    def _rules(self) -> list[TypeRule]:
        rules = []
        for name, t in self.types.items():
            neighbours = tuple(
                (b, same_key) for (a, b), same_key in self._edges.items() if a == name and b != name
            )
            rules.append(TypeRule(name, t.key is not None, (name, name) in self._edges, neighbours))
        return rules

    @property
    def classifier(self) -> Callable[[Event], str]:
        """The function that gives an event's type (``operator.itemgetter(column)`` when the
        spec names a column, which the Spark matcher reads as SQL)."""
        return self._classify

    def type_of(self, event: Event) -> str:
        try:
            kind = self._classify(event)
        except KeyError as exc:
            raise InputError(f"typed dependence: event lacks column {exc.args[0]!r}") from exc
        try:
            declared = kind in self.types
        except TypeError:  # a list or a map as the type: not hashable, never declared
            declared = False
        if not declared:
            raise InputError(f"typed dependence: event type {kind!r} is not declared in types")
        return kind

    def _route(self, event: Event) -> tuple[str, Hashable]:
        kind = self.type_of(event)
        key_route = self._key_routes[kind]
        return kind, (None if key_route is None else key_route(event))

    def depends(self, x: Event, y: Event) -> bool:
        (a, ka), (b, kb) = self._route(x), self._route(y)
        same_key = self._edges.get((a, b))
        if same_key is None:
            return False
        if a == b:
            return ka == kb or self.types[a].key is None
        return not same_key or ka == kb

    def new_pool(self, equality: Equality) -> Pool:
        return TypedPool(equality, self.rules, equality.canonical)

    def route(self, equality: Equality) -> Route:
        return self._route

    def chain(self, event: Event) -> Hashable | None:
        kind, key = self._route(event)
        return (kind, key) if (kind, kind) in self._edges else None

    def key(self, event: Event) -> Any:
        kind = self.type_of(event)
        columns = self.types[kind].key
        if columns is None:
            return None
        if len(columns) == 1:
            return event.get(columns[0])
        return tuple(event.get(c) for c in columns)

    def is_barrier(self, event: Event) -> bool:
        return self.type_of(event) in self.barrier_types

    def describe(self) -> str:
        return f"typed({', '.join(self.types)})"


class WithBarriers(Typed):
    """A base form (``by_key``, ``ordered`` or ``unordered``) plus barrier events that are
    dependent with every event, such as end-of-day or end-of-file markers."""

    def __init__(
        self,
        base: Dependence,
        is_barrier: EventTest,
        barrier_columns: Iterable[str] | None = None,
    ) -> None:
        shape = base.event_type()
        if shape is None:
            raise SpecError(
                f"barriers combine with by_key, ordered or unordered, not {base.describe()}"
            )
        key, in_order = shape
        self_edge = [("event", "event")] if in_order else []
        self.base = base
        self._is_barrier = is_barrier

        def classify(event: Event) -> str:
            return "barrier" if is_barrier(event) else "event"

        super().__init__(
            classify,
            {"event": key, "barrier": None},
            [*self_edge, ("barrier", "*")],
            classify_columns=barrier_columns,
        )
        self.columns = frozenset(barrier_columns or ()) | (base.columns or frozenset())

    @property
    def barrier_test(self) -> EventTest:
        """The test that recognises barriers (a ``ColumnEquals`` when the spec says it as a
        column and values, which the Spark matcher turns into SQL)."""
        return self._is_barrier

    def chain(self, event: Event) -> Hashable | None:
        if self._is_barrier(event):
            return ("barrier",)
        return self.base.chain(event)

    def key(self, event: Event) -> Any:
        return None if self._is_barrier(event) else self.base.key(event)

    def describe(self) -> str:
        return f"{self.base.describe()} with barriers"
