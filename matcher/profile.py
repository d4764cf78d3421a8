"""What the corruptions did to each column, over all of them: the column profile.

A corruption pairs a reference event with the candidate event that replaced it; its
``columns`` are those whose values differ. For each such column the profile counts the
pairs, the values that became null (*nulls gained*) and those that stopped being null
(*nulls lost*); for numbers (both sides int, float or Decimal, not bool, finite) the
difference ``candidate - reference``, its absolute value and, where the reference is not
zero, the relative difference ``|candidate - reference| / |reference|``: minimum, maximum
and sum (the mean is the sum over the count); for other values the transitions
``old -> new`` with their counts; and, where the reference event holds a date or a time,
how many pairs fell in each stretch of time.

    profile = Profile().add_divergences(verdict_divergences)
    profile.summaries()["fare"]["numeric"]["abs_diff"]["max"]     # 2.5

Profiles add up (``merge``), so each engine builds one where the pairs are (the core over
its divergences; Spark per partition, merged on the driver, with numpy where there are
many: ``matcher.spark.profile_arrays``), and partial profiles travel as JSON
(``to_partial`` / ``from_partial``). Everything is exact but two bounded parts:
the transitions keep the ``TRANSITIONS`` most frequent when there are more distinct ones
(``exact`` says whether any was dropped), and the time series coarsens its stretch (a
second, a minute, an hour, a day, a month, a year) to keep at most ``TIME_BUCKETS``.
Sums are exact until the mean is taken, so the engines agree on every figure bit for bit,
whatever order the pairs come in.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from matcher.serialize import json_safe

#: the distinct transitions a column keeps (the most frequent) before it drops some
TRANSITIONS = 1000
#: the transitions a summary lists
TOP_TRANSITIONS = 10
#: the longest text of a value in a transition
VALUE_TEXT = 200
#: how deep, and how many items of each container, a transition's text reads of a value
VALUE_DEPTH, VALUE_ITEMS = 16, 64
#: the time buckets a column keeps before its stretch coarsens
TIME_BUCKETS = 1000
#: the stretches of time, finest first, with the ISO prefix that names a bucket
UNITS = (("second", 19), ("minute", 16), ("hour", 13), ("day", 10), ("month", 7), ("year", 4))
UNIT_INDEX = {name: i for i, (name, _) in enumerate(UNITS)}
DAY = UNIT_INDEX["day"]


def _number(value: Any) -> float | None:
    """``value`` as a finite float when it is a number (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError):  # a Decimal NaN or out of range
        return None
    return number if math.isfinite(number) else None


def value_text(value: Any) -> str:
    """A value as a transition shows it: JSON (strings quoted), at most ``VALUE_TEXT``; a
    container is read to ``VALUE_DEPTH`` levels and ``VALUE_ITEMS`` items, which is all a
    text that short can show (a value may be nested as deep as the matcher compares,
    ``matcher.equality.MAX_NESTING``, deeper than JSON's writer recurses)."""
    text = json.dumps(json_safe(_clipped(value, VALUE_DEPTH)), ensure_ascii=False, sort_keys=True)
    return text if len(text) <= VALUE_TEXT else text[: VALUE_TEXT - 1] + "\u2026"


def _clipped(value: Any, depth: int) -> Any:
    """``value`` with containers below ``depth`` levels as ``…``, and at most
    ``VALUE_ITEMS`` items in each."""
    if isinstance(value, Mapping):
        if depth == 0:
            return "\u2026"
        items = itertools.islice(value.items(), VALUE_ITEMS)
        return {str(k): _clipped(v, depth - 1) for k, v in items}
    if isinstance(value, list | tuple):
        if depth == 0:
            return "\u2026"
        return [_clipped(v, depth - 1) for v in value[:VALUE_ITEMS]]
    return value


def time_of(event: Mapping[str, Any] | None) -> dt.date | None:
    """The event's time: the first of its values that is a date or a datetime."""
    if event is None:
        return None
    for value in event.values():
        if isinstance(value, dt.date):  # a datetime is a date too
            return value
    return None


def _bucket(moment: dt.date, unit: str) -> str:
    """The bucket of ``moment``: its ISO text cut to ``unit`` (a date has no time of day;
    a datetime's offset, if any, is dropped: buckets are in the time as written)."""
    if isinstance(moment, dt.datetime):
        naive = moment if moment.tzinfo is None else moment.replace(tzinfo=None)
        text = naive.isoformat(sep="T", timespec="seconds")
    else:
        text = moment.isoformat()
        unit = UNITS[max(UNIT_INDEX[unit], DAY)][0]
    return text[: UNITS[UNIT_INDEX[unit]][1]]


def add_exactly(partials: list[float], value: float) -> None:
    """Add ``value`` to the exact sum held as ``partials`` (Shewchuk's algorithm, as
    ``math.fsum`` runs it: non-overlapping floats whose sum is exact)."""
    kept = 0
    for partial in partials:
        if abs(value) < abs(partial):
            value, partial = partial, value
        high = value + partial
        low = partial - (high - value)
        if low:
            partials[kept] = low
            kept += 1
        value = high
    partials[kept:] = [value]


def exact_partials(values: Sequence[float]) -> list[float]:
    """Floats whose sum is exactly that of ``values``: the correctly rounded sum
    (``math.fsum``, in C), then the rounded remainder, and so on until nothing remains
    (each step is exact, and the remainder shrinks by 2**-53 at least)."""
    partials: list[float] = []
    while True:
        try:
            rest = math.fsum(itertools.chain(values, (-p for p in partials)))
        except OverflowError:  # the sum leaves the floats: one by one, to infinity
            partials = []
            for value in values:
                add_exactly(partials, value)
            return partials
        except ValueError:  # an infinity of each sign among the values: no sum
            return [math.nan]
        if rest == 0:
            return partials
        if not math.isfinite(rest):  # an infinite value (a quotient past the floats) or NaN
            return [rest]
        partials.append(rest)


@dataclass(slots=True)
class _Moments:
    """Running min, max and sum of one quantity. The sum is exact (``add_exactly``), so
    that it does not depend on the order the pairs come in, which the engines do not
    share: the mean is the correctly rounded sum over the count on both."""

    n: int = 0
    low: float = math.inf
    high: float = -math.inf
    partials: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.n += 1
        add_exactly(self.partials, value)
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value

    def add_exact(self, n: int, low: float, high: float, partials: Sequence[float]) -> None:
        """Add ``n`` values at once, given their min, max and exact sum (as partials)."""
        if n == 0:
            return
        self.n += n
        for partial in partials:
            add_exactly(self.partials, partial)
        self.low = min(self.low, low)
        self.high = max(self.high, high)

    def merge(self, other: _Moments) -> None:
        self.n += other.n
        for partial in other.partials:
            add_exactly(self.partials, partial)
        self.low = min(self.low, other.low)
        self.high = max(self.high, other.high)

    def to_partial(self) -> list[Any] | None:
        return None if self.n == 0 else [self.n, self.low, self.high, list(self.partials)]

    @classmethod
    def from_partial(cls, data: Sequence[Any] | None) -> _Moments:
        if not data:
            return cls()
        n, low, high, partials = data
        return cls(int(n), float(low), float(high), [float(p) for p in partials])

    def summary(self) -> dict[str, Any] | None:
        if self.n == 0:
            return None
        mean = math.fsum(self.partials) / self.n
        return {"n": self.n, "min": self.low, "max": self.high, "mean": mean}


def _text(value: Any, texts: dict[Any, str]) -> str:
    """``value_text`` once per distinct value (by class and value)."""
    key = (type(value), value)
    text = texts.get(key)
    if text is None:
        text = texts[key] = value_text(value)
    return text


def _trim(counts: Counter[str], keep: int) -> bool:
    """Keep the ``keep`` most frequent of ``counts`` (ties by text); whether any went."""
    if len(counts) <= keep:
        return False
    kept = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:keep]
    counts.clear()
    counts.update(dict(kept))
    return True


@dataclass(slots=True)
class ColumnProfile:
    """One column's profile, as it is built (see the module docstring)."""

    pairs: int = 0
    nulls_gained: int = 0
    nulls_lost: int = 0
    diff: _Moments = field(default_factory=_Moments)
    abs_diff: _Moments = field(default_factory=_Moments)
    rel_diff: _Moments = field(default_factory=_Moments)
    transitions: Counter[str] = field(default_factory=Counter)
    transitions_exact: bool = True
    unit: str = "second"
    times: Counter[str] = field(default_factory=Counter)

    def add_many(
        self, olds: Sequence[Any], news: Sequence[Any], moments: Iterable[Any] | None = None
    ) -> None:
        """Pairs whose values in this column differ: ``olds[i]`` became ``news[i]``, in
        an event of time ``moments[i]`` (``None``: no time). A Python step per pair, the
        sums in C (``exact_partials``); ``matcher.spark.profile_arrays`` adds millions,
        with numpy, to the same figures."""
        self.pairs += len(olds)
        other: list[int] = []
        deltas: list[float] = []
        sizes: list[float] = []
        relative: list[float] = []
        for i, (old, new) in enumerate(zip(olds, news, strict=True)):
            if old is None or new is None:
                self.count_nulls(old, new)
                other.append(i)
                continue
            a, b = _number(old), _number(new)
            if a is None or b is None:
                other.append(i)
                continue
            delta = b - a
            deltas.append(delta)
            sizes.append(abs(delta))
            if a != 0:
                relative.append(abs(delta) / abs(a))
        for moments_of, values in (
            (self.diff, deltas),
            (self.abs_diff, sizes),
            (self.rel_diff, relative),
        ):
            if values:
                moments_of.add_exact(len(values), min(values), max(values), exact_partials(values))
        if other:
            self.add_transitions([olds[i] for i in other], [news[i] for i in other])
        if moments is not None:
            for moment in moments:
                if moment is not None:
                    if not isinstance(moment, dt.datetime) and UNIT_INDEX[self.unit] < DAY:
                        self._coarsen("day")  # a date is a day at the finest
                    self.times[_bucket(moment, self.unit)] += 1
                    if len(self.times) > TIME_BUCKETS:
                        self._coarsen(self.unit)

    def count_nulls(self, old: Any, new: Any) -> None:
        """Count a pair where one side is null (both null never differ)."""
        if old is None and new is not None:
            self.nulls_lost += 1
        elif old is not None and new is None:
            self.nulls_gained += 1

    def add_transitions(self, olds: Sequence[Any], news: Sequence[Any]) -> None:
        """Count ``olds[i] -> news[i]`` as text, the pairs that are not two numbers."""
        # counted by value and class first (0 and 0.0 are one key to a dict, not one text)
        try:
            pairs = Counter(zip(map(type, olds), olds, map(type, news), news, strict=True))
            texts: dict[Any, str] = {}
            for (_, old, _, new), n in pairs.items():
                self.transitions[f"{_text(old, texts)} \u2192 {_text(new, texts)}"] += n
        except TypeError:  # a list or a dict: unhashable
            self.transitions.update(
                f"{value_text(a)} \u2192 {value_text(b)}" for a, b in zip(olds, news, strict=True)
            )
        if len(self.transitions) > 2 * TRANSITIONS:
            self.transitions_exact &= not _trim(self.transitions, TRANSITIONS)

    def _coarsen(self, unit: str) -> None:
        """Re-bucket to ``unit`` or coarser, until at most ``TIME_BUCKETS`` remain."""
        index = max(UNIT_INDEX[unit], UNIT_INDEX[self.unit])
        while True:
            width = UNITS[index][1]
            merged: Counter[str] = Counter()
            for bucket, n in self.times.items():
                merged[bucket[:width]] += n
            self.times, self.unit = merged, UNITS[index][0]
            if len(merged) <= TIME_BUCKETS or index == len(UNITS) - 1:
                return
            index += 1

    def merge(self, other: ColumnProfile) -> None:
        self.pairs += other.pairs
        self.nulls_gained += other.nulls_gained
        self.nulls_lost += other.nulls_lost
        self.diff.merge(other.diff)
        self.abs_diff.merge(other.abs_diff)
        self.rel_diff.merge(other.rel_diff)
        self.transitions.update(other.transitions)
        self.transitions_exact &= other.transitions_exact and not _trim(
            self.transitions, TRANSITIONS
        )
        self.merge_times(other.unit, other.times)

    def merge_times(self, unit: str, counts: Mapping[str, int]) -> None:
        """Add buckets counted at ``unit``: both at the coarser of the two units, then
        coarser still while there are too many. The unit this ends at is the finest that
        holds every time counted in at most ``TIME_BUCKETS``, whatever the order."""
        if not counts:
            return
        if UNIT_INDEX[unit] > UNIT_INDEX[self.unit]:
            self._coarsen(unit)
        width = UNITS[UNIT_INDEX[self.unit]][1]
        for bucket, n in counts.items():
            self.times[bucket[:width]] += n
        if len(self.times) > TIME_BUCKETS:
            self._coarsen(self.unit)

    def to_partial(self) -> dict[str, Any]:
        if _trim(self.transitions, TRANSITIONS):
            self.transitions_exact = False
        return {
            "pairs": self.pairs,
            "gained": self.nulls_gained,
            "lost": self.nulls_lost,
            "diff": self.diff.to_partial(),
            "abs": self.abs_diff.to_partial(),
            "rel": self.rel_diff.to_partial(),
            "transitions": dict(self.transitions),
            "exact": self.transitions_exact,
            "unit": self.unit,
            "times": dict(self.times),
        }

    @classmethod
    def from_partial(cls, data: Mapping[str, Any]) -> ColumnProfile:
        return cls(
            pairs=int(data["pairs"]),
            nulls_gained=int(data["gained"]),
            nulls_lost=int(data["lost"]),
            diff=_Moments.from_partial(data["diff"]),
            abs_diff=_Moments.from_partial(data["abs"]),
            rel_diff=_Moments.from_partial(data["rel"]),
            transitions=Counter(data["transitions"]),
            transitions_exact=bool(data["exact"]),
            unit=str(data["unit"]),
            times=Counter(data["times"]),
        )

    def summary(self) -> dict[str, Any]:
        """What is stored with the run (``ColumnStat.extra``) and reports show."""
        numeric = None
        if self.diff.n:
            numeric = {
                "pairs": self.diff.n,
                "diff": self.diff.summary(),
                "abs_diff": self.abs_diff.summary(),
                "rel_diff": self.rel_diff.summary(),
            }
        top = sorted(self.transitions.items(), key=lambda item: (-item[1], item[0]))
        return {
            "pairs": self.pairs,
            "nulls_gained": self.nulls_gained,
            "nulls_lost": self.nulls_lost,
            "numeric": numeric,
            "transitions": {
                "top": [{"change": text, "n": n} for text, n in top[:TOP_TRANSITIONS]],
                "distinct": len(self.transitions),
                "exact": self.transitions_exact,
            },
            "over_time": (
                None
                if not self.times
                else {"unit": self.unit, "counts": dict(sorted(self.times.items()))}
            ),
        }


@dataclass(slots=True)
class Profile:
    """The column profiles of a set of corruptions."""

    columns: dict[str, ColumnProfile] = field(default_factory=dict)

    def column(self, name: str) -> ColumnProfile:
        found = self.columns.get(name)
        if found is None:
            found = self.columns[name] = ColumnProfile()
        return found

    def add_divergences(self, divergences: Iterable[Any]) -> Profile:
        """Every corruption among ``divergences`` (``matcher.verdict.Divergence``), column
        by column."""
        by_column: dict[str, tuple[list[Any], list[Any], list[Any]]] = {}
        for d in divergences:
            if d.kind != "corruption" or d.reference_event is None or d.candidate_event is None:
                continue
            moment = time_of(d.reference_event)
            for column in d.columns:
                olds, news, moments = by_column.setdefault(column, ([], [], []))
                olds.append(d.reference_event.get(column))
                news.append(d.candidate_event.get(column))
                moments.append(moment)
        for column, (olds, news, moments) in by_column.items():
            self.column(column).add_many(olds, news, moments)
        return self

    def merge(self, other: Profile) -> Profile:
        for name, column in other.columns.items():
            mine = self.columns.get(name)
            if mine is None:
                self.columns[name] = ColumnProfile.from_partial(column.to_partial())
            else:
                mine.merge(column)
        return self

    def to_partial(self) -> str:
        """As JSON, to travel from an executor to the driver."""
        return json.dumps({name: c.to_partial() for name, c in self.columns.items()})

    @classmethod
    def from_partial(cls, text: str | bytes) -> Profile:
        data = json.loads(text)
        return cls({name: ColumnProfile.from_partial(c) for name, c in data.items()})

    def summaries(self) -> dict[str, dict[str, Any]]:
        return {name: c.summary() for name, c in sorted(self.columns.items())}
