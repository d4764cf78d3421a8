"""Explaining divergences: single faults get exactly one divergence of the right kind, with an
exact witness (kind, key, positions in both streams, both events, differing columns).

Positions are 0-based. For a ``loss`` the candidate position is where the lost event would
stand, for a ``duplication`` the reference position is where the extra event would stand
(``Divergence``'s docstring). Where several places are right (independent events may stand
anywhere among each other) the test either pins the matcher's choice, which is the
position of the next event of the same chain, or, when the form lets events of different
chains depend on each other, lists every right place: putting the event back there must
make the streams equivalent again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_matcher_oracle import FORM_IDS, FORMS, Form

from matcher import Divergence, Verdict, compare
from matcher.dependence import (
    by_key,
    column_equals,
    ordered,
    predicate,
    typed,
    unordered,
    with_barriers,
)

Event = dict[str, Any]
ZERO = {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}


def counts(**kinds: int) -> dict[str, int]:
    return {**ZERO, **kinds}


def witness(d: Divergence) -> tuple[Any, ...]:
    return (
        d.kind,
        d.key,
        d.reference_position,
        d.candidate_position,
        d.reference_event,
        d.candidate_event,
        d.columns,
    )


def only(verdict: Verdict) -> Divergence:
    assert verdict.equivalent is False
    assert len(verdict.divergences) == 1, verdict.divergences
    return verdict.divergences[0]


def plain_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a == b


# ---------------------------------------------------------------------------------------------
# by_key, ordered, unordered: one fault at the start, in the middle or at the end


def E(k: int, v: int) -> Event:
    return {"k": k, "v": v}


R = [E(1, 10), E(2, 20), E(1, 11), E(2, 21), E(1, 12), E(2, 22), E(1, 13), E(2, 23)]
AT = {"start": 0, "middle": 3, "end": 7}


def lose(i: int) -> list[Event]:
    return R[:i] + R[i + 1 :]


def duplicate(i: int) -> list[Event]:
    return [*R[: i + 1], dict(R[i]), *R[i + 1 :]]


def alter(i: int, **changes: Any) -> list[Event]:
    return [*R[:i], {**R[i], **changes}, *R[i + 1 :]]


MOVED = {
    # R[0] (key 1) moved after R[4], past two events of its key
    "start": (0, 4, [R[1], R[2], R[3], R[4], R[0], R[5], R[6], R[7]]),
    # R[3] (key 2) moved to the end, past two events of its key
    "middle": (3, 7, [R[0], R[1], R[2], R[4], R[5], R[6], R[7], R[3]]),
    # R[7] (key 2) moved to the front of its key
    "end": (7, 1, [R[0], R[7], R[1], R[2], R[3], R[4], R[5], R[6]]),
}

KEYED = {"by_key": lambda: by_key("k"), "ordered": ordered}
# The lost event's place in the candidate: by_key, before the next event of its key (or at
# the end); ordered, its own index.
LOSS_NEAR = {
    "by_key": {"start": 1, "middle": 4, "end": 7},
    "ordered": {"start": 0, "middle": 3, "end": 7},
}
# The extra copy (candidate index i + 1)'s place in the reference.
DUP_NEAR = {
    "by_key": {"start": 2, "middle": 5, "end": 8},
    "ordered": {"start": 1, "middle": 4, "end": 8},
}


def _key(form: str, i: int) -> Any:
    return R[i]["k"] if form == "by_key" else None


@pytest.mark.parametrize("where", list(AT))
@pytest.mark.parametrize("form", list(KEYED))
def test_loss(form: str, where: str) -> None:
    i = AT[where]
    verdict = compare(R, lose(i), KEYED[form]())
    assert dict(verdict.counts) == counts(loss=1)
    assert witness(only(verdict)) == (
        "loss",
        _key(form, i),
        i,
        LOSS_NEAR[form][where],
        R[i],
        None,
        (),
    )


@pytest.mark.parametrize("where", list(AT))
@pytest.mark.parametrize("form", list(KEYED))
def test_duplication(form: str, where: str) -> None:
    i = AT[where]
    verdict = compare(R, duplicate(i), KEYED[form]())
    assert dict(verdict.counts) == counts(duplication=1)
    assert witness(only(verdict)) == (
        "duplication",
        _key(form, i),
        DUP_NEAR[form][where],
        i + 1,
        None,
        R[i],
        (),
    )


@pytest.mark.parametrize("where", list(AT))
@pytest.mark.parametrize("form", [*KEYED, "unordered"])
def test_corruption_of_a_value(form: str, where: str) -> None:
    i = AT[where]
    dependence = unordered() if form == "unordered" else KEYED[form]()
    candidate = alter(i, v=99)
    verdict = compare(R, candidate, dependence)
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == (
        "corruption",
        _key(form, i) if form != "unordered" else None,
        i,
        i,
        R[i],
        candidate[i],
        ("v",),
    )
    assert dict(verdict.column_mismatches) == {"v": 1}


# A changed key: where the lost event would stand in the candidate (before its key's next
# event), by where it was.
KEY_LEFT_NEAR = {"start": 2, "middle": 5, "end": 8}


@pytest.mark.parametrize("where", list(AT))
def test_a_changed_key_is_a_loss_and_a_duplication(where: str) -> None:
    """The event left its key's chain: lost from key ``k``, extra in key 9, which has no
    reference events (so it would stand at the reference's end). Never a corruption of
    the key column."""
    i = AT[where]
    candidate = alter(i, k=9)
    verdict = compare(R, candidate, by_key("k"))
    assert dict(verdict.counts) == counts(loss=1, duplication=1)
    assert [witness(d) for d in verdict.divergences] == [
        ("loss", R[i]["k"], i, KEY_LEFT_NEAR[where], R[i], None, ()),
        ("duplication", 9, 8, i, None, candidate[i], ()),
    ]
    assert dict(verdict.column_mismatches) == {}


@pytest.mark.parametrize("where", list(AT))
@pytest.mark.parametrize("form", ["ordered", "unordered"])
def test_corruption_of_the_key(form: str, where: str) -> None:
    """Where ``k`` is no dependence column, changing it is a corruption like any other."""
    i = AT[where]
    dependence = unordered() if form == "unordered" else ordered()
    candidate = alter(i, k=9)
    verdict = compare(R, candidate, dependence)
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == (
        "corruption",
        _key(form, i) if form != "unordered" else None,
        i,
        i,
        R[i],
        candidate[i],
        ("k",),
    )


@pytest.mark.parametrize("where", list(MOVED))
@pytest.mark.parametrize("form", list(KEYED))
def test_moved_event_is_one_reordering(form: str, where: str) -> None:
    i, j, candidate = MOVED[where]
    verdict = compare(R, candidate, KEYED[form]())
    assert dict(verdict.counts) == counts(reordering=1)
    d = only(verdict)
    assert witness(d) == ("reordering", _key(form, i), i, j, R[i], R[i], ())


@pytest.mark.parametrize("where", list(MOVED))
def test_moved_event_under_unordered_is_no_divergence(where: str) -> None:
    _, _, candidate = MOVED[where]
    verdict = compare(R, candidate, unordered())
    assert verdict.equivalent is True
    assert verdict.divergences == ()
    assert dict(verdict.counts) == ZERO


def test_moved_event_across_keys_is_no_divergence_under_by_key() -> None:
    candidate = [R[1], R[0], R[3], R[2], R[5], R[4], R[7], R[6]]
    assert compare(R, candidate, by_key("k")).equivalent is True
    verdict = compare(R, candidate, ordered())
    assert verdict.equivalent is False
    assert verdict.counts["reordering"] >= 1
    assert (
        verdict.counts["loss"] == verdict.counts["duplication"] == verdict.counts["corruption"] == 0
    )


@pytest.mark.parametrize("where", list(AT))
def test_loss_and_duplication_under_unordered(where: str) -> None:
    i = AT[where]
    loss = only(compare(R, lose(i), unordered()))
    assert (
        loss.kind,
        loss.key,
        loss.reference_position,
        loss.reference_event,
        loss.candidate_event,
    ) == ("loss", None, i, R[i], None)
    extra = only(compare(R, duplicate(i), unordered()))
    assert (
        extra.kind,
        extra.key,
        extra.candidate_position,
        extra.reference_event,
        extra.candidate_event,
    ) == ("duplication", None, i + 1, None, R[i])
    assert dict(compare(R, lose(i), unordered()).counts) == counts(loss=1)
    assert dict(compare(R, duplicate(i), unordered()).counts) == counts(duplication=1)


@pytest.mark.parametrize("where", list(AT))
def test_loss_and_duplication_positions_under_unordered(where: str) -> None:
    i = AT[where]
    loss = only(compare(R, lose(i), unordered()))
    assert isinstance(loss.candidate_position, int)
    assert 0 <= loss.candidate_position <= len(R) - 1
    extra = only(compare(R, duplicate(i), unordered()))
    assert isinstance(extra.reference_position, int)
    assert 0 <= extra.reference_position <= len(R)


def test_witness_as_a_dict() -> None:
    verdict = compare(R, lose(3), by_key("k"))
    assert verdict.divergences[0].to_dict() == {
        "kind": "loss",
        "key": 2,
        "reference_position": 3,
        "candidate_position": 4,
        "reference_event": {"k": 2, "v": 21},
        "candidate_event": None,
        "columns": [],
        "partner_reference_position": None,
        "partner_candidate_position": None,
        "explanation": "reference event #3 is missing from the candidate (expected near #4)",
    }
    as_dict = verdict.to_dict()
    assert as_dict["verdict"] == "divergent"
    assert as_dict["equivalent"] is False
    assert as_dict["counts"] == counts(loss=1)
    assert as_dict["total_divergences"] == 1
    assert as_dict["reference_count"] == 8
    assert as_dict["candidate_count"] == 7
    assert as_dict["dependence"] == "by_key(k)"
    assert as_dict["divergences"] == [verdict.divergences[0].to_dict()]
    equivalent = compare(R, R, by_key("k")).to_dict()
    assert (equivalent["verdict"], equivalent["divergences"], equivalent["detected_at"]) == (
        "equivalent",
        [],
        None,
    )


# ---------------------------------------------------------------------------------------------
# Several faults, and the limit


R3 = [{"k": k, "v": v} for v in range(4) for k in (1, 2, 3)]


def _three_faults() -> list[Event]:
    candidate = [dict(e) for e in R3]
    del candidate[4]  # key 2, v 1: lost
    candidate[0] = {"k": 1, "v": 99}  # key 1, v 0: corrupted
    candidate.append({"k": 3, "v": 3})  # key 3, v 3: duplicated at the end
    return candidate


def test_faults_in_different_keys_add_up() -> None:
    verdict = compare(R3, _three_faults(), by_key("k"))
    assert dict(verdict.counts) == counts(loss=1, duplication=1, corruption=1)
    assert verdict.total_divergences == 3
    assert [witness(d) for d in verdict.divergences] == [
        ("corruption", 1, 0, 0, {"k": 1, "v": 0}, {"k": 1, "v": 99}, ("v",)),
        ("loss", 2, 4, 6, {"k": 2, "v": 1}, None, ()),
        ("duplication", 3, 12, 11, None, {"k": 3, "v": 3}, ()),
    ]
    assert verdict.divergence == verdict.divergences[0]
    assert verdict.reference_count == 12
    assert verdict.candidate_count == 12
    assert verdict.to_dict()["counts"] == counts(loss=1, duplication=1, corruption=1)
    assert verdict.to_dict()["total_divergences"] == 3
    assert verdict.to_dict()["verdict"] == "divergent"


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 100])
def test_limit_truncates_witnesses_not_counts(limit: int) -> None:
    full = compare(R3, _three_faults(), by_key("k"))
    verdict = compare(R3, _three_faults(), by_key("k"), limit=limit)
    assert verdict.divergences == full.divergences[:limit]
    assert len(verdict.divergences) == min(limit, 3)
    assert dict(verdict.counts) == counts(loss=1, duplication=1, corruption=1)
    assert verdict.equivalent is False
    assert verdict.divergence == (full.divergences[0] if limit else None)


def test_many_faults_counted_beyond_the_limit() -> None:
    reference = [{"k": k % 7, "v": k} for k in range(200)]
    candidate = [e if e["v"] % 10 else {**e, "v": -e["v"] - 1} for e in reference]
    verdict = compare(reference, candidate, by_key("k"), limit=5)
    assert dict(verdict.counts) == counts(corruption=20)
    assert [d.reference_position for d in verdict.divergences] == [0, 10, 20, 30, 40]
    assert all(d.columns == ("v",) for d in verdict.divergences)
    assert dict(verdict.column_mismatches) == {"v": 20}


# ---------------------------------------------------------------------------------------------
# Barriers


def T(k: int, v: int) -> Event:
    return {"kind": "E", "k": k, "v": v}


def B(day: int) -> Event:
    return {"kind": "B", "day": day}


RB = [T(1, 10), T(2, 20), B(0), T(1, 11), T(2, 21), B(1), T(1, 12), T(2, 22), B(2)]
BARRIER_AT = {"start": 2, "middle": 5, "end": 8}
BASES: dict[str, Callable[[], Any]] = {
    "by_key": lambda: by_key("k"),
    "ordered": ordered,
    "unordered": unordered,
}
BARRIER_SPECS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], bool]] = {
    "by_key": lambda x, y: "B" in (x["kind"], y["kind"]) or x["k"] == y["k"],
    "ordered": lambda x, y: True,
    "unordered": lambda x, y: "B" in (x["kind"], y["kind"]),
}
# A barrier's place is fixed: after every event before it, before every event after it.


def barriers(base: str) -> Any:
    return with_barriers(BASES[base](), column_equals("kind", "B"), columns=["kind"])


def _places(
    reference: list[Event], candidate: list[Event], event_: Event, spec: Any, side: str
) -> set[int]:
    """Where ``event_`` can be put back (into the candidate, or into the reference) so that
    the streams become equivalent."""
    if side == "candidate":
        return {
            p
            for p in range(len(candidate) + 1)
            if oracle.equivalent(
                reference, [*candidate[:p], event_, *candidate[p:]], spec, plain_equal
            )
        }
    return {
        p
        for p in range(len(reference) + 1)
        if oracle.equivalent([*reference[:p], event_, *reference[p:]], candidate, spec, plain_equal)
    }


@pytest.mark.parametrize("where", list(BARRIER_AT))
@pytest.mark.parametrize("base", list(BASES))
def test_lost_barrier_is_exactly_one_loss(base: str, where: str) -> None:
    i = BARRIER_AT[where]
    candidate = RB[:i] + RB[i + 1 :]
    verdict = compare(RB, candidate, barriers(base))
    assert dict(verdict.counts) == counts(loss=1)
    d = only(verdict)
    assert (d.kind, d.key, d.reference_position, d.reference_event, d.candidate_event) == (
        "loss",
        None,
        i,
        RB[i],
        None,
    )
    assert _places(RB, candidate, RB[i], BARRIER_SPECS[base], "candidate") == {i}


@pytest.mark.parametrize("where", list(BARRIER_AT))
@pytest.mark.parametrize("base", list(BASES))
def test_lost_barrier_position(base: str, where: str) -> None:
    i = BARRIER_AT[where]
    candidate = RB[:i] + RB[i + 1 :]
    assert only(compare(RB, candidate, barriers(base))).candidate_position == i


LEGAL_SWAPS_AFTER_LOST_BARRIER = [
    T(1, 10),
    T(2, 20),
    T(2, 21),
    T(1, 11),
    B(1),
    T(2, 22),
    T(1, 12),
    B(2),
]


@pytest.mark.parametrize("base", ["by_key", "unordered"])
def test_lost_barrier_with_legal_swaps_after_it(base: str) -> None:
    """The unit after a lost barrier merges with the one before; events of different keys
    that the candidate legally swapped are no divergence."""
    verdict = compare(RB, LEGAL_SWAPS_AFTER_LOST_BARRIER, barriers(base))
    assert dict(verdict.counts) == counts(loss=1)
    d = only(verdict)
    assert (d.kind, d.key, d.reference_position, d.reference_event, d.candidate_event) == (
        "loss",
        None,
        2,
        B(0),
        None,
    )


@pytest.mark.parametrize("base", ["by_key", "unordered"])
def test_lost_barrier_with_legal_swaps_after_it_position(base: str) -> None:
    assert only(compare(RB, LEGAL_SWAPS_AFTER_LOST_BARRIER, barriers(base))).candidate_position == 2


@pytest.mark.parametrize("base", ["by_key", "unordered"])
def test_corrupted_barrier_with_legal_swap_after_it(base: str) -> None:
    reference = [B(0), T(1, 10), T(2, 20), B(1)]
    candidate = [B(9), T(2, 20), T(1, 10), B(1)]
    verdict = compare(reference, candidate, barriers(base))
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == ("corruption", None, 0, 0, B(0), B(9), ("day",))


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize(
    ("moved", "candidate", "expected"),
    [
        # T(2, 20) moved after the first barrier
        (1, [T(1, 10), B(0), T(2, 20), T(1, 11), T(2, 21), B(1), T(1, 12), T(2, 22), B(2)], (1, 2)),
        # T(1, 11) moved after the second barrier
        (3, [T(1, 10), T(2, 20), B(0), T(2, 21), B(1), T(1, 11), T(1, 12), T(2, 22), B(2)], (3, 5)),
        # T(2, 22) moved before the second barrier
        (7, [T(1, 10), T(2, 20), B(0), T(1, 11), T(2, 21), T(2, 22), B(1), T(1, 12), B(2)], (7, 5)),
    ],
    ids=["start", "middle", "end"],
)
def test_event_moved_across_a_barrier_is_one_reordering(
    base: str, moved: int, candidate: list[Event], expected: tuple[int, int]
) -> None:
    verdict = compare(RB, candidate, barriers(base))
    assert dict(verdict.counts) == counts(reordering=1)
    key = RB[moved]["k"] if base == "by_key" else None
    assert witness(only(verdict)) == ("reordering", key, *expected, RB[moved], RB[moved], ())


@pytest.mark.parametrize("base", list(BASES))
def test_event_moved_within_a_unit(base: str) -> None:
    candidate = [T(2, 20), T(1, 10), *RB[2:]]
    verdict = compare(RB, candidate, barriers(base))
    if base == "ordered":
        assert dict(verdict.counts) == counts(reordering=1)
        assert only(verdict).kind == "reordering"
    else:
        assert verdict.equivalent is True


@pytest.mark.parametrize("base", list(BASES))
def test_moved_barrier_is_one_reordering(base: str) -> None:
    reference = [B(0), T(2, 20), T(1, 10)]
    candidate = [T(2, 20), T(1, 10), B(0)]
    verdict = compare(reference, candidate, barriers(base))
    assert dict(verdict.counts) == counts(reordering=1)
    assert witness(only(verdict)) == ("reordering", None, 0, 2, B(0), B(0), ())


@pytest.mark.parametrize("base", list(BASES))
def test_duplicated_and_corrupted_barrier(base: str) -> None:
    duplicated = [*RB[:3], B(0), *RB[3:]]
    verdict = compare(RB, duplicated, barriers(base))
    assert dict(verdict.counts) == counts(duplication=1)
    d = only(verdict)
    assert (d.kind, d.key, d.candidate_position, d.reference_event, d.candidate_event) == (
        "duplication",
        None,
        3,
        None,
        B(0),
    )
    assert _places(RB, duplicated, B(0), BARRIER_SPECS[base], "reference") == {2, 3}

    corrupted = [*RB[:5], B(7), *RB[6:]]
    verdict = compare(RB, corrupted, barriers(base))
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == ("corruption", None, 5, 5, B(1), B(7), ("day",))


@pytest.mark.parametrize("base", list(BASES))
def test_duplicated_barrier_position(base: str) -> None:
    duplicated = [*RB[:3], B(0), *RB[3:]]
    # the extra B(0) can stand in the reference only next to B(0), before T(1, 11)
    assert only(compare(RB, duplicated, barriers(base))).reference_position in {2, 3}


# ---------------------------------------------------------------------------------------------
# Typed: the extended taxi example


TAXI = typed(
    "kind",
    {"taxi": ["taxi_id"], "EOD": None, "EOM": None},
    [("taxi", "taxi"), ("EOD", "*"), ("EOM", "EOM")],
)


def taxi(i: int, d: int) -> Event:
    return {"kind": "taxi", "taxi_id": i, "d": d}


def eod(n: int) -> Event:
    return {"kind": "EOD", "day": n}


def eom(n: int) -> Event:
    return {"kind": "EOM", "month": n}


RT = [taxi(1, 10), taxi(2, 20), eod(1), taxi(1, 11), eom(1), taxi(2, 21), eod(2)]


def _spec_taxi(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    kinds = {x["kind"], y["kind"]}
    if "EOD" in kinds:
        return True
    if kinds == {"EOM"}:
        return True
    return kinds == {"taxi"} and x["taxi_id"] == y["taxi_id"]


def test_typed_corruption() -> None:
    candidate = [*RT[:5], taxi(2, 99), *RT[6:]]
    verdict = compare(RT, candidate, TAXI)
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == ("corruption", 2, 5, 5, RT[5], taxi(2, 99), ("d",))

    candidate = [*RT[:2], eod(9), *RT[3:]]
    verdict = compare(RT, candidate, TAXI)
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == ("corruption", None, 2, 2, eod(1), eod(9), ("day",))


@pytest.mark.parametrize(
    ("moved", "candidate", "near"),
    [
        (1, [RT[0], RT[2], RT[1], *RT[3:]], 2),  # a taxi event after the EOD of its day
        (4, [*RT[:4], RT[5], RT[6], RT[4]], 6),  # an EOM after the next EOD
        (3, [*RT[:2], RT[3], RT[2], *RT[4:]], 2),  # a taxi event before the EOD of the day before
    ],
    ids=["taxi-after-eod", "eom-after-eod", "taxi-before-eod"],
)
def test_typed_moved_event(moved: int, candidate: list[Event], near: int) -> None:
    verdict = compare(RT, candidate, TAXI)
    assert dict(verdict.counts) == counts(reordering=1)
    key = RT[moved].get("taxi_id")
    assert witness(only(verdict)) == ("reordering", key, moved, near, RT[moved], RT[moved], ())


def test_typed_legal_moves_are_no_divergence() -> None:
    # EOM may stand anywhere between two EODs; taxis of different ids may interleave.
    assert compare(RT, [*RT[:3], RT[4], RT[3], *RT[5:]], TAXI).equivalent is True
    assert compare(RT, [RT[1], RT[0], *RT[2:]], TAXI).equivalent is True
    assert compare(RT, [*RT[:3], RT[5], RT[4], RT[3], RT[6]], TAXI).equivalent is True


def test_typed_moved_eod_is_one_reordering() -> None:
    candidate = [RT[2], RT[0], RT[1], *RT[3:]]
    verdict = compare(RT, candidate, TAXI)
    assert dict(verdict.counts) == counts(reordering=1)
    assert witness(only(verdict)) == ("reordering", None, 2, 0, eod(1), eod(1), ())


@pytest.mark.parametrize(
    ("lost", "places"),
    [
        (3, {3, 4, 5}),  # taxi 1's second event: anywhere between the two EODs
        (2, {2}),  # the first EOD: exactly where it was
        (4, {3, 4, 5}),  # the EOM: anywhere between the two EODs
    ],
    ids=["taxi", "eod", "eom"],
)
def test_typed_loss(lost: int, places: set[int]) -> None:
    candidate = RT[:lost] + RT[lost + 1 :]
    verdict = compare(RT, candidate, TAXI)
    assert dict(verdict.counts) == counts(loss=1)
    d = only(verdict)
    assert (d.kind, d.key, d.reference_position, d.reference_event, d.candidate_event) == (
        "loss",
        RT[lost].get("taxi_id"),
        lost,
        RT[lost],
        None,
    )
    # every listed place is right, and no other
    assert {
        p
        for p in range(len(candidate) + 1)
        if oracle.equivalent(
            RT, [*candidate[:p], RT[lost], *candidate[p:]], _spec_taxi, plain_equal
        )
    } == places


@pytest.mark.parametrize(
    ("lost", "places"), [(3, {3, 4, 5}), (2, {2}), (4, {3, 4, 5})], ids=["taxi", "eod", "eom"]
)
def test_typed_loss_position(lost: int, places: set[int]) -> None:
    candidate = RT[:lost] + RT[lost + 1 :]
    assert only(compare(RT, candidate, TAXI)).candidate_position in places


def test_typed_duplication() -> None:
    candidate = [RT[0], dict(RT[0]), *RT[1:]]
    verdict = compare(RT, candidate, TAXI)
    assert dict(verdict.counts) == counts(duplication=1)
    d = only(verdict)
    assert (d.kind, d.key, d.candidate_position, d.reference_event, d.candidate_event) == (
        "duplication",
        1,
        1,
        None,
        RT[0],
    )


def test_typed_duplication_position() -> None:
    candidate = [RT[0], dict(RT[0]), *RT[1:]]
    assert only(compare(RT, candidate, TAXI)).reference_position in {0, 1, 2}


# ---------------------------------------------------------------------------------------------
# Predicate: DifferentSign (both negative or both positive are independent)


def _sign(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    return not ((x["n"] < 0 and y["n"] < 0) or (x["n"] > 0 and y["n"] > 0))


def S(n: int, v: int) -> Event:
    return {"n": n, "v": v}


RS = [S(1, 0), S(2, 1), S(0, 2), S(-1, 3), S(-2, 4), S(0, 5), S(3, 6)]
SIGN_AT = {"start": 0, "middle": 3, "end": 6}


@pytest.mark.parametrize("where", list(SIGN_AT))
def test_predicate_faults(where: str) -> None:
    i = SIGN_AT[where]
    dependence = predicate(_sign, columns=["n"])

    lost = RS[:i] + RS[i + 1 :]
    d = only(compare(RS, lost, dependence))
    assert (d.kind, d.key, d.reference_position, d.reference_event, d.candidate_event) == (
        "loss",
        None,
        i,
        RS[i],
        None,
    )
    assert dict(compare(RS, lost, dependence).counts) == counts(loss=1)

    extra = [*RS[: i + 1], dict(RS[i]), *RS[i + 1 :]]
    d = only(compare(RS, extra, dependence))
    assert (d.kind, d.key, d.candidate_position, d.reference_event, d.candidate_event) == (
        "duplication",
        None,
        i + 1,
        None,
        RS[i],
    )

    altered = [*RS[:i], {**RS[i], "v": 99}, *RS[i + 1 :]]
    verdict = compare(RS, altered, dependence)
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == ("corruption", None, i, i, RS[i], altered[i], ("v",))


def test_predicate_moved_event() -> None:
    dependence = predicate(_sign, columns=["n"])
    # S(1, 0) moved past S(0, 2): 0 depends on everything
    candidate = [RS[1], RS[2], RS[0], *RS[3:]]
    verdict = compare(RS, candidate, dependence)
    assert dict(verdict.counts) == counts(reordering=1)
    d = only(verdict)
    assert witness(d) == ("reordering", None, 0, 2, RS[0], RS[0], ())
    assert (d.partner_reference_position, d.partner_candidate_position) == (2, 1)
    # S(1, 0) and S(2, 1) are both positive: swapping them is fine
    assert compare(RS, [RS[1], RS[0], *RS[2:]], dependence).equivalent is True


# ---------------------------------------------------------------------------------------------
# Every form: a single fault in a stream of distinct events is exactly one divergence, and its
# witness explains the whole difference


@st.composite
def distinct_streams(draw: st.DrawFn, form: Form) -> list[Event]:
    bases = draw(st.lists(form.base, min_size=1, max_size=6))
    return [{**b, "v": i} for i, b in enumerate(bases)]


def _kind_and_own_side(form: Form, fault: str, data: st.DataObject) -> None:
    reference = data.draw(distinct_streams(form))
    i = data.draw(st.integers(0, len(reference) - 1))
    spec = form.spec
    if fault == "loss":
        candidate = reference[:i] + reference[i + 1 :]
    elif fault == "duplication":
        candidate = [*reference[: i + 1], dict(reference[i]), *reference[i + 1 :]]
    else:
        candidate = [*reference[:i], {**reference[i], "v": -1}, *reference[i + 1 :]]
    verdict = compare(reference, candidate, form.make())
    assert dict(verdict.counts) == counts(**{fault: 1})
    d = only(verdict)
    assert d.kind == fault
    if fault == "loss":
        assert (d.reference_position, d.reference_event, d.candidate_event) == (
            i,
            reference[i],
            None,
        )
    elif fault == "duplication":
        assert (d.candidate_position, d.reference_event, d.candidate_event) == (
            i + 1,
            None,
            reference[i],
        )
    else:
        assert (d.reference_position, d.candidate_position, d.columns) == (i, i, ("v",))
        assert (d.reference_event, d.candidate_event) == (reference[i], candidate[i])
    assert oracle.equivalent(reference, candidate, spec, plain_equal) is False


@pytest.mark.parametrize("fault", ["loss", "duplication", "corruption"])
@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
@given(data=st.data())
def test_single_fault_kind_and_witness(form: Form, fault: str, data: st.DataObject) -> None:
    _kind_and_own_side(form, fault, data)


@pytest.mark.parametrize("form", FORMS, ids=FORM_IDS)
@given(data=st.data())
def test_single_loss_or_duplication_other_position_is_right(
    form: Form, data: st.DataObject
) -> None:
    """Putting the lost event back at ``candidate_position`` (or the extra event into the
    reference at ``reference_position``) makes the streams equivalent."""
    reference = data.draw(distinct_streams(form))
    i = data.draw(st.integers(0, len(reference) - 1))
    spec = form.spec

    candidate = reference[:i] + reference[i + 1 :]
    d = only(compare(reference, candidate, form.make()))
    p = d.candidate_position
    assert isinstance(p, int)
    assert oracle.equivalent(
        reference, [*candidate[:p], reference[i], *candidate[p:]], spec, plain_equal
    )

    candidate = [*reference[: i + 1], dict(reference[i]), *reference[i + 1 :]]
    d = only(compare(reference, candidate, form.make()))
    p = d.reference_position
    assert isinstance(p, int)
    assert oracle.equivalent(
        [*reference[:p], reference[i], *reference[p:]], candidate, spec, plain_equal
    )


def _move_cases() -> list[Any]:
    # under unordered() nothing can be moved wrongly
    return [pytest.param(form, id=form.name) for form in FORMS if form.name != "unordered"]


@pytest.mark.parametrize("form", _move_cases())
@given(data=st.data())
def test_single_moved_event_is_one_reordering(form: Form, data: st.DataObject) -> None:
    reference = data.draw(distinct_streams(form))
    i = data.draw(st.integers(0, len(reference) - 1))
    j = data.draw(st.integers(0, len(reference) - 1))
    candidate = reference[:i] + reference[i + 1 :]
    candidate.insert(j, reference[i])
    if oracle.equivalent(reference, candidate, form.spec, plain_equal):
        assert compare(reference, candidate, form.make()).equivalent is True
        return
    verdict = compare(reference, candidate, form.make())
    assert dict(verdict.counts) == counts(reordering=1)
    d = only(verdict)
    assert d.reference_event == d.candidate_event
    assert reference[d.reference_position] == d.reference_event
    assert candidate[d.candidate_position] == d.candidate_event
    # The witness is the whole story: without that event the streams agree.
    rest_r = reference[: d.reference_position] + reference[d.reference_position + 1 :]
    rest_c = candidate[: d.candidate_position] + candidate[d.candidate_position + 1 :]
    assert oracle.equivalent(rest_r, rest_c, form.spec, plain_equal)


# ---------------------------------------------------------------------------------------------
# Long streams: the matcher settles a diverged key once both sides agree again


LONG = [{"k": 1, "v": i} for i in range(300)]


@pytest.mark.parametrize("dependence", [lambda: by_key("k"), ordered], ids=["by_key", "ordered"])
@pytest.mark.parametrize("i", [0, 10, 150, 299])
def test_long_stream_single_faults(dependence: Callable[[], Any], i: int) -> None:
    key = 1 if dependence().describe().startswith("by_key") else None
    lost = LONG[:i] + LONG[i + 1 :]
    verdict = compare(LONG, lost, dependence())
    assert dict(verdict.counts) == counts(loss=1)
    assert witness(only(verdict)) == ("loss", key, i, i, LONG[i], None, ())

    extra = [*LONG[: i + 1], dict(LONG[i]), *LONG[i + 1 :]]
    verdict = compare(LONG, extra, dependence())
    assert dict(verdict.counts) == counts(duplication=1)
    assert witness(only(verdict)) == ("duplication", key, i + 1, i + 1, None, LONG[i], ())

    altered = [*LONG[:i], {"k": 1, "v": -1}, *LONG[i + 1 :]]
    verdict = compare(LONG, altered, dependence())
    assert dict(verdict.counts) == counts(corruption=1)
    assert witness(only(verdict)) == ("corruption", key, i, i, LONG[i], altered[i], ("v",))


def test_long_stream_two_faults_far_apart() -> None:
    candidate = LONG[:10] + LONG[11:200] + LONG[201:]
    verdict = compare(LONG, candidate, by_key("k"))
    assert dict(verdict.counts) == counts(loss=2)
    assert [witness(d) for d in verdict.divergences] == [
        ("loss", 1, 10, 10, LONG[10], None, ()),
        ("loss", 1, 200, 199, LONG[200], None, ()),
    ]


@pytest.mark.parametrize("distance", [5, 10])
@pytest.mark.parametrize("dependence", [lambda: by_key("k"), ordered], ids=["by_key", "ordered"])
def test_long_stream_event_moved_a_little(dependence: Callable[[], Any], distance: int) -> None:
    candidate = [*LONG[1 : distance + 1], LONG[0], *LONG[distance + 1 :]]
    verdict = compare(LONG, candidate, dependence())
    assert dict(verdict.counts) == counts(reordering=1)
    d = only(verdict)
    assert (d.kind, d.reference_position, d.candidate_position, d.reference_event) == (
        "reordering",
        0,
        distance,
        LONG[0],
    )


@pytest.mark.parametrize("distance", [20, 100, 250])
@pytest.mark.parametrize("dependence", [lambda: by_key("k"), ordered], ids=["by_key", "ordered"])
def test_long_stream_event_moved_far(dependence: Callable[[], Any], distance: int) -> None:
    candidate = [*LONG[1 : distance + 1], LONG[0], *LONG[distance + 1 :]]
    verdict = compare(LONG, candidate, dependence())
    assert dict(verdict.counts) == counts(reordering=1)
    d = only(verdict)
    assert (d.kind, d.reference_position, d.candidate_position, d.reference_event) == (
        "reordering",
        0,
        distance,
        LONG[0],
    )


def test_long_streams_keep_memory_bounded_after_a_divergence() -> None:
    """A fault early in a long key does not make the matcher hold the rest of the key."""
    reference = [{"k": 1, "v": i} for i in range(2_000)]
    candidate = reference[:5] + reference[6:]
    matcher_verdict = compare(reference, candidate, by_key("k"))
    assert dict(matcher_verdict.counts) == counts(loss=1)
    assert matcher_verdict.peak_unmatched < 200
