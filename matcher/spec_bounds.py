"""The ranges of what a spec may say, in one place: the loader checks them, and everything
that computes with a loaded spec (the DAG factory, the run plan) can rely on them.

    parse_duration("6h")          # datetime.timedelta(seconds=21600)
    parse_duration("99999999d")   # ValueError: at most 3650d (ten years), got '99999999d'

Why bounds at all: a duration or an instant that passes the loader but overflows
``datetime`` later (``start + window`` past year 9999, a ``timedelta`` of 10**14 days)
crashes whatever computes with it: in Airflow that was the DAG factory, and every
validation's DAG went with it. So each number is checked where it is parsed, against a
range in which every sum the pipeline forms stays representable:

* a duration (``input.slice.window``, ``airflow.task_timeout``) is at most
  ``MAX_DURATION``, ten years: a window or a time limit longer than that is a typo;
* an instant (``input.slice.start``/``end``) lies in ``[EARLIEST, LATEST)``, years 1000 to
  9000 UTC, so that it plus or minus a duration (and any time zone's offset) stays inside
  ``datetime``'s years 1 to 9999;
* a seed or a count is at most ``MAX_INT`` (``2**31 - 1``), what any store's integer
  column and any ``--seed`` argument holds;
* a name that reaches a command line or Airflow (a Spark configuration key, a pool) is
  letters, digits, ``_``, ``.`` and ``-``, at most ``MAX_NAME`` characters: nothing that
  reads as two words, a path or a line break.
"""

from __future__ import annotations

import datetime as dt
import re

#: the longest window or task time limit a spec may give
MAX_DURATION = dt.timedelta(days=3650)
MAX_DURATION_TEXT = "3650d (ten years)"
#: the range of a fixed slice's ``start`` and ``end`` (UTC)
EARLIEST = dt.datetime(1000, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(9000, 1, 1, tzinfo=dt.UTC)
#: the largest seed or count a spec may give (a 32-bit signed integer)
MAX_INT = 2**31 - 1
#: the longest Spark configuration key, pool or validation name (Airflow: 250 per DAG id)
MAX_NAME = 200

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_DURATION = re.compile(r"^[1-9][0-9]*[smhdw]$")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def parse_duration(text: str) -> dt.timedelta:
    """``30m``, ``6h``, ``1d``, ``2w`` as a timedelta, at most ``MAX_DURATION``; a
    ``ValueError`` (one line, the text quoted) otherwise."""
    if not isinstance(text, str) or not _DURATION.match(text):
        raise ValueError(f"expected a duration such as 30m, 6h, 1d or 2w, got {text!r}")
    if len(text) > 12:  # longer than any duration within the bound: not worth converting
        raise ValueError(f"at most {MAX_DURATION_TEXT}, got {text!r}")
    seconds = int(text[:-1]) * _UNIT_SECONDS[text[-1]]
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"at most {MAX_DURATION_TEXT}, got {text!r}")
    return dt.timedelta(seconds=seconds)


def check_instant(value: dt.datetime) -> dt.datetime:
    """``value`` (time-zone aware) when it lies in ``[EARLIEST, LATEST)``."""
    if not EARLIEST <= value < LATEST:
        raise ValueError(
            f"must be from {EARLIEST.date().isoformat()} to before "
            f"{LATEST.date().isoformat()} (UTC), got {value.isoformat()}"
        )
    return value


def check_plain_name(value: str, what: str) -> str:
    """``value`` when it is a plain name (see the module docstring); ``what`` names it in
    the error (``a Spark configuration key``)."""
    if len(value) > MAX_NAME:
        raise ValueError(f"{what} is at most {MAX_NAME} characters, got {len(value)}")
    if not _PLAIN_NAME.match(value):
        raise ValueError(f"{what} is letters, digits, '_', '.' and '-', got {value!r}")
    return value
