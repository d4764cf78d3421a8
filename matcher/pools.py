"""The unmatched sets ``u1`` and ``u2`` of Algorithm DiffStream, one structure per form.

Every pool holds the unmatched events of one side, in stream order, and answers the two
questions of the algorithm's loop (lines 7 and 11):

* ``blocker(x)``: an event of this pool that ``x`` depends on, or ``None``. Asked of the
  pool of ``x``'s own side it tells whether ``x`` would be minimal; asked of the other side's
  pool it tells whether ``x`` proves the streams distinguishable.
* ``take_match(x)``: remove and return the earliest *minimal* event of this pool that is
  equal to ``x``, or ``None``.

``ordered()`` is ``KeyedPool`` with a single key.

Minimality needs only direct dependence: the matched events form prefixes of both streams
(invariants I1, I2), so every dependence chain into an unmatched event runs through unmatched
events, and its last link is direct.

Costs per event: ``KeyedPool`` and ``MultisetPool`` O(1) (a bucket scan
under tolerances), ``TypedPool`` O(number of types), ``GeneralPool`` O(unmatched).

Under a tolerance ``take_match`` takes the first equal minimal event it finds: greedy, which
only an equivalence makes safe. ``KeyedPool`` stays exact (a key's head is the only event
an order-keeping pairing can take); for the other pools the loops keep every event and
``matcher.pairing`` decides at the end.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from matcher.equality import Equality, Event


class Entry:
    """One unmatched event: its position in its own stream and its routing key."""

    __slots__ = ("alive", "blockers", "counted", "event", "pos", "route")

    def __init__(self, pos: int, event: Event, route: Any) -> None:
        self.pos = pos
        self.event = event
        self.route = route
        self.alive = True
        self.blockers = 0
        self.counted: object = None  # the GeneralPool that counted ``blockers``

    def __repr__(self) -> str:
        return f"Entry({self.pos}, {dict(self.event)!r})"


class Pool:
    """The contract every pool keeps (see the module docstring)."""

    def blocker(self, x: Entry) -> Entry | None:
        raise NotImplementedError

    def take_match(self, x: Entry) -> Entry | None:
        raise NotImplementedError

    def add(self, x: Entry) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def entries(self) -> list[Entry]:
        """The unmatched events in stream order."""
        raise NotImplementedError


class KeyedPool(Pool):
    """``by_key(...)``: one queue per key; a key's head is its only minimal event.

    ``queues`` and ``size`` are public so that the matcher's fast path can work on them
    directly (``matcher.online``); every entry's route is its queue's key.
    """

    def __init__(self, equality: Equality) -> None:
        self.queues: dict[Hashable, deque[Entry]] = {}
        self._equal = equality.equal
        self.size = 0

    def blocker(self, x: Entry) -> Entry | None:
        queue = self.queues.get(x.route)
        return queue[0] if queue else None

    def take_match(self, x: Entry) -> Entry | None:
        queue = self.queues.get(x.route)
        if queue and self._equal(queue[0].event, x.event):
            head = queue.popleft()
            if not queue:
                del self.queues[x.route]
            self.size -= 1
            return head
        return None

    def add(self, x: Entry) -> None:
        queue = self.queues.get(x.route)
        if queue is None:
            self.queues[x.route] = deque((x,))
        else:
            queue.append(x)
        self.size += 1

    def __len__(self) -> int:
        return self.size

    def entries(self) -> list[Entry]:
        return sorted((e for q in self.queues.values() for e in q), key=_by_pos)


class MultisetPool(Pool):
    """``unordered()``: nothing is dependent; equal events share a hash bucket.

    The route of an entry is ``equality.canonical(event)``; ``None`` (a user equality
    function) puts everything in one bucket that is searched linearly.
    """

    def __init__(self, equality: Equality) -> None:
        self._buckets: dict[Hashable, list[Entry]] = {}
        self._equal = equality.equal
        self._size = 0

    def blocker(self, x: Entry) -> Entry | None:
        return None

    def take_match(self, x: Entry) -> Entry | None:
        bucket = self._buckets.get(x.route)
        if not bucket:
            return None
        equal, event = self._equal, x.event
        for i, y in enumerate(bucket):
            if equal(y.event, event):
                del bucket[i]
                if not bucket:
                    del self._buckets[x.route]
                self._size -= 1
                return y
        return None

    def add(self, x: Entry) -> None:
        self._buckets.setdefault(x.route, []).append(x)
        self._size += 1

    def __len__(self) -> int:
        return self._size

    def entries(self) -> list[Entry]:
        return sorted((e for b in self._buckets.values() for e in b), key=_by_pos)


@dataclass(frozen=True, slots=True)
class TypeRule:
    """How the events of one type depend on others (built by ``matcher.dependence.typed``).

    ``self_dependent``: events of this type are ordered among themselves (per key when the
    type is keyed); ``neighbours``: other types this one depends on, each with whether the
    dependence holds only between events of the same key.
    """

    name: str
    keyed: bool
    self_dependent: bool
    neighbours: tuple[tuple[str, bool], ...]


class TypedPool(Pool):
    """Typed events with a dependence graph between types (barriers are the type that
    depends on everything). The route of an entry is ``(type, key)``.

    Each self-dependent ``(type, key)`` has a queue whose head is its candidate minimal
    event; other types are multisets bucketed by canonical value. Per type (and per
    ``(type, key)``) an ordered list with lazy deletion gives the earliest live event, which
    answers "does anything of that type come before?" in O(1) amortised.
    """

    def __init__(
        self, equality: Equality, rules: Sequence[TypeRule], canonical: Callable[[Event], Any]
    ) -> None:
        self._rules = {rule.name: rule for rule in rules}
        self._equal = equality.equal
        self._canonical = canonical
        self._chains: dict[Hashable, deque[Entry]] = {}
        self._buckets: dict[Hashable, list[Entry]] = {}
        self._by_type: dict[str, deque[Entry]] = {rule.name: deque() for rule in rules}
        self._by_type_key: dict[Hashable, deque[Entry]] = {}
        self._size = 0
        self._dead = 0

    @staticmethod
    def _first_alive(queue: deque[Entry] | None) -> Entry | None:
        while queue and not queue[0].alive:
            queue.popleft()
        return queue[0] if queue else None

    def _earliest_neighbour(
        self, kind: str, key: Any, before: int | None, include_self: bool
    ) -> Entry | None:
        best: Entry | None = None
        rule = self._rules[kind]
        candidates: list[Entry | None] = []
        if include_self and rule.self_dependent:
            candidates.append(self._first_alive(self._chains.get((kind, key))))
        for other, same_key in rule.neighbours:
            if same_key:
                candidates.append(self._first_alive(self._by_type_key.get((other, key))))
            else:
                candidates.append(self._first_alive(self._by_type.get(other)))
        for entry in candidates:
            if (
                entry is not None
                and (before is None or entry.pos < before)
                and (best is None or entry.pos < best.pos)
            ):
                best = entry
        return best

    def blocker(self, x: Entry) -> Entry | None:
        kind, key = x.route
        return self._earliest_neighbour(kind, key, None, include_self=True)

    def take_match(self, x: Entry) -> Entry | None:
        kind, key = x.route
        rule = self._rules[kind]
        found: Entry | None = None
        if rule.self_dependent:
            head = self._first_alive(self._chains.get((kind, key)))
            if head is not None and self._equal(head.event, x.event):
                found = head
        else:
            for y in self._buckets.get((kind, self._canonical(x.event)), ()):
                if y.alive and self._equal(y.event, x.event):
                    found = y
                    break
        if found is None:
            return None
        # ``found`` heads its own chain; it is minimal unless a neighbour type comes first.
        if self._earliest_neighbour(kind, key, found.pos, include_self=False) is not None:
            return None
        self._remove(found)
        return found

    def _remove(self, entry: Entry) -> None:
        entry.alive = False
        self._size -= 1
        kind = entry.route[0]
        if not self._rules[kind].self_dependent:
            bucket = self._buckets[(kind, self._canonical(entry.event))]
            bucket.remove(entry)
        # Dead entries wait in the ordered lists until they reach a head; compacting when
        # they outnumber the living keeps memory proportional to the unmatched events.
        self._dead += 1
        if self._dead > 2 * self._size + 64:
            self._compact()

    def _compact(self) -> None:
        for by_type in self._by_type.values():
            _keep_alive(by_type)  # types stay listed: ``_earliest_neighbour`` looks them up
        for index in (self._chains, self._by_type_key):
            for name in list(index):
                if not _keep_alive(index[name]):
                    del index[name]
        self._dead = 0

    def add(self, x: Entry) -> None:
        kind, key = x.route
        if self._rules[kind].self_dependent:
            self._chains.setdefault((kind, key), deque()).append(x)
        else:
            self._buckets.setdefault((kind, self._canonical(x.event)), []).append(x)
        self._by_type[kind].append(x)
        if self._rules[kind].keyed:
            self._by_type_key.setdefault((kind, key), deque()).append(x)
        self._size += 1

    def __len__(self) -> int:
        return self._size

    def entries(self) -> list[Entry]:
        return sorted((e for q in self._by_type.values() for e in q if e.alive), key=_by_pos)


class GeneralPool(Pool):
    """Any dependence given as a function: a list in stream order; each entry counts the
    earlier entries it depends on (zero means minimal). O(unmatched) per event.

    ``blocker`` asked of an entry's own pool counts all its blockers in the same scan and
    leaves the count on the entry, so that ``add`` need not scan again.
    """

    def __init__(self, equality: Equality, depends: Callable[[Event, Event], bool]) -> None:
        self._entries: list[Entry] = []
        self._equal = equality.equal
        self._depends = depends

    def blocker(self, x: Entry) -> Entry | None:
        depends, event = self._depends, x.event
        first = None
        count = 0
        for y in self._entries:
            if depends(y.event, event):
                count += 1
                if first is None:
                    first = y
        x.blockers = count
        x.counted = self
        return first

    def take_match(self, x: Entry) -> Entry | None:
        equal, event = self._equal, x.event
        entries = self._entries
        for i, y in enumerate(entries):
            if y.blockers == 0 and equal(y.event, event):
                del entries[i]
                depends = self._depends
                for later in entries[i:]:
                    if later.blockers and depends(y.event, later.event):
                        later.blockers -= 1
                return y
        return None

    def add(self, x: Entry) -> None:
        if x.counted is not self:
            self.blocker(x)
        self._entries.append(x)

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[Entry]:
        return list(self._entries)


def _keep_alive(queue: deque[Entry]) -> int:
    """Drop the dead entries of ``queue`` in place; returns how many live ones remain."""
    alive = [e for e in queue if e.alive]
    queue.clear()
    queue.extend(alive)
    return len(alive)


def _by_pos(entry: Entry) -> int:
    return entry.pos


def iter_events(entries: Sequence[Entry]) -> Iterator[Event]:
    return (e.event for e in entries)
