"""The tail rule of the sequence-window validator, per key: the state a key's records build
(the last and highest tails, the jumps still open, a replay under way, records read as
early) and what each tail does to it. ``matcher.windows`` states the rules;
``matcher.window_explain`` decides how each record is read before it comes here.

    tails = KeyTails("k", Rules(expected=None, at_least_once=False), report)
    tails.close()                                   # the faults only the end decides

A fault is reported through ``report`` as a ``Violation`` with its witness record; a loss
is known only at the end (a skipped update may still show), so jumps stay open until
``close``.
"""

from __future__ import annotations

import bisect
import copy
import itertools
from typing import Any

from matcher.verdict import Kind
from matcher.window_checks import WINDOW, listed, updates, verb
from matcher.window_records import Early, Jump, Record, Replay, Report, Rules, Violation, Witness

#: late records in a row, going on by +1, that take back the jumps above them made since
#: the key last went on in line: more than any reading weighs ahead (``HORIZON``)
RUN = WINDOW + 3

#: the tokens of ``KeyTails``: who may change a jump in place
TOKENS = itertools.count()


class KeyTails:
    """The state of one key and the tail rule, applied to records as they are read."""

    def __init__(self, key: str, rules: Rules, report: Report) -> None:
        self.key = key
        self.rules = rules
        self.report = report
        self.last = 0
        self.high = 0
        self.ring: tuple[Any, ...] | None = (0,) * WINDOW  # the previous window; None: unreadable
        self.alt_ring: tuple[Any, ...] | None = None  # the window of an extra record
        self.position = -1
        self.window: Any = None
        self.records = 0
        self.first: Record | None = None
        self.jumps: list[Jump] = []
        self.starts: list[int] = []  # each jump's lo, for bisect
        self.open_jumps = 0  # jumps with an update that has not shown
        self.pending_late = 0  # late records held by the jumps, not reported yet
        self.unshown = 0  # updates the open jumps skipped that have not shown
        self.progress = -1  # the position of the last record that went on in line
        self.garbled = 0  # corrupted records read as no update, in a row, just before now
        self.stood = 0  # records read as corrupted (standing for an update or for none)
        self.run = 0  # late records in a row going on by +1 (``_run``): from ``run_first``
        self.run_first: Record | None = None
        self.run_stood = 0  # ``stood`` when the run began
        self.run_last = -1  # the position of the run's last record
        self.token = next(TOKENS)  # a copy shares jumps until it changes one (``cover``)
        self.trial = False  # a copy that plays a reading out: it counts faults only
        self.replay: Replay | None = None
        self.early: dict[int, Early] = {}
        self.replayed = 0  # records of accepted replays

    def missing(self, tail: int) -> Jump | None:
        """The jump that skipped ``tail``, while it has not shown since."""
        index = bisect.bisect_right(self.starts, tail) - 1
        if index < 0:
            return None
        jump = self.jumps[index]
        return jump if jump.holds(tail) else None

    def cover(self, jump: Jump, update: int, where: str | None) -> Jump:
        """``update``, skipped by ``jump``, shows: late (``where`` None) or ``where``. The
        jump as this key holds it (a copy, the first time a copy of a key changes it)."""
        if jump.owner != self.token:  # shared with the key this one was copied from
            index = bisect.bisect_right(self.starts, jump.lo) - 1
            jump = self.jumps[index] = copy.copy(jump)
            jump.owner, jump.late, jump.found = self.token, set(jump.late), dict(jump.found)
            jump.lates = list(jump.lates)
        if where is None:
            jump.late.add(update)
        else:
            jump.found[update] = where
        self.open_jumps -= not jump.open
        self.unshown -= 1
        return jump

    def _add(
        self, kind: Kind, witness: Witness, detail: str, count: int = 1, *, rule: int = 0
    ) -> None:
        """Report a fault at ``witness``; ``rule`` orders faults at one record: the tail
        rule's (0), the window rule's (1), the end of the output's (2)."""
        violation = Violation(kind, self.key, witness.position, witness.window, detail, count)
        self.report(violation, rule)

    # --- the tail rule ----------------------------------------------------------------------

    def _tail(self, record: Record, before: int, *, restored: bool) -> None:
        tail = record.tail
        assert tail is not None
        self._shows_again(tail)
        replay = self.replay
        if replay is not None:
            if tail == self.last + 1 and tail <= replay.target:  # the replay goes on
                if self._arrives_late(record, tail):
                    replay.others.add(tail)
                else:
                    replay.repeats += 1
                self.last = replay.last = tail
                if tail == replay.target:
                    self._end_replay(cut=False)
                return
            if self.rules.at_least_once and self._skips(record, tail):
                return
            rewind = tail <= self.high and self.missing(tail) is None  # a crash in recovery
            self._end_replay(cut=not rewind)
        if tail > self.high + 1:
            jump = Jump(
                record.position,
                record.window,
                self.last,
                tail,
                self.high + 1,
                tail - 1,
                before,
                self.token,
                self.stood,
            )
            self.jumps.append(jump)
            self.starts.append(jump.lo)
            self.open_jumps += 1
            self.unshown += jump.hi - jump.lo + 1
            self._came_early(jump)
            for update in range(jump.lo, min(jump.hi, jump.lo + self.garbled - 1) + 1):
                if jump.holds(update):  # the corrupted records just before stood for them
                    self.cover(jump, update, "in a corrupted record")
        elif tail <= self.high and not self._arrives_late(record, tail):
            self.replay = Replay(
                record.position, record.window, tail, self.last, self.high, tail, restored
            )
            if tail == self.high:
                self._end_replay(cut=False)
        elif tail == self.high + 1:
            self.progress = record.position
        self.last = tail
        self.high = max(self.high, tail)
        if self.run >= RUN and self.run_last == record.position:
            self._take_back()

    def _shows_again(self, tail: int) -> None:
        """A tail read as early shows in its place: the early record was a copy."""
        early = self.early.pop(tail, None)
        if early is not None:
            detail = (
                f"tail {tail} comes before {updates(early.expected, tail - 1)} and shows again "
                f"in its place: update {tail} shows twice (expected {early.expected})"
            )
            self._add("duplication", early, detail)

    def _came_early(self, jump: Jump) -> None:
        """A jump over tails read as early: they were reordered, not lost."""
        for tail in [t for t in self.early if jump.lo <= t <= jump.hi]:
            early = self.early.pop(tail)
            self.cover(jump, tail, "earlier")
            self._add("reordering", early, self._early_detail(tail, early))

    @staticmethod
    def _early_detail(tail: int, early: Early) -> str:
        return (
            f"tail {tail} comes before {updates(early.expected, tail - 1)}: update {tail} "
            f"arrives before earlier ones (expected {early.expected})"
        )

    def _skips(self, record: Record, tail: int) -> bool:
        """At least once, a replay that jumps forward to a tail it showed before, short of
        where it was: the updates it skipped are a **loss** (the replay goes on from there).

        Wallaroo's rule is that the next output follows from the last one; at-least-once
        delivery allows one exception, a rewind to where the state was restored, and
        nothing else: ``1, 2, 3, 4, 5, 3, 5`` replays 3, then loses 4."""
        replay = self.replay
        assert replay is not None
        if not (self.last + 1 < tail <= replay.target) or self.missing(tail) is not None:
            return False
        lost = tail - self.last - 1
        detail = (
            f"tail skips from {self.last} to {tail} inside a replay from {replay.start} "
            f"up to {replay.target}: {updates(self.last + 1, tail - 1)} never {verb(lost)} "
            f"again (expected {self.last + 1}); a replay goes on by +1"
        )
        self._add("loss", record, detail, lost)
        replay.repeats += 1
        self.last = replay.last = tail
        if tail == replay.target:
            self._end_replay(cut=False)
        return True

    def _arrives_late(self, record: Record, tail: int) -> bool:
        """A tail that a jump skipped shows: a reordering (False: it was shown before)."""
        jump = self.missing(tail)
        if jump is None:
            return False
        self._run(record)
        jump = self.cover(jump, tail, None)
        detail = (
            f"tail {tail} comes after {self.high}: update {tail} arrives after a later "
            f"one (expected {tail} before {self.high})"
        )
        jump.lates.append((record, detail))
        self.pending_late += 1
        return True

    def _run(self, record: Record) -> None:
        """Count late records in a row that go on by +1 (``run``, from ``run_first``)."""
        tail = record.tail
        assert tail is not None
        goes_on = self.run and self.run_last == self.position and tail == self.last + 1
        if self.replay is None and goes_on:
            self.run += 1
        else:
            self.run, self.run_first, self.run_stood = 1, record, self.stood
        self.run_last = record.position

    def _take_back(self) -> None:
        """``RUN`` late records in a row went on by +1 from ``base``: the key resumed there.
        The jumps above ``base`` made since the key last went on in line were records out of
        line, not losses: each is read again (``_out_of_line``) and its late records are in
        line after all. A jump that began below ``base`` keeps the updates below it that no
        corrupted record since it can stand for."""
        first = self.run_first
        assert first is not None and first.tail is not None
        base, self.run = first.tail, 0
        floor = None  # the highest tail before the first jump taken back
        taken = 0  # the jumps' records taken back that are corrupted records
        while self.jumps and self.jumps[-1].hi >= base and self.jumps[-1].position > self.progress:
            jump = self.jumps.pop()
            self.starts.pop()
            floor = jump.lo - 1
            self.open_jumps -= jump.open
            self.unshown -= jump.unshown
            self.pending_late -= len(jump.lates)
            record = Record(jump.position, jump.window, jump.end)
            taken += self._out_of_line(record, jump.start, base)
            if jump.lo < base:  # it keeps lo .. base-1, witnessed where the key resumed
                late = {t for t in jump.late if t < base}
                found = {t: w for t, w in jump.found.items() if t < base}
                lates = [(r, d) for r, d in jump.lates if r.tail is not None and r.tail < base]
                kept = Jump(
                    *(first.position, first.window, jump.start, base, jump.lo, base - 1),
                    *(jump.after, self.token, jump.stood, late, found, lates),
                )
                self.jumps.append(kept)
                self.starts.append(kept.lo)
                self.open_jumps += kept.open
                self.unshown += kept.unshown
                self.pending_late += len(kept.lates)
                corrupted = taken + self.run_stood - jump.stood  # records out of line since
                for update in range(kept.lo, base):
                    if corrupted and kept.holds(update):
                        self.cover(kept, update, "in a corrupted record")
                        corrupted -= 1
                break
        if floor is not None:
            self.high = max(floor, self.last)

    def _out_of_line(self, record: Record, before: int, base: int) -> bool:
        """Report a jump's record taken back: the key was at ``before`` before it and went
        on from ``base`` after it. True if it is a corrupted record."""
        raise NotImplementedError  # KeyExplainer reads it as early or corrupted

    def _end_replay(self, *, cut: bool) -> None:
        replay, self.replay = self.replay, None
        if replay is None or replay.repeats == 0:
            return
        if self.rules.at_least_once and replay.restored and not cut:
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
        if self.rules.at_least_once and not replay.restored:
            detail += "; not a replay: its window is the latest state with the update pushed again"
        elif self.rules.at_least_once:
            detail += f"; not a replay: it stops at {replay.last} before {replay.target}"
        self._add("duplication", replay, detail, replay.repeats)

    def _unreadable(self) -> None:
        """A record whose tail cannot be read, or is corrupted, stands for the key's next
        update."""
        self.last += 1
        self._shows_again(self.last)
        jump = self.missing(self.last)
        if jump is not None:
            self.cover(jump, self.last, "in a corrupted record")
        self.high = max(self.high, self.last)
        replay = self.replay
        if replay is not None:
            replay.last = self.last
            replay.others.add(self.last)
            if self.last >= replay.target:
                self._end_replay(cut=False)

    # --- the end of the output --------------------------------------------------------------

    def close(self) -> None:
        """The key's faults that only the end of the output decides."""
        self._end_replay(cut=True)
        for tail, early in sorted(self.early.items()):
            self._add("reordering", early, self._early_detail(tail, early))
        shown_early = set(self.early)
        self.early = {}
        for jump in self.jumps:
            for record, detail in jump.lates:
                self._add("reordering", record, detail)
            self._lost(jump)
        expected = self.rules.expected
        if expected is not None and self.high < expected:
            stood = set(range(self.high + 1, min(expected, self.high + self.garbled) + 1))
            shown_early |= stood  # the corrupted records at the key's end stood for them
            lost = expected - self.high - len([t for t in shown_early if t <= expected])
            if lost > 0:
                missing = updates(self.high + 1, expected, shown_early)
                detail = (
                    f"the key stops at {self.high}: {missing} never {verb(lost)} "
                    f"(expected {expected})"
                )
                self._add("loss", self, detail, lost, rule=2)

    def _lost(self, jump: Jump) -> None:
        """The jump's loss, once the output has ended: the updates that never showed."""
        lost = jump.hi - jump.lo + 1 - len(jump.late) - len(jump.found)
        if lost == 0:
            return
        missing = updates(jump.lo, jump.hi, jump.late | set(jump.found))
        detail = f"tail jumps from {jump.start} to {jump.end}: {missing} never {verb(lost)}"
        notes = [f"{listed(jump.late)} {verb(len(jump.late))} later"] if jump.late else []
        for where in sorted(set(jump.found.values())):
            found = [t for t, w in jump.found.items() if w == where]
            notes.append(f"{listed(found)} {verb(len(found))} {where}")
        if notes:
            detail += f" ({'; '.join(notes)})"
        self._add("loss", jump, detail, lost)
