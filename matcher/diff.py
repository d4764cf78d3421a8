"""The alignment of a chain's two sides: a longest common subsequence under the equality.

The classifier aligns the two sides of a chain (events that must keep their order) with
``align``: what aligns matched, what does not is lost, extra, moved or corrupted. The
matches cut the script into gaps; the k-th deletion and the k-th insertion of one gap are a
substitution, which ``matcher.classify`` reads as a corruption (its "same place").

``align`` gives a shortest edit script, that is a longest common subsequence (LCS) under
``equal``, written with each gap's deletions before its insertions. The common ends are
matched first (O(N+M) calls of ``equal``); the differing middle, of N+M events, D
differences and R candidate pairs, goes to the first of these that applies:

1. **Hunt-Szymanski**, when R <= ``MAX_MATCH_PAIRS``. The candidate pairs are those whose
   events share a ``key`` (every pair without one); those ``equal`` confirms are the match
   points, and a longest chain of them increasing on both sides (patience sorting with
   predecessor links) is an LCS. O(N+M + R·log(N+M)) time, O(N+M+R) memory; distinct
   events (a reversed, shuffled or partly moved key) have R <= N. Exact for any ``equal``
   whose equal events share a key, transitive or not (tolerances): the key proposes,
   ``equal`` decides.
2. **Myers' linear-space algorithm** (E. Myers, "An O(ND) difference algorithm and its
   variations", 1986, §4b: divide and conquer on middle snakes), for many repeated events
   or no key. Exact up to ``MAX_EDIT_DISTANCE`` differences; O((N+M)·min(D,
   MAX_EDIT_DISTANCE)) time (it gives up past the bound), O(N+M) memory.
3. Past both bounds, Hunt-Szymanski over each event's ``MAX_MATCH_PAIRS // (N+M)``
   candidates nearest its own relative position: a common subsequence, long but not
   always longest, in O(MAX_MATCH_PAIRS·log(N+M)).

Memory is never quadratic. Where several LCSs exist, step 1 takes the one whose last match
is the latest event of ``a`` that ends a longest chain, each match before it the latest
that ends a chain one shorter (so, as Myers' forward algorithm did, ``[x, y]`` against
``[y, x]`` deletes ``x`` and matches ``y``). That choice depends on the match points only,
so callers with and without a key (the Spark engine aligns barriers without one) agree
whenever both run step 1.

``key`` maps an entry to a hashable canonical form that equal entries share (``None``:
unknown); callers pass ``entry_key(equality)`` (``Equality.canonical`` of the events).
Without one, every pair is a candidate and step 1 runs only on short middles.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from itertools import count

from matcher.equality import Equality
from matcher.pools import Entry

#: past this many differences Myers' algorithm gives up (its cost is O((N+M)·D))
MAX_EDIT_DISTANCE = 5_000
#: past this many candidate pairs Hunt-Szymanski is not exact; about a second of work
MAX_MATCH_PAIRS = 1_000_000

#: ``(i, j)`` a match, ``(i, None)`` a deletion from the first, ``(None, j)`` an insertion
Op = tuple[int | None, int | None]
Equal = Callable[[Entry, Entry], bool]
Key = Callable[[Entry], Hashable]
Match = tuple[int, int]


def align(a: Sequence[Entry], b: Sequence[Entry], equal: Equal, key: Key | None = None) -> list[Op]:
    """A shortest edit script from ``a`` to ``b``: ``(i, j)`` match, ``(i, None)`` delete,
    ``(None, j)`` insert (see the module docstring for the algorithms and their costs)."""
    n, m = len(a), len(b)
    start = 0
    while start < n and start < m and equal(a[start], b[start]):
        start += 1
    end_a, end_b = n, m
    while end_a > start and end_b > start and equal(a[end_a - 1], b[end_b - 1]):
        end_a, end_b = end_a - 1, end_b - 1
    matches = [(i, i) for i in range(start)]
    matches += _middle(a[start:end_a], b[start:end_b], equal, key, start)
    matches += [(end_a + t, end_b + t) for t in range(n - end_a)]
    return _script(matches, n, m)


def align_values(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Op]:
    """``align`` of items that are their own key, equal exactly when ``==`` says so (the
    Spark engine's 64-bit digests, ``matcher.spark.chains``): the same script as
    ``align(a, b, operator.eq, key=lambda x: x)``, without a call per item or pair."""
    n, m = len(a), len(b)
    start = 0
    while start < n and start < m and a[start] == b[start]:
        start += 1
    end_a, end_b = n, m
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    matches = [(i, i) for i in range(start)]
    middle_a, middle_b = a[start:end_a], b[start:end_b]
    if middle_a and middle_b:
        positions: dict[Hashable, list[int]] = {}
        for j, y in enumerate(middle_b):
            positions.setdefault(y, []).append(j)
        keys_a = list(middle_a)
        if sum(len(positions.get(k, ())) for k in keys_a) <= MAX_MATCH_PAIRS:
            found = _hunt_szymanski(middle_a, middle_b, None, keys_a, positions)  # type: ignore[arg-type]
            matches += [(i + start, j + start) for i, j in found]
        else:  # ``_middle``'s fall-backs, as ``align`` takes them
            matches += _middle(middle_a, middle_b, operator.eq, _itself, start)  # type: ignore[arg-type]
    matches += [(end_a + t, end_b + t) for t in range(n - end_a)]
    return _script(matches, n, m)


def _itself(item: Hashable) -> Hashable:
    return item


def _middle(
    a: Sequence[Entry], b: Sequence[Entry], equal: Equal, key: Key | None, offset: int
) -> list[Match]:
    """The matches of the middle, ``offset`` added to both sides."""
    if not a or not b:
        return []
    keys_a, positions = _candidates(a, b, key)
    found = None
    if sum(len(positions.get(k, ())) for k in keys_a) <= MAX_MATCH_PAIRS:
        found = _hunt_szymanski(a, b, equal, keys_a, positions)
    if found is None:
        found = _myers(a, b, equal, MAX_EDIT_DISTANCE)
    if found is None:
        near = max(1, MAX_MATCH_PAIRS // (len(a) + len(b)))
        found = _hunt_szymanski(a, b, equal, keys_a, positions, near)
    return [(i + offset, j + offset) for i, j in found]


def _script(matches: list[Match], n: int, m: int) -> list[Op]:
    """The edit script of increasing ``matches``: each gap's deletions, then insertions."""
    ops: list[Op] = []
    x = y = 0
    for i, j in [*matches, (n, m)]:
        if x < i:
            ops.extend([(d, None) for d in range(x, i)])
        if y < j:
            ops.extend([(None, e) for e in range(y, j)])
        if i < n:
            ops.append((i, j))
        x, y = i + 1, j + 1
    return ops


# -- Hunt-Szymanski ----------------------------------------------------------------------


def entry_key(equality: Equality) -> Key:
    """The ``key`` of ``align`` for entries compared by ``equality``: the canonical form of
    their events."""
    canonical = equality.canonical
    return lambda entry: canonical(entry.event)


def _candidates(
    a: Sequence[Entry], b: Sequence[Entry], key: Key | None
) -> tuple[list[Hashable], dict[Hashable, list[int]]]:
    """Each event of ``a``'s key, and where each key stands in ``b``: the candidate pairs.
    Without a key (or where it is ``None``), every pair is a candidate."""
    if key is not None:
        keys_a = [key(x) for x in a]
        positions: dict[Hashable, list[int]] = {}
        for j, y in enumerate(b):
            positions.setdefault(key(y), []).append(j)
        if None not in positions and None not in keys_a:
            return keys_a, positions
    return [None] * len(a), {None: list(range(len(b)))}


def _hunt_szymanski(
    a: Sequence[Entry],
    b: Sequence[Entry],
    equal: Equal | None,
    keys_a: list[Hashable],
    positions: dict[Hashable, list[int]],
    near: int | None = None,
) -> list[Match]:
    """A longest chain of equal pairs ``(i, j)`` increasing on both sides, among the pairs
    that share a key (or, given ``near``, each ``i``'s ``near`` pairs nearest its diagonal);
    ``equal`` ``None``: the items are their own keys, and every such pair is equal.

    ``tails[l]`` is the least ``j`` that ends a chain of ``l + 1`` pairs so far, ``ends[l]``
    that chain's last node; a node is ``(i, j, previous node)``. Pairs of one ``i`` are
    taken in decreasing ``j`` so that no chain takes two of them.
    """
    tails: list[int] = []
    ends: list[int] = []
    nodes_i, nodes_j, nodes_prev = array("q"), array("q"), array("q")  # 24 bytes a node
    scale = len(b) / len(a)
    for i, k in enumerate(keys_a):
        js = positions.get(k)
        if not js:
            continue
        if near is not None and len(js) > near:
            centre = bisect_left(js, i * scale)
            low = max(0, min(centre - near // 2, len(js) - near))
            js = js[low : low + near]
        x = a[i]
        for j in reversed(js):
            if equal is not None and not equal(x, b[j]):
                continue
            length = bisect_left(tails, j)
            node = len(nodes_i)
            nodes_i.append(i)
            nodes_j.append(j)
            nodes_prev.append(ends[length - 1] if length else -1)
            if length == len(tails):
                tails.append(j)
                ends.append(node)
            else:
                tails[length] = j
                ends[length] = node
    chain: list[Match] = []
    node = ends[-1] if ends else -1
    while node >= 0:
        chain.append((nodes_i[node], nodes_j[node]))
        node = nodes_prev[node]
    chain.reverse()
    return chain


# -- Myers, linear space -------------------------------------------------------------------


def _myers(a: Sequence[Entry], b: Sequence[Entry], equal: Equal, limit: int) -> list[Match] | None:
    """The matches of a shortest edit script, or ``None`` if it has more than ``limit``
    edits. Divide and conquer on middle snakes, with an explicit stack."""
    matches: list[Match] = []
    # spans (a_lo, a_hi, b_lo, b_hi), solved left to right; a diagonal run has ``None``
    stack: list[tuple[int, int, int, int, bool | None]] = [(0, len(a), 0, len(b), True)]
    while stack:
        x0, x1, y0, y1, top = stack.pop()
        if top is None:
            matches.extend(zip(range(x0, x1), range(y0, y1), strict=True))
            continue
        head = x0
        while x0 < x1 and y0 < y1 and equal(a[x0], b[y0]):
            x0, y0 = x0 + 1, y0 + 1
        matches.extend(zip(range(head, x0), range(y0 - (x0 - head), y0), strict=True))
        tail = x1
        while x1 > x0 and y1 > y0 and equal(a[x1 - 1], b[y1 - 1]):
            x1, y1 = x1 - 1, y1 - 1
        if x0 < x1 and y0 < y1:
            snake = _middle_snake(a, b, equal, x0, x1, y0, y1, limit if top else None)
            if snake is None:
                return None
            x, y, u, v = snake
            stack.append((x1, tail, y1, y1 + tail - x1, None))
            stack.append((u, x1, v, y1, False))
            stack.append((x, u, y, v, None))
            stack.append((x0, x, y0, y, False))
        else:
            matches.extend(zip(range(x1, tail), range(y1, y1 + tail - x1), strict=True))
    return matches


def _middle_snake(
    a: Sequence[Entry],
    b: Sequence[Entry],
    equal: Equal,
    x0: int,
    x1: int,
    y0: int,
    y1: int,
    limit: int | None,
) -> tuple[int, int, int, int] | None:
    """The middle snake ``(x, y)`` to ``(u, v)`` of an optimal path from ``(x0, y0)`` to
    ``(x1, y1)``, in absolute positions; ``None`` past ``limit`` edits.

    ``forward[k]`` is the furthest ``x`` (relative) on diagonal ``k = x - y`` after ``d``
    edits from the start, ``backward[k]`` the least on diagonal ``k + delta`` from the end.
    """
    n, m = x1 - x0, y1 - y0
    delta = n - m
    odd = delta % 2 == 1
    most = (n + m + 1) // 2 + 1
    if limit is not None:
        most = min(most, limit // 2 + 2)
    forward = [0] * (2 * most + 3)
    backward = [0] * (2 * most + 3)
    forward[1] = 0  # list index -1 is the end: diagonals k < 0 wrap around harmlessly
    backward[1] = n + 1
    for d in count():
        if d > most or (limit is not None and d > (limit + 1) // 2):
            return None
        for k in range(d, -d - 1, -2):
            if k == -d or (k != d and forward[k - 1] < forward[k + 1]):
                x = forward[k + 1]
            else:
                x = forward[k - 1] + 1
            y = x - k
            sx, sy = x, y
            while x < n and y < m and equal(a[x0 + x], b[y0 + y]):
                x, y = x + 1, y + 1
            forward[k] = x
            if odd and -(d - 1) <= k - delta <= d - 1 and x >= backward[k - delta]:
                return x0 + sx, y0 + sy, x0 + x, y0 + y
        for k in range(d, -d - 1, -2):
            if k == -d or (k != d and backward[k + 1] <= backward[k - 1]):
                x = backward[k + 1] - 1
            else:
                x = backward[k - 1]
            y = x - k - delta
            sx, sy = x, y
            while x > 0 and y > 0 and equal(a[x0 + x - 1], b[y0 + y - 1]):
                x, y = x - 1, y - 1
            backward[k] = x
            if not odd and -d <= k + delta <= d and forward[k + delta] >= x:
                return x0 + x, y0 + y, x0 + sx, y0 + sy
    raise AssertionError("unreachable")  # pragma: no cover
