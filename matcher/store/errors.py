"""Errors of the results store, in Parity's tree (``matcher.errors``).

The subtree::

    ParityError
    └── StoreError                 the results database is unreachable, misconfigured, or refused
        │                          an operation (the message masks any password in the URL)
        ├── UnknownRunError        an outcome was recorded for a run that was never started
        └── InvalidRecordError     a record holds a value the store cannot keep the same way on
                                   SQLite and PostgreSQL (too long, out of range); also a
                                   ``ValueError``

SQLAlchemy and driver errors never leave ``matcher.store``: the repository translates them here
(``raise StoreError(...) from exc``), so callers handle one tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote, quote_plus, unquote, unquote_plus

from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

from matcher.errors import ParityError


class StoreError(ParityError):
    """The results database cannot be reached, is misconfigured, or refused an operation.

    The message is one line and names the database with its password masked, e.g.
    ``cannot record run 'nightly/1': connection refused (postgresql+psycopg://u:***@db/parity)``.
    """


class UnknownRunError(StoreError):
    """An outcome or expectation results were written for a ``run_id`` with no run row.

    ``Store.start_run`` (or ``Store.running``) creates the row; recording before it is a bug in
    the caller, not something to paper over by inventing a run with no validation name.
    """


class InvalidRecordError(StoreError, ValueError):
    """A run's record holds a value the store would keep differently on its two backends: a
    text longer than its column (PostgreSQL refuses it, SQLite keeps it whole), a count past
    64 bits (PostgreSQL's ``bigint``, SQLite's integers) or below zero, a NUL byte (which
    PostgreSQL's text cannot hold). Raised by the records' constructors, before any
    database is touched, with one line naming the field and the limit."""


#: query parameters and ``key=value`` pairs whose value is a secret: ``password``, ``pass``,
#: ``pwd``, ``sslpassword``, ``secret``, ``token``, ``api_key``, ``passfile`` and the like
_SECRET_NAME = r"[A-Za-z0-9_.-]*(?:pass|pwd|secret|token|key|credential|auth)[A-Za-z0-9_.-]*"
_SECRET_PAIR = re.compile(
    rf"(?i)\b({_SECRET_NAME})(\s*(?:=|%3D)\s*)('[^']*'|\"[^\"]*\"|[^\s&;,)'\"]+)"
)
#: ``scheme://user:password@``: the password of any URL quoted in a message
_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]*://[^\s/:@]*:)[^\s/@]*@")
#: a secret shorter than this is masked where it stands as a value (``password=``, ``:pw@``)
#: but not wherever its letters occur: a one-letter password would garble the message
_SHORTEST_BARE_SECRET = 4
_PLACEHOLDER = "PARITYMASKEDVALUE"


def masked(url: str) -> str:
    """``url`` with every secret replaced by ``***``, for messages and logs: the password
    (``user:pw@``), query parameters that name one (``?password=``, ``?pass=``, ``?pwd=``,
    ``?sslpassword=``, ``?secret=``, ``?token=``, ...), and ``name=value`` secrets inside
    other parameters' values (``?options=-c password=...``)."""
    try:
        parsed = make_url(url)
        query = {
            key: _masked_value(key, value)
            if isinstance(value, str)
            else tuple(_masked_value(key, v) for v in value)
            for key, value in parsed.query.items()
        }
        rendered = parsed.set(query=query).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        return "<unparseable database URL>"
    return redact(rendered.replace(_PLACEHOLDER, "***"), url)


def _masked_value(key: str, value: str) -> str:
    if re.fullmatch(rf"(?i){_SECRET_NAME}", key):
        return _PLACEHOLDER
    return _SECRET_PAIR.sub(lambda m: f"{m[1]}{m[2]}{_PLACEHOLDER}", value)


def redact(text: str, url: str | None = None) -> str:
    """``text`` (a driver's message, which may echo the URL or the DSN built from it) with
    the secrets of ``url`` masked in every spelling (raw, percent-encoded, ``+`` for spaces),
    and any ``password=...``-like pair or ``user:pw@`` of a URL masked whatever the URL."""
    for secret in sorted(set(_secrets(url)), key=len, reverse=True):
        if len(secret) >= _SHORTEST_BARE_SECRET:
            for form in _spellings(secret):
                text = text.replace(form, "***")
    text = _SECRET_PAIR.sub(lambda m: f"{m[1]}{m[2]}***", text)
    return _USERINFO.sub(lambda m: f"{m[1]}***@", text)


def describe(exc: BaseException, url: str | None = None) -> str:
    """One line about a database error: the driver's own message, without the SQL statement,
    its parameters (event values) or any secret of ``url`` (``redact``)."""
    origin = getattr(exc, "orig", None) or exc
    lines = str(origin).strip().splitlines()
    text = f"{type(origin).__name__}: {lines[0] if lines else 'no message'}"
    return redact(text, url)


def _secrets(url: str | None) -> Iterator[str]:
    """The secret values of ``url``: its password, the values of secret query parameters,
    and ``name=value`` secrets inside the others."""
    if url is None:
        return
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError, TypeError):
        # Unparseable: what looks like a password in it is still one.
        yield from (m[3].strip("'\"") for m in _SECRET_PAIR.finditer(unquote(url)))
        yield from (m[1] for m in re.finditer(r"://[^\s/:@]*:([^\s/@]*)@", url))
        return
    if parsed.password:
        yield str(parsed.password)
    for key, value in parsed.query.items():
        for item in (value,) if isinstance(value, str) else value:
            if re.fullmatch(rf"(?i){_SECRET_NAME}", key):
                yield item
            yield from (m[3].strip("'\"") for m in _SECRET_PAIR.finditer(item))


def _spellings(secret: str) -> list[str]:
    forms = {secret, quote(secret, safe=""), quote_plus(secret), unquote(secret)}
    forms.add(unquote_plus(secret))
    return sorted((f for f in forms if f), key=len, reverse=True)
