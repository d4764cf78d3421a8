"""The column profile (``matcher.profile``) of millions of corrupted pairs, with numpy: the
same figures as ``ColumnProfile.add_many`` gives one pair at a time, for the Spark paths
that explain differences where the data is (``matcher.spark.chains_run``).

Numbers are taken together when every value on both sides is an int, a float or a
Decimal (otherwise pair by pair, as the core takes them): the differences, their sizes
and relative sizes by numpy, with the same IEEE operations as the core's, the sums exact
(``matcher.profile.exact_partials``), so that the means agree bit for bit. Times come as
Arrow arrays of naive timestamps or dates and are counted with ``numpy.unique`` at the
finest unit that keeps ``TIME_BUCKETS``, then merged as profiles merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from matcher.profile import DAY, TIME_BUCKETS, UNITS, ColumnProfile, exact_partials

#: the classes whose values are numbers to the profile (exactly: not bool, not a subclass)
NUMBERS = frozenset({int, float, Decimal})
#: numpy's names of ``matcher.profile.UNITS``, whose ``datetime_as_string`` is the prefix
NUMPY_UNITS: tuple[Literal["s", "m", "h", "D", "M", "Y"], ...] = ("s", "m", "h", "D", "M", "Y")


def add_pairs(
    column: ColumnProfile,
    olds: Sequence[Any],
    news: Sequence[Any],
    moments: pa.Array | pa.ChunkedArray | Sequence[Any] | None,
) -> None:
    """``column.add_many(olds, news, moments)``, vectorised where the values allow it;
    ``moments``: an Arrow array of naive timestamps or dates, else Python values."""
    if set(map(type, olds)) <= NUMBERS and set(map(type, news)) <= NUMBERS:
        column.pairs += len(olds)
        other = _add_numbers(column, olds, news)
        if other:
            column.add_transitions([olds[i] for i in other], [news[i] for i in other])
    else:
        column.add_many(olds, news)
    _add_moments(column, moments)


def _add_moments(
    column: ColumnProfile, moments: pa.Array | pa.ChunkedArray | Sequence[Any] | None
) -> None:
    if moments is None:
        return
    if isinstance(moments, pa.Array | pa.ChunkedArray):
        _add_times(column, moments)
    else:
        column.add_many([], [], moments)


def plain_numbers(values: pa.Array | pa.ChunkedArray) -> bool:
    """Whether an Arrow column's values are all ints or floats to the profile (no null)."""
    kind = values.type
    numeric = pa.types.is_integer(kind) or kind in (pa.float32(), pa.float64())
    return numeric and values.null_count == 0


def add_number_arrays(
    column: ColumnProfile,
    olds: pa.Array | pa.ChunkedArray,
    news: pa.Array | pa.ChunkedArray,
    moments: pa.Array | pa.ChunkedArray | Sequence[Any] | None,
) -> None:
    """``add_pairs`` for two Arrow columns of ``plain_numbers``: the same figures, numpy
    taking the values as floats as ``_add_numbers`` takes the Python values (an int rounded
    to the nearest float, a float32 widened exactly), with no Python value per pair."""
    column.pairs += len(olds)
    a = olds.to_numpy().astype(np.float64)
    b = news.to_numpy().astype(np.float64)
    other = _add_floats(column, a, b)
    if other:
        take = pa.array(other, pa.int64())
        column.add_transitions(olds.take(take).to_pylist(), news.take(take).to_pylist())
    _add_moments(column, moments)


def _add_numbers(column: ColumnProfile, olds: Sequence[Any], news: Sequence[Any]) -> list[int]:
    """Add pairs of numbers; the indexes of those that are not two finite floats."""
    try:
        a = np.array(olds, dtype=np.float64)
        b = np.array(news, dtype=np.float64)
    except (OverflowError, ValueError, TypeError):  # an int beyond a float, a Decimal NaN
        column.pairs -= len(olds)
        column.add_many(olds, news)
        return []
    return _add_floats(column, a, b)


def _add_floats(column: ColumnProfile, a: np.ndarray, b: np.ndarray) -> list[int]:
    """Add the pairs ``a[i] -> b[i]`` that are two finite floats; the indexes of the others."""
    finite = np.isfinite(a) & np.isfinite(b)
    a, b = a[finite], b[finite]
    with np.errstate(over="ignore"):  # past the floats is infinite, as in Python
        delta = b - a
        size = np.abs(delta)
        nonzero = a != 0
        relative = size[nonzero] / np.abs(a[nonzero])
    for moments, values in (
        (column.diff, delta),
        (column.abs_diff, size),
        (column.rel_diff, relative),
    ):
        if len(values):
            moments.add_exact(
                len(values),
                float(values.min()),
                float(values.max()),
                exact_partials(values.tolist()),
            )
    return np.flatnonzero(~finite).tolist()


def _add_times(column: ColumnProfile, moments: pa.Array | pa.ChunkedArray) -> None:
    """Count naive timestamps or dates at the finest unit that keeps ``TIME_BUCKETS``
    (dates: a day at the finest), then merge them into ``column``."""
    moments = moments.drop_null()
    if not len(moments):
        return
    naive = pa.types.is_timestamp(moments.type)
    # integers, not Arrow's ``to_numpy`` of times, which imports pandas (seconds long)
    # (a date is 32 bits of days, which Arrow casts only to its own width)
    ticks = moments.cast(pa.int64() if naive else pa.int32()).to_numpy().astype(np.int64)
    array = ticks.view(f"datetime64[{moments.type.unit if naive else 'D'}]")
    index = 0 if naive else DAY
    while True:
        code = NUMPY_UNITS[index]
        buckets, counts = np.unique(array.astype(f"datetime64[{code}]"), return_counts=True)
        if len(buckets) <= TIME_BUCKETS or index == len(UNITS) - 1:
            break
        index += 1
    names = np.datetime_as_string(buckets, unit=code).tolist()
    column.merge_times(UNITS[index][0], dict(zip(names, counts.tolist(), strict=True)))
