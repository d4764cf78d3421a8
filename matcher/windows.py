"""The sequence-window validator: did a stateful job lose, duplicate, reorder or corrupt its
state across crashes? Decided from its output alone.

Wallaroo's error detector (Nisan Haramati, "Measuring Correctness of State in a Distributed
System", Wallaroo Labs blog, 2017-10-05, section "Sequence Window"): a job reads, per key,
the natural numbers 1..n in order; its state per key is a ring of the last ``WINDOW`` (4)
values, zeros at first; on every input it pushes the value into the ring and emits the
ring, oldest first. The window for tail ``t`` (the latest value) is therefore::

    [max(0, t-3), max(0, t-2), max(0, t-1), t]        [0, 0, 0, 1], [0, 0, 1, 2], ...

and any other window, or any break in the tails, shows that an update was lost,
duplicated, reordered or corrupted (``matcher.verdict.KINDS``). The job is killed and
restarted many times; the output is read as ``(key, window)`` records in reading order.

    report = check_windows([("k1", [0, 0, 0, 1]), ("k1", [0, 0, 1, 2])], expected=2)
    report.verdict                                  # 'pass'

Rules, per key. A record whose key is missing, null or not a string is a corruption that
belongs to no key.

Tails (continuity: the tail after ``t`` is ``t + 1``; ``high`` is the highest tail seen):

* ``t == high + 1``: progress (also right after a late record, below).
* ``t > high + 1``: **loss** of updates ``high+1 .. t-1``, one violation counting each
  update that never shows; one that shows later is a reordering instead, not also a loss.
* ``t <= high`` and ``t`` never shown: **reordering**, a later update came before it.
* ``t <= high`` and ``t`` shown before: a *rewind*. It and the records that follow it by
  +1 up to ``high`` form a replay: one **duplication** counting each repeated record.
  With ``at_least_once`` (a sink that may repeat what a restarted job replays) a replay is
  accepted, counted in ``replayed`` and not a violation, when it reaches ``high`` or
  another rewind interrupts it (a crash during recovery), and when its first window
  restores the state: not the latest ring with the update pushed onto it again. A replay
  cut short by a jump forward or by the end of the output is a duplication. A replay goes
  on by +1: with ``at_least_once``, a jump inside it to a tail it showed before (up to
  ``high``: ``1, 2, 3, 4, 5, 3, 5``) is a **loss** of the updates it skipped, and the
  replay goes on from there.
* With ``expected``: a key whose highest tail is below it is a **loss** of the updates
  it never reached (a key that never shows cannot be told); a tail above it is a
  corruption; an output with no records at all is a loss.

Windows (a window equal to the canonical one for its tail passes):

* not a list, not ``WINDOW`` values long, or a tail that is not a positive integer (a
  bool, float, string, zero, negative, or above ``expected``, else above ``LARGEST_UPDATE``,
  2**32: a value that size is garbage, not billions of lost updates): **corruption**; such a
  record stands for the key's next update, ``last + 1``.
* A window equal to the previous window of the key with this tail pushed on (or with
  ``last+1 .. t`` pushed, for a jump) adds no fault of its own: the fault is its
  predecessor's, already reported, or the tail's, judged above. So a fault in the state
  counts once, where it appears, not in every window that carries it.
* Otherwise the window shows a new fault; its facts, each ignored when the previous
  window showed the same one a place to the right, are, in this order of precedence:
  a value that is not in the sequence, or a zero after a nonzero: **corruption**; a
  value twice (``[2, 3, 3, 4]``): **duplication**; values out of order
  (``[1, 3, 2, 4]``): **reordering**; a gap between values (``[1, 2, 4, 5]``), or more
  leading zeros than the tail has (a reset, ``[0, 0, 0, 10]`` after ``[6, 7, 8, 9]``):
  **loss**; none of these, yet not what was expected: **corruption**.

Every key reads the same sequence, so a value routed to another key's ring (partition
interference) is told by what it does to that ring: a repeat, a jump or a late tail.

``counts`` counts updates (records) per kind: a jump over three updates is one violation
that counts 3. ``position`` is the 0-based index of the record in the whole output. Per-key
state is a few integers, the last window, and the jumps and replays still open.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from matcher.verdict import KINDS, Kind
from matcher.window_checks import (
    LARGEST_UPDATE,
    MISSING,
    WINDOW,
    canonical,
    continues,
    in_sequence,
    is_canonical,
    json_value,
    listed,
    shown,
    updates,
    verb,
    window_fault,
)

__all__ = [
    "DEFAULT_LIMIT",
    "LARGEST_UPDATE",
    "MISSING",
    "WINDOW",
    "Violation",
    "WindowsReport",
    "canonical",
    "check_windows",
]

DEFAULT_LIMIT: Final = 20


@dataclass(frozen=True, slots=True)
class Violation:
    """One fault, with its witness: the record where it shows, as read.

    ``count`` is the number of updates it stands for (a jump over two updates: 2; a
    replay of four records: 4); most violations count 1."""

    kind: Kind
    key: Any
    position: int
    window: Any
    detail: str
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": json_value(self.key),
            "position": self.position,
            "window": json_value(self.window),
            "detail": self.detail,
            "count": self.count,
        }


@dataclass(frozen=True, slots=True)
class WindowsReport:
    """The verdict on one output: ``counts`` per kind (all four present), the first
    ``limit`` violations in position order, and how many there were."""

    records: int
    keys: int
    counts: Mapping[str, int]
    violations: tuple[Violation, ...]
    total_violations: int
    at_least_once: bool = False
    expected: int | None = None
    #: records of accepted replays (``at_least_once`` only)
    replayed: int = 0

    def __post_init__(self) -> None:
        counts = {kind: self.counts.get(kind, 0) for kind in KINDS}
        object.__setattr__(self, "counts", MappingProxyType(counts))

    @property
    def passed(self) -> bool:
        return self.total_violations == 0

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "counts": dict(self.counts),
            "total_violations": self.total_violations,
            "violations": [v.to_dict() for v in self.violations],
            "records": self.records,
            "keys": self.keys,
            "expected": self.expected,
            "at_least_once": self.at_least_once,
            "replayed": self.replayed,
        }


def check_windows(
    records: Iterable[tuple[Any, Any]],
    *,
    expected: int | None = None,
    at_least_once: bool = False,
    limit: int = DEFAULT_LIMIT,
) -> WindowsReport:
    """Judge ``(key, window)`` records in reading order (see the module's rules)."""
    if expected is not None and (isinstance(expected, bool) or not 1 <= expected <= LARGEST_UPDATE):
        raise ValueError(
            f"expected must be a whole number from 1 to {LARGEST_UPDATE}, got {expected!r}"
        )
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit!r}")
    checker = _Checker(expected, at_least_once, limit)
    for position, (key, window) in enumerate(records):
        checker.feed(position, key, window)
    return checker.finish()


# --- per-key state --------------------------------------------------------------------------


@dataclass(slots=True)
class _Jump:
    """A tail jump, ``lo..hi`` missing: a loss once the output ends, minus late arrivals."""

    position: int
    window: Any
    start: int
    end: int
    lo: int
    hi: int
    late: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Replay:
    """A rewind and the records that follow it by +1, up to ``target``."""

    position: int
    window: Any
    start: int  # the tail it rewound to
    before: int  # the tail before the rewind
    target: int  # the highest tail when it began
    last: int
    restored: bool
    repeats: int = 1
    others: set[int] = field(default_factory=set)  # late or unreadable: not repeats


@dataclass(slots=True)
class _Key:
    last: int = 0
    high: int = 0
    ring: tuple[Any, ...] | None = (0,) * WINDOW  # the previous window; None: unreadable
    position: int = 0
    window: Any = None
    jumps: list[_Jump] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # each jump's lo, for bisect
    replay: _Replay | None = None

    def missing(self, tail: int) -> _Jump | None:
        """The jump that skipped ``tail``, while it has not shown since."""
        index = bisect.bisect_right(self.starts, tail) - 1
        if index < 0:
            return None
        jump = self.jumps[index]
        return jump if tail <= jump.hi and tail not in jump.late else None


# --- the checker ----------------------------------------------------------------------------


class _Checker:
    def __init__(self, expected: int | None, at_least_once: bool, limit: int) -> None:
        self.expected = expected
        self.at_least_once = at_least_once
        self.limit = limit
        self.keys: dict[str, _Key] = {}
        self.records = 0
        self.replayed = 0
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.total = 0
        self._kept: list[tuple[int, int, int, Violation]] = []  # a max-heap, by negation
        self._made = 0

    def add(self, violation: Violation, rule: int) -> None:
        """Count it; keep it while among the first ``limit`` by (position, rule, order)."""
        self.counts[violation.kind] += violation.count
        self.total += 1
        self._made += 1
        entry = (-violation.position, -rule, -self._made, violation)
        if len(self._kept) < self.limit:
            heapq.heappush(self._kept, entry)
        elif self._kept and entry[:3] > self._kept[0][:3]:
            heapq.heapreplace(self._kept, entry)

    def feed(self, position: int, key: Any, window: Any) -> None:
        self.records += 1
        if not isinstance(key, str):
            detail = (
                'the record has no "key" field'
                if key is MISSING
                else f"the key {shown(key)} is not a string"
            )
            self.add(Violation("corruption", key, position, window, detail), 1)
            return
        state = self.keys.setdefault(key, _Key())
        tail = self._tail_of(window)
        exact = tail is not None and is_canonical(window, tail)
        carried = tail is not None and not exact and continues(state.ring, state.last, window, tail)
        if not (exact or carried):
            kind, detail = self._window_fault(state, window, tail)
            self.add(Violation(kind, key, position, window, detail), 1)
        if tail is None:
            self._unreadable(state, key)
        else:
            self._tail(state, key, position, window, tail, restored=not carried)
        fits = isinstance(window, list) and len(window) == WINDOW
        state.ring = tuple(window) if fits else None
        state.position, state.window = position, window

    def _tail_of(self, window: Any) -> int | None:
        if not isinstance(window, list) or len(window) != WINDOW:
            return None
        tail = window[-1]
        return tail if in_sequence(tail, self.expected) and tail > 0 else None

    # --- the tail rule ----------------------------------------------------------------------

    def _tail(
        self, state: _Key, key: str, position: int, window: Any, tail: int, *, restored: bool
    ) -> None:
        replay = state.replay
        if replay is not None:
            if tail == state.last + 1 and tail <= replay.target:  # the replay goes on
                if self._arrives_late(state, key, position, window, tail):
                    replay.others.add(tail)
                else:
                    replay.repeats += 1
                state.last = replay.last = tail
                if tail == replay.target:
                    self._end_replay(state, key, cut=False)
                return
            if self.at_least_once and self._skips(state, key, position, window, tail):
                return
            rewind = tail <= state.high and state.missing(tail) is None  # a crash in recovery
            self._end_replay(state, key, cut=not rewind)
        if tail > state.high + 1:
            jump = _Jump(position, window, state.last, tail, state.high + 1, tail - 1)
            state.jumps.append(jump)
            state.starts.append(jump.lo)
        elif tail <= state.high and not self._arrives_late(state, key, position, window, tail):
            state.replay = _Replay(
                position, window, tail, state.last, state.high, tail, restored=restored
            )
            if tail == state.high:
                self._end_replay(state, key, cut=False)
        state.last = tail
        state.high = max(state.high, tail)

    def _skips(self, state: _Key, key: str, position: int, window: Any, tail: int) -> bool:
        """At least once, a replay that jumps forward to a tail it showed before, short of
        where it was: the updates it skipped are a **loss** (the replay goes on from there).

        Wallaroo's rule is that the next output follows from the last one; at-least-once
        delivery allows one exception, a rewind to where the state was restored, and
        nothing else: ``1, 2, 3, 4, 5, 3, 5`` replays 3, then loses 4."""
        replay = state.replay
        assert replay is not None
        if not (state.last + 1 < tail <= replay.target) or state.missing(tail) is not None:
            return False
        lost = tail - state.last - 1
        detail = (
            f"tail skips from {state.last} to {tail} inside a replay from {replay.start} "
            f"up to {replay.target}: {updates(state.last + 1, tail - 1)} never {verb(lost)} "
            f"again (expected {state.last + 1}); a replay goes on by +1"
        )
        self.add(Violation("loss", key, position, window, detail, lost), 0)
        replay.repeats += 1
        state.last = replay.last = tail
        if tail == replay.target:
            self._end_replay(state, key, cut=False)
        return True

    def _arrives_late(self, state: _Key, key: str, position: int, window: Any, tail: int) -> bool:
        """A tail that a jump skipped shows: a reordering (False: it was shown before)."""
        jump = state.missing(tail)
        if jump is None:
            return False
        jump.late.add(tail)
        detail = (
            f"tail {tail} comes after {state.high}: update {tail} arrives after a later "
            f"one (expected {tail} before {state.high})"
        )
        self.add(Violation("reordering", key, position, window, detail), 0)
        return True

    def _end_replay(self, state: _Key, key: str, *, cut: bool) -> None:
        replay, state.replay = state.replay, None
        if replay is None or replay.repeats == 0:
            return
        if self.at_least_once and replay.restored and not cut:
            self.replayed += replay.repeats
            return
        repeated = updates(replay.start, replay.last, replay.others)
        if replay.start == replay.before:
            detail = f"tail {replay.start} repeats: update {replay.start} shows again"
        elif replay.start < replay.before:
            detail = f"tail goes back from {replay.before} to {replay.start}: {repeated}"
            detail += f" {verb(replay.repeats)} again"
        else:  # after a late tail
            detail = f"tail {replay.start} follows {replay.before} but was shown before: {repeated}"
            detail += f" {verb(replay.repeats)} again"
        detail += f" (expected {replay.target + 1})"
        if self.at_least_once and not replay.restored:
            detail += "; not a replay: its window is the latest state with the update pushed again"
        elif self.at_least_once:
            detail += f"; not a replay: it stops at {replay.last} before {replay.target}"
        violation = Violation(
            "duplication", key, replay.position, replay.window, detail, replay.repeats
        )
        self.add(violation, 0)

    def _unreadable(self, state: _Key, key: str) -> None:
        """A record whose tail cannot be read stands for the key's next update."""
        state.last += 1
        state.high = max(state.high, state.last)
        replay = state.replay
        if replay is not None:
            replay.last = state.last
            replay.others.add(state.last)
            if state.last >= replay.target:
                self._end_replay(state, key, cut=False)

    # --- the window rule --------------------------------------------------------------------

    def _window_fault(self, state: _Key, window: Any, tail: int | None) -> tuple[Kind, str]:
        wanted = f"expected {shown(canonical(state.last + 1 if tail is None else tail))}"
        if window is MISSING:
            return "corruption", f'the record has no "window" field ({wanted})'
        if not isinstance(window, list):
            return "corruption", f"the window is {shown(window)}, not a list ({wanted})"
        if len(window) != WINDOW:
            return "corruption", f"the window has {len(window)} values, not {WINDOW} ({wanted})"
        if tail is None:
            end = LARGEST_UPDATE if self.expected is None else self.expected
            number = isinstance(window[-1], int) and not isinstance(window[-1], bool)
            beyond = f", which ends at {end}" if number and window[-1] > end else ""
            text = f"the tail {shown(window[-1])} is not in the sequence{beyond}"
            return "corruption", f"{text} ({wanted})"
        return window_fault(window, state.ring, tail, self.expected)

    def finish(self) -> WindowsReport:
        for key, state in self.keys.items():
            self._end_replay(state, key, cut=True)
            for jump in state.jumps:
                self._lost(key, jump)
            if self.expected is not None and state.high < self.expected:
                lost = self.expected - state.high
                detail = (
                    f"the key stops at {state.high}: {updates(state.high + 1, self.expected)} "
                    f"never {verb(lost)} (expected {self.expected})"
                )
                self.add(Violation("loss", key, state.position, state.window, detail, lost), 2)
        if self.expected is not None and self.records == 0:
            detail = f"the output has no records (expected every key to reach {self.expected})"
            self.add(Violation("loss", None, 0, None, detail), 2)
        kept = sorted(self._kept, reverse=True)
        return WindowsReport(
            records=self.records,
            keys=len(self.keys),
            counts=self.counts,
            violations=tuple(entry[3] for entry in kept),
            total_violations=self.total,
            at_least_once=self.at_least_once,
            expected=self.expected,
            replayed=self.replayed,
        )

    def _lost(self, key: str, jump: _Jump) -> None:
        """The jump's loss, once the output has ended: the updates that never showed."""
        lost = jump.hi - jump.lo + 1 - len(jump.late)
        if lost == 0:
            return
        missing = updates(jump.lo, jump.hi, jump.late)
        detail = f"tail jumps from {jump.start} to {jump.end}: {missing} never {verb(lost)}"
        if jump.late:
            detail += f" ({listed(jump.late)} {verb(len(jump.late))} later)"
        self.add(Violation("loss", key, jump.position, jump.window, detail, lost), 0)
