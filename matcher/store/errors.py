"""Errors of the results store, in Parity's tree (``matcher.errors``).

The subtree::

    ParityError
    └── StoreError                 the results database is unreachable, misconfigured, or refused
        │                          an operation (the message masks any password in the URL)
        └── UnknownRunError        an outcome was recorded for a run that was never started

SQLAlchemy and driver errors never leave ``matcher.store``: the repository translates them here
(``raise StoreError(...) from exc``), so callers handle one tree.
"""

from __future__ import annotations

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


def masked(url: str) -> str:
    """``url`` with its password replaced by ``***``, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "<unparseable database URL>"


def describe(exc: BaseException, url: str | None = None) -> str:
    """One line about a database error: the driver's own message, without the SQL statement,
    its parameters (event values) or the password of ``url``."""
    origin = getattr(exc, "orig", None) or exc
    lines = str(origin).strip().splitlines()
    text = f"{type(origin).__name__}: {lines[0] if lines else 'no message'}"
    password = _password(url)
    return text.replace(password, "***") if password else text


def _password(url: str | None) -> str | None:
    if url is None:
        return None
    try:
        return make_url(url).password
    except (ArgumentError, ValueError):
        return None
