"""The column profile of corrupted pairs taken as Arrow columns of numbers
(``matcher.spark.profile_arrays.add_number_arrays``) against the core's, pair by pair.

The Spark engine's chains' job adds millions of corrupted pairs at once; its figures must
be those ``ColumnProfile.add_many`` gives on the same Python values: every integer and
float type Arrow reads from Parquet, ints beyond 2^53 (rounded to a float as Python
rounds them), float32 (widened), NaN and infinities (counted as transitions), and the
times beside them. A quotient past the floats (a relative difference from a subnormal
value) makes an infinite sum, not an error.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from matcher.profile import ColumnProfile
from matcher.spark.profile_arrays import add_number_arrays, plain_numbers

INTS = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
    pa.uint64(): (0, 2**64 - 1),
}
FLOATS = st.floats(allow_nan=True, allow_infinity=True)


@st.composite
def columns(draw: st.DrawFn) -> tuple[pa.DataType, list[object], list[object]]:
    """Two columns of one numeric type, as Arrow would read them."""
    n = draw(st.integers(1, 60))
    kind = draw(st.sampled_from([*INTS, pa.float32(), pa.float64()]))
    if kind in INTS:
        low, high = INTS[kind]
        values = st.integers(low, high) | st.integers(max(low, -1000), min(high, 1000))
    elif kind == pa.float32():
        values = st.floats(width=32, allow_nan=True, allow_infinity=True)
    else:
        values = FLOATS
    olds = draw(st.lists(values, min_size=n, max_size=n))
    news = draw(st.lists(values, min_size=n, max_size=n))
    return kind, olds, news


@settings(max_examples=300, deadline=None)
@given(drawn=columns(), timed=st.booleans())
def test_arrays_of_numbers_give_the_cores_profile(
    drawn: tuple[pa.DataType, list[object], list[object]], timed: bool
) -> None:
    kind, olds, news = drawn
    old, new = pa.array(olds, kind), pa.array(news, kind)
    assert plain_numbers(old) and plain_numbers(new)
    start = dt.datetime(2026, 11, 1)
    times = [start + dt.timedelta(hours=7 * i) for i in range(len(olds))] if timed else None
    core, arrays = ColumnProfile(), ColumnProfile()
    # the values as the events hold them: Arrow's own Python values
    core.add_many(old.to_pylist(), new.to_pylist(), times)
    add_number_arrays(arrays, old, new, pa.array(times, pa.timestamp("us")) if times else None)
    # repr: a NaN sum is the same figure on both, though not equal to itself
    assert repr(arrays.to_partial()) == repr(core.to_partial())
    assert repr(arrays.summary()) == repr(core.summary())


def test_a_null_or_a_decimal_is_not_plain_numbers() -> None:
    assert not plain_numbers(pa.array([1, None], pa.int64()))
    assert not plain_numbers(pa.array([True], pa.bool_()))
    assert not plain_numbers(pa.array([1], pa.decimal128(5, 2)))
    assert plain_numbers(pa.chunked_array([[1.5], [2.0]], pa.float64()))
