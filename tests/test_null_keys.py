"""A null key is a key like any other (issue 10, item 7), on the core, on Spark, in the CLI
and in the match job; a JSON line that lacks a field holds a null there (Spark's JSON
writer drops null fields); and a divergent verdict always counts a divergence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from matcher import compare
from matcher.dependence import by_key
from matcher.files.readers import read_events
from matcher.verdict import Divergence, Verdict
from parity.cli import main

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

#: the issue's reproduction: two events with a null key, swapped
REFERENCE = [{"k": None, "v": 1}, {"k": None, "v": 2}]
CANDIDATE = [{"k": None, "v": 2}, {"k": None, "v": 1}]
ONE_REORDERING = {"loss": 0, "duplication": 0, "reordering": 1, "corruption": 0}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def reproduction(tmp_path: Path, suffix: str = ".jsonl") -> tuple[Path, Path]:
    """The issue's ``a.jsonl`` and ``b.jsonl``, byte for byte."""
    a = write_lines(tmp_path / f"a{suffix}", ['{"k":null,"v":1}', '{"k":null,"v":2}'])
    b = write_lines(tmp_path / f"b{suffix}", ['{"k":null,"v":2}', '{"k":null,"v":1}'])
    return a, b


def spec_file(tmp_path: Path, text: str = "dependence: {key: [k]}\n") -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["compare", "--json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


# -- the core ---------------------------------------------------------------------------------


def test_swapped_null_keys_are_one_reordering() -> None:
    verdict = compare(REFERENCE, CANDIDATE, by_key("k"))
    assert (verdict.equivalent, dict(verdict.counts)) == (False, ONE_REORDERING)
    assert verdict.divergences == (
        Divergence(
            "reordering",
            None,
            0,
            1,
            REFERENCE[0],
            CANDIDATE[1],
            partner_reference_position=1,
            partner_candidate_position=0,
        ),
    )


def test_null_keys_mixed_with_others_interleave_freely() -> None:
    reference: list[dict[str, Any]] = [
        {"k": None, "v": 1},
        {"k": 1, "v": 1},
        {"k": None, "v": 2},
        {"k": 1, "v": 2},
    ]
    interleaved = [reference[1], reference[0], reference[3], reference[2]]
    assert compare(reference, interleaved, by_key("k")).equivalent is True
    swapped = [reference[2], reference[1], reference[0], reference[3]]
    verdict = compare(reference, swapped, by_key("k"))
    assert dict(verdict.counts) == ONE_REORDERING
    assert [(d.kind, d.key, d.reference_position) for d in verdict.divergences] == [
        ("reordering", None, 0)
    ]


def test_null_parts_of_a_composite_key_compare_equal() -> None:
    dependence = by_key("a", "b")
    one, two = {"a": None, "b": 1, "v": 1}, {"a": None, "b": 1, "v": 2}
    other = {"a": None, "b": 2, "v": 3}
    # (null, 1) is one key: its two events keep their order ...
    assert dict(compare([one, two], [two, one], dependence).counts) == ONE_REORDERING
    # ... and (null, 2) is another: it moves freely past them.
    assert compare([one, other, two], [other, one, two], dependence).equivalent is True
    both_null = [{"a": None, "b": None, "v": 1}, {"a": None, "b": None, "v": 2}]
    verdict = compare(both_null, both_null[::-1], dependence)
    assert [(d.kind, d.key) for d in verdict.divergences] == [("reordering", (None, None))]


def test_a_lost_null_keyed_event_is_a_loss() -> None:
    verdict = compare(REFERENCE, REFERENCE[:1], by_key("k"))
    assert [(d.kind, d.key, d.reference_position) for d in verdict.divergences] == [
        ("loss", None, 1)
    ]


def test_a_divergent_verdict_without_a_divergence_is_refused() -> None:
    with pytest.raises(AssertionError, match="a divergent verdict counts no divergence"):
        Verdict(equivalent=False)
    assert Verdict(equivalent=False, counts={"loss": 1}).total_divergences == 1
    assert Verdict(equivalent=True).total_divergences == 0


# -- reading JSON lines -------------------------------------------------------------------------


def test_a_missing_json_field_reads_as_null_given_the_columns(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "out.jsonl", ['{"k":1,"v":1}', '{"v":2}', '{"v":3,"w":0}'])
    assert list(read_events(path, columns=("k", "v"))) == [
        {"k": 1, "v": 1},
        {"v": 2, "k": None},
        {"v": 3, "w": 0, "k": None},
    ]
    assert list(read_events(path)) == [{"k": 1, "v": 1}, {"v": 2}, {"v": 3, "w": 0}]


# -- the parity command ---------------------------------------------------------------------


def test_the_issue_reproduction_on_the_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = reproduction(tmp_path)
    code, document, err = run_json(capsys, str(a), str(b), "--spec", spec_file(tmp_path))
    assert (code, err) == (1, "")
    assert (document["verdict"], document["counts"], document["total_divergences"]) == (
        "divergent",
        ONE_REORDERING,
        1,
    )
    assert [(d["kind"], d["key"]) for d in document["divergences"]] == [("reordering", None)]


def test_a_key_missing_from_some_json_lines_is_null_on_the_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What Spark's JSON writer makes of the reproduction: the null key left out."""
    a = write_lines(tmp_path / "a.jsonl", ['{"v":1}', '{"k":null,"v":2}', '{"k":3,"v":3}'])
    b = write_lines(tmp_path / "b.jsonl", ['{"k":null,"v":2}', '{"k":3,"v":3}', '{"v":1}'])
    code, document, err = run_json(capsys, str(a), str(b), "--spec", spec_file(tmp_path))
    assert (code, err) == (1, "")
    assert document["counts"] == ONE_REORDERING
    assert [(d["kind"], d["key"], d["reference_event"]) for d in document["divergences"]] == [
        ("reordering", None, {"v": 1, "k": None})
    ]


@pytest.mark.spark
def test_the_issue_reproduction_on_spark(
    tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The candidate as Spark writes it: its null keys left out (a missing field reads as
    null on Spark too)."""
    reference = ['{"k":null,"v":1}', '{"k":null,"v":2}', '{"k":3,"v":3}']
    write_lines(tmp_path / "a" / "part-00000.json", reference)
    write_lines(tmp_path / "b" / "part-00000.json", ['{"v":2}', '{"k":3,"v":3}', '{"v":1}'])
    spec = spec_file(tmp_path, "output: {format: json}\ndependence: {key: [k]}\n")
    code, document, err = run_json(
        capsys, str(tmp_path / "a"), str(tmp_path / "b"), "--spec", spec, "--engine", "spark"
    )
    assert (code, err) == (1, "")
    assert (document["counts"], document["total_divergences"]) == (ONE_REORDERING, 1)
    assert [(d["kind"], d["key"]) for d in document["divergences"]] == [("reordering", None)]
    assert document["side_stats"]["reference"]["keys"] == 2  # the null key counts as a key


@pytest.mark.spark
def test_the_match_job_records_one_reordering_for_null_keys(
    tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobs.match import main as match_main
    from matcher.store import Store

    a, b = reproduction(tmp_path / "out", ".json")
    for side, path in (("a", a), ("b", b)):  # each output a directory of part files
        (tmp_path / side).mkdir()
        path.rename(tmp_path / side / "part-00000.json")
    spec = spec_file(tmp_path, "name: nulls\noutput: {format: json}\ndependence: {key: [k]}\n")
    db = f"sqlite:///{tmp_path / 'results.db'}"
    args = ["--reference", str(tmp_path / "a"), "--candidate", str(tmp_path / "b")]
    code = match_main([*args, "--spec", spec, "--db", db, "--run-id", "nulls-1"])
    assert code == 1
    assert capsys.readouterr().err == ""
    with Store(db) as store:
        run = store.get_run("nulls-1")
    assert run is not None
    assert (run.status, run.verdict, dict(run.counts)) == ("completed", "divergent", ONE_REORDERING)
    assert [(d.kind, d.key) for d in run.divergences] == [("reordering", None)]
