"""The window rule of the sequence-window validator (``matcher.windows``), and the few
value and text helpers the rules share.

    canonical(10)                              # [7, 8, 9, 10]
    window_fault([0, 0, 0, 10], (6, 7, 8, 9), 10, None)
    # ('loss', '3 leading zeros for tail 10: the state was reset, updates 7..9 gone ...')

A window is judged only when it is neither canonical nor its predecessor with the tail
pushed (``continues``): then it shows a fault of its own, named by the first fact found in
this order of precedence (``matcher.windows`` states the rules in full):

* a value not in the sequence, or a zero after a nonzero: corruption;
* the record alone is out of line (``resumes``: the key's next window goes on from the
  one before it, not from this one): corruption;
* one value other than the one that belongs there (``[47, 12, 49, 50]``): corruption, but
  for the state dropping an update (``[2, 4, 5, 6]`` for ``[3, 4, 5, 6]``), a loss;
* a value twice: duplication;
* two values out of order: reordering;
* a gap between neighbours, or more leading zeros than the tail has: loss;
* none of these, yet not what was expected: corruption.

A fact the predecessor showed one place to the right is not new: the state carried it.
The fewest faults decide between the facts: a single changed value is one corruption,
though the number it leaves may look like a repeat or a value out of order.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from matcher.serialize import json_safe
from matcher.verdict import Kind

WINDOW: Final = 4
#: the highest update a key's sequence may reach: a value above it is a corruption (Wallaroo's
#: "random large number"), not billions of lost updates. A detector that pushed 2**32
#: updates through one key would run for days; and with values this size every count the
#: validator makes (at most this much per record) fits the store's 64-bit columns for any
#: output up to 2**31 records.
LARGEST_UPDATE: Final = 2**32


class _Missing:
    """A record without the field: shown as null, told apart from a null by its detail."""

    def __repr__(self) -> str:
        return "MISSING"


#: the value of ``key`` or ``window`` when the record has no such field
MISSING: Final = _Missing()


def canonical(tail: int) -> list[int]:
    """The window for tail ``tail``: ``[max(0, t-3), max(0, t-2), max(0, t-1), t]``."""
    return [max(0, tail - back) for back in range(WINDOW - 1, -1, -1)]


def is_canonical(window: Any, tail: int) -> bool:
    """``window`` is the window for ``tail``, every value an ``int`` (not 1.0, not true)."""
    if not isinstance(window, list) or len(window) != WINDOW:
        return False
    a, b, c, d = window  # unrolled: this runs for every record read
    if type(a) is not int or type(b) is not int or type(c) is not int or type(d) is not int:
        return False
    return d == tail and c == max(0, tail - 1) and b == max(0, tail - 2) and a == max(0, tail - 3)


def in_sequence(value: Any, expected: int | None) -> bool:
    """A value the ring can hold: 0 (not filled yet) or an update, 1 .. ``expected`` (else
    1 .. ``LARGEST_UPDATE``)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    return 0 <= value <= (LARGEST_UPDATE if expected is None else expected)


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types, element by element: 1, 1.0 and true differ."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def continues(ring: Sequence[Any] | None, last: int, window: Any, tail: int) -> bool:
    """``window`` is the previous window ``ring`` with ``tail`` pushed, or with
    ``last+1 .. tail`` pushed after a jump (the outputs were lost, not the updates)."""
    if ring is None:
        return False
    if same(window, (*ring[1:], tail)):
        return True
    if tail <= last + 1:
        return False
    pushed = (*ring, *range(max(last + 1, tail - WINDOW + 1), tail + 1))
    return same(window, pushed[-WINDOW:])


def window_fault(
    window: list[Any],
    ring: Sequence[Any] | None,
    tail: int,
    expected: int | None,
    *,
    resumes: bool = False,
) -> tuple[Kind, str]:
    """The new fault of a window of ``WINDOW`` values with a valid tail, that is neither
    canonical nor continues ``ring``: its kind and a sentence naming what was expected.
    ``resumes``: the key's next record goes on without this window's oddity."""
    wanted = f"expected {shown(canonical(tail))}"

    def carried(*places: int) -> bool:
        return ring is not None and all(
            p < WINDOW - 1 and same(window[p], ring[p + 1]) for p in places
        )

    valid = [in_sequence(value, expected) for value in window]
    for place, value in enumerate(window):
        if not valid[place] and not carried(place):
            return "corruption", f"the value {shown(value)} is not in the sequence ({wanted})"
    zeros = next((p for p, v in enumerate(window) if not (valid[p] and v == 0)), WINDOW)
    for place, value in enumerate(window):
        if place > zeros and valid[place] and value == 0 and not carried(zeros, place):
            text = f"a zero follows {shown(window[zeros])}: zeros only lead a window"
            return "corruption", f"{text} ({wanted})"
    changed = _one_value_changed(window, ring, tail)
    if changed is not None:
        value, belongs = changed
        text = f"the value {shown(value)} stands where {shown(belongs)} belongs"
        if resumes:
            return "corruption", f"{text}, and the next window goes on without it ({wanted})"
        return "corruption", f"{text}: one value of the window changed ({wanted})"
    if resumes:
        text = "the next window goes on from the one before this record, not from it"
        return "corruption", f"{text}: the record alone is out of line ({wanted})"
    values = [(p, v) for p, v in enumerate(window) if valid[p] and v > 0]
    pairs = list(itertools.combinations(values, 2))
    for (p, x), (q, y) in pairs:
        if x == y and not carried(p, q):
            return "duplication", f"{x} shows twice: an update was applied twice ({wanted})"
    for (p, x), (q, y) in pairs:
        if x > y and not carried(p, q):
            text = f"{x} comes before {y}: a later update was applied before an earlier one"
            return "reordering", f"{text} ({wanted})"
    for (p, x), (q, y) in itertools.pairwise(values):
        if q == p + 1 and y > x + 1 and not carried(p, q):
            text = f"the window skips from {x} to {y}: {updates(x + 1, y - 1)} gone from the state"
            return "loss", f"{text} ({wanted})"
    if zeros > max(0, WINDOW - tail) and not carried(*range(zeros)):
        lost = [v for v in canonical(tail)[:zeros] if v > 0]
        text = f"{zeros} leading zeros for tail {tail}: the state was reset"
        return "loss", f"{text}, {updates(lost[0], lost[-1])} gone from it ({wanted})"
    text = "the window is neither the canonical one nor the previous one with its tail pushed"
    return "corruption", f"{text} ({wanted})"


def _one_value_changed(
    window: list[Any], ring: Sequence[Any] | None, tail: int
) -> tuple[Any, Any] | None:
    """The one value that differs from the canonical window, or from the previous window
    with the tail pushed, and the value that belongs there; None if not exactly one does, or
    if the window is the previous one with one update dropped from the state
    (``[2, 4, 5, 6]`` after ``[2, 3, 4, 5]``: the gap rule's loss, one fault as well), or a
    reset ring (``[0, 0, 0, 2]``, ``[0, 5, 6, 7]``: the leading zeros rule's loss)."""
    wanted = canonical(tail)
    before = canonical(tail - 1)
    dropped = [[*before[:p], *before[p + 1 :], tail] for p in (1, 2)]
    if any(same(window, drop) for drop in dropped if drop != wanted):
        return None
    zeros = next((p for p, value in enumerate(window) if not same(value, 0)), WINDOW)
    if zeros and same(window[zeros:], wanted[zeros:]):  # a reset: the leading zeros rule
        return None
    references = [wanted]
    if ring is not None and len(ring) == WINDOW:
        references.append([*ring[1:], tail])
    for reference in references:
        places = [p for p in range(WINDOW) if not same(window[p], reference[p])]
        if len(places) == 1:
            return window[places[0]], reference[places[0]]
    return None


# --- text -----------------------------------------------------------------------------------


def json_value(value: Any) -> Any:
    """``value`` as JSON holds it: ``MISSING`` as null."""
    return None if value is MISSING else json_safe(value)


def shown(value: Any) -> str:
    """A data value in a detail: as JSON, every control or non-ASCII character escaped."""
    return json.dumps(json_value(value))


def verb(count: int) -> str:
    return "shows" if count == 1 else "show"


def updates(lo: int, hi: int, skip: Iterable[int] = ()) -> str:
    """``update 6``, ``updates 6, 7``, ``updates 6..998``: ``lo .. hi`` but ``skip``."""
    runs: list[tuple[int, int]] = []
    start = lo
    for number in sorted(n for n in set(skip) if lo <= n <= hi):
        if number > start:
            runs.append((start, number - 1))
        start = number + 1
    if start <= hi:
        runs.append((start, hi))
    return _runs_text(runs)


def listed(numbers: Iterable[int]) -> str:
    """``update 6``, ``updates 6, 8..10``: the given numbers, in order."""
    runs: list[tuple[int, int]] = []
    for number in sorted(set(numbers)):
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return _runs_text(runs)


def _runs_text(runs: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    for a, b in runs:
        parts.extend([str(a)] if a == b else [str(a), str(b)] if b == a + 1 else [f"{a}..{b}"])
    total = sum(b - a + 1 for a, b in runs)
    text = ", ".join(parts[:6]) + (", ..." if len(parts) > 6 else "")
    return f"update {text}" if total == 1 else f"updates {text}"
