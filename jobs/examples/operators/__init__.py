"""Operators with known properties: the objects of ``bench/properties.py`` (the paper's
experiment, §V) and of ``tests/test_properties*.py``.

``KNOWN`` holds each operator's true answers, decided by reading its code: for each
property ``True`` (evidence exists), ``False`` (none exists), or ``None`` (not applicable,
or not determinable: a non-deterministic operator's order, state and keys are not tested,
as in Fig. 4); selectivity is the class. Every operator reads ``items.jsonl`` (``key,
offset, x, y``); pairs read ``right.jsonl`` (``key, w``) on port 1; the key is ``key``.
"""

from __future__ import annotations

from dataclasses import dataclass

ROOT = "jobs.examples.operators"


@dataclass(frozen=True, slots=True)
class Known:
    """An operator's reference and its true properties."""

    ref: str
    shape: str
    nondeterminism: bool
    selectivity: str
    blocking: bool | None
    statefulness: bool | None
    non_commutativity: bool | None
    partition_interference: bool | None


def _stream(
    name: str, nd: bool, sel: str, st: bool | None, nc: bool | None, pi: bool | None
) -> Known:
    return Known(f"{ROOT}.streams:{name}", "stream", nd, sel, None, st, nc, pi)


def _frame(
    name: str, nd: bool, sel: str, st: bool | None, nc: bool | None, pi: bool | None
) -> Known:
    return Known(f"{ROOT}.frames:{name}", "dataframe", nd, sel, None, st, nc, pi)


ND = (None, None, None)  # non-deterministic: state, order and keys not determinable

KNOWN: tuple[Known, ...] = (
    _stream("Identity", False, "one_to_one", False, False, False),
    _stream("FilterPositive", False, "selective", False, False, False),
    _stream("Split", False, "prolific", False, False, False),
    _stream("RunningCount", False, "one_to_one", True, True, True),
    _stream("RunningCountPerKey", False, "one_to_one", True, True, False),
    _stream("RunningSumPerKey", False, "one_to_one", True, True, False),
    _stream("Deduplicate", False, "selective", True, False, False),
    _stream("WindowSumPerKey", False, "selective", True, False, False),
    _stream("WindowMax", False, "selective", True, False, True),
    _stream("WindowLast", False, "selective", True, True, True),
    _stream("WindowSumLeaky", False, "selective", True, False, False),
    _stream("RandomSample", True, "selective", *ND),
    _stream("Timestamp", True, "one_to_one", *ND),
    _stream("TimeWindowCount", True, "one_to_one", *ND),
    # DiffStream's reducers (jobs/examples/reducers.py), each key's result at the end
    _stream("singleitem", False, "selective", True, True, False),
    _stream("indexvaluepair", False, "selective", True, True, False),
    _stream("maxrow", False, "selective", True, True, False),
    _stream("firstn", False, "selective", True, True, False),
    _stream("strconcat", False, "selective", True, True, False),
    _stream("strconcat_stream", False, "one_to_one", False, False, False),
    _frame("select", False, "one_to_one", False, False, False),
    _frame("where_positive", False, "selective", False, False, False),
    _frame("explode_pairs", False, "prolific", False, False, False),
    _frame("drop_duplicates", False, "selective", True, False, False),
    _frame("drop_duplicates_by_key", True, "selective", *ND),
    _frame("first_per_key", True, "selective", *ND),
    _frame("sum_per_key", False, "selective", True, False, False),
    _frame("count_all", False, "selective", True, False, True),
    _frame("rank_total_order", False, "one_to_one", True, False, False),
    _frame("rank_ties", True, "one_to_one", *ND),
    _frame("with_id", True, "one_to_one", *ND),
    _frame("with_rand", True, "one_to_one", *ND),
    _frame("sessions", False, "one_to_one", True, False, False),
    _frame("last_x_global", True, "selective", *ND),
    Known(f"{ROOT}.pairs:inner_join", "pair", False, "selective", True, True, False, False),
    Known(f"{ROOT}.pairs:left_join", "pair", False, "selective", True, True, False, False),
    Known(f"{ROOT}.pairs:union", "pair", False, "one_to_one", False, False, False, False),
    Known(f"{ROOT}.pairs:Gate", "pair", False, "selective", True, True, False, False),
    Known(f"{ROOT}.pairs:Merge", "pair", False, "one_to_one", False, False, False, False),
)
