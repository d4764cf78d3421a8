"""The history's filters, read from a query string: what the page's form and the JSON API
accept.

    ?validation=taxi_distance&verdict=divergent&trigger=scheduled&since=2026-01-01
     &until=2026-01-31&limit=50&offset=0

An empty value means "any" (the form sends ``verdict=`` for "all verdicts"). ``since`` and
``until`` are UTC days, both inclusive. A bad value raises ``FilterError`` naming the
parameter and the value; the app answers 400 with that line. Every value is checked here,
before it reaches the store, so that no query string can make the store fail (a NUL byte,
which PostgreSQL text cannot hold; a number beyond its 64-bit integers; a day past
9999-12-31): the viewer gets a 400 naming the parameter, never a 5xx.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parity.views.history import TRIGGERS as STORED_TRIGGERS

#: the run verdicts the store keeps (``matcher.store.records.RUN_VERDICTS``)
VERDICTS = ("equivalent", "divergent", "noisy", "error")
#: the triggers the form offers (the API takes any): those runs are stored with
TRIGGERS = STORED_TRIGGERS
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
DEFAULT_TREND_RUNS = 30
MAX_TREND_RUNS = 200
#: the store's integers are 64-bit; a larger offset is a 400, not a database error
MAX_OFFSET = 2**63 - 1
_MAX_NAME = 250


class FilterError(ValueError):
    """A query parameter the page cannot use (the message names it and its value)."""


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs the history shows; ``None`` means any."""

    validation: str | None = None
    verdict: str | None = None
    trigger: str | None = None
    since: dt.date | None = None
    until: dt.date | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def store_arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``Store.list_runs`` that select these runs."""
        return {
            "validation": self.validation,
            "verdict": self.verdict,
            "trigger": self.trigger,
            "since": None if self.since is None else _midnight(self.since),
            "until": None if self.until in (None, dt.date.max) else _midnight(self.until + _DAY),
            "limit": self.limit,
            "offset": self.offset,
        }

    def query(self, **changes: Any) -> dict[str, str]:
        """The query parameters that give this filter back (with ``changes``), for links;
        empty and default values are left out."""
        data = {**self.as_dict(), **changes}
        defaults = {"limit": DEFAULT_LIMIT, "offset": 0}
        return {k: str(v) for k, v in data.items() if v is not None and v != defaults.get(k)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "validation": self.validation,
            "verdict": self.verdict,
            "trigger": self.trigger,
            "since": None if self.since is None else self.since.isoformat(),
            "until": None if self.until is None else self.until.isoformat(),
            "limit": self.limit,
            "offset": self.offset,
        }


def parse_run_filter(params: Mapping[str, str]) -> RunFilter:
    """The filter a query string asks for; ``FilterError`` names a bad parameter."""
    verdict = _text(params, "verdict")
    if verdict is not None and verdict not in VERDICTS:
        raise FilterError(f"verdict: expected one of {', '.join(VERDICTS)}, got {verdict!r}")
    since = _day(params, "since")
    until = _day(params, "until")
    if since is not None and until is not None and until < since:
        raise FilterError(f"until: {until.isoformat()} is before since {since.isoformat()}")
    return RunFilter(
        validation=_text(params, "validation"),
        verdict=verdict,
        trigger=_text(params, "trigger"),
        since=since,
        until=until,
        limit=_integer(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
        offset=_integer(params, "offset", 0, 0, MAX_OFFSET),
    )


def parse_trend_runs(params: Mapping[str, str]) -> int:
    """How many of each validation's latest runs the trends show (``?runs=N``)."""
    return _integer(params, "runs", DEFAULT_TREND_RUNS, 2, MAX_TREND_RUNS)


def optional_text(params: Mapping[str, str], name: str) -> str | None:
    """A free-text parameter (a validation, a version); empty means absent."""
    return _text(params, name)


def path_text(name: str, value: str) -> str:
    """A value taken from the URL's path (a run id, a validation), if the store can hold it:
    no NUL byte (PostgreSQL text cannot hold one, so no run has one)."""
    if "\x00" in value:
        raise FilterError(f"{name}: contains a NUL byte")
    return value


def _text(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if len(value) > _MAX_NAME:
        raise FilterError(f"{name}: longer than {_MAX_NAME} characters")
    return path_text(name, value)


def _day(params: Mapping[str, str], name: str) -> dt.date | None:
    value = _text(params, name)
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise FilterError(f"{name}: expected a date YYYY-MM-DD, got {value!r}") from None


def _integer(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """ASCII digits only: ``int`` would also take ``1_000``, `` 5`` and other scripts' digits."""
    value = _text(params, name)
    if value is None:
        return default
    number = int(value) if value.isascii() and value.isdigit() else low - 1
    if not low <= number <= high:
        raise FilterError(f"{name}: expected a whole number {low} to {high}, got {value!r}")
    return number


_DAY = dt.timedelta(days=1)


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
