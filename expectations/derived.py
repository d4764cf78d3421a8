"""Expectations derived from the reference output: the candidate checked against the
reference's profile, without anyone writing a suite.

    profile = profile_output(reference_df, key=("taxi_id",))      # one Spark aggregation
    suite = derive_suite(profile, spec.expectations.derived, tolerances={"km": (1e-9, 0.0)})

From the reference's profile (``profile_output``, one aggregation pass over the DataFrame)
``derive_suite`` writes real Great Expectations expectations, to be run on the candidate:

* the same set of columns (``expect_table_columns_to_match_set``);
* the row count within ``row_count_tolerance`` (a fraction) of the reference's;
* each key column (the spec's ``dependence.key``) non-null where the reference's is, the key
  unique where the reference's is (``expect_column_values_to_be_unique``, or
  ``expect_compound_columns_to_be_unique`` for several columns), and each key column's
  distinct count within ``key_count_tolerance``;
* each column's null fraction at most the reference's plus ``null_fraction_tolerance``
  (``expect_column_values_to_not_be_null`` with ``mostly``);
* each numeric column's values within the reference's [min, max], widened by
  ``range_tolerance`` times the reference's range plus the column's equality tolerance
  (``abs`` + ``rel`` * |bound|). Columns with NaN or infinities in the reference get no
  range.

Columns the equality ignores, and ``derived.ignore``, get nothing but the column-set check.
An equivalent candidate passes every derived expectation with the default tolerances: it
has the same events up to the equality.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from expectations.suites import ExpectationConfig, Suite
from matcher.spec_schema import DerivedExpectationsSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

DERIVED_SUITE = "derived_from_reference"


@dataclass(frozen=True, slots=True)
class ColumnProfile:
    """One column of the reference: its nulls and, for numbers, its finite range.

    ``minimum``/``maximum`` are ``None`` when the column is not numeric, has no values, or
    holds NaN or infinities (``finite`` is then ``False``).
    """

    name: str
    numeric: bool
    integral: bool
    nulls: int
    minimum: float | int | None = None
    maximum: float | int | None = None
    finite: bool = True


@dataclass(frozen=True, slots=True)
class Profile:
    """The reference output as the derived expectations see it."""

    rows: int
    columns: tuple[ColumnProfile, ...]
    key: tuple[str, ...] = ()
    #: distinct values of each key column (nulls not counted)
    key_distinct: Mapping[str, int] | None = None
    #: no two rows share the whole key
    key_unique: bool = False

    def column(self, name: str) -> ColumnProfile:
        return next(c for c in self.columns if c.name == name)


def profile_output(df: DataFrame, key: Sequence[str] = ()) -> Profile:
    """Profile ``df`` in one aggregation: rows, nulls per column, the finite min and max of
    numeric columns, and distinct counts of the key."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, IntegralType, NumericType

    fields = {f.name: f.dataType for f in df.schema.fields}
    key = tuple(c for c in key if c in fields)
    aggregates = [F.count(F.lit(1)).alias("rows")]
    for i, (name, kind) in enumerate(fields.items()):
        column = _column(name)
        aggregates.append(F.count(column).alias(f"present_{i}"))
        if isinstance(kind, NumericType):
            value = column.cast("double") if isinstance(kind, DecimalType) else column
            if isinstance(kind, DoubleType | FloatType):
                odd = F.isnan(column) | column.isin(float("inf"), float("-inf"))
                aggregates.append(F.sum(F.when(odd, 1).otherwise(0)).alias(f"odd_{i}"))
                value = F.when(~odd, column)
            aggregates += [F.min(value).alias(f"min_{i}"), F.max(value).alias(f"max_{i}")]
    names = list(fields)
    for name in key:
        i = names.index(name)
        aggregates.append(F.count_distinct(_column(name)).alias(f"distinct_{i}"))
    if key:
        whole = F.struct(*[_column(name) for name in key])
        aggregates.append(F.count_distinct(whole).alias("distinct_key"))
    first = df.agg(*aggregates).first()
    assert first is not None  # an aggregation without grouping returns one row
    row = first.asDict()
    rows = int(row["rows"])
    columns = []
    for i, (name, kind) in enumerate(fields.items()):
        numeric = isinstance(kind, NumericType)
        odd = int(row.get(f"odd_{i}") or 0)
        columns.append(
            ColumnProfile(
                name=name,
                numeric=numeric,
                integral=isinstance(kind, IntegralType),
                nulls=rows - int(row[f"present_{i}"]),
                minimum=_number(row[f"min_{i}"]) if numeric and not odd else None,
                maximum=_number(row[f"max_{i}"]) if numeric and not odd else None,
                finite=odd == 0,
            )
        )
    return Profile(
        rows=rows,
        columns=tuple(columns),
        key=key,
        key_distinct={name: int(row[f"distinct_{names.index(name)}"]) for name in key},
        key_unique=bool(key) and int(row["distinct_key"]) == rows,
    )


def _column(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _number(value: Any) -> float | int | None:
    if value is None:
        return None
    return value if isinstance(value, int) else float(value)


def derive_suite(
    profile: Profile,
    settings: DerivedExpectationsSpec,
    *,
    ignore: Sequence[str] = (),
    tolerances: Mapping[str, tuple[float, float]] | None = None,
) -> Suite:
    """The derived expectations for a candidate of the reference ``profile``.

    ``ignore``: columns the equality ignores (added to ``settings.ignore``); ``tolerances``:
    each column's equality tolerance as ``(abs, rel)``.
    """
    skipped = set(ignore) | set(settings.ignore)
    expectations = [
        _expect(
            "expect_table_columns_to_match_set",
            column_set=[c.name for c in profile.columns],
            exact_match=True,
        ),
        _expect(
            "expect_table_row_count_to_be_between",
            **_count_bounds(profile.rows, settings.row_count_tolerance),
        ),
    ]
    key = [name for name in profile.key if name not in skipped]
    checked_not_null = set()
    for name in key:
        if profile.rows and profile.column(name).nulls == 0:
            expectations.append(_expect("expect_column_values_to_not_be_null", column=name))
            checked_not_null.add(name)
    if key and profile.key_unique and len(key) == len(profile.key):
        if len(key) == 1:
            expectations.append(_expect("expect_column_values_to_be_unique", column=key[0]))
        else:
            expectations.append(_expect("expect_compound_columns_to_be_unique", column_list=key))
    for name in key:
        distinct = (profile.key_distinct or {}).get(name)
        if distinct is not None:
            expectations.append(
                _expect(
                    "expect_column_unique_value_count_to_be_between",
                    column=name,
                    **_count_bounds(distinct, settings.key_count_tolerance),
                )
            )
    for column in profile.columns:
        if column.name in skipped or not profile.rows:
            continue
        if column.name not in checked_not_null:
            expectations.extend(_null_fraction(column, profile.rows, settings))
        expectations.extend(_range(column, settings, (tolerances or {}).get(column.name)))
    return Suite(DERIVED_SUITE, tuple(expectations), source="derived")


def _expect(kind: str, **kwargs: Any) -> ExpectationConfig:
    return ExpectationConfig(kind, kwargs)


def _count_bounds(count: int, tolerance: float) -> dict[str, int]:
    # Rounded outwards, so that a tolerance never excludes the reference's own count.
    return {
        "min_value": max(0, math.floor(count * (1 - tolerance))),
        "max_value": math.ceil(count * (1 + tolerance)),
    }


def _null_fraction(
    column: ColumnProfile, rows: int, settings: DerivedExpectationsSpec
) -> Iterator[ExpectationConfig]:
    allowed = column.nulls / rows + settings.null_fraction_tolerance
    if allowed >= 1:
        return  # any number of nulls is within tolerance
    mostly = round(1 - allowed, 12)
    if mostly >= 1:
        yield _expect("expect_column_values_to_not_be_null", column=column.name)
    else:
        yield _expect("expect_column_values_to_not_be_null", column=column.name, mostly=mostly)


def _range(
    column: ColumnProfile,
    settings: DerivedExpectationsSpec,
    tolerance: tuple[float, float] | None,
) -> Iterator[ExpectationConfig]:
    if not column.numeric or column.minimum is None or column.maximum is None:
        return
    absolute, relative = tolerance or (0.0, 0.0)
    spread = settings.range_tolerance * (column.maximum - column.minimum)
    low = column.minimum - spread - absolute - relative * abs(column.minimum)
    high = column.maximum + spread + absolute + relative * abs(column.maximum)
    if column.integral:  # whole numbers stay whole: the bounds read as the data does
        low, high = math.floor(low), math.ceil(high)
    yield _expect(
        "expect_column_values_to_be_between", column=column.name, min_value=low, max_value=high
    )
