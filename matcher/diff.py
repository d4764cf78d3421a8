"""Myers' shortest edit script between two sequences of events under a custom equality.

The classifier aligns the two sides of a chain (events that must keep their order) with it:
what aligns matched, what does not is lost, extra, moved or corrupted. The matches cut the
script into gaps; the k-th deletion and the k-th insertion of one gap are a substitution,
which ``matcher.classify`` reads as a corruption (its "same place"). O((N+M)·D) for D
differences, after trimming the common ends, which is what few divergences in long chains
need.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from matcher.pools import Entry

#: beyond this many differences, align position by position instead
MAX_EDIT_DISTANCE = 5_000

#: ``(i, j)`` a match, ``(i, None)`` a deletion from the first, ``(None, j)`` an insertion
Op = tuple[int | None, int | None]


def align(
    a: Sequence[Entry], b: Sequence[Entry], equal: Callable[[Entry, Entry], bool]
) -> list[Op]:
    """A shortest edit script from ``a`` to ``b``: ``(i, j)`` match, ``(i, None)`` delete,
    ``(None, j)`` insert. Myers' O((N+M)·D) algorithm after trimming the common ends."""
    n, m = len(a), len(b)
    start = 0
    while start < n and start < m and equal(a[start], b[start]):
        start += 1
    end_a, end_b = n, m
    while end_a > start and end_b > start and equal(a[end_a - 1], b[end_b - 1]):
        end_a, end_b = end_a - 1, end_b - 1
    middle = _myers(a[start:end_a], b[start:end_b], equal)
    ops: list[Op] = [(i, i) for i in range(start)]
    ops.extend(
        (None if i is None else i + start, None if j is None else j + start) for i, j in middle
    )
    ops.extend((end_a + t, end_b + t) for t in range(n - end_a))
    return ops


def _myers(
    a: Sequence[Entry], b: Sequence[Entry], equal: Callable[[Entry, Entry], bool]
) -> list[Op]:
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return [(i, None) for i in range(n)] + [(None, j) for j in range(m)]
    v: dict[int, int] = {1: 0}
    trace: list[dict[int, int]] = []
    for d in range(min(n + m, MAX_EDIT_DISTANCE) + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            down = k == -d or (k != d and v[k - 1] < v[k + 1])
            x = v[k + 1] if down else v[k - 1] + 1
            y = x - k
            while x < n and y < m and equal(a[x], b[y]):
                x, y = x + 1, y + 1
            v[k] = x
            if x >= n and y >= m:
                return _backtrack(trace, n, m)
    # Too different to align exactly: compare position by position.
    ops: list[Op] = []
    for i in range(max(n, m)):
        if i < n and i < m and equal(a[i], b[i]):
            ops.append((i, i))
        else:
            ops.extend(
                op
                for op in ((i if i < n else None, None), (None, i if i < m else None))
                if op != (None, None)
            )
    return ops


def _backtrack(trace: list[dict[int, int]], n: int, m: int) -> list[Op]:
    x, y = n, m
    ops: list[Op] = []
    for d in range(len(trace) - 1, 0, -1):
        v = trace[d]
        k = x - y
        prev_k = k + 1 if k == -d or (k != d and v[k - 1] < v[k + 1]) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            ops.append((x - 1, y - 1))
            x, y = x - 1, y - 1
        ops.append((None, y - 1) if x == prev_x else (x - 1, None))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        ops.append((x - 1, y - 1))
        x, y = x - 1, y - 1
    ops.reverse()
    return ops
