"""An independent, brute-force oracle for stream equivalence (DiffStream §4.1), for short streams.

Nothing here imports the matcher: an oracle takes the dependence and the equality as plain
functions ``depends(x, y) -> bool`` and ``equal(a, b) -> bool``. It is meant for streams of
at most about seven events.

Views of the same definition, written so that they can check each other:

* ``equivalent``: the definition in DESIGN.md. Breadth-first search over every ordering of
  the reference reachable by swapping *adjacent independent* events (orderings are tuples of
  reference indexes, so the search is finite), looking for one that equals the candidate
  element-wise under ``equal``. Replacing events by equal ones is the element-wise check.
* ``equivalent_by_matching``: the paper's definition. A bijection ``f`` from the reference to
  the candidate that maps each event to an equal one and keeps the relative order of every
  dependent pair (this is "same logical order": the logical order is the transitive closure
  of the order of dependent pairs).
* ``extendable`` / ``first_distinguishing_index``: finite distinguishability. A connected
  prefix (reference prefix ``p1``, candidate prefix ``p2``) can still be completed to two
  equivalent streams iff some partial matching ``M`` between ``p1`` and ``p2`` (equal events,
  dependent pairs in the same order) leaves unmatched sets ``U1`` and ``U2`` such that

  1. no matched event of ``p1`` comes after an unmatched event of ``p1`` it depends on
     (the copies of ``U1`` appended to the candidate come after all of ``p2``),
  2. the same on the candidate side, and
  3. every event of ``U1`` is independent of every event of ``U2`` (each stream sees the
     other's unmatched events after its own).

  Any completion can be cut down to one that appends only copies of ``U2`` to the reference
  and copies of ``U1`` to the candidate (drop the pairs matched inside the completions), so
  these conditions are necessary and sufficient. ``first_distinguishing_index`` is the
  0-based index of the first event of the connected stream after which no completion exists;
  Theorem 4.8 says the matcher's ``detected_at`` is exactly that (``None`` if there is none).
* ``minimal_unmatched``: how many events a correct online matcher must hold after a prefix
  that is not yet distinguishable: both prefixes minus twice the largest matched prefix
  (Lemma 4.6, Theorem 4.9).

The prefix theory (``extendable``, ``first_distinguishing_index``, ``minimal_unmatched``)
assumes that ``equal`` is an equivalence relation and that it is compatible with
``depends`` (x ≡ x' and x D y ⇒ x' D y); the callers keep to that. ``equivalent``,
``equivalent_by_matching`` and ``pairings`` need neither: they hold for any relation, such as
a tolerance (``tolerant``), which is not transitive (1.0 ≈ 1.05 ≈ 1.1 but 1.0 ≉ 1.1). Then
the streams are equivalent when *some* pairing exists, whatever the order of the events.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import permutations
from typing import Any

Event = Mapping[str, Any]
Depends = Callable[[Event, Event], bool]
Equal = Callable[[Event, Event], bool]

REFERENCE = "reference"
CANDIDATE = "candidate"
MAX_EVENTS = 10  # the swap search visits up to n! orderings: keep n small


def _check_size(*streams: Sequence[Event]) -> None:
    for stream in streams:
        if len(stream) > MAX_EVENTS:
            raise ValueError(f"the brute-force oracle takes at most {MAX_EVENTS} events per stream")


def reachable_orders(stream: Sequence[Event], depends: Depends) -> Iterator[tuple[int, ...]]:
    """Every ordering of ``stream``'s indexes reachable by swapping adjacent independent
    events, the identity first (breadth-first)."""
    _check_size(stream)
    n = len(stream)
    dep = [[depends(stream[i], stream[j]) for j in range(n)] for i in range(n)]
    start = tuple(range(n))
    seen = {start}
    queue = deque([start])
    while queue:
        order = queue.popleft()
        yield order
        for t in range(n - 1):
            a, b = order[t], order[t + 1]
            if dep[a][b]:
                continue
            swapped = (*order[:t], b, a, *order[t + 2 :])
            if swapped not in seen:
                seen.add(swapped)
                queue.append(swapped)


def equivalent(
    reference: Sequence[Event], candidate: Sequence[Event], depends: Depends, equal: Equal
) -> bool:
    """Whether ``candidate`` is ``reference`` after adjacent swaps of independent events and
    replacement of events by equal ones."""
    _check_size(reference, candidate)
    if len(reference) != len(candidate):
        return False
    n = len(reference)
    eq = [[equal(reference[i], candidate[j]) for j in range(n)] for i in range(n)]
    return any(
        all(eq[i][t] for t, i in enumerate(order)) for order in reachable_orders(reference, depends)
    )


def equivalent_by_matching(
    reference: Sequence[Event], candidate: Sequence[Event], depends: Depends, equal: Equal
) -> bool:
    """Whether a bijection maps every reference event to an equal candidate event and keeps
    the order of every dependent pair (the paper's "matching")."""
    _check_size(reference, candidate)
    if len(reference) != len(candidate):
        return False
    n = len(reference)
    dependent_pairs = [
        (i, j) for i in range(n) for j in range(i + 1, n) if depends(reference[i], reference[j])
    ]
    for image in permutations(range(n)):
        if all(equal(reference[i], candidate[image[i]]) for i in range(n)) and all(
            image[i] < image[j] for i, j in dependent_pairs
        ):
            return True
    return False


def pairings(
    reference: Sequence[Event], candidate: Sequence[Event], depends: Depends, equal: Equal
) -> Iterator[tuple[int, ...]]:
    """Every bijection ``image`` (reference index -> candidate index) that maps each event to
    an equal one and keeps the order of every dependent pair; none if the lengths differ."""
    _check_size(reference, candidate)
    if len(reference) != len(candidate):
        return
    n = len(reference)
    dependent_pairs = [
        (i, j) for i in range(n) for j in range(i + 1, n) if depends(reference[i], reference[j])
    ]
    partners = [[j for j in range(n) if equal(reference[i], candidate[j])] for i in range(n)]

    def extend(i: int, image: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if i == n:
            yield image
            return
        for j in partners[i]:
            if j not in image and all(image[a] < j for a, b in dependent_pairs if b == i):
                yield from extend(i + 1, (*image, j))

    yield from extend(0, ())


def tolerant(tolerances: Mapping[str, tuple[float, float]]) -> Equal:
    """Equality with a tolerance ``(abs, rel)`` per column: numbers ``a``, ``b`` are equal
    when ``|a - b| <= abs`` or ``|a - b| <= rel * max(|a|, |b|)``; every other value, and
    every other column, compared with ``==`` (an absent column reads as ``None``). Not
    transitive, so not an equivalence."""

    def close(x: Any, y: Any, abs_: float, rel: float) -> bool:
        if x == y:
            return True
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
        return numbers and (abs(x - y) <= abs_ or abs(x - y) <= rel * max(abs(x), abs(y)))

    def equal(a: Event, b: Event) -> bool:
        for name in a.keys() | b.keys():
            x, y = a.get(name), b.get(name)
            if name in tolerances:
                if not close(x, y, *tolerances[name]):
                    return False
            elif x != y:
                return False
        return True

    return equal


def largest_pairing(reference: Sequence[Event], candidate: Sequence[Event], equal: Equal) -> int:
    """How many pairs of equal events the largest partial matching holds (no dependence)."""
    _check_size(reference, candidate)
    return max(len(mapping) for mapping in _partial_matchings(reference, candidate, equal))


def _partial_matchings(
    left: Sequence[Event], right: Sequence[Event], equal: Equal
) -> Iterator[dict[int, int]]:
    """Every injective partial map from ``left`` to ``right`` indexes between equal events."""
    partners = [
        [j for j in range(len(right)) if equal(left[i], right[j])] for i in range(len(left))
    ]

    def extend(i: int, used: frozenset[int], mapping: dict[int, int]) -> Iterator[dict[int, int]]:
        if i == len(left):
            yield dict(mapping)
            return
        yield from extend(i + 1, used, mapping)  # left[i] stays unmatched
        for j in partners[i]:
            if j not in used:
                mapping[i] = j
                yield from extend(i + 1, used | {j}, mapping)
                del mapping[i]

    yield from extend(0, frozenset(), {})


def _matched_prefixes(
    p1: Sequence[Event], p2: Sequence[Event], depends: Depends, equal: Equal
) -> Iterator[tuple[dict[int, int], list[int], list[int]]]:
    """Every partial matching between ``p1`` and ``p2`` that maps events to equal events,
    keeps the order of dependent pairs, and whose matched events form a prefix of each side
    (no matched event after an unmatched event it depends on); with the unmatched indexes."""
    d1 = [[depends(x, y) for y in p1] for x in p1]
    d2 = [[depends(x, y) for y in p2] for x in p2]
    for mapping in _partial_matchings(p1, p2, equal):
        matched1 = sorted(mapping)
        matched2 = set(mapping.values())
        unmatched1 = [i for i in range(len(p1)) if i not in mapping]
        unmatched2 = [j for j in range(len(p2)) if j not in matched2]
        if any(
            d1[a][b] and mapping[b] < mapping[a]
            for ai, a in enumerate(matched1)
            for b in matched1[ai + 1 :]
        ):
            continue
        if any(d1[u][m] and u < m for u in unmatched1 for m in matched1):
            continue
        if any(d2[u][m] and u < m for u in unmatched2 for m in matched2):
            continue
        yield mapping, unmatched1, unmatched2


def extendable(
    reference_prefix: Sequence[Event],
    candidate_prefix: Sequence[Event],
    depends: Depends,
    equal: Equal,
) -> bool:
    """Whether the two prefixes can be continued into equivalent streams (module doc)."""
    _check_size(reference_prefix, candidate_prefix)
    p1, p2 = reference_prefix, candidate_prefix
    return any(
        not any(depends(p1[u], p2[v]) for u in unmatched1 for v in unmatched2)
        for _, unmatched1, unmatched2 in _matched_prefixes(p1, p2, depends, equal)
    )


def minimal_unmatched(
    reference_prefix: Sequence[Event],
    candidate_prefix: Sequence[Event],
    depends: Depends,
    equal: Equal,
) -> int:
    """How many events stay unmatched, both sides together, when the matched prefixes are as
    large as possible (Lemma 4.6: every maximal matched prefix has that size, so it is the
    state any correct online matcher must keep, Theorem 4.9)."""
    _check_size(reference_prefix, candidate_prefix)
    largest = max(
        len(mapping)
        for mapping, _, _ in _matched_prefixes(reference_prefix, candidate_prefix, depends, equal)
    )
    return len(reference_prefix) + len(candidate_prefix) - 2 * largest


def first_distinguishing_index(
    connected: Sequence[tuple[str, Event]], depends: Depends, equal: Equal
) -> int | None:
    """The 0-based index ``n`` of the first event of the connected stream such that
    ``connected[: n + 1]`` is finitely distinguishable, or ``None`` if no prefix is."""
    reference: list[Event] = []
    candidate: list[Event] = []
    for index, (side, event) in enumerate(connected):
        (reference if side == REFERENCE else candidate).append(event)
        if not extendable(reference, candidate, depends, equal):
            return index
    return None


def fair_interleaving(
    reference: Sequence[Event], candidate: Sequence[Event]
) -> list[tuple[str, Event]]:
    """One reference event, then one candidate event, and so on (what ``compare`` pushes)."""
    connected: list[tuple[str, Event]] = []
    for t in range(max(len(reference), len(candidate))):
        if t < len(reference):
            connected.append((REFERENCE, reference[t]))
        if t < len(candidate):
            connected.append((CANDIDATE, candidate[t]))
    return connected
