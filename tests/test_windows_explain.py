"""Issue 31: ``parity windows`` explains with the fewest faults. Each single fault, placed
anywhere in long interleaved sequences, is reported as exactly that fault, with its count
and its witness record; so are two faults far apart.

What one fault counts (the module docstring of ``matcher.windows`` is the reference):

* lost updates, one run: one loss counting the updates, at the first record after them
  (at the key's last record when they were its last updates);
* a duplicated record: one duplication counting 1, at the copy; a replay after a restart:
  one duplication counting the replayed records, at the first (none with at-least-once);
* two swapped records: the records out of place, at those records: 1 for neighbours (the
  later-read one), 2 otherwise (the one that came early, the one that came late);
* a corrupted value, anywhere in a window, in the output or in the state: one corruption
  at the record where it first shows; a corrupted key: one corruption at the record.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from matcher.windows import HORIZON, WindowsReport, canonical, check_windows

#: one record as the tests build it: key, window, and a label for the records a fault made
Built = tuple[Any, Any, str | None]
#: a violation expected: kind, count and the label of the witness record
Expected = list[tuple[str, int, str]]
#: a fault: (the key's records, the key, where) -> (the faulty records, the violations
#: expected), or None when it cannot go there
Fault = Callable[[list[Built], str, int], tuple[list[Built], Expected] | None]


def detector(values: list[Any], ring: tuple[Any, ...] = (0, 0, 0, 0)) -> list[list[Any]]:
    """The windows the detector emits for ``values`` pushed onto ``ring``."""
    windows, current = [], list(ring)
    for value in values:
        current = [*current[1:], value]
        windows.append(list(current))
    return windows


def key_records(key: str, n: int) -> list[Built]:
    return [(key, canonical(t), None) for t in range(1, n + 1)]


def interleave(per_key: list[list[Built]], seed: int) -> list[Built]:
    rng, queues, merged = random.Random(seed), [list(q) for q in per_key], []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        merged.append(queue.pop(0))
    return merged


def check(records: list[Built], **options: Any) -> WindowsReport:
    return check_windows([(key, window) for key, window, _ in records], **options)


def found(report: WindowsReport, records: list[Built]) -> Expected:
    labels = {position: label for position, (_, _, label) in enumerate(records)}
    return sorted((v.kind, v.count, str(labels[v.position])) for v in report.violations)


# --- the faults -------------------------------------------------------------------------------


def lose(size: int) -> Fault:
    def fault(keyed: list[Built], key: str, at: int) -> Any:
        if at + size > len(keyed) or (at == 0 and size == len(keyed)):
            return None
        if at + size < len(keyed):
            witness = (key, keyed[at + size][1], "witness")
            return [*keyed[:at], witness, *keyed[at + size + 1 :]], [("loss", size, "witness")]
        last = (key, keyed[at - 1][1], "witness")
        return [*keyed[: at - 1], last], [("loss", size, "witness")]

    return fault


def lose_from_state(keyed: list[Built], key: str, at: int) -> Any:
    """The detector never pushes update ``at + 1``: the ring skips it."""
    n = len(keyed)
    windows = detector([t for t in range(1, n + 1) if t != at + 1])
    built: list[Built] = [(key, w, None) for w in windows]
    place = at if at < n - 1 else at - 1
    built[place] = (key, built[place][1], "witness")
    return built, [("loss", 1, "witness")]


def duplicate(keyed: list[Built], key: str, at: int, later: int = 0) -> Any:
    copy = (key, keyed[at][1], "copy")
    place = min(len(keyed), at + 1 + later)
    return [*keyed[:place], copy, *keyed[place:]], [("duplication", 1, "copy")]


def swap(distance: int) -> Fault:
    def fault(keyed: list[Built], key: str, at: int) -> Any:
        other = at + distance
        if other >= len(keyed):
            return None
        built = list(keyed)
        built[at], built[other] = (key, keyed[other][1], "early"), (key, keyed[at][1], "late")
        if distance == 1:
            return built, [("reordering", 1, "late")]
        if distance == 2:  # i+2, i+1, i: two records out of place, which two is a tie
            built[at + 1] = (key, keyed[at + 1][1], "early")
        return built, [("reordering", 1, "early"), ("reordering", 1, "late")]

    return fault


def drops(tail: int) -> list[list[int]]:
    """The windows the state gives for ``tail`` with one update dropped from the ring, or
    reset to zeros, which a changed value can equal: a loss and a corruption are one fault
    each, and the validator says loss."""
    before, wanted = canonical(tail - 1), canonical(tail)
    dropped = [[*before[:p], *before[p + 1 :], tail] for p in (1, 2, 3)]
    return dropped + [[0] * zeros + wanted[zeros:] for zeros in range(1, 4)]


def corrupt(place: int, value: Any, *, state: bool = False) -> Fault:
    def fault(keyed: list[Built], key: str, at: int) -> Any:
        tail = at + 1
        window = canonical(tail)
        if window[place] == value and type(value) is int:
            return None
        window[place] = value
        if window in drops(tail) and type(value) is int:
            return None
        if not state:
            built = list(keyed)
            built[at] = (key, window, "witness")
            return built, [("corruption", 1, "witness")]
        after = detector(list(range(tail + 1, len(keyed) + 1)), ring=tuple(window))
        built = [*keyed[:at], (key, window, "witness"), *((key, w, None) for w in after)]
        return built, [("corruption", 1, "witness")]

    return fault


def corrupt_key(value: Any) -> Fault:
    """The record's key becomes ``value``, or the key with ``value`` appended (a string)."""

    def fault(keyed: list[Built], key: str, at: int) -> Any:
        built = list(keyed)
        garbled = key + value if isinstance(value, str) else value
        built[at] = (garbled, keyed[at][1], "witness")
        return built, [("corruption", 1, "witness")]

    return fault


def replay(back: int) -> Fault:
    """A restart after record ``at`` that replays the last ``back`` + 1 updates."""

    def fault(keyed: list[Built], key: str, at: int) -> Any:
        high = at + 1
        start = max(1, high - back)
        again: list[Built] = [(key, canonical(t), None) for t in range(start, high + 1)]
        again[0] = (key, again[0][1], "replay")
        return [*keyed[: at + 1], *again, *keyed[at + 1 :]], [
            ("duplication", high - start + 1, "replay")
        ]

    return fault


VALUES = st.one_of(
    st.integers(-3, 80),
    st.sampled_from([5000, 2**33, 2**64]),
    st.sampled_from(["x", 1.5, None, True, [1]]),
)
FAULTS: dict[str, Callable[[st.DataObject], Fault]] = {
    "lose": lambda data: lose(data.draw(st.integers(1, 3))),
    "lose_from_state": lambda data: lose_from_state,
    "duplicate": lambda data: (
        lambda k, key, at: duplicate(k, key, at, data.draw(st.integers(0, 9)))
    ),
    "swap": lambda data: swap(data.draw(st.sampled_from([1, 2, 3, 5, 9]))),
    "corrupt": lambda data: corrupt(data.draw(st.integers(0, 3)), data.draw(VALUES)),
    "corrupt_state": lambda data: corrupt(
        data.draw(st.integers(0, 3)), data.draw(VALUES), state=True
    ),
    "corrupt_key": lambda data: corrupt_key(data.draw(st.sampled_from([None, 7, "\x00", "x"]))),
    "replay": lambda data: replay(data.draw(st.integers(0, 8))),
}


#: each fault at update 10 of key a (1..20, interleaved with b): the violation, in full
MIDDLE: list[tuple[str, Fault, tuple[str, str, int, str]]] = [
    ("lost", lose(2), ("loss", "witness", 2, "tail jumps from 9 to 12: updates 10, 11 never show")),
    (
        "lost in the state",
        lose_from_state,
        ("loss", "witness", 1, "tail jumps from 9 to 11: update 10 never shows"),
    ),
    (
        "duplicated",
        lambda keyed, key, at: duplicate(keyed, key, at, 3),
        (
            "duplication",
            "copy",
            1,
            "tail goes back from 13 to 10: update 10 shows again (expected 14)",
        ),
    ),
    (
        "swapped with its neighbour",
        swap(1),
        (
            "reordering",
            "late",
            1,
            "tail 10 comes after 11: update 10 arrives after a later one (expected 10 before 11)",
        ),
    ),
    (
        "a value changed",
        corrupt(1, 12),
        (
            "corruption",
            "witness",
            1,
            "the value 12 stands where 8 belongs, and the next window goes on without it "
            "(expected [7, 8, 9, 10])",
        ),
    ),
    (
        "the tail changed",
        corrupt(3, 7),
        (
            "corruption",
            "witness",
            1,
            "tail 7 is out of line: the records after it go on from 11, so it stands for update "
            "10 (expected [7, 8, 9, 10])",
        ),
    ),
    (
        "the key changed",
        corrupt_key("x"),
        (
            "corruption",
            "witness",
            1,
            'the key "ax" has only this record, update 10 of key "a", which that key misses '
            'here: the key is corrupted (expected key "a")',
        ),
    ),
    (
        "replayed after a restart",
        replay(3),
        (
            "duplication",
            "replay",
            4,
            "tail goes back from 10 to 7: updates 7..10 show again (expected 11)",
        ),
    ),
]


@pytest.mark.parametrize(("name", "fault", "violation"), MIDDLE, ids=[m[0] for m in MIDDLE])
def test_what_each_fault_reads_as(
    name: str, fault: Fault, violation: tuple[str, str, int, str]
) -> None:
    """``violation``: kind, the witness's label, count, detail."""
    result = fault(key_records("a", 20), "a", 9)
    assert result is not None
    records = interleave([result[0], key_records("b", 20)], 1)
    (v,) = check(records, expected=20).violations
    assert (v.kind, records[v.position][2], v.count, v.detail) == violation


def made(fault: Fault, keyed: list[Built], key: str, at: int) -> tuple[list[Built], Expected]:
    """The fault made in ``key``'s records at ``at``; an example it cannot go in is dropped."""
    result = fault(keyed, key, at)
    assume(result is not None)
    assert result is not None
    return result


@st.composite
def single_faults(
    draw: st.DrawFn, name: str, *, before_end: bool = False
) -> tuple[list[Built], Expected, int, int]:
    """Keys k0..kK reading 1..n interleaved, one fault in one key, placed anywhere (at
    least 12 records before the key's end with ``before_end``); and n and the keys."""
    n = draw(st.integers(24 if before_end else 12, 40))
    keys = [f"k{i}" for i in range(draw(st.integers(1, 3)))]
    target = draw(st.sampled_from(keys))
    at = draw(st.integers(0, n - (12 if before_end else 1)))
    faulty, expected = made(FAULTS[name](draw(st.data())), key_records(target, n), target, at)
    per_key = [faulty if key == target else key_records(key, n) for key in keys]
    return interleave(per_key, draw(st.integers(0, 2**32))), expected, n, len(keys)


@pytest.mark.parametrize("name", sorted(FAULTS))
@given(data=st.data())
def test_each_single_fault_anywhere_is_that_fault(name: str, data: st.DataObject) -> None:
    records, expected, n, keys = data.draw(single_faults(name))
    report = check(records, expected=n)
    assert found(report, records) == sorted(expected)
    assert report.keys == keys


@given(data=st.data())
def test_a_replay_after_a_restart_passes_at_least_once(data: st.DataObject) -> None:
    records, expected, n, _ = data.draw(single_faults("replay"))
    report = check(records, expected=n, at_least_once=True)
    assert (report.verdict, report.replayed) == ("pass", expected[0][1])


@pytest.mark.parametrize("name", sorted(set(FAULTS) - {"replay"}))
@given(data=st.data())
def test_without_expected_a_fault_before_the_end_is_that_fault(
    name: str, data: st.DataObject
) -> None:
    """Without ``expected`` the end of a key tells nothing; before it, the same faults."""
    records, expected, _, _ = data.draw(single_faults(name, before_end=True))
    assert found(check(records), records) == sorted(expected)


#: faults that change records only, so two compose: the later one is made first
RECORD_FAULTS = ("lose", "duplicate", "swap", "corrupt", "corrupt_key", "replay")
#: records between two faults "far apart": neither is inside the other's look-ahead
APART = 2 * HORIZON + 4


@given(data=st.data(), first=st.sampled_from(RECORD_FAULTS), second=st.sampled_from(RECORD_FAULTS))
def test_two_faults_far_apart_in_one_key_are_both_reported(
    data: st.DataObject, first: str, second: str
) -> None:
    n = data.draw(st.integers(2 * APART + 12, 70))
    keys = [f"k{i}" for i in range(data.draw(st.integers(1, 3)))]
    early = data.draw(st.integers(0, n - APART - 12))
    late = data.draw(st.integers(early + APART, n - 1))
    assume(first != second or first != "corrupt_key")  # one key garbled twice: a key of two
    built, expected_late = made(FAULTS[second](data), key_records("k0", n), "k0", late)
    built, expected_early = made(FAULTS[first](data), built, "k0", early)
    per_key = [built, *(key_records(key, n) for key in keys[1:])]
    records = interleave(per_key, data.draw(st.integers(0, 2**32)))
    report = check(records, expected=n)
    assert found(report, records) == sorted(expected_early + expected_late)


@given(
    data=st.data(), first=st.sampled_from(sorted(FAULTS)), second=st.sampled_from(sorted(FAULTS))
)
def test_faults_in_two_keys_are_both_reported(data: st.DataObject, first: str, second: str) -> None:
    n = data.draw(st.integers(12, 40))
    faults, places = [], []
    for key, name in (("k0", first), ("k1", second)):
        places.append(data.draw(st.integers(0, n - 1)))
        faults.append(made(FAULTS[name](data), key_records(key, n), key, places[-1]))
    if "corrupt_key" in (first, second):  # whose is a stray record of an update both miss?
        assume(abs(places[0] - places[1]) > 4)
    records = interleave([faults[0][0], faults[1][0]], data.draw(st.integers(0, 2**32)))
    report = check(records, expected=n)
    assert found(report, records) == sorted(faults[0][1] + faults[1][1])


@pytest.mark.parametrize("name", ["lose", "lose_from_state", "swap", "corrupt", "corrupt_state"])
@given(data=st.data())
def test_at_least_once_reads_other_faults_the_same(name: str, data: st.DataObject) -> None:
    """Accepting replays changes nothing for a fault that is not one; but a corrupted tail
    that is the next record's tail reads as that record and its replay, at least once, and
    the update skipped before it as lost: one fault as well."""
    records, expected, n, _ = data.draw(single_faults(name))
    labels = [label for _, _, label in records]
    if name == "corrupt" and "witness" in labels:
        key, window, _ = records[labels.index("witness")]
        after = [w for k, w, label in records[labels.index("witness") + 1 :] if k == key]
        assume(not after or after[0][-1] != window[-1])
    assert found(check(records, expected=n, at_least_once=True), records) == sorted(expected)
