"""A candidate with a mix of faults, for the Hypothesis tests of the chains on digests
(``tests/test_spark_chains.py`` without Spark, ``tests/test_spark_chains_spark.py`` on it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

Event = dict[str, Any]
KINDS = ["drop", "extra", "alter", "move", "swap", "stretch", "block"]


def with_faults(
    draw: st.DrawFn,
    reference: list[Event],
    *,
    new: Callable[[int], Event],
    alterations: st.SearchStrategy[Event],
    extra_values: st.SearchStrategy[int],
    longest_stretch: int,
) -> list[Event]:
    """``reference`` with up to 8 faults of mixed kinds: one event lost, one extra (a copy
    with another ``v`` from ``extra_values``), one altered (a field update from
    ``alterations``), one moved anywhere, a swap of
    neighbours, a stretch of up to ``longest_stretch`` events with ``s`` changed, and a run
    of 20-60 events lost or ``new(j)`` events inserted (past ``RESYNC_START``)."""
    candidate = [dict(e) for e in reference]
    for _ in range(draw(st.integers(0, 8))):
        if not candidate:
            break
        kind = draw(st.sampled_from(KINDS))
        i = draw(st.integers(0, len(candidate) - 1))
        if kind == "drop":
            del candidate[i]
        elif kind == "block":
            length = draw(st.integers(20, 60))
            if draw(st.booleans()):
                del candidate[i : i + length]
            else:
                candidate[i:i] = [new(j) for j in range(length)]
        elif kind == "extra":
            candidate.insert(i, {**candidate[i], "v": draw(extra_values)})
        elif kind == "alter":
            candidate[i] = {**candidate[i], **draw(alterations)}
        elif kind == "move":
            j = draw(st.integers(0, len(candidate) - 1))
            candidate.insert(j, candidate.pop(i))
        elif kind == "swap" and i + 1 < len(candidate):
            candidate[i], candidate[i + 1] = candidate[i + 1], candidate[i]
        elif kind == "stretch":
            for j in range(i, min(len(candidate), i + draw(st.integers(1, longest_stretch)))):
                candidate[j] = {**candidate[j], "s": "z"}
    return candidate
