"""The sequence-window validator: did a stateful job lose, duplicate, reorder or corrupt its
state across crashes? Decided from its output alone, and told with the fewest faults.

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

**The fewest faults.** A report says what a person would say looking at the windows: the
smallest set of faults that turns each key's records into its canonical sequence. One
window whose tail is corrupted (``[47, 48, 49, 5000]`` where ``[47, 48, 49, 50]`` belongs,
the key going on with ``[48, 49, 50, 51]``) is one corruption, not a loss of 4,950 updates
and 50 late arrivals. A record that breaks the sequence is therefore decided only once the
records of its key after it are read (up to ``HORIZON``, 6, or the end of the output): it
is read as its tail says, as a record that stands for no update of its own, or as the
key's next update with a corrupted tail, whichever leaves the fewest faults; on a tie, as
its tail says (``matcher.window_explain`` has the method). Weighing costs time, so it is
rationed per key: a key whose records are mostly out of line (a garbled output) is
weighed less, then read as its tails say, and costs at most a few times a clean one.
What one fault counts:

* a **loss**: one violation for each run of updates that never show, counting the updates,
  at the first record after them (or the key's last record, when the key stops short);
* a **duplication**: one violation per repeated record, or per rewind and the records that
  replay after it, counting the records, at the first repeated record;
* a **reordering**: one violation per record out of its place, counting 1, at that record:
  a record that arrives after later ones (two neighbours swapped: the later-read one), or
  one that arrives before earlier ones;
* a **corruption**: one violation per record, counting 1, at that record: a record whose
  values are not what belongs there, whose key is not a key, or a state fault first shown.

Rules, per key.

Tails (continuity: the tail after ``t`` is ``t + 1``; ``high`` is the highest tail seen):

* ``t == high + 1``: progress (also right after a late record, below).
* ``t > high + 1`` and the records after it go on from ``t``: **loss** of updates
  ``high+1 .. t-1``, one violation counting each update that never shows; one that shows
  later is a reordering instead, not also a loss.
* ``t > high + 1`` and the records after it go on from ``high + 1``: the record came
  early, a **reordering** (its update is not lost when the key skips it later; if it shows
  again in its place, the early record was a **duplication**); if its window is not the
  canonical one for ``t``, a **corruption** inserted into the output.
* any tail out of line, and the records after it go on from ``high + 2``: the record stands
  for update ``high + 1``, its tail corrupted: one **corruption**. Not when the window is
  the canonical one for its tail: a whole window is a record of that update, not a
  corrupted tail.
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
* A tie in faults goes to the fewest updates counted, unless the window is the canonical
  one for its tail: nothing follows a key's last record ``[997, 998, 999, 487228]``, and a
  loss of 486,228 updates and a corrupted tail are one fault each; it is the corrupted
  tail. A last record ``[487225, 487226, 487227, 487228]`` is a loss.

Windows (a window equal to the canonical one for its tail passes):

* not a list, not ``WINDOW`` values long, or a tail that is not a positive integer (a
  bool, float, string, zero, negative, or above ``expected``, else above ``LARGEST_UPDATE``,
  2**32: a value that size is garbage, not billions of lost updates): **corruption**; such a
  record stands for the key's next update, ``last + 1`` (or for no update, when the key
  goes on from ``last + 1`` after it).
* A window equal to the previous window of the key with this tail pushed on (or with
  ``last+1 .. t`` pushed, for a jump) adds no fault of its own: the fault is its
  predecessor's, already reported, or the tail's, judged above. So a fault in the state
  counts once, where it appears, not in every window that carries it.
* Otherwise the window shows a new fault, the first of, in this order of precedence:
  a value that is not in the sequence, or a zero after a nonzero: **corruption**; a window
  the key's next one does not carry, the next going on from the window before it (the
  record alone is out of line, the state was right): **corruption**; one value changed
  (``[47, 12, 49, 50]``, ``[47, 49, 49, 50]``): **corruption**; and, each ignored when the
  previous window showed it a place to the right: a value twice (``[2, 3, 3, 4]``):
  **duplication**; values out of order (``[1, 3, 2, 4]``): **reordering**; a gap between
  values (``[1, 2, 4, 5]``, and ``[2, 4, 5, 6]`` where ``[3, 4, 5, 6]`` belongs: the state
  dropped 3), or more leading zeros than the tail has (a reset, ``[0, 0, 0, 10]`` after
  ``[6, 7, 8, 9]``, and ``[0, 0, 0, 2]`` where ``[0, 0, 1, 2]`` belongs): **loss**; none of
  these, yet not what was expected: **corruption**. (A dropped update or a reset that
  changes one value only is one fault either way: it is read as the loss.)

Keys. A record whose key is missing, null or not a string is a corruption that belongs to
no key. A key with one record only is that record with its key corrupted when its window
is the canonical one for an update that another key skips right there (between that key's
records around it): one corruption, not counted among the keys. Either way the key that
skips the update shows no loss for it. (A key corrupted into another key's name reads as a
fault in each: every key reads the same sequence.) A value routed to another key's ring
(partition interference) is told by what it does to that ring: a repeat, a jump or a late
tail.

``counts`` counts updates (records) per kind: a jump over three updates is one violation
that counts 3. ``position`` is the 0-based index of the record in the whole output. Per-key
state is a few integers, the last window, the jumps and replays still open, and at most
``HORIZON + 1`` records held back after a record out of line.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from matcher.verdict import KINDS
from matcher.window_checks import LARGEST_UPDATE, MISSING, WINDOW, canonical, is_canonical, shown
from matcher.window_explain import HORIZON, KeyExplainer
from matcher.window_records import Record, Rules, Violation, tail_of

__all__ = [
    "DEFAULT_LIMIT",
    "HORIZON",
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
    checker = _Checker(Rules(expected, at_least_once), limit)
    for position, (key, window) in enumerate(records):
        checker.feed(position, key, window)
    return checker.finish()


class _Checker:
    def __init__(self, rules: Rules, limit: int) -> None:
        self.rules = rules
        self.limit = limit
        self.keys: dict[str, KeyExplainer] = {}
        self.records = 0
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.total = 0
        self._kept: list[tuple[int, int, int, Violation]] = []  # a max-heap, by negation
        self._made = 0
        #: records without a string key whose window is canonical: perhaps a corrupted key
        self._keyless: list[tuple[Any, Record]] = []

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
        record = Record(position, window, tail_of(window, self.rules.expected))
        if not isinstance(key, str):
            if _whole(record):
                self._keyless.append((key, record))
            else:
                self._no_key(key, record, None)
            return
        explainer = self.keys.get(key)
        if explainer is None:
            explainer = self.keys[key] = KeyExplainer(key, self.rules, self.add)
        explainer.feed(record)

    def _no_key(self, key: Any, record: Record, owner: str | None) -> None:
        detail = (
            'the record has no "key" field'
            if key is MISSING
            else f"the key {shown(key)} is not a string"
        )
        if owner is not None:
            detail += f"; its window is update {record.tail} of key {shown(owner)}, missing there"
        self.add(Violation("corruption", key, record.position, record.window, detail), 1)

    def finish(self) -> WindowsReport:
        for explainer in self.keys.values():
            explainer.flush()
        strays = self._corrupted_keys()
        for key, explainer in self.keys.items():
            if key not in strays:
                explainer.close()
        expected = self.rules.expected
        if expected is not None and self.records == 0:
            detail = f"the output has no records (expected every key to reach {expected})"
            self.add(Violation("loss", None, 0, None, detail), 2)
        kept = sorted(self._kept, reverse=True)
        return WindowsReport(
            records=self.records,
            keys=len(self.keys) - len(strays),
            counts=self.counts,
            violations=tuple(entry[3] for entry in kept),
            total_violations=self.total,
            at_least_once=self.rules.at_least_once,
            expected=expected,
            replayed=sum(explainer.replayed for explainer in self.keys.values()),
        )

    # --- corrupted keys ---------------------------------------------------------------------

    def _corrupted_keys(self) -> set[str]:
        """Records with a corrupted key, found where another key misses their update: report
        them, and return the keys that are only such a record."""
        suspects: list[tuple[Any, Record, str | None]] = [
            (key, record, None) for key, record in self._keyless
        ]
        for key, explainer in self.keys.items():
            first = explainer.first
            if explainer.records == 1 and first is not None and _whole(first):
                suspects.append((key, first, key))
        suspects.sort(key=lambda suspect: suspect[1].position)
        looked = suspects[:SUSPECTS]  # more is a garbled output, not a few corrupted keys
        ones = {stray for _, _, stray in suspects if stray is not None}  # they own nothing
        owners = _assign([self._places(record, ones) for _, record, _ in looked])
        owners += [None] * (len(suspects) - len(looked))
        strays: set[str] = set()
        for (key, record, stray), owner in zip(suspects, owners, strict=True):
            if owner is not None:
                self._give(owner, record, stray)
            if stray is None:
                self._no_key(key, record, owner)
            elif owner is not None:
                strays.add(stray)
                detail = (
                    f"the key {shown(stray)} has only this record, update {record.tail} of key "
                    f"{shown(owner)}, which that key misses here: the key is corrupted "
                    f"(expected key {shown(owner)})"
                )
                self.add(Violation("corruption", stray, record.position, record.window, detail), 1)
        return strays

    def _places(self, record: Record, single: set[str]) -> list[tuple[str, int]]:
        """The keys that miss ``record``'s update where it stands: skipped by a jump around
        it, or the key's next update after its last record, read before it. A key of one
        record only (``single``) owns nothing: it is a suspect itself."""
        update, position = record.tail, record.position
        assert update is not None
        places = []
        for key, explainer in self.keys.items():
            if key in single:
                continue
            jump = explainer.missing(update)
            skipped = jump is not None and jump.after < position < jump.position
            if skipped or (explainer.high == update - 1 and explainer.position < position):
                places.append((key, update))
        return places

    def _give(self, owner: str, record: Record, stray: str | None) -> None:
        """``owner``'s update, found in ``record``: not a loss of ``owner``."""
        explainer, update = self.keys[owner], record.tail
        assert update is not None
        jump = explainer.missing(update)
        if jump is not None:
            where = "under another key" if stray else "in a record without a key"
            explainer.cover(jump, update, where)
        else:
            explainer.high = explainer.last = update


def _whole(record: Record) -> bool:
    """The record's window is the canonical one for its tail."""
    return record.tail is not None and is_canonical(record.window, record.tail)


#: the records with a corrupted key looked for, at most
SUSPECTS: Final = 256


def _assign(places: list[list[tuple[str, int]]]) -> list[str | None]:
    """Each suspect's owner, one suspect per (key, update): a maximum bipartite matching
    (augmenting paths), so two corrupted keys of one update each find their own key."""
    taken: dict[tuple[str, int], int] = {}

    def place(suspect: int, seen: set[tuple[str, int]]) -> bool:
        for slot in places[suspect]:
            if slot in seen:
                continue
            seen.add(slot)
            if slot not in taken or place(taken[slot], seen):
                taken[slot] = suspect
                return True
        return False

    for suspect in range(len(places)):
        place(suspect, set())
    owners: list[str | None] = [None] * len(places)
    for (owner, _), suspect in taken.items():
        owners[suspect] = owner
    return owners
