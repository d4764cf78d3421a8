"""Which dependence forms the SQL plan can match, and how.

A ``Layout`` says how a dependence's events fall into *groups* that can be compared
independently once barriers have cut the streams into units: a *chain* (events compared
in order, rank by rank: a key of ``by_key``, a keyed or unkeyed type of a typed graph) or a
*multiset* (compared as counts of equal events: ``unordered``, a type without a self edge).
``ordered`` is a single chain of every event, so it is *positional*: ranks are stream
positions and pairs are found by position, not by a window over one giant group.

Forms the SQL plan cannot express (punctuation, arbitrary predicates, typed graphs with
edges between non-barrier types, barrier or type tests written as Python functions) get
a reason instead, and go to the per-partition path (``matcher.spark.per_partition``).

Tolerances. A chain compared rank by rank is exact under a tolerance too: the only
order-keeping pairing of two chains pairs their ranks, so the grouped plan keeps chains
with tolerances. Multisets are not: which near events to pair is a matching problem
(``matcher.pairing``), so a tolerance on a layout with a multiset sends it to the
per-partition path (``SparkComparison.route``), whose core loop settles the pairing; its
partitions, by the exact columns, never split the events a pairing may join.

The core's barrier test (``WithBarriers.barrier_test``) and type classifier
(``Typed.classifier``) are read here, in one place, as values (``ColumnEquals``,
``operator.itemgetter``) that SQL can say.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matcher.dependence import (
    ByKey,
    ColumnEquals,
    Dependence,
    Ordered,
    Typed,
    Unordered,
    WithBarriers,
)


@dataclass(frozen=True, slots=True)
class TypeLayout:
    """One non-barrier event type: its key columns (``None``: unkeyed) and whether its
    events form chains (a self edge) or a multiset."""

    name: str
    key: tuple[str, ...] | None
    chain: bool


@dataclass(frozen=True, slots=True)
class Layout:
    """How a dependence maps onto the grouped SQL plan (see the module docstring).

    Untyped forms use ``chain`` and ``key``; typed ones ``type_column`` and ``types``.
    ``barrier_column``/``barrier_values``: barriers are the events whose column holds one
    of the values. ``keyed_pool``: the core matches this form with per-key queues, which
    resynchronise after a divergence (``matcher.online``), so leftovers are replayed.
    """

    chain: bool = False
    key: tuple[str, ...] = ()
    positional: bool = False
    type_column: str | None = None
    types: tuple[TypeLayout, ...] = ()
    barrier_column: str | None = None
    barrier_values: tuple[Any, ...] = ()
    keyed_pool: bool = False

    @property
    def has_barriers(self) -> bool:
        return self.barrier_column is not None

    @property
    def typed(self) -> bool:
        return self.type_column is not None

    def needed_columns(self) -> list[tuple[str, str]]:
        """``(what, column)`` for every column the layout reads."""
        needed = [("the dependence key", c) for c in self.key]
        if self.type_column is not None:
            needed.append(("the typed dependence's classify", self.type_column))
        for t in self.types:
            needed.extend((f"type {t.name!r}'s key", c) for c in t.key or ())
        if self.barrier_column is not None:
            needed.append(("the barrier test", self.barrier_column))
        return needed


def layout_of(dependence: Dependence) -> Layout | str:
    """The layout of ``dependence``, or why the SQL plan cannot match it."""
    if type(dependence) is Unordered:
        return Layout()
    if type(dependence) is Ordered:
        return Layout(chain=True, positional=True, keyed_pool=True)
    if type(dependence) is ByKey:
        return Layout(chain=True, key=dependence.key_columns, keyed_pool=True)
    if type(dependence) is WithBarriers:
        return _with_barriers(dependence)
    if type(dependence) is Typed:
        return _typed(dependence)
    return f"the {dependence.describe()} dependence is matched by the core in each partition"


def _with_barriers(dependence: WithBarriers) -> Layout | str:
    test = dependence.barrier_test
    if not isinstance(test, ColumnEquals):
        return "the barrier test is a Python function"
    values = tuple(test.values)
    base = dependence.base
    if isinstance(base, ByKey):
        layout = Layout(chain=True, key=base.key_columns)
    elif isinstance(base, Ordered):
        layout = Layout(chain=True, positional=True)
    else:
        layout = Layout()
    return Layout(
        chain=layout.chain,
        key=layout.key,
        positional=layout.positional,
        barrier_column=test.column,
        barrier_values=values,
    )


def _typed(dependence: Typed) -> Layout | str:
    column = _itemgetter_column(dependence.classifier)
    if column is None:
        return "the typed dependence classifies events with a Python function"
    barriers = dependence.barrier_types
    types = []
    for rule in dependence.rules:
        if rule.name in barriers:
            continue
        others = sorted(name for name, _ in rule.neighbours if name not in barriers)
        if others:
            return f"typed edges between non-barrier types ({rule.name}-{others[0]})"
        types.append(TypeLayout(rule.name, dependence.types[rule.name].key, rule.self_dependent))
    return Layout(
        type_column=column,
        types=tuple(types),
        barrier_column=column if barriers else None,
        barrier_values=tuple(sorted(barriers)),
    )


def _itemgetter_column(classify: Callable[..., Any] | None) -> str | None:
    """The column an ``operator.itemgetter(column)`` reads, or ``None``."""
    if not isinstance(classify, operator.itemgetter):
        return None
    reduced = classify.__reduce__()
    args: tuple[Any, ...] = reduced[1] if isinstance(reduced, tuple) else ()
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return None
