"""The core's online matching loop over events that carry their global stream positions.

``StreamMatcher`` numbers events itself, from 0, in the order they are pushed; a partition
of a Spark stream holds events from all over the stream. ``PoolLoop`` is the same loop
(``StreamMatcher._push``: the core's pools, the same calls in the same order, the same
resynchronisation of per-key queues after a divergence) but each event brings its
position, so that what is left unmatched can be classified together with what the other
partitions left, exactly as the core would classify one whole-stream run.

Events must be pushed in the core's fair interleaving: by position, the reference's event
before the candidate's at the same position (``compare`` alternates the two streams).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import cast

from matcher.classify import Classifier
from matcher.dependence import Dependence
from matcher.equality import Equality, Event
from matcher.errors import InputError
from matcher.online import SIDES, resynchronise
from matcher.pairing import needs_pairing, settle
from matcher.pools import Entry, KeyedPool
from matcher.verdict import Divergence


class PoolLoop:
    """Match events pushed with ``push(side, pos, event)``; read the outcome afterwards.

    ``lengths`` are the whole streams' lengths, for the positions a classification gives
    to events missing at the end of a stream.
    """

    def __init__(self, dependence: Dependence, equality: Equality, lengths: Sequence[int]):
        self._pools = (dependence.new_pool(equality), dependence.new_pool(equality))
        self._route = dependence.route(equality)
        self._description = dependence.describe()
        self._classifier = Classifier(dependence, equality, list(lengths))
        self._resync_at: dict[Hashable, int] = {}
        self.matched = 0
        self.detected = False
        self.settled: list[Divergence] = []
        # As ``StreamMatcher``: under a tolerance, every event, for ``settle`` in ``leftovers``
        self._dependence, self._equality = dependence, equality
        self._seen: tuple[list[Entry], list[Entry]] | None = None
        if needs_pairing(equality, self._pools[0]):
            self._seen = ([], [])
        self.warnings: list[str] = []

    def push(self, side: int, pos: int, event: Event) -> None:
        try:
            route = self._route(event)
        except KeyError as exc:
            raise InputError(
                f"{SIDES[side]} event #{pos} lacks column {exc.args[0]!r} "
                f"that the dependence {self._description} reads"
            ) from exc
        except InputError as exc:
            raise InputError(f"{SIDES[side]} event #{pos}: {exc}") from exc
        x = Entry(pos, event, route)
        if self._seen is not None:
            self._seen[side].append(x)
        own, other = self._pools[side], self._pools[1 - side]
        if own.blocker(x) is None and other.take_match(x) is not None:
            self.matched += 1
            return
        if not self.detected and self._seen is None and other.blocker(x) is not None:
            self.detected = True
        own.add(x)
        if self.detected and isinstance(own, KeyedPool):
            self._resynchronise(route)

    def push_all(self, events: Iterable[tuple[int, int, Event]]) -> None:
        """Push ``(pos, side, event)`` triples, which must come in interleaving order."""
        for pos, side, event in events:
            self.push(side, pos, event)

    def leftovers(self) -> tuple[list[Entry], list[Entry]]:
        """The unmatched events of each side, in stream order (under a tolerance, once the
        pairing is decided: ``matcher.pairing``; call it once, at the end)."""
        left = self._pools[0].entries(), self._pools[1].entries()
        if self._seen is None:
            return left
        settled = settle(self._seen, left, self._dependence, self._equality)
        self.matched = len(self._seen[0]) - len(settled.left[0])
        self.warnings.extend([settled.warning] if settled.warning else [])
        return settled.left

    def _resynchronise(self, key: Hashable) -> None:
        pools = cast("tuple[KeyedPool, KeyedPool]", self._pools)
        settled, matched = resynchronise(pools, key, self._classifier, self._resync_at)
        self.settled.extend(settled)
        self.matched += matched


def interleaving_order(item: tuple[int, int, Event]) -> tuple[int, int]:
    """Sort key of ``(pos, side, event)``: the order ``matcher.compare`` pushes events in."""
    return item[0], item[1]
