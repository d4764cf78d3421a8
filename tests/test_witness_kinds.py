"""Witness kinds (issue 10, item 6): a corruption is an event replaced *at the same place*.

The definition is ``matcher.classify``'s module docstring: in a chain, the k-th unmatched
event of the same gap between matched events on each side; without a chain (unordered),
any similar pair of the unit; and never a pair that differs in a column the dependence
reads (a changed key is a loss on the old key and an extra event on the new one). Both
engines give the same kinds and counts, the Spark engine's per-partition explanation
included (forced here by lowering its threshold).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from matcher import Verdict, compare
from matcher.classify import MAX_SIMILARITY_PAIRS
from matcher.dependence import Dependence, by_key, ordered, punctuation, unordered
from matcher.serialize import json_safe
from matcher.spark import compare_dataframes, read_stream
from matcher.spark import grouped_run as grouped_module
from matcher.spark import screen as screen_module
from tests.test_classification import witness

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

Event = dict[str, Any]
ZERO = {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}


def counts(**kinds: int) -> dict[str, int]:
    return {**ZERO, **kinds}


def V(*values: int) -> list[Event]:
    return [{"v": v} for v in values]


# ---------------------------------------------------------------------------------------------
# The core: ordered chains


def test_a_gap_and_an_extra_event_are_no_corruption() -> None:
    """2 is missing between 1 and 3, 5 is extra after 4: not "2 became 5"."""
    verdict = compare(V(1, 2, 3, 4), V(1, 3, 4, 5), ordered())
    assert dict(verdict.counts) == counts(loss=1, duplication=1)
    assert [witness(d) for d in verdict.divergences] == [
        ("loss", None, 1, 1, {"v": 2}, None, ()),
        ("duplication", None, 4, 3, None, {"v": 5}, ()),
    ]
    assert dict(verdict.column_mismatches) == {}


def test_a_replaced_event_at_the_same_place_is_a_corruption() -> None:
    verdict = compare(V(1, 2, 3), V(1, 9, 3), ordered())
    assert dict(verdict.counts) == counts(corruption=1)
    assert [witness(d) for d in verdict.divergences] == [
        ("corruption", None, 1, 1, {"v": 2}, {"v": 9}, ("v",)),
    ]
    assert dict(verdict.column_mismatches) == {"v": 1}


def test_the_kth_unmatched_events_of_a_gap_pair_up() -> None:
    """Two events replaced by one, in one gap: the first pairs, the second is lost."""
    verdict = compare(V(1, 2, 3, 4), V(1, 8, 4), ordered())
    assert dict(verdict.counts) == counts(loss=1, corruption=1)
    assert [witness(d) for d in verdict.divergences] == [
        ("corruption", None, 1, 1, {"v": 2}, {"v": 8}, ("v",)),
        ("loss", None, 2, 2, {"v": 3}, None, ()),
    ]


def test_a_moved_and_altered_event_is_a_loss_and_a_duplication() -> None:
    """Until item 6 the corruption pass took any similar pair, wherever it stood."""
    verdict = compare(V(1, 2, 3, 4, 5), V(1, 3, 4, 5, 20), ordered())
    assert dict(verdict.counts) == counts(loss=1, duplication=1)


# ---------------------------------------------------------------------------------------------
# The core: keys


def KV(k: int, v: int) -> Event:
    return {"k": k, "v": v}


KEYED = [KV(1, 10), KV(2, 20), KV(1, 11), KV(2, 21), KV(3, 30), KV(1, 12)]


def test_a_changed_key_is_a_loss_on_the_old_key_and_an_extra_event_on_the_new() -> None:
    candidate = [*KEYED]
    candidate[3] = KV(3, 21)  # key 2's second event now reads key 3 (which has events)
    verdict = compare(KEYED, candidate, by_key("k"))
    assert dict(verdict.counts) == counts(loss=1, duplication=1)
    assert [witness(d) for d in verdict.divergences] == [
        ("loss", 2, 3, 6, KV(2, 21), None, ()),
        ("duplication", 3, 4, 3, None, KV(3, 21), ()),
    ]
    assert dict(verdict.column_mismatches) == {}


def test_a_changed_key_beside_a_genuine_corruption() -> None:
    candidate = [*KEYED]
    candidate[1] = KV(9, 20)  # key 2 -> 9 (a new key)
    candidate[2] = KV(1, 99)  # key 1's second event altered in place
    verdict = compare(KEYED, candidate, by_key("k"))
    assert dict(verdict.counts) == counts(loss=1, duplication=1, corruption=1)
    assert [witness(d) for d in verdict.divergences] == [
        ("loss", 2, 1, 3, KV(2, 20), None, ()),
        ("duplication", 9, 6, 1, None, KV(9, 20), ()),
        ("corruption", 1, 2, 2, KV(1, 11), KV(1, 99), ("v",)),
    ]
    assert dict(verdict.column_mismatches) == {"v": 1}


def test_a_changed_key_under_ordered_is_a_corruption() -> None:
    """``ordered`` reads no column: ``k`` is data there, and the event kept its place."""
    candidate = [*KEYED]
    candidate[3] = KV(3, 21)
    verdict = compare(KEYED, candidate, ordered())
    assert dict(verdict.counts) == counts(corruption=1)
    assert verdict.divergences[0].columns == ("k",)


def test_a_changed_timestamp_under_punctuation_is_no_corruption() -> None:
    """The timestamp is what a punctuation orders an event by: changing it moves the event."""
    dependence = punctuation(lambda e: e["p"], "ts")
    reference = [{"p": False, "ts": 1, "v": 1}, {"p": True, "ts": 2, "v": 0}]
    candidate = [{"p": False, "ts": 3, "v": 1}, {"p": True, "ts": 2, "v": 0}]
    verdict = compare(reference, candidate, dependence)
    assert dict(verdict.counts) == counts(loss=1, duplication=1)


# ---------------------------------------------------------------------------------------------
# The core: unordered, where position means nothing


def test_unordered_pairs_similar_events_wherever_they_stand() -> None:
    reference = [KV(1, 10), KV(2, 20), KV(3, 30)]
    candidate = [KV(3, 30), KV(2, 20), KV(1, 99)]
    verdict = compare(reference, candidate, unordered())
    assert dict(verdict.counts) == counts(corruption=1)
    assert [witness(d) for d in verdict.divergences] == [
        ("corruption", None, 0, 2, KV(1, 10), KV(1, 99), ("v",)),
    ]


@pytest.mark.parametrize("n", [200, 201])
def test_unordered_pairs_up_to_the_bound(n: int) -> None:
    """200 x 200 = MAX_SIMILARITY_PAIRS losses x duplications pair; 201 x 201 do not."""
    assert MAX_SIMILARITY_PAIRS == 200 * 200
    reference = [KV(i, 0) for i in range(n)]
    candidate = [KV(i, 1) for i in range(n)]
    verdict = compare(reference, candidate, unordered())
    if n == 200:
        assert dict(verdict.counts) == counts(corruption=200)
    else:
        assert dict(verdict.counts) == counts(loss=201, duplication=201)


# ---------------------------------------------------------------------------------------------
# The core: pairs never cross a key (Hypothesis, against each key compared alone)

_events = st.lists(
    st.fixed_dictionaries({"k": st.sampled_from([0, 1, 2]), "v": st.integers(0, 3)}),
    max_size=8,
)


@given(_events, _events)
def test_by_key_is_each_key_compared_alone(reference: list[Event], candidate: list[Event]) -> None:
    """The kinds under ``by_key`` are the sum of each key's, as an ordered stream of its own
    (a brute-force split): no pair, corruption or move, spans two keys."""
    verdict = compare(reference, candidate, by_key("k"))
    expected: Counter[str] = Counter()
    for k in {e["k"] for e in reference + candidate}:
        alone = compare(
            [e for e in reference if e["k"] == k], [e for e in candidate if e["k"] == k], ordered()
        )
        expected.update(alone.counts)
    assert {kind: verdict.counts[kind] for kind in ZERO} == {kind: expected[kind] for kind in ZERO}
    assert all(
        d.reference_event["k"] == d.candidate_event["k"]
        for d in verdict.divergences
        if d.reference_event is not None and d.candidate_event is not None
    )


# ---------------------------------------------------------------------------------------------
# The Spark engine, on small Parquet outputs, on each explanation path


def summary(verdict: Verdict) -> dict[str, Any]:
    result = verdict.to_dict()
    # what only one engine reports (the Spark engine also compares the outputs' schemas)
    for key in ("peak_unmatched", "detected_at", "side_stats", "warnings", "schema"):
        result.pop(key, None)
    return json_safe(result)


def on_spark(
    spark: SparkSession,
    tmp_path: Path,
    reference: list[Event],
    candidate: list[Event],
    dependence: Dependence,
) -> Verdict:
    """The Spark verdict on the events written as Parquet (one file each, so file order is
    stream order), after checking it is the core's."""
    frames = []
    for name, events in (("ref", reference), ("cand", candidate)):
        path = tmp_path / name
        path.mkdir()
        pq.write_table(pa.Table.from_pylist(events), path / "part-0.parquet")
        frames.append(read_stream(spark, str(path), "parquet"))
    verdict = compare_dataframes(frames[0], frames[1], dependence)
    assert summary(verdict) == summary(compare(reference, candidate, dependence))
    return verdict


def force(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Send the divergence to ``path``: ``driver`` (the defaults), ``partitions`` (screened
    forms: each partition explains its own) or ``groups`` (the grouped plan: group by
    group on executors)."""
    if path == "partitions":
        monkeypatch.setattr(screen_module, "EXACT_LIMIT", 0)
    elif path == "groups":
        monkeypatch.setattr(grouped_module, "PARTITION_CAP", 0)
        monkeypatch.setattr(grouped_module, "EXACT_LIMIT", 0)
        monkeypatch.setattr(grouped_module, "DRIVER_LIMIT", 0)


def assert_path(verdict: Verdict, path: str) -> None:
    """The verdict's warnings say which path explained it."""
    said = {"driver": "", "partitions": "partition by partition", "groups": "group by group"}
    phrase = said[path]
    assert [phrase in w for w in verdict.warnings] == ([True] if phrase else [])


@pytest.mark.spark
@pytest.mark.parametrize("path", ["driver", "groups"])
def test_spark_a_gap_and_an_extra_event(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    force(path, monkeypatch)
    verdict = on_spark(spark, tmp_path, V(1, 2, 3, 4), V(1, 3, 4, 5), ordered())
    assert dict(verdict.counts) == counts(loss=1, duplication=1)
    assert_path(verdict, path)


@pytest.mark.spark
@pytest.mark.parametrize("path", ["driver", "partitions"])
def test_spark_a_changed_key(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    force(path, monkeypatch)
    candidate = [*KEYED]
    candidate[1] = KV(9, 20)
    candidate[2] = KV(1, 99)
    verdict = on_spark(spark, tmp_path, KEYED, candidate, by_key("k"))
    assert dict(verdict.counts) == counts(loss=1, duplication=1, corruption=1)
    assert_path(verdict, path)


@pytest.mark.spark
@pytest.mark.parametrize("path", ["driver", "partitions"])
def test_spark_unordered_pairs_across_partitions(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Unordered events fall in partitions by value: the similar pair is still found."""
    force(path, monkeypatch)
    reference = [KV(k, 10 * k) for k in range(1, 7)]
    candidate = [*reference[:2], KV(3, 31), *reference[3:5], KV(6, 61)]
    verdict = on_spark(spark, tmp_path, reference, candidate, unordered())
    assert dict(verdict.counts) == counts(corruption=2)
    assert_path(verdict, path)
