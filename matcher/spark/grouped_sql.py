"""The grouped SQL plan: one shuffle by the dependence key, then windows within each group.

Both streams are tagged with their side and unioned; barriers are set aside (collected and
aligned on the driver, ``matcher.spark.barriers``), every other event gets its unit (the
barrier-aligned stretch it lies in) and its *group* (``__p_g``): its key for ``by_key``,
its type and key for a typed graph, its canonical value for a multiset. The union is
repartitioned by the group: the plan's one ``Exchange``. Every window below partitions by
the group plus more columns, which that hash partitioning already satisfies:

* ``rank``: the event's index within its (group, unit, side), by stream position;
* the pair at each (group, unit, rank): both sides' compared columns, equal under the
  equality in SQL (``matcher.spark.equality_sql``);
* per (group, unit): the first rank whose pair differs (``L``, chains) or the smaller
  count (multisets, whose leftover is the excess by position, as the core's FIFO buckets
  leave it); ``L_online`` is the same within the unit's first epoch only.

``ordered`` has one chain of everything, so it is *positional*: the rank is known before
the shuffle (the stream position, or the rank among non-barrier events of the unit), the
group is (unit, rank), and the first differing rank comes from a small aggregation per unit
(``matcher.spark.grouped_run``) instead of a window over everything.

The plan is built from SQL text (``build_*`` are pure), a handful of calls into Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    FloatType,
    MapType,
    StructField,
    StructType,
)

from matcher.equality import Equality
from matcher.spark.barriers import Barriers
from matcher.spark.equality_sql import (
    canonical_value,
    compared_fields,
    holds,
    ident,
    in_list,
    is_nan,
    key_value,
    pair_equal,
)
from matcher.spark.forms import Layout
from matcher.spark.schema import POS

SIDE = "__p_side"
UNIT = "__p_unit"
FIRST = "__p_first"
RANK = "__p_rank"
GROUP = "__p_g"
CHAIN = "__p_chain"
KEYED = "__p_keyed"
TYPE_OK = "__p_type_ok"
N_REF, N_CAND = "__p_nr", "__p_nc"
N_FIRST_REF, N_FIRST_CAND = "__p_nfr", "__p_nfc"
PAIR_OK = "__p_ok"
FIRST_KEY = "__p_key_first"
L = "__p_L"
L_ONLINE = "__p_Lon"
_PAIR_N, _PAIR_A, _PAIR_B, _UNITS = "__p_pn", "__p_pa", "__p_pb", "__p_units"
_WHOLE = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"


@dataclass(frozen=True, slots=True)
class GroupedPlan:
    """What ``matching_plan`` needs: the streams' columns, the layout, the equality, the
    barrier test (SQL) and alignment (``None``: the form has no barriers)."""

    fields: tuple[StructField, ...]
    layout: Layout
    equality: Equality
    barriers: Barriers | None = None
    barrier_test: str | None = None

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]


def build_group(plan: GroupedPlan) -> list[str]:
    """SQL for the group, chain flag, keyed flag and declared-type flag of an event."""
    layout, equality = plan.layout, plan.equality
    fields = {f.name: f for f in plan.fields}
    compared = compared_fields(plan.fields, equality)
    canonical = [canonical_value(ident(f.name), f, equality) for f in compared]
    if not equality.nan_equal:  # a NaN equals nothing: alone in its group
        any_nan = " OR ".join(is_nan(ident(f.name), f.dataType) for f in compared) or "FALSE"
        canonical.append(f"CASE WHEN {any_nan} THEN struct({SIDE}, {POS}) END")

    def key(name: str) -> str:
        return group_key(ident(name), fields[name].dataType)

    if layout.positional:
        group, chain, keyed, declared = f"struct({UNIT}, {RANK})", "TRUE", "FALSE", "TRUE"
    elif not layout.typed and layout.chain:
        group = f"struct({', '.join([*(key(c) for c in layout.key), '0'])})"
        chain, keyed, declared = "TRUE", "TRUE" if layout.key else "FALSE", "TRUE"
    elif not layout.typed:
        group, chain, keyed, declared = (
            f"struct({', '.join([*canonical, '0'])})",
            "FALSE",
            "FALSE",
            "TRUE",
        )
    else:
        kind = ident(layout.type_column or "")
        chains = [t.name for t in layout.types if t.chain]
        multisets = [t.name for t in layout.types if not t.chain]
        slots = list(dict.fromkeys(c for t in layout.types if t.chain for c in t.key or ()))
        parts = [kind]
        for name in slots:
            users = [t.name for t in layout.types if t.chain and name in (t.key or ())]
            parts.append(f"CASE WHEN {in_list(kind, users)} THEN {key(name)} END")
        if multisets:
            parts.extend(f"CASE WHEN {in_list(kind, multisets)} THEN {v} END" for v in canonical)
        keyed_chains = [t.name for t in layout.types if t.chain and t.key is not None]
        group = f"struct({', '.join(parts)})"
        chain = f"coalesce({in_list(kind, chains)}, FALSE)"
        keyed = f"coalesce({in_list(kind, keyed_chains)}, FALSE)"
        declared = f"coalesce({in_list(kind, [t.name for t in layout.types])}, FALSE)"
    return [
        f"{group} AS {GROUP}",
        f"{chain} AS {CHAIN}",
        f"{keyed} AS {KEYED}",
        f"{declared} AS {TYPE_OK}",
    ]


def group_key(expr: str, dtype: DataType) -> str:
    """``key_value``, for any key type: Spark can neither group by nor hash a map, so a map
    nested in a struct or an array (``key_value`` handles one at the top) is replaced by
    its entries sorted by key, like the core's ``key_form``; a float inside a key is then
    compared as JSON text, so that every NaN is one key."""
    if not _holds_map(dtype):
        return key_value(expr, dtype)
    mapless = _sorted_maps(expr, dtype, 0)
    return f"to_json({mapless})" if _holds_float(dtype) else mapless


def _sorted_maps(expr: str, dtype: DataType, depth: int) -> str:
    if not _holds_map(dtype):
        return expr
    var = f"__p_x{depth}"
    if isinstance(dtype, MapType):
        entries = f"map_entries({expr})"
        if _holds_map(dtype.keyType) or _holds_map(dtype.valueType):
            key = _sorted_maps(f"{var}.key", dtype.keyType, depth + 1)
            value = _sorted_maps(f"{var}.value", dtype.valueType, depth + 1)
            entries = f"transform({entries}, {var} -> struct({key} AS key, {value} AS value))"
        return f"array_sort({entries})"
    if isinstance(dtype, ArrayType):
        return f"transform({expr}, {var} -> {_sorted_maps(var, dtype.elementType, depth + 1)})"
    assert isinstance(dtype, StructType)
    fields = ", ".join(
        f"{_sorted_maps(f'{expr}.{ident(f.name)}', f.dataType, depth + 1)} AS {ident(f.name)}"
        for f in dtype.fields
    )
    return f"CASE WHEN {expr} IS NULL THEN NULL ELSE struct({fields}) END"


def _holds_map(dtype: DataType) -> bool:
    return holds(dtype, lambda t: isinstance(t, MapType))


def _holds_float(dtype: DataType) -> bool:
    return holds(dtype, lambda t: isinstance(t, (DoubleType, FloatType)))


def build_pairs(plan: GroupedPlan, partition: Sequence[str]) -> tuple[list[str], str]:
    """SQL for the pair window's columns, and for ``PAIR_OK`` over them."""
    compared = compared_fields(plan.fields, plan.equality)
    window = f"(PARTITION BY {', '.join(partition)} ORDER BY {SIDE} {_WHOLE})"
    values = ", ".join(["0 AS none", *(f"{ident(f.name)} AS c{i}" for i, f in enumerate(compared))])
    columns = [
        f"count(1) OVER {window} AS {_PAIR_N}",
        f"first(struct({values})) OVER {window} AS {_PAIR_A}",
        f"last(struct({values})) OVER {window} AS {_PAIR_B}",
    ]
    tests = [f"{_PAIR_N} = 2"]
    tests += [
        pair_equal(f"{_PAIR_A}.c{i}", f"{_PAIR_B}.c{i}", f, plan.equality)
        for i, f in enumerate(compared)
    ]
    return columns, f"({' AND '.join(tests)}) AS {PAIR_OK}"


def _count(condition: str, window: str) -> str:
    return f"sum(CASE WHEN {condition} THEN 1 ELSE 0 END) OVER ({window})"


def tagged_union(plan: GroupedPlan, reference: DataFrame, candidate: DataFrame) -> DataFrame:
    """Both streams' non-barrier events with side, unit, first-epoch flag, rank (positional
    only) and group."""
    union = reference.selectExpr("*", f"0 AS {SIDE}").unionByName(
        candidate.selectExpr("*", f"1 AS {SIDE}")
    )
    if plan.barrier_test is not None:
        union = union.where(f"NOT ({plan.barrier_test})")
    if plan.barriers is not None:
        units = plan.barriers.unit_columns(F.col(SIDE), F.col(POS))
        union = union.withColumn(_UNITS, units).selectExpr(
            "*",
            f"{_UNITS}.unit AS {UNIT}",
            f"{_UNITS}.first AS {FIRST}",
            f"{_UNITS}.rank AS {RANK}",
        )
    else:
        union = union.selectExpr("*", f"0 AS {UNIT}", f"TRUE AS {FIRST}", f"{POS} AS {RANK}")
    union = union.selectExpr("*", *build_group(plan)).drop(_UNITS)
    return union if plan.layout.positional else union.drop(RANK)


def matching_plan(
    plan: GroupedPlan,
    reference: DataFrame,
    candidate: DataFrame,
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """The union, repartitioned by group, with every column the verdict is read from;
    ``keep`` narrows the union to some groups first (whole groups: ranks do not change)."""
    union = tagged_union(plan, reference, candidate)
    if keep is not None:
        union = keep(union)
    union = union.repartition(GROUP)
    if plan.layout.positional:
        pairs, ok = build_pairs(plan, [GROUP])
        return union.selectExpr("*", *pairs).selectExpr("*", ok).drop(_PAIR_N, _PAIR_A, _PAIR_B)
    group = f"PARTITION BY {GROUP}, {UNIT}"
    ranked = union.selectExpr(
        "*",
        f"row_number() OVER ({group}, {SIDE} ORDER BY {POS}) - 1 AS {RANK}",
        f"{KEYED} AND row_number() OVER (PARTITION BY {GROUP}, {SIDE} ORDER BY {POS}) = 1"
        f" AS {FIRST_KEY}",
    )
    pairs, ok = build_pairs(plan, [GROUP, UNIT, RANK])
    counted = ranked.selectExpr(
        "*",
        f"{_count(f'{SIDE} = 0', group)} AS {N_REF}",
        f"{_count(f'{SIDE} = 1', group)} AS {N_CAND}",
        f"{_count(f'{SIDE} = 0 AND {FIRST}', group)} AS {N_FIRST_REF}",
        f"{_count(f'{SIDE} = 1 AND {FIRST}', group)} AS {N_FIRST_CAND}",
        *pairs,
    ).selectExpr("*", ok)
    smaller = f"least({N_REF}, {N_CAND})"
    first_bad = f"min(CASE WHEN NOT {PAIR_OK} THEN {RANK} END) OVER ({group})"
    with_l = counted.selectExpr(
        "*",
        f"CASE WHEN {CHAIN} THEN {first_bad} WHEN {N_REF} != {N_CAND} THEN {smaller} END AS {L}",
    )
    return with_l.selectExpr(
        "*", f"least(coalesce({L}, {smaller}), {N_FIRST_REF}, {N_FIRST_CAND}) AS {L_ONLINE}"
    ).drop(_PAIR_N, _PAIR_A, _PAIR_B)
