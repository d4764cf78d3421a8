"""One key's records explained with the fewest faults: the tail rule of the sequence-window
validator (``matcher.windows`` states the rules; this module is how they are applied).

A record whose tail is the next update and whose window is the canonical one, or the
previous one with the tail pushed, is *in line*: it is taken at once, and a key whose
records are all in line costs a few integers and the last window. Any other record is an
*anomaly*, and what it is depends on what follows: ``[47, 48, 49, 5000]`` followed by
``[48, 49, 50, 51]`` is one corrupted record, followed by ``[48, 49, 5000, 5001]`` a loss of
updates 50..4999. So the key holds an anomaly back until ``HORIZON`` more of its records
are read (or the output ends), then weighs three readings of it:

* ``AS_READ``: the tail means what it says (a jump is a loss, a tail shown before a
  repeat, a tail a jump skipped a late arrival; ``matcher.windows``'s rules);
* ``EXTRA``: the record stands for no update of its own, the key goes on as if it were not
  there: a duplicate, a record that came early, or a corrupted record inserted;
* ``STANDS``: the record stands for the key's next update, its tail corrupted.

Each reading is played out on a copy of the key over the records held back and scored by
the faults it leaves: the violations it reports, and the losses, early records and replays
still open at the end of the horizon (each will be one violation), or with the output
ended, everything the key's end adds. Later anomalies among the records held back are
weighed the same way inside the copy (the first ``WEIGHED``, one level down, so two
faults side by side are told apart), the others read as they are. The fewest faults win;
a tie goes to the reading listed first, so a tail is believed unless what follows
contradicts it. The next anomaly is then weighed the same way.

A copy shares the key's jumps until it changes one, and counts faults without wording
them; still, weighing is rationed: each record read gives its key ``CREDIT`` records to
take in copies, so a garbled key (every record an anomaly) is weighed less deeply, then
read as its tails say, and a check costs at most a few times a clean one.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Final, Literal

from matcher.verdict import Kind
from matcher.window_checks import (
    LARGEST_UPDATE,
    MISSING,
    WINDOW,
    canonical,
    continues,
    is_canonical,
    same,
    shown,
    updates,
    window_fault,
)
from matcher.window_records import Early, Record, Report, Rules, Violation
from matcher.window_tails import TOKENS, KeyTails

#: the records of a key held back after an anomaly before it is decided: enough to see a
#: state fault carried out of the ring (``WINDOW - 1`` records) and the sequence resume
HORIZON: Final = WINDOW + 2

#: the records a key may take in trials: at first, and more for each record read. A
#: decision weighed one level deep costs about ``DEEP`` (three readings, each played out
#: over the records held back, two anomalies among them weighed in turn), read as they
#: are ``SHALLOW``; so an output with faults here and there is weighed in full, and a garbled
#: one costs at most ``CREDIT`` times as much as a clean one.
FIRST_CREDIT: Final = 600
CREDIT: Final = 8
DEEP: Final = 150
SHALLOW: Final = 3 * (HORIZON + 1)

#: the anomalies among the records held back that a trial weighs in turn (the rest are read
#: as they are): two faults side by side are weighed together, a garbled run stays cheap
WEIGHED: Final = 2

#: how a window fits the key: ``KeyExplainer._fit``
EXACT, CARRIED, FAULT = 0, 1, 2

Reading = Literal["as read", "extra", "stands"]
AS_READ: Final[Reading] = "as read"
EXTRA: Final[Reading] = "extra"
STANDS: Final[Reading] = "stands"


class KeyExplainer(KeyTails):
    """One key: its tail state, and the records held back after an anomaly."""

    def __init__(self, key: str, rules: Rules, report: Report) -> None:
        super().__init__(key, rules, report)
        self.held: list[Record] = []
        self.credit = FIRST_CREDIT  # records taken in trials this key may still spend
        self.steps = [0]  # records taken, trials included: shared with the key's trials
        self._fitted: tuple[Record | None, int] = (None, FAULT)

    # --- reading records --------------------------------------------------------------------

    def feed(self, record: Record) -> None:
        self.credit += CREDIT
        if self.held:
            self.held.append(record)
            if len(self.held) > HORIZON:
                self._decide(final=False)
        elif self._in_line(record):
            self.take(record, AS_READ, ())
        else:
            self.held.append(record)

    def flush(self) -> None:
        """The output has ended: decide every record held back."""
        while self.held:
            self._decide(final=True)

    def _in_line(self, record: Record) -> bool:
        tail = record.tail
        if tail is None or tail != self.last + 1 or self._fit(record) == FAULT:
            return False
        if tail == self.high + 1:
            return True
        replay = self.replay
        return replay is not None and tail <= replay.target and self.missing(tail) is None

    def _fit(self, record: Record) -> int:
        """``EXACT``: the canonical window; ``CARRIED``: the previous one (or the last extra
        record's) with the tail pushed; ``FAULT``: neither, or no tail. The last answer is
        kept: a record in line is asked twice."""
        if self._fitted[0] is record:
            return self._fitted[1]
        window, tail = record.window, record.tail
        if tail is None:
            fit = FAULT
        elif is_canonical(window, tail):
            fit = EXACT
        elif continues(self.ring, self.last, window, tail) or continues(
            self.alt_ring, self.last, window, tail
        ):
            fit = CARRIED
        else:
            fit = FAULT
        self._fitted = (record, fit)
        return fit

    # --- choosing a reading -----------------------------------------------------------------

    def _decide(self, *, final: bool) -> None:
        """Take the first record held back, read as what leaves the fewest faults, weighed as
        deep as the key's credit affords: a key whose records are mostly out of line gets
        cheaper weighing, then none (its records read as they are)."""
        record, rest = self.held[0], self.held[1:]
        self.held = []
        before = self.steps[0]
        if self.credit >= DEEP:
            reading = self._reading(record, rest, final=final, depth=1)
        elif self.credit >= SHALLOW:
            reading = self._reading(record, rest, final=final, depth=0)
        else:
            reading = self._guess(record, rest)
        self.credit -= self.steps[0] - before
        self.take(record, reading, rest)
        for later in rest:
            self.credit -= CREDIT  # fed again: not a new record
            self.feed(later)

    def _reading(
        self, record: Record, rest: Sequence[Record], *, final: bool, depth: int = 1
    ) -> Reading:
        """The reading of ``record`` that leaves the fewest faults, then, unless its window
        is a whole one (the record of its tail's update), the fewest updates they count:
        a last record ``[997, 998, 999, 487228]`` is one corrupted tail, not 486,228 losses.
        Anomalies among ``rest`` are weighed too, ``depth`` levels down. On a tie, the tail
        is believed; then a window whose ring goes on from the previous one stands for the
        next update, any other is extra."""
        tail = record.tail
        whole = tail is not None and is_canonical(record.window, tail)
        readings: tuple[Reading, ...]
        if tail is None or tail == self.last + 1:
            readings = (AS_READ, EXTRA)
        else:
            late = tail <= self.high and self.missing(tail) is not None
            readings = (AS_READ,) if late else (AS_READ, EXTRA)
            if not whole:  # a whole window is no corrupted tail
                ring = self.ring
                follows = ring is not None and same(record.window[:-1], list(ring[1:]))
                readings = (AS_READ, STANDS, *readings[1:]) if follows else (*readings, STANDS)
        if len(readings) == 1:
            return readings[0]
        costs = [self._faults(record, rest, r, final=final, depth=depth) for r in readings]
        if whole:
            costs = [(faults, 0) for faults, _ in costs]
        return readings[costs.index(min(costs))]

    def _guess(self, record: Record, rest: Sequence[Record]) -> Reading:
        """A reading without weighing, from the next record alone: the key going on from
        ``last + 2`` after it, a corrupted tail; from ``last + 1``, an extra record."""
        after = rest[0].tail if rest else None
        tail = record.tail
        if after is None or tail is None or tail == self.last + 1:
            return AS_READ
        if after == self.last + 2 and not is_canonical(record.window, tail):
            return STANDS
        late = tail <= self.high and self.missing(tail) is not None
        return EXTRA if after == self.last + 1 and not late else AS_READ

    def _faults(
        self, record: Record, rest: Sequence[Record], reading: Reading, *, final: bool, depth: int
    ) -> tuple[int, int]:
        """The faults ``reading`` leaves over the records held back, played out on a copy,
        and the updates they count."""
        reported: list[Violation] = []
        trial = self._copy(lambda violation, rule: reported.append(violation))
        trial.take(record, reading, rest)
        weighed = 0
        for index, later in enumerate(rest):
            after = rest[index + 1 :]
            if trial._in_line(later):
                chosen = AS_READ
            elif depth > 0 and weighed < WEIGHED:
                chosen = trial._reading(later, after, final=final, depth=depth - 1)
                weighed += 1
            else:
                chosen = trial._guess(later, after)
            trial.take(later, chosen, after)
        if final:
            trial.close()
            return len(reported), sum(violation.count for violation in reported)
        counted = sum(violation.count for violation in reported)
        return len(reported) + trial._open_faults(), counted + trial.unshown

    def _open_faults(self) -> int:
        """The violations the copy's key still holds: each open jump, record read as early,
        late record, and replay not accepted yet will be one."""
        replay = self.replay
        pending = replay is not None and not (self.rules.at_least_once and replay.restored)
        return self.open_jumps + len(self.early) + self.pending_late + pending

    def _copy(self, report: Report) -> KeyExplainer:
        trial = copy.copy(self)
        trial.report, trial.trial = report, True
        trial.held = []
        trial.token = next(TOKENS)  # its jumps are this key's until it changes one
        trial.jumps = list(self.jumps)
        trial.starts = list(self.starts)
        trial.early = dict(self.early)
        if self.replay is not None:
            trial.replay = copy.copy(self.replay)
            trial.replay.others = set(self.replay.others)
        return trial

    # --- taking a record --------------------------------------------------------------------

    def take(self, record: Record, reading: Reading, rest: Sequence[Record]) -> None:
        """Apply one record, read as ``reading``; ``rest`` are the key's records after it."""
        self.steps[0] += 1
        self.records += 1
        if self.first is None:
            self.first = record
        before = self.position
        garbled = False
        if reading == EXTRA:
            garbled = self._extra(record, rest)
        elif reading == STANDS:
            self._stands(record, rest)
        else:
            self._as_read(record, rest, before)
        self.garbled = self.garbled + 1 if garbled else 0
        if garbled or reading == STANDS or (reading == AS_READ and record.tail is None):
            self.stood += 1
        window = record.window
        fits = isinstance(window, list) and len(window) == WINDOW
        if reading == EXTRA:
            self.alt_ring = tuple(window) if fits else None
        else:
            self.ring, self.alt_ring = (tuple(window) if fits else None), None
        self.position, self.window = record.position, window

    def _as_read(self, record: Record, rest: Sequence[Record], before: int) -> None:
        tail = record.tail
        fit = self._fit(record)
        carried = fit == CARRIED
        if fit == FAULT:  # a trial counts faults: what they are does not matter
            kind: Kind = "corruption"
            detail = ""
            if not self.trial:
                kind, detail = self._window_fault(record, rest)
            self._add(kind, record, detail, rule=1)
        if tail is None:
            self._unreadable()
        else:
            self._tail(record, before, restored=not carried)

    def _window_fault(self, record: Record, rest: Sequence[Record]) -> tuple[Kind, str]:
        window, tail = record.window, record.tail
        wanted = f"expected {shown(canonical(self.last + 1 if tail is None else tail))}"
        if window is MISSING:
            return "corruption", f'the record has no "window" field ({wanted})'
        if not isinstance(window, list):
            return "corruption", f"the window is {shown(window)}, not a list ({wanted})"
        if len(window) != WINDOW:
            return "corruption", f"the window has {len(window)} values, not {WINDOW} ({wanted})"
        if tail is None:
            expected = self.rules.expected
            end = LARGEST_UPDATE if expected is None else expected
            number = isinstance(window[-1], int) and not isinstance(window[-1], bool)
            beyond = f", which ends at {end}" if number and window[-1] > end else ""
            text = f"the tail {shown(window[-1])} is not in the sequence{beyond}"
            return "corruption", f"{text} ({wanted})"
        return window_fault(
            window, self.ring, tail, self.rules.expected, resumes=self._resumes(record, rest)
        )

    def _resumes(self, record: Record, rest: Sequence[Record]) -> bool:
        """The key's next record goes on from the window before ``record``, not from it."""
        if not rest or record.tail is None or rest[0].tail != record.tail + 1:
            return False
        after = rest[0]
        assert after.tail is not None
        if continues(tuple(record.window), record.tail, after.window, after.tail):
            return False
        return is_canonical(after.window, after.tail) or continues(
            self.ring, self.last, after.window, after.tail
        )

    def _extra(self, record: Record, rest: Sequence[Record]) -> bool:
        """The record stands for no update: the key goes on as if it were not there. True
        if it is reported as a corrupted record (``KeyTails.garbled``)."""
        tail, expected = record.tail, self.last + 1
        if tail is not None and tail <= self.high and self.missing(tail) is None:
            back = (
                f"{tail} repeats" if tail == self.last else f"goes back from {self.last} to {tail}"
            )
            detail = f"tail {back}: update {tail} shows again (expected {expected})"
            self._add("duplication", record, detail)
        elif tail is not None and tail > expected and any(r.tail == tail for r in rest):
            detail = (
                f"tail {tail} comes before {updates(expected, tail - 1)} and shows again in "
                f"its place: update {tail} shows twice (expected {expected})"
            )
            self._add("duplication", record, detail)
        elif (
            tail is not None
            and tail > expected
            and tail not in self.early
            and is_canonical(record.window, tail)
        ):
            self.early[tail] = Early(record.position, record.window, expected)
        else:
            detail = (
                f"the record is out of line: the key's records around it go on without it "
                f"(expected {shown(canonical(expected))} next)"
            )
            self._add("corruption", record, detail)
            return True
        return False

    def _out_of_line(self, record: Record, before: int, base: int) -> bool:
        """A jump taken back (``KeyTails._take_back``): its record came early (a whole
        window of an update still to come; False), or is a corrupted record (True) that
        stands for one of the updates below ``base`` the key missed, if any."""
        tail = record.tail
        assert tail is not None
        if is_canonical(record.window, tail) and tail > base and tail not in self.early:
            self.early[tail] = Early(record.position, record.window, min(before + 1, base))
            return False
        detail = (
            f"tail {tail} is out of line: the key goes on from {base} by +1 after it, below "
            f"it, so it is a corrupted record (expected {shown(canonical(min(before + 1, base)))})"
        )
        self._add("corruption", record, detail)
        return True

    def _stands(self, record: Record, rest: Sequence[Record]) -> None:
        """The record stands for the key's next update: its tail is corrupted."""
        expected = self.last + 1
        if rest and rest[0].tail == expected + 1:
            why = f"the records after it go on from {expected + 1}"
        else:
            why = "the records around it do not go on from it"
        detail = (
            f"tail {record.tail} is out of line: {why}, so it stands for update {expected} "
            f"(expected {shown(canonical(expected))})"
        )
        self._add("corruption", record, detail)
        self._unreadable()
