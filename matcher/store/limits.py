"""The limits a record's values must keep to be stored the same way on SQLite and PostgreSQL.

PostgreSQL refuses a text longer than its ``VARCHAR`` column, a count past its ``BIGINT``
(``INTEGER`` for ordinals and try numbers) and a NUL byte in text; SQLite keeps the long text
whole and the NUL, and its driver raises a bare ``OverflowError`` past 64 bits. The records
(``matcher.store.records``) check their values here when they are made, so that both
backends refuse the same values, before anything ran against a database, in one line naming
the field and the limit (``InvalidRecordError``).
"""

from __future__ import annotations

import operator
from types import MappingProxyType
from typing import Any

from matcher.store.errors import InvalidRecordError
from matcher.store.models import NAME_LENGTH, RUN_ID_LENGTH, SPEC_HASH_LENGTH, TAG_LENGTH

__all__ = [
    "BIGINT_LIMIT",
    "INTEGER_LIMIT",
    "NAME_LENGTH",
    "RUN_ID_LENGTH",
    "SPEC_HASH_LENGTH",
    "START_LENGTHS",
    "TAG_LENGTH",
    "check_count",
    "check_text",
]

#: a count or position column (``BIGINT`` on PostgreSQL, SQLite's 64-bit integer) holds less
BIGINT_LIMIT = 2**63
#: an ordinal or a try number (``INTEGER`` on PostgreSQL) holds less
INTEGER_LIMIT = 2**31
#: the text columns of ``runs`` a ``RunStart`` sets, and their lengths (``models.Run``):
#: PostgreSQL refuses a longer value, SQLite keeps it whole; checked here, so both refuse it
START_LENGTHS = MappingProxyType(
    {
        "run_id": RUN_ID_LENGTH,
        "validation": NAME_LENGTH,
        "trigger": TAG_LENGTH,
        "kind": TAG_LENGTH,
        "reference_version": NAME_LENGTH,
        "candidate_version": NAME_LENGTH,
        "dag_id": NAME_LENGTH,
        "dag_run_id": NAME_LENGTH,
        "engine": TAG_LENGTH,
        "spec_hash": SPEC_HASH_LENGTH,
    }
)


def check_text(name: str, value: str | None, limit: int | None = None) -> None:
    """Refuse, in one line naming the field, a text the two backends would keep differently:
    longer than its column's ``limit`` (characters), or holding a NUL byte."""
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidRecordError(f"{name}: expected a string, got {type(value).__name__}")
    if limit is not None and len(value) > limit:
        raise InvalidRecordError(
            f"{name}: {len(value)} characters, more than the store keeps ({limit})"
        )
    if "\x00" in value:
        raise InvalidRecordError(f"{name}: contains a NUL byte, which the store cannot keep")


def check_count(name: str, value: Any, limit: int = BIGINT_LIMIT) -> int:
    """``value`` as an ``int`` the store keeps the same on both backends (``0 <= value <
    limit``), else one line naming the field and the range: past 64 bits PostgreSQL says
    ``bigint out of range`` and SQLite's driver raises a bare ``OverflowError``."""
    try:
        if isinstance(value, bool):
            raise TypeError(value)
        number = operator.index(value)  # an int, or a NumPy integer: not a float
    except TypeError:
        raise InvalidRecordError(f"{name}: expected an integer, got {value!r}") from None
    if not 0 <= number < limit:
        exponent = limit.bit_length() - 1
        raise InvalidRecordError(
            f"{name}: {number} is out of range (the store keeps 0 to 2**{exponent}-1)"
        )
    return number
