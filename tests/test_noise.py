"""The noise rule (``matcher.noise``): which candidate divergences the reference's own
non-determinism explains, and the run's verdict. Pure: hand-built verdicts, exact values."""

from __future__ import annotations

from typing import Any

from matcher.noise import Noise, explain, scope_of
from matcher.store import RunOutcome
from matcher.verdict import Divergence, Kind, Verdict


def div(kind: Kind, key: Any, *columns: str, at: int = 0) -> Divergence:
    """A divergence with just enough of a witness for the rule (which reads kind, key and
    columns)."""
    event = {"k": key}
    return Divergence(
        kind,
        key,
        at,
        at,
        None if kind == "duplication" else event,
        None if kind == "loss" else event,
        columns=columns,
    )


def verdict(*divergences: Divergence, total: dict[str, int] | None = None) -> Verdict:
    """A verdict holding ``divergences`` as witnesses; ``total`` overrides the counts (for
    witnesses cut off by a limit)."""
    counts: dict[str, int] = {}
    columns: dict[str, int] = {}
    for d in divergences:
        counts[d.kind] = counts.get(d.kind, 0) + 1
        for c in d.columns:
            columns[c] = columns.get(c, 0) + 1
    return Verdict(
        equivalent=not divergences and not total,
        divergences=divergences,
        counts=total or counts,
        column_mismatches=columns,
    )


# The reference against its rerun: taxi T1 reordered, T2 lost an event, T3's emitted_at
# differed.
RERUN = verdict(
    div("reordering", "T1", at=1),
    div("loss", "T2", at=2),
    div("corruption", "T3", "emitted_at", at=3),
)
NOISE = Noise.measure([RERUN])


def test_measure_reads_scopes_by_kind_and_columns_from_corruptions() -> None:
    assert NOISE.reruns == 1
    assert NOISE.order_scopes == frozenset({'"T1"'})
    assert NOISE.event_scopes == frozenset({'"T2"'})
    assert NOISE.columns == frozenset({"emitted_at"})
    assert dict(NOISE.counts) == {"loss": 1, "duplication": 0, "reordering": 1, "corruption": 1}
    assert (NOISE.total, NOISE.silent, NOISE.complete) == (3, False, True)
    # T3 is not a noisy key: only its column is noisy.
    assert NOISE.noisy_keys() == [
        {"key": "T1", "order": True, "events": False},
        {"key": "T2", "order": False, "events": True},
    ]


def test_each_kind_is_explained_only_by_its_own_kind_of_noise() -> None:
    cases = [
        (div("reordering", "T1"), "order"),
        (div("loss", "T1"), None),  # the reference only reordered T1: it never lost one
        (div("corruption", "T1", "km"), None),
        (div("loss", "T2"), "events"),
        (div("duplication", "T2"), "events"),
        (div("corruption", "T2", "km"), "events"),  # T2's events are not reproducible
        (div("reordering", "T2"), None),
        (div("corruption", "T4", "emitted_at"), "columns"),  # a noisy column, on any key
        (div("corruption", "T4", "emitted_at", "km"), None),  # km is not noisy
        (div("corruption", "T4"), None),  # no columns named: nothing to excuse it
        (div("loss", "T3"), None),
        (div("reordering", None), None),
    ]
    assert [NOISE.explanation(d) for d, _ in cases] == [expected for _, expected in cases]


def test_every_divergence_explained_is_noisy() -> None:
    candidate = verdict(
        div("reordering", "T1", at=0),
        div("corruption", "T5", "emitted_at", at=4),
        div("loss", "T2", at=7),
    )
    report = explain(NOISE, candidate)
    assert (report.verdict, report.total, report.checked, report.explained) == ("noisy", 3, 3, 3)
    assert (report.unexplained, report.checked_all) == (0, True)
    assert report.explanations == ("order", "columns", "events")
    assert report.noisy_ordinals() == (0, 1, 2)
    assert report.summary() == (
        "all 3 divergences are explained by noise: 2 noisy keys, 1 noisy column"
        " (3 divergences of the reference from its rerun)"
    )
    assert report.to_dict() == {
        "verdict": "noisy",
        "summary": report.summary(),
        "reference_runs": 2,
        "reference_divergences": 3,
        "reference_counts": {"loss": 1, "duplication": 0, "reordering": 1, "corruption": 1},
        "noise_complete": True,
        "noisy_key_count": 2,
        "noisy_keys": [
            {"key": "T1", "order": True, "events": False},
            {"key": "T2", "order": False, "events": True},
        ],
        "noisy_columns": ["emitted_at"],
        "candidate_divergences": 3,
        "checked": 3,
        "explained": 3,
        "checked_all": True,
        "witnesses": [
            {"ordinal": 0, "explained_by": "order"},
            {"ordinal": 1, "explained_by": "columns"},
            {"ordinal": 2, "explained_by": "events"},
        ],
    }


def test_one_unexplained_divergence_makes_it_divergent() -> None:
    candidate = verdict(div("reordering", "T1", at=0), div("loss", "T3", at=5))
    report = explain(NOISE, candidate)
    assert (report.verdict, report.explained, report.unexplained) == ("divergent", 1, 1)
    assert report.explanations == ("order", None)
    assert report.noisy_ordinals() == (0,)
    assert report.summary() == (
        "1 of 2 divergences are not explained by noise: 2 noisy keys, 1 noisy column"
        " (3 divergences of the reference from its rerun)"
    )


def test_an_equivalent_candidate_stays_equivalent_whatever_the_noise() -> None:
    report = explain(NOISE, verdict())
    assert (report.verdict, report.total, report.explanations) == ("equivalent", 0, ())
    assert report.summary() == (
        "equivalent, though the reference is noisy: 2 noisy keys, 1 noisy column"
        " (3 divergences of the reference from its rerun)"
    )


def test_a_silent_reference_explains_nothing() -> None:
    silent = Noise.measure([verdict()])
    assert (silent.silent, silent.noisy_keys(), silent.columns) == (True, [], frozenset())
    report = explain(silent, verdict(div("reordering", "T1")))
    assert (report.verdict, report.explanations) == ("divergent", (None,))
    assert report.summary() == "the reference agreed with itself on its rerun"


def test_witnesses_cut_off_leave_the_rest_unchecked_so_divergent() -> None:
    # Five reorderings of T1, witnesses for the first two only: the other three could be
    # anywhere, so the run cannot be called noisy.
    candidate = verdict(
        div("reordering", "T1", at=0), div("reordering", "T1", at=1), total={"reordering": 5}
    )
    report = explain(NOISE, candidate)
    assert (report.verdict, report.total, report.checked, report.explained) == (
        "divergent",
        5,
        2,
        2,
    )
    assert report.checked_all is False
    assert report.summary() == (
        "the 2 divergences checked of 5 are explained by noise, but the rest could not be "
        "checked: 2 noisy keys, 1 noisy column (3 divergences of the reference from its rerun)"
    )


def test_counts_alone_prove_corruptions_of_noisy_columns_explained() -> None:
    candidate = Verdict(
        equivalent=False,
        divergences=(div("corruption", "T9", "emitted_at"),),
        counts={"corruption": 40},
        column_mismatches={"emitted_at": 40},
    )
    report = explain(NOISE, candidate)
    assert (report.verdict, report.checked, report.checked_all) == ("noisy", 1, True)
    mixed = Verdict(
        equivalent=False,
        divergences=(div("corruption", "T9", "emitted_at"),),
        counts={"corruption": 40},
        column_mismatches={"emitted_at": 40, "km": 1},
    )
    assert explain(NOISE, mixed).verdict == "divergent"


def test_noise_known_only_from_cut_off_witnesses_is_incomplete() -> None:
    cut = verdict(div("reordering", "T1"), total={"reordering": 1, "loss": 7})
    noise = Noise.measure([cut])
    assert (noise.complete, noise.total, noise.order_scopes) == (False, 8, frozenset({'"T1"'}))
    assert explain(noise, verdict(div("loss", "T7"))).verdict == "divergent"
    assert explain(noise, verdict(div("reordering", "T1"))).to_dict()["noise_complete"] is False


def test_reruns_add_up() -> None:
    noise = Noise.measure([verdict(div("reordering", "T1")), verdict(div("duplication", "T1"))])
    assert (noise.reruns, noise.order_scopes, noise.event_scopes) == (
        2,
        frozenset({'"T1"'}),
        frozenset({'"T1"'}),
    )
    assert noise.noisy_keys() == [{"key": "T1", "order": True, "events": True}]
    report = explain(noise, verdict(div("loss", "T1")))
    assert report.to_dict()["reference_runs"] == 3
    assert "from 2 reruns" in report.summary()


def test_key_less_events_share_one_scope_the_stream() -> None:
    noise = Noise.measure([verdict(div("loss", None))])
    assert noise.event_scopes == frozenset({"null"})
    assert noise.noisy_keys() == [{"key": None, "order": False, "events": True}]
    assert noise.explanation(div("duplication", None)) == "events"
    assert noise.explanation(div("reordering", None)) is None
    assert noise.explanation(div("loss", "T1")) is None


def test_composite_keys_match_however_they_are_spelled() -> None:
    noise = Noise.measure([verdict(div("reordering", ("T1", 2)))])
    assert scope_of(("T1", 2)) == scope_of(["T1", 2]) == '["T1", 2]'
    assert noise.explanation(div("reordering", ["T1", 2])) == "order"
    assert noise.explanation(div("reordering", ("T1", 3))) is None
    assert scope_of(float("nan")) == '"NaN"'


def test_trim_keeps_the_verdict_and_counts_and_the_first_explanations() -> None:
    candidate = verdict(div("reordering", "T1", at=0), div("loss", "T2", at=1))
    report = explain(NOISE, candidate).trim(1)
    assert (report.verdict, report.explanations, report.checked, report.explained) == (
        "noisy",
        ("order",),
        2,
        2,
    )


def test_the_store_outcome_flags_the_explained_witnesses() -> None:
    candidate = verdict(div("reordering", "T1", at=0), div("loss", "T3", at=5))
    report = explain(NOISE, candidate)
    outcome = RunOutcome.from_verdict(
        candidate,
        verdict_name=report.verdict,
        noisy_ordinals=report.noisy_ordinals(),
        noise=report.to_dict(),
    )
    assert outcome.verdict == "divergent"
    assert [(d.kind, d.key, d.noisy) for d in outcome.divergences] == [
        ("reordering", "T1", True),
        ("loss", "T3", False),
    ]
