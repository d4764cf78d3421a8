"""The values the sequence-window validator works with: a record as read, a violation
with its witness, and what a key's tail rule keeps open (jumps, replays, records read as
early). ``matcher.windows`` states the rules; ``matcher.window_tails`` applies them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from matcher.verdict import Kind
from matcher.window_checks import WINDOW, in_sequence, json_value


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


#: reports a violation; the int orders violations at one position (0 before 1 before 2)
Report = Callable[[Violation, int], None]


@dataclass(frozen=True, slots=True)
class Rules:
    """The options of a check: every key reads 1..``expected``; replays are accepted."""

    expected: int | None
    at_least_once: bool


class Record(NamedTuple):
    """One record of a key: ``tail`` is None when the window's tail is not an update."""

    position: int
    window: Any
    tail: int | None


def tail_of(window: Any, expected: int | None) -> int | None:
    """The window's tail, if it is an update of the sequence (1..``expected``)."""
    if not isinstance(window, list) or len(window) != WINDOW:
        return None
    tail = window[-1]
    return tail if in_sequence(tail, expected) and tail > 0 else None


@dataclass(slots=True)
class Jump:
    """A tail jump, ``lo..hi`` missing: a loss once the output ends, minus the updates that
    show late, came early, or show under another key."""

    position: int
    window: Any
    start: int
    end: int
    lo: int
    hi: int
    after: int  # the position of the key's record before it (-1: none)
    owner: int  # the KeyTails that may change it in place (``KeyTails.token``)
    stood: int  # ``KeyTails.stood`` when it was made
    late: set[int] = field(default_factory=set)
    found: dict[int, str] = field(default_factory=dict)  # update -> where it showed
    #: the late records, reported when the output ends (dropped if the jump is taken back)
    lates: list[tuple[Record, str]] = field(default_factory=list)

    def holds(self, update: int) -> bool:
        return self.lo <= update <= self.hi and update not in self.late and update not in self.found

    @property
    def unshown(self) -> int:
        """The updates it skipped that have not shown."""
        return self.hi - self.lo + 1 - len(self.late) - len(self.found)

    @property
    def open(self) -> bool:
        return self.unshown > 0


@dataclass(slots=True)
class Replay:
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


@dataclass(frozen=True, slots=True)
class Early:
    """A record read as coming before its place (``EXTRA`` with its own canonical window):
    a reordering if the key skips its tail, a duplication if the tail shows again."""

    position: int
    window: Any
    expected: int  # the update the key expected instead


class Witness(Protocol):
    """What a violation points at: a record, or the record a jump, replay or early
    record began with, or the key's last record."""

    @property
    def position(self) -> int: ...

    @property
    def window(self) -> Any: ...
