"""When two events count as the same: the ``≡`` of DiffStream.

An ``Equality`` is a value: the columns to ignore, numeric tolerances, string normalisation,
NaN handling, or a user function. It answers three questions the matcher asks:

* ``equal(a, b)``: are the events equal? (the default is a plain ``a == b`` with NaN == NaN)
* ``differing_columns(a, b)``: which columns tell them apart (for a corruption witness)
* ``canonical(a)``: a hashable value that equal events share, so multiset matching can use a
  hash table; ``None`` when no such value exists (a user function)

Tolerances make ``equal`` non-transitive; matching is then greedy (the earliest equal
unmatched event wins), which is what a user of per-column tolerances expects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from matcher.errors import IncompatibleEqualityError, SpecError

Event = Mapping[str, Any]
EqualityFunction = Callable[[Event, Event], bool]

NORMALISATIONS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {"trim": str.strip, "lower": str.lower, "upper": str.upper, "casefold": str.casefold}
)
ALL_COLUMNS = "*"


class _NaN:
    """The canonical stand-in for every NaN, so NaN values hash and compare equal."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NaN"


NAN = _NaN()


@dataclass(frozen=True, slots=True)
class Tolerance:
    """Numbers ``a`` and ``b`` are equal when ``|a - b| <= abs`` or ``<= rel * max(|a|, |b|)``."""

    abs: float = 0.0
    rel: float = 0.0

    def __post_init__(self) -> None:
        if self.abs < 0 or self.rel < 0 or math.isnan(self.abs) or math.isnan(self.rel):
            raise SpecError(
                f"tolerance must be non-negative numbers, got abs={self.abs} rel={self.rel}"
            )

    def close(self, a: Any, b: Any) -> bool:
        if not (_is_number(a) and _is_number(b)):
            return bool(a == b)
        x, y = float(a), float(b)
        if x == y:
            return True
        if math.isinf(x) or math.isinf(y):
            return False
        diff = abs(x - y)
        return diff <= self.abs or diff <= self.rel * max(abs(x), abs(y))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def freeze(value: Any) -> Any:
    """A hashable, NaN-stable stand-in for a value (lists, dicts and NaN included)."""
    if isinstance(value, float) and value != value:
        return NAN
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


_PLAIN_SCALARS = (str, int, bool, bytes, type(None))


def _values_equal(a: Any, b: Any, nan_equal: bool) -> bool:
    if a == b:
        return True
    if not nan_equal:
        return False
    kind = type(a)
    if kind is float:  # unequal floats are equal only as two NaNs
        return a != a and isinstance(b, float) and b != b
    if kind in _PLAIN_SCALARS:  # freezing leaves these as they are: still unequal
        return False
    return bool(freeze(a) == freeze(b))


@dataclass(frozen=True, slots=True)
class Equality:
    """Equality of events, as data.

    ``ignore`` columns are never compared; ``tolerance`` maps a numeric column to a
    ``Tolerance``; ``normalize`` maps a column (or ``"*"`` for every string column) to the
    ordered names of ``NORMALISATIONS`` applied before comparing; ``nan_equal`` makes NaN
    equal to NaN (the default: an output that has NaN where the reference has NaN agrees);
    ``function`` replaces all of that with a user's ``fn(a, b) -> bool``.
    """

    ignore: frozenset[str] = frozenset()
    tolerance: Mapping[str, Tolerance] = field(default_factory=lambda: MappingProxyType({}))
    normalize: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    nan_equal: bool = True
    function: EqualityFunction | None = None
    function_name: str | None = None
    _plain: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        for column, steps in self.normalize.items():
            for step in steps:
                if step not in NORMALISATIONS:
                    known = ", ".join(NORMALISATIONS)
                    raise SpecError(f"normalize.{column}: unknown step {step!r} (known: {known})")
        object.__setattr__(self, "tolerance", MappingProxyType(dict(self.tolerance)))
        object.__setattr__(self, "normalize", MappingProxyType(dict(self.normalize)))
        plain = (
            self.function is None
            and not self.ignore
            and not self.tolerance
            and not self.normalize
            and self.nan_equal
        )
        object.__setattr__(self, "_plain", plain)

    @property
    def is_plain(self) -> bool:
        """True when equality is ``==`` with NaN == NaN: the matcher's fast path."""
        return self._plain

    @property
    def loosened_columns(self) -> frozenset[str]:
        """Columns whose values may differ between equal events."""
        return self.ignore | frozenset(self.tolerance) | frozenset(self.normalize)

    def check_compatible(self, dependence_columns: Iterable[str] | None, where: str = "") -> None:
        """Reject an equality that loosens a column the dependence reads.

        ``dependence_columns`` is ``None`` when the dependence is an opaque function; then
        the user vouches for compatibility and nothing can be checked.
        """
        if dependence_columns is None or self.function is not None:
            return
        prefix = f"{where}: " if where else ""
        for column in sorted(set(dependence_columns)):
            for name, loosened in (
                ("ignores", self.ignore),
                ("has a tolerance on", self.tolerance),
                ("normalises", self.normalize),
            ):
                if column in loosened:
                    raise IncompatibleEqualityError(
                        f"{prefix}equality {name} column {column!r}, which the dependence "
                        "reads: events it calls equal could differ in their dependences"
                    )
            if ALL_COLUMNS in self.normalize:
                raise IncompatibleEqualityError(
                    f"{prefix}equality normalises every string column ('*'), including "
                    f"dependence column {column!r}: list the columns to normalise instead"
                )

    def equal(self, a: Event, b: Event) -> bool:
        if self.function is not None:
            return bool(self.function(a, b))
        if self._plain:
            return a == b or self._rules_equal(a, b)
        return self._rules_equal(a, b)

    def _rules_equal(self, a: Event, b: Event) -> bool:
        # An absent column reads as null (``get``): Spark's JSON writer drops null fields.
        for column in a.keys() | b.keys():
            if column in self.ignore:
                continue
            if not self._column_equal(column, a.get(column), b.get(column)):
                return False
        return True

    def _column_equal(self, column: str, x: Any, y: Any) -> bool:
        tolerance = self.tolerance.get(column)
        if tolerance is not None:
            if self.nan_equal and _is_nan(x) and _is_nan(y):
                return True
            return tolerance.close(x, y)
        steps = self.normalize.get(column) or self.normalize.get(ALL_COLUMNS)
        if steps and isinstance(x, str) and isinstance(y, str):
            x, y = _normalise(x, steps), _normalise(y, steps)
        return _values_equal(x, y, self.nan_equal)

    def differing_columns(self, a: Event, b: Event) -> tuple[str, ...]:
        """The columns that tell ``a`` and ``b`` apart under the rules, in ``a``'s order."""
        ordered = list(a.keys()) + [k for k in b if k not in a]
        return tuple(
            column
            for column in ordered
            if column not in self.ignore
            and not self._column_equal(column, a.get(column), b.get(column))
        )

    def differs_in_at_most(self, a: Event, b: Event, limit: int) -> bool:
        """Whether at most ``limit`` compared columns tell ``a`` and ``b`` apart (stops
        counting past ``limit``)."""
        differing = 0
        for column in a.keys() | b.keys():
            if column in self.ignore or self._column_equal(column, a.get(column), b.get(column)):
                continue
            differing += 1
            if differing > limit:
                return False
        return True

    def canonical(self, event: Event) -> Any:
        """A hashable value shared by all events equal to ``event``, or ``None`` if unknown.

        Tolerance columns are left out (near values must land in the same bucket); the
        bucket is then searched with ``equal``.
        """
        if self.function is not None:
            return None
        if self._plain:
            try:
                fast = frozenset(event.items())
            except TypeError:  # an unhashable value: freeze below
                pass
            else:
                values = event.values()
                if None not in values:  # nulls are left out below, like absent columns
                    for value in values:
                        if isinstance(value, float) and value != value:
                            break  # NaN hashes by identity: freeze below
                    else:
                        return fast
        skip = self.ignore | frozenset(self.tolerance)
        items = []
        for column, value in event.items():
            if column in skip or value is None:
                continue
            steps = self.normalize.get(column) or self.normalize.get(ALL_COLUMNS)
            if steps and isinstance(value, str):
                value = _normalise(value, steps)
            items.append((column, freeze(value) if self.nan_equal else _freeze_keep_nan(value)))
        return frozenset(items)  # the same shape as the fast path above


def _normalise(value: str, steps: tuple[str, ...]) -> str:
    for step in steps:
        value = NORMALISATIONS[step](value)
    return value


def _freeze_keep_nan(value: Any) -> Any:
    # Without nan_equal a NaN equals nothing, itself included; a fresh object keeps it alone
    # in its hash bucket.
    if isinstance(value, float) and value != value:
        return object()
    return freeze(value)


PLAIN = Equality()
