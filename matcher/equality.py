"""When two events count as the same: the ``≡`` of DiffStream.

An ``Equality`` is a value: the columns to ignore, numeric tolerances, string normalisation,
NaN handling, or a user function. It answers three questions the matcher asks:

* ``equal(a, b)``: are the events equal? (the default: every column is *exactly* equal, below)
* ``differing_columns(a, b)``: which columns tell them apart (for a corruption witness)
* ``canonical(a)``: a hashable value that equal events share, so multiset matching can use a
  hash table; ``None`` when no such value exists (a user function)

**Exact equality** of two values ``x`` and ``y`` (``same``), applied column by column (an
ignored column is skipped; an absent column reads as null, as Spark's JSON writer drops null
fields), after the column's string normalisation:

* null equals only null;
* a boolean equals only a boolean of the same value: ``true`` is not ``1``, ``false`` not
  ``0``, whatever the tolerance;
* numbers compare by value across the widenings: an int with an int (any width), an int
  with a float, an int with a ``Decimal``, exactly (no rounding: Python's comparison);
  ``-0.0`` equals ``0.0``; a ``Decimal`` and a float are unequal, unless a tolerance applies;
* NaN (a float's, or a ``Decimal``'s) equals NaN when ``nan_equal`` (the default), else
  nothing, itself included; it never equals a number;
* values of different kinds are unequal (``1`` is not ``"1"``); other values (strings,
  bytes, dates, timestamps) compare with ``==``, which keeps their types apart;
* arrays (lists, tuples) are equal when they have the same length and are equal element
  by element; maps and structs (mappings) when every key's values are equal, an absent key
  reading as null (as at the top level); all by these same rules, at every depth.

Both engines apply these rules to the values as read, whatever the two outputs' schemas:
a column whose two types have no common type is compared as read (``matcher.schema``), so
``"1"`` in a ``string`` column is not ``1`` in a ``bigint`` one, nor ``Decimal("1.50")``
in a ``decimal(10,2)`` column ``1.5`` in a ``double`` one; and a JSON column that mixes
kinds (``1`` in one row, ``"x"`` in another), which Spark's reader infers as ``string``,
keeps them apart on Spark as on the core (``matcher.spark.kinds``).

**A tolerance** on a column (``|x - y| <= abs`` or ``<= rel * max(|x|, |y|)``, in double
precision) applies to every number in it, at every depth of its arrays, maps and structs,
as PySpark's ``assertDataFrameEqual`` applies ``rtol``/``atol``. It only ever makes equal
two numbers that differ by at most the tolerance: kinds are checked as without it (so a
``Decimal`` and a float within tolerance are equal, a boolean and a number never); an
infinity is close only to itself. A tolerance of 0 (``abs`` and ``rel`` both 0) is no
tolerance: the column is compared exactly.

Tolerances make ``equal`` non-transitive: ``1.0 ≈ 1.05 ≈ 1.1`` but ``1.0 ≉ 1.1``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from matcher.errors import IncompatibleEqualityError, InputError, SpecError
from matcher.user_code import guarded

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

    @property
    def exact(self) -> bool:
        """A tolerance of 0: no number is close to another but itself."""
        return self.abs == 0 and self.rel == 0

    def close(self, a: Any, b: Any) -> bool:
        """Whether the numbers ``a`` and ``b`` (not NaN) are within the tolerance, in double
        precision; an infinity is close only to itself. An integer beyond a double's range
        (JSON allows any) is an infinity of its sign, as a double reads it."""
        x, y = _double(a), _double(b)
        if x == y:
            return True
        if math.isinf(x) or math.isinf(y):
            return False
        diff = abs(x - y)
        return diff <= self.abs or diff <= self.rel * max(abs(x), abs(y))


def _double(value: Any) -> float:
    """``value`` in double precision: ``float``, but an integer too large for it is infinite
    rather than an ``OverflowError``."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# The kinds ``same`` tells apart. Numbers are split so that the widenings can be named.
_NULL, _BOOL, _INT, _FLOAT, _DECIMAL, _ARRAY, _MAP, _OTHER = range(8)
_NUMBERS = frozenset({_INT, _FLOAT, _DECIMAL})
_DECIMAL_FLOAT = frozenset({_DECIMAL, _FLOAT})
_NONE_TYPE = type(None)
_KINDS: dict[type, int] = {
    _NONE_TYPE: _NULL,
    bool: _BOOL,
    int: _INT,
    float: _FLOAT,
    Decimal: _DECIMAL,
    list: _ARRAY,
    tuple: _ARRAY,
    dict: _MAP,
    str: _OTHER,
    bytes: _OTHER,
}


#: what a class that ``_KINDS`` lacks is, by its first base here (``bool`` is an ``int``;
#: ``numbers.Integral``/``Real`` catch numpy's scalars)
_BASES: tuple[tuple[type, int], ...] = (
    (bool, _BOOL),
    (int, _INT),
    (float, _FLOAT),
    (Decimal, _DECIMAL),
    (numbers.Integral, _INT),
    (numbers.Real, _FLOAT),
    (list, _ARRAY),
    (tuple, _ARRAY),
    (Mapping, _MAP),
)


def _kind(value: Any) -> int:
    cls = value.__class__
    kind = _KINDS.get(cls)
    if kind is None:  # looked up once per class
        kind = next((k for base, k in _BASES if isinstance(value, base)), _OTHER)
        _KINDS[cls] = kind
    return kind


def _is_nan(value: Any, kind: int) -> bool:
    if kind == _FLOAT:
        return bool(value != value)
    return kind == _DECIMAL and bool(value.is_nan())


def same(x: Any, y: Any, nan_equal: bool = True, tolerance: Tolerance | None = None) -> bool:
    """Whether the values ``x`` and ``y`` are equal by the rules of the module docstring,
    numbers within ``tolerance`` at every depth (``None``, or an exact one: compared
    exactly)."""
    cls = x.__class__
    if cls is y.__class__:  # the common cases first
        if cls is str or cls is bool or cls is _NONE_TYPE:
            return bool(x == y)
        if tolerance is None:
            if cls is int:
                return bool(x == y)
            if cls is float:
                return x == y or (nan_equal and x != x and y != y)
    if tolerance is not None and tolerance.exact:
        tolerance = None
    return _same(x, y, nan_equal, tolerance)


#: How deeply arrays, maps and structs may nest in a value the matcher compares or hashes
#: (``same``, ``freeze``): deeper, an ``InputError`` says so in one line. A stated bound
#: rather than Python's recursion limit met by accident (which fell from about 480 levels
#: to under 400 as the code's stack grew): each level costs one frame, so the bound holds
#: well inside the limit of 1,000 frames.
MAX_NESTING = 480


def too_deep() -> InputError:
    """The error for a value nested deeper than ``MAX_NESTING``."""
    return InputError(
        f"a value is nested deeper than {MAX_NESTING} levels (arrays, maps and structs): "
        "too deep to compare"
    )


def _same(x: Any, y: Any, nan_equal: bool, tolerance: Tolerance | None, depth: int = 0) -> bool:
    # Loops, not all(generator): a generator's frame would double the stack per level.
    kx, ky = _kind(x), _kind(y)
    if kx in _NUMBERS and ky in _NUMBERS:
        if tolerance is None and {kx, ky} == _DECIMAL_FLOAT:
            return False  # not a widening: the float is the Decimal's value only by rounding
        nan_x, nan_y = _is_nan(x, kx), _is_nan(y, ky)
        if nan_x or nan_y:
            return nan_equal and nan_x and nan_y
        if x == y:  # exact, across int, float and Decimal
            return True
        return tolerance is not None and tolerance.close(x, y)
    if kx != ky:
        return False
    if kx == _ARRAY:
        if len(x) != len(y):
            return False
        if depth >= MAX_NESTING:
            raise too_deep()
        for a, b in zip(x, y, strict=True):  # noqa: SIM110 (one frame per level)
            if not _same(a, b, nan_equal, tolerance, depth + 1):
                return False
        return True
    if kx == _MAP:  # an absent key reads as null
        if depth >= MAX_NESTING:
            raise too_deep()
        for k, v in x.items():
            if not _same(v, y.get(k), nan_equal, tolerance, depth + 1):
                return False
        return all(v is None or k in x for k, v in y.items())
    return kx == _NULL or bool(x == y)


def freeze(value: Any, depth: int = 0) -> Any:
    """A hashable, NaN-stable stand-in for a value (lists, dicts and NaN included) that values
    equal by ``same`` share: a mapping's null entries are left out, as ``same`` reads an
    absent key as null. At most ``MAX_NESTING`` levels deep (one frame per level)."""
    if isinstance(value, float) and value != value:
        return NAN
    if isinstance(value, (list, tuple, Mapping, set, frozenset)):
        if depth >= MAX_NESTING:
            raise too_deep()
        if isinstance(value, Mapping):
            pairs = []
            for k, v in value.items():
                if v is not None:
                    pairs.append((str(k), freeze(v, depth + 1)))
            return tuple(sorted(pairs))
        items = []
        for v in value:
            items.append(freeze(v, depth + 1))
        return frozenset(items) if isinstance(value, (set, frozenset)) else tuple(items)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


#: classes whose values ``==`` compares by the rules when both sides have the same one
FLAT_CLASSES = frozenset(
    {str, int, float, bool, type(None), bytes, Decimal, datetime, date, time, timedelta}
)


@dataclass(frozen=True, slots=True)
class Equality:
    """Equality of events, as data.

    ``ignore`` columns are never compared; ``tolerance`` maps a column to the ``Tolerance``
    of the numbers in it, at any depth (a tolerance of 0 is left out); ``normalize`` maps a
    column (or ``"*"`` for every string column) to the ordered names of ``NORMALISATIONS``
    applied to its strings before comparing; ``nan_equal`` makes NaN equal to NaN (the
    default: an output that has NaN where the reference has NaN agrees); ``function``
    replaces all of that with a user's ``fn(a, b) -> bool``.
    """

    ignore: frozenset[str] = frozenset()
    tolerance: Mapping[str, Tolerance] = field(default_factory=lambda: MappingProxyType({}))
    normalize: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    nan_equal: bool = True
    function: EqualityFunction | None = None
    function_name: str | None = None
    _plain: bool = field(init=False, repr=False, compare=False, default=False)
    #: ``function`` as the matcher calls it (``matcher.user_code``): a ``sys.exit()`` in it or
    #: a result that is not a bool is an error naming it, never a verdict
    _call: Any = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        for column, steps in self.normalize.items():
            for step in steps:
                if step not in NORMALISATIONS:
                    known = ", ".join(NORMALISATIONS)
                    raise SpecError(f"normalize.{column}: unknown step {step!r} (known: {known})")
        # a tolerance of 0 is exact: dropped, so that every path compares the column exactly
        tolerance = {c: t for c, t in self.tolerance.items() if not t.exact}
        object.__setattr__(self, "tolerance", MappingProxyType(tolerance))
        object.__setattr__(self, "normalize", MappingProxyType(dict(self.normalize)))
        plain = (
            self.function is None
            and not self.ignore
            and not self.tolerance
            and not self.normalize
            and self.nan_equal
        )
        object.__setattr__(self, "_plain", plain)
        object.__setattr__(self, "_call", guarded(self.function, bool, self.function_name))

    @property
    def is_plain(self) -> bool:
        """True when equality is the exact rule over every column, NaN equal to NaN: the
        matcher's fast path (``equal`` is then ``==`` checked for the kinds ``==`` mixes)."""
        return self._plain

    @property
    def exact_but_ignored(self) -> bool:
        """True when equality is the exact rule over every column but the ignored ones (plain
        when none is ignored): the fast paths of ``matcher.online`` and of
        ``matcher.files.columnar_equivalence``."""
        return (
            self.function is None and not self.tolerance and not self.normalize and self.nan_equal
        )

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
            return self._call(a, b)  # type: ignore[no-any-return]
        if self._plain and a == b:
            # ``==`` is the rules' verdict when each column holds one class on both sides,
            # none of them a container (``true == 1`` and ``[true] == [1]`` are not)
            for column, value in a.items():
                kind = value.__class__
                if kind is not b[column].__class__ or kind not in FLAT_CLASSES:
                    return self._rules_equal(a, b)
            return True
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
        if self.normalize:
            steps = self.normalize.get(column) or self.normalize.get(ALL_COLUMNS)
            if steps and isinstance(x, str) and isinstance(y, str):
                x, y = _normalise(x, steps), _normalise(y, steps)
        return same(x, y, self.nan_equal, self.tolerance.get(column))

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
