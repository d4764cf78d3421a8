"""Screening by order values, without a sort (``matcher.spark.by_values``).

It may call a group agreeing only where the ranked screen would: so on a reference whose
order values are distinct it must find what the ranked screen finds (the same totals and
the same groups once its ambiguous groups are ranked too), every verdict must be the one
the ranked screen gives, and a reference with a tie of its order values must not take it.
Written as Spark writes outputs: several files, small row groups, splits of a file.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from matcher.dependence import Dependence, by_key, unordered
from matcher.equality import Equality
from matcher.spark import SparkComparison, compare_dataframes, read_stream
from matcher.spark import by_values as by_values_module
from matcher.spark import grouped_run as grouped_module
from matcher.spark import presorted as presorted_module
from matcher.spark import screen as screen_module
from matcher.spark.presorted import side_runs, strictly_sorted
from tests.spark_fixtures import write_files

pytest_plugins = ("tests.spark_fixtures",)

pytestmark = pytest.mark.spark

IGNORE_SEQ = Equality(ignore=frozenset({"seq"}))


def reference_rows(n: int, keys: int, seed: int) -> list[dict[str, Any]]:
    """``n`` events of ``keys`` keys in ``seq`` order, ``seq`` rising strictly."""
    rng = random.Random(seed)
    seq, rows = 0, []
    for i in range(n):
        seq += rng.choice((1, 2, 5))
        rows.append({"id": i, "key": rng.randrange(keys), "seq": seq, "v": rng.randrange(4)})
    return rows


def faulty(rows: list[dict[str, Any]], kind: str, seed: int) -> list[dict[str, Any]]:
    """``rows`` with one kind of fault, in ``seq`` order again (the candidate's ``seq`` is
    ignored by the equality, so a moved event takes a new one)."""
    rng = random.Random(seed)
    out = [dict(r) for r in rows]
    picks = rng.sample(range(len(out)), 6)
    if kind == "corrupted":
        for p in picks:
            out[p]["v"] = 99
    elif kind == "lost":
        for p in sorted(picks, reverse=True):
            del out[p]
    elif kind == "duplicated":  # the copy keeps its original's seq: a tie in the candidate
        out.extend(dict(out[p]) for p in picks)
    elif kind == "moved":  # within its key, past its key's later events
        for p in picks:
            out[p]["seq"] = out[-1]["seq"] + 1 + p
    elif kind == "shifted":  # every seq moved, the order kept
        for row in out:
            row["seq"] += 1_000_000
    elif kind == "mixed":
        for p in picks[:2]:
            out[p]["v"] = 77
        out[picks[2]]["seq"] = out[-1]["seq"] + 10
        out.append(dict(out[picks[3]]))
        del out[picks[4]]
    return sorted(out, key=lambda r: (r["seq"], r["id"]))


def streams_of(spark: SparkSession, tmp_path: Path, reference: Any, candidate: Any) -> Any:
    write_files(tmp_path / "ref", reference, 5, 40)
    write_files(tmp_path / "cand", candidate, 3, 40)
    return [read_stream(spark, tmp_path / s, order_by=["seq"]) for s in ("ref", "cand")]


def screens(
    frames: list[DataFrame], dependence: Dependence, equality: Equality
) -> tuple[Any, Any, bool]:
    """The screen as it is made (by values where they apply) and the ranked screen alone,
    each as its totals and the set of groups that disagree; and whether values applied."""
    comparison = SparkComparison(frames[0], frames[1], dependence, equality)
    streams = comparison.streams()
    route = comparison.route(streams)
    assert route.layout is not None
    plan = grouped_module.grouped_plan(streams, route.layout, equality)
    runs = by_values_module.reference_runs(plan, streams.reference, streams.candidate)
    applied = strictly_sorted(runs)
    found = []
    for made in (screen_module.screen, screen_module.ranked_screen):
        screened = made(plan, streams.reference, streams.candidate)
        try:
            groups = {tuple(r) for r in screened.bad.select("__p_gh", "__p_gh2").collect()}
            totals = (screened.rows, screened.keys, screened.agreed, screened.n_bad)
            found.append((totals, screened.bad_events, groups))
        finally:
            screened.release()
    return found[0], found[1], applied


def verdict(frames: list[DataFrame], dependence: Dependence, equality: Equality) -> Any:
    found = compare_dataframes(frames[0], frames[1], dependence, equality, limit=20)
    return found.status, dict(found.counts), [d.to_dict() for d in found.divergences]


LAYOUTS = {
    "one file": (1, 1_000_000, ["seq"], True),
    "7 files": (7, 50, ["seq"], True),
    "23 files, not their order": (23, 13, ["key", "seq"], False),
    "23 files, two columns": (23, 13, ["seq", "key"], True),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_strictly_sorted_output_is_found_on_every_layout(
    spark: SparkSession, tmp_path: Path, tiny_splits: None, layout: str
) -> None:
    files, row_group, order_by, strict = LAYOUTS[layout]
    write_files(tmp_path / "out", reference_rows(1_500, 17, files), files, row_group)
    stream = read_stream(spark, tmp_path / "out", order_by=order_by)
    assert strictly_sorted(side_runs(stream)) is strict


@pytest.mark.parametrize("fault", ["tie", "tie_across_files", "swap", "null", "nan"])
def test_an_output_with_a_tie_or_out_of_order_is_not_strictly_sorted(
    spark: SparkSession, tmp_path: Path, tiny_splits: None, fault: str
) -> None:
    rows = reference_rows(1_000, 17, 3)
    for row in rows:
        row["x"] = row["seq"] / 7
    if fault == "tie":  # two events of different values share their order value
        rows[501]["seq"] = rows[500]["seq"]
    elif fault == "tie_across_files":  # the last of a file and the first of the next
        rows[250]["seq"] = rows[249]["seq"]
    elif fault == "swap":
        rows[100], rows[900] = rows[900], rows[100]
    elif fault == "null":
        rows[500]["x"] = None
    else:
        rows[500]["x"] = float("nan")
    write_files(tmp_path / "out", rows, 4, 30)
    order_by = ["x"] if fault in ("null", "nan") else ["seq"]
    stream = read_stream(spark, tmp_path / "out", order_by=order_by)
    assert not strictly_sorted(side_runs(stream))


@pytest.mark.parametrize(
    "kind", ["identical", "corrupted", "lost", "duplicated", "moved", "shifted", "mixed"]
)
def test_screening_by_values_finds_what_ranking_finds(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """With its ambiguous groups ranked, the same totals and the same groups; with them sent
    on (the default up to its limit), the same totals but for those groups."""
    reference = reference_rows(600, 23, 11)
    frames = streams_of(spark, tmp_path, reference, faulty(reference, kind, 5))
    monkeypatch.setattr(by_values_module, "AMBIGUOUS_LIMIT", -1)
    by_values, ranked, applied = screens(frames, by_key("key"), IGNORE_SEQ)
    assert applied
    assert by_values == ranked
    monkeypatch.setattr(by_values_module, "AMBIGUOUS_LIMIT", 10**9)
    sent_on, ranked, _ = screens(frames, by_key("key"), IGNORE_SEQ)
    assert sent_on[2] >= ranked[2]
    assert sent_on[0][:2] == ranked[0][:2]
    if kind in ("identical", "corrupted", "lost", "duplicated"):  # nothing ambiguous
        assert sent_on == ranked
    if kind == "shifted":  # every group ambiguous, none disagrees
        assert not ranked[2]
        assert sent_on[0][3] == len(sent_on[2]) == 23


#: (events of ambiguous groups sent on, without ranking; events the core's loop explains)
MODES = {
    "ambiguous ranked, chains": (-1, 10),
    "ambiguous sent on, chains": (10**9, 10),
    "ambiguous sent on, core loop": (10**9, 200_000),
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", MODES)
def test_every_verdict_is_the_ranked_screens(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, mode: str
) -> None:
    """Faults of every kind together, explained by the chains' job or the core's loop,
    with ambiguous groups ranked first or sent on: the verdict, its counts and its
    witnesses are those of the ranked screen alone."""
    ambiguous_limit, exact_limit = MODES[mode]
    kinds = ["mixed", "moved", "shifted", "corrupted"]
    reference = reference_rows(800, 31, seed)
    frames = streams_of(spark, tmp_path, reference, faulty(reference, kinds[seed], seed))
    monkeypatch.setattr(screen_module, "EXACT_LIMIT", exact_limit)
    monkeypatch.setattr(by_values_module, "AMBIGUOUS_LIMIT", ambiguous_limit)
    for dependence in (by_key("key"), unordered()):
        found = verdict(frames, dependence, IGNORE_SEQ)
        with monkeypatch.context() as ranked_only:
            ranked_only.setattr(by_values_module, "reference_runs", lambda *_: None)
            assert found == verdict(frames, dependence, IGNORE_SEQ)
        if kinds[seed] == "shifted":
            assert found[0] == "equivalent"


def test_a_tie_of_order_values_swapped_is_still_a_reordering(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Two events of one key share their ``seq``; the candidate holds them in the other
    natural order. The same (value, order) pairs on both sides, but the stream order,
    which breaks the tie by the natural order, differs: values must not decide."""
    reference = reference_rows(400, 7, 2)
    reference[201]["seq"] = reference[200]["seq"]
    reference[201]["key"] = reference[200]["key"]
    reference[201]["v"] = reference[200]["v"] + 1
    candidate = [dict(r) for r in reference]
    candidate[200], candidate[201] = candidate[201], candidate[200]
    frames = streams_of(spark, tmp_path, reference, candidate)
    _, _, applied = screens(frames, by_key("key"), Equality())
    assert not applied
    status, counts, _ = verdict(frames, by_key("key"), Equality())
    assert status == "divergent"
    assert counts["reordering"] == 1


def test_the_agreement_plan_has_no_sort(spark: SparkSession, tmp_path: Path) -> None:
    reference = reference_rows(300, 5, 1)
    frames = streams_of(spark, tmp_path, reference, reference)
    comparison = SparkComparison(frames[0], frames[1], by_key("key"))
    streams = comparison.streams()
    route = comparison.route(streams)
    assert route.layout is not None
    plan = grouped_module.grouped_plan(streams, route.layout, Equality())
    agreement = by_values_module.agreement_plan(plan, streams.reference, streams.candidate)
    executed = agreement._jdf.queryExecution().executedPlan().toString()
    assert "Sort" not in executed and "Window" not in executed
    assert "HashAggregate" in executed


def test_the_reference_is_checked_once_when_keys_differ(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Screening's check of the reference's order serves its natural positions too: one
    narrow job a side, not two for the reference."""
    reference = reference_rows(600, 9, 4)
    frames = streams_of(spark, tmp_path, reference, faulty(reference, "mixed", 4))
    checked: list[int] = []

    def counted(stream: DataFrame) -> Any:
        checked.append(len(stream.columns))
        return real(stream)

    real = presorted_module.side_runs
    monkeypatch.setattr(presorted_module, "side_runs", counted)
    monkeypatch.setattr(by_values_module, "side_runs", counted)
    status, counts, _ = verdict(frames, by_key("key"), IGNORE_SEQ)
    assert status == "divergent" and sum(counts.values()) > 0
    assert len(checked) == 2
