"""Pairing events under a tolerance, where ``equal`` is not an equivalence.

The online matcher (``matcher.online``) pairs an event with the earliest minimal equal event
of the other side. With an equivalence that is never wrong: equal events are
interchangeable. A tolerance breaks it (``1.0 ≈ 1.05 ≈ 1.1`` but ``1.0 ≉ 1.1``): under
``unordered``, ``[1.0, 1.1]`` against ``[1.05, 1.0]`` pairs 1.0 with 1.05 and leaves 1.1
against 1.0, though 1.0-1.0 and 1.1-1.05 pair everything.

**The rule.** Two streams are equivalent when *some* bijection pairs every reference event
with a candidate event within tolerance and keeps the order of every dependent pair (the
paper's matching, with the tolerance for ``≡``). A greedy pairing that uses every event is
such a bijection, so only a greedy result that leaves events unmatched gets a second look,
``decide``, over every event of both streams (the loops keep them all, ``needs_pairing``):

* ``ordered``, ``by_key``: never needed. The events of a chain all depend on each other,
  so the only order-keeping bijection pairs them rank by rank; the online matcher compares
  exactly those pairs, head against head, and its verdict stands, decided at the earliest
  event (an LCS-like alignment only serves to *explain* a divergence).
* Otherwise events fall into *classes* by ``equality.canonical`` (their exact columns:
  events within tolerance share it, and the dependence, which may not read a loosened
  column, treats a class as one). A class whose events depend on each other, or that has at
  most one event per side, is a *chain*: its pairing is forced, rank to rank (when every
  class is a chain the greedy pairing, head against head, is that one). The events of
  another class are interchangeable but for where they stand among the classes they depend
  on, all chains (else: see the bound): their *signature* counts the events of each such
  chain before them. The streams are equivalent iff every chain pairs rank to rank within
  tolerance and with equal signatures, and every (class, signature) group of the other
  classes has a perfect matching within tolerance. Under ``unordered`` the groups are the
  classes, and what a maximum matching leaves unmatched is what the verdict explains.
* A maximum matching: for one tolerant column of plain numbers (all ints, or all finite
  floats) with ``rel < 1``, the values within tolerance of a value form an interval whose
  ends grow with it, so pairing both sides in sorted order (each value with the smallest
  unused compatible one) is maximum; otherwise Hopcroft-Karp over the compatibility graph.

**Cost.** Memory: every event instead of only the unmatched ones, under a tolerance and for
forms other than ``ordered``/``by_key``. Time, only when the greedy pairing leaves events
unmatched: O(n log n) for sorted numbers; for a group of ``a`` and ``b`` events otherwise,
``a * b`` comparisons to build the graph and O(E √V) for Hopcroft-Karp; besides, O(C)
``depends`` calls for ``C`` classes, and when some class is not a chain ``C²`` more and
O(n · neighbouring chains) for the signatures (none of this under ``unordered``).
``BUDGET`` bounds one group's comparisons, and one decision's ``depends`` calls. Past it,
or when two classes that are not chains depend on each other (typed edges between
unordered types, punctuations sharing a timestamp, some predicates), the verdict is the
greedy one and carries a warning saying that a pairing within tolerance may exist; under
``unordered`` only the classes past the budget keep their greedy leftovers. The bound is
per group, so the Spark engine's partitions (which never split a class) decide as the core
does.

The online matcher cannot prove a difference early under such a tolerance (a later event
may complete a better pairing), so it leaves ``detected_at`` unset there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from matcher.dependence import Dependence, Unordered
from matcher.equality import Equality
from matcher.pools import Entry, KeyedPool, Pool

#: comparisons one group's matching, and ``depends`` calls one decision, may take before the
#: decision gives up (with a warning); per group, so that partitions decide as the whole does
BUDGET = 2_000_000

Sides = tuple[list[Entry], list[Entry]]


def needs_pairing(equality: Equality, pool: Pool) -> bool:
    """Whether the greedy matching may miss a pairing, so that all events must be kept."""
    return (
        equality.function is None and bool(equality.tolerance) and not isinstance(pool, KeyedPool)
    )


@dataclass(frozen=True, slots=True)
class Settled:
    """What is left unmatched once the pairing is decided, and a warning when it could not
    be decided exactly (the greedy leftovers are kept then)."""

    left: Sides
    warning: str = ""


def settle(
    seen: Sides, left: Sides, dependence: Dependence, equality: Equality, budget: int = BUDGET
) -> Settled:
    """The leftovers to explain: none if some pairing within tolerance uses every event
    (``seen``, both whole streams), else the greedy ones (``left``), or under ``unordered``
    those of a maximum matching."""
    if not left[0] and not left[1]:
        return Settled(left)
    decision = _decide(seen, left, dependence, equality, budget)
    if decision.equivalent:
        return Settled(([], []))
    return Settled(decision.left or left, decision.warning)


@dataclass(frozen=True, slots=True)
class _Decision:
    equivalent: bool | None  # None: undecided, ``warning`` says why
    left: Sides | None = None
    warning: str = ""


def _exceeded(budget: int) -> _Decision:
    return _Decision(
        None,
        warning=(
            f"tolerant pairing: deciding exactly would take more than {budget} comparisons; "
            "this is the greedy pairing's verdict, and a pairing within tolerance may exist"
        ),
    )


def _decide(
    seen: Sides, greedy: Sides, dependence: Dependence, equality: Equality, budget: int
) -> _Decision:
    classes: dict[Hashable, Sides] = {}
    streams: tuple[list[tuple[Hashable, Entry]], list[tuple[Hashable, Entry]]] = ([], [])
    for side in (0, 1):
        for entry in sorted(seen[side], key=_pos):
            name = equality.canonical(entry.event)
            classes.setdefault(name, ([], []))[side].append(entry)
            streams[side].append((name, entry))
    if isinstance(dependence, Unordered):
        return _unordered(classes, greedy, equality, budget)
    if any(len(sides[0]) != len(sides[1]) for sides in classes.values()):
        return _Decision(False)  # no bijection maps every class onto itself
    return _general(classes, streams, dependence, equality, budget)


def _unordered(
    classes: dict[Hashable, Sides], greedy: Sides, equality: Equality, budget: int
) -> _Decision:
    """Class by class: a maximum matching's leftovers, or past the budget the greedy ones."""
    left: Sides = ([], [])
    warning = ""
    greedy_ids = {id(e) for side in greedy for e in side}
    for reference, candidate in classes.values():
        found = maximum_matching(reference, candidate, equality, budget)
        if found is None:
            found = (
                [e for e in reference if id(e) in greedy_ids],
                [e for e in candidate if id(e) in greedy_ids],
            )
            if found[0] and len(reference) == len(candidate):  # a pairing may exist
                warning = _exceeded(budget).warning
        left[0].extend(found[0])
        left[1].extend(found[1])
    left[0].sort(key=_pos)
    left[1].sort(key=_pos)
    return _Decision(not left[0] and not left[1], left, warning)


def _general(
    classes: dict[Hashable, Sides],
    streams: tuple[list[tuple[Hashable, Entry]], list[tuple[Hashable, Entry]]],
    dependence: Dependence,
    equality: Equality,
    budget: int,
) -> _Decision:
    names = list(classes)
    depends = dependence.depends
    example = {name: (sides[0] or sides[1])[0].event for name, sides in classes.items()}
    chain = {
        name: depends(example[name], example[name]) or max(map(len, classes[name])) <= 1
        for name in names
    }
    if all(chain.values()):
        # Every pairing is forced, and the greedy one pairs a class's heads, rank by rank:
        # it is exact (``ordered``/``by_key`` under barriers, typed graphs of chains).
        return _Decision(False)
    if len(names) * len(names) > budget:
        return _exceeded(budget)
    neighbours = {
        c: [d for d in names if d != c and depends(example[c], example[d])] for c in names
    }
    for c in names:
        if not chain[c] and not all(chain[d] for d in neighbours[c]):
            return _Decision(
                None,
                warning=(
                    f"tolerant pairing: under {dependence.describe()}, events of two unordered "
                    "classes depend on each other; this is the greedy pairing's verdict, and a "
                    "pairing within tolerance may exist"
                ),
            )
    if sum(len(neighbours[c]) for side in streams for c, _ in side) > budget:
        return _exceeded(budget)
    signed: dict[Hashable, tuple[list[tuple[Any, Entry]], list[tuple[Any, Entry]]]] = {
        name: ([], []) for name in names
    }
    for side, stream in enumerate(streams):
        before: dict[Hashable, int] = {}
        for name, entry in stream:
            signature = tuple(before.get(d, 0) for d in neighbours[name])
            signed[name][side].append((signature, entry))
            before[name] = before.get(name, 0) + 1
    for name in names:
        reference, candidate = signed[name]
        if chain[name]:
            for (s1, x), (s2, y) in zip(reference, candidate, strict=True):
                if s1 != s2 or not equality.equal(x.event, y.event):
                    return _Decision(False)
            continue
        groups: dict[Any, Sides] = {}
        for side, members in enumerate((reference, candidate)):
            for signature, entry in members:
                groups.setdefault(signature, ([], []))[side].append(entry)
        for xs, ys in groups.values():
            if len(xs) != len(ys):
                return _Decision(False)
            found = maximum_matching(xs, ys, equality, budget)
            if found is None:
                return _exceeded(budget)
            if found[0]:
                return _Decision(False)
    return _Decision(True)


def maximum_matching(
    xs: Sequence[Entry], ys: Sequence[Entry], equality: Equality, budget: int = BUDGET
) -> Sides | None:
    """The events of ``xs`` and ``ys`` that a maximum matching within tolerance leaves
    unmatched (stream order), or ``None`` if that takes more than ``budget`` comparisons.
    The events share a class."""
    if not xs or not ys:
        return sorted(xs, key=_pos), sorted(ys, key=_pos)
    column = _sorted_column(xs, ys, equality)
    if column is not None:
        return _sorted_matching(xs, ys, column, equality)
    if len(xs) * len(ys) > budget:
        return None
    equal = equality.equal
    graph = [[j for j, y in enumerate(ys) if equal(x.event, y.event)] for x in xs]
    partner = hopcroft_karp(graph, len(ys))
    taken = set(partner)
    left_x = [x for x, j in zip(xs, partner, strict=True) if j < 0]
    left_y = [y for j, y in enumerate(ys) if j not in taken]
    return sorted(left_x, key=_pos), sorted(left_y, key=_pos)


def _sorted_column(xs: Sequence[Entry], ys: Sequence[Entry], equality: Equality) -> str | None:
    """The tolerant column whose values alone tell events of one class apart, when they are
    plain numbers compared with ``rel < 1`` (the interval case), else ``None``."""
    if len(equality.tolerance) != 1:
        return None
    ((column, tolerance),) = equality.tolerance.items()
    if tolerance.rel >= 1 or column in equality.ignore:
        return None  # rel >= 1: a value's compatible values need not be an interval
    kinds = {type(e.event.get(column)) for group in (xs, ys) for e in group}
    if kinds == {int}:
        return column
    if kinds == {float}:
        finite = all(
            abs(e.event[column]) < float("inf") for group in (xs, ys) for e in group
        )  # NaN fails the comparison too
        return column if finite else None
    return None


def _sorted_matching(
    xs: Sequence[Entry], ys: Sequence[Entry], column: str, equality: Equality
) -> Sides:
    """Greedy in sorted order: each ``x`` takes the smallest unused compatible ``y``. A ``y``
    below ``x``'s interval is below every later ``x``'s too (the ends grow), so it stays
    unmatched; a ``y`` above it means ``x`` has no partner left."""
    equal = equality.equal

    def value(e: Entry) -> Any:
        return e.event[column]

    ordered_x = sorted(xs, key=lambda e: (value(e), e.pos))
    ordered_y = sorted(ys, key=lambda e: (value(e), e.pos))
    left_x: list[Entry] = []
    left_y: list[Entry] = []
    j = 0
    for x in ordered_x:
        while (
            j < len(ordered_y)
            and value(ordered_y[j]) < value(x)
            and not equal(x.event, ordered_y[j].event)
        ):
            left_y.append(ordered_y[j])
            j += 1
        if j < len(ordered_y) and equal(x.event, ordered_y[j].event):
            j += 1
        else:
            left_x.append(x)
    left_y.extend(ordered_y[j:])
    return sorted(left_x, key=_pos), sorted(left_y, key=_pos)


def hopcroft_karp(graph: Sequence[Sequence[int]], right: int) -> list[int]:
    """A maximum matching of the bipartite ``graph`` (left vertex -> right neighbours): each
    left vertex's partner, or -1. O(E √V)."""
    partner = [-1] * len(graph)
    owner = [-1] * right
    while True:
        layer = [-1] * len(graph)
        queue = deque(u for u in range(len(graph)) if partner[u] < 0)
        for u in queue:
            layer[u] = 0
        free_reached = False
        while queue:
            u = queue.popleft()
            for v in graph[u]:
                w = owner[v]
                if w < 0:
                    free_reached = True
                elif layer[w] < 0:
                    layer[w] = layer[u] + 1
                    queue.append(w)
        if not free_reached:
            return partner
        cursor = [0] * len(graph)
        for root in range(len(graph)):
            if partner[root] < 0:
                _augment(root, graph, partner, owner, layer, cursor)


def _augment(
    root: int,
    graph: Sequence[Sequence[int]],
    partner: list[int],
    owner: list[int],
    layer: list[int],
    cursor: list[int],
) -> None:
    """One augmenting path from ``root`` along the BFS layers (iterative: paths may be
    longer than Python's recursion limit)."""
    stack = [root]
    via: list[int] = []  # via[k]: the right vertex taken from stack[k]
    while stack:
        u = stack[-1]
        edges = graph[u]
        while cursor[u] < len(edges):
            v = edges[cursor[u]]
            cursor[u] += 1
            w = owner[v]
            if w < 0:
                via.append(v)
                for a, b in zip(stack, via, strict=True):
                    partner[a] = b
                    owner[b] = a
                return
            if layer[w] == layer[u] + 1:
                via.append(v)
                stack.append(w)
                break
        else:
            layer[u] = -1  # a dead end for the rest of this phase
            stack.pop()
            if via:
                via.pop()


def _pos(entry: Entry) -> int:
    return entry.pos
