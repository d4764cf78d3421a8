"""The sequence-window validator (``matcher.windows``), its readers (``matcher.files.sink_log``,
``matcher.files.windows_output``), ``parity windows``, and the corpus in ``examples/windows``."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from matcher.errors import InputError
from matcher.files.readers import data_files, read_events
from matcher.files.windows_output import read_windows
from matcher.windows import MISSING, Violation, WindowsReport, canonical, check_windows
from parity.cli import main

pytest_plugins = ("tests.spark_fixtures",)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "examples" / "windows"
PARITY = Path(sys.executable).parent / "parity"
KINDS = ("loss", "duplication", "reordering", "corruption")

Record = tuple[Any, Any]


def key_windows(key: str, tails: Iterable[int]) -> list[Record]:
    return [(key, canonical(t)) for t in tails]


def of_key(key: str, *windows: Any) -> list[Record]:
    return [(key, window) for window in windows]


def counts(report: WindowsReport) -> tuple[int, int, int, int]:
    return tuple(report.counts[kind] for kind in KINDS)  # type: ignore[return-value]


def first(report: WindowsReport) -> tuple[str, Any, int, Any]:
    v = report.violations[0]
    return v.kind, v.key, v.position, v.window


def only(report: WindowsReport) -> Violation:
    assert len(report.violations) == 1, report.violations
    return report.violations[0]


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["windows", *args])
    out, err = capsys.readouterr()
    return code, out, err


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# --- the corpus -----------------------------------------------------------------------------

#: file, options, counts (loss, duplication, reordering, corruption), first violation
CORPUS_CASES: list[tuple[str, dict[str, Any], tuple[int, int, int, int], Any]] = [
    ("pass.jsonl", {"expected": 10}, (0, 0, 0, 0), None),
    ("pass_at_least_once.jsonl", {"expected": 10, "at_least_once": True}, (0, 0, 0, 0), None),
    (
        "pass_at_least_once.jsonl",
        {"expected": 10},
        (0, 3, 0, 0),
        ("duplication", "k2", 24, [2, 3, 4, 5]),
    ),
    ("loss_tail_jump.jsonl", {"expected": 10}, (2, 0, 0, 0), ("loss", "k1", 8, [4, 5, 6, 7])),
    ("loss_state_reset.jsonl", {"expected": 10}, (1, 0, 0, 0), ("loss", "k3", 19, [0, 0, 0, 7])),
    ("loss_stops_short.jsonl", {"expected": 10}, (3, 0, 0, 0), ("loss", "k2", 22, [4, 5, 6, 7])),
    ("loss_stops_short.jsonl", {}, (0, 0, 0, 0), None),
    ("loss_window_gap.jsonl", {"expected": 10}, (1, 0, 0, 0), ("loss", "k1", 11, [2, 4, 5, 6])),
    (
        "duplication_repeated_window.jsonl",
        {"expected": 10},
        (0, 1, 0, 0),
        ("duplication", "k3", 15, [1, 2, 3, 4]),
    ),
    (
        "duplication_value_twice.jsonl",
        {"expected": 10},
        (0, 1, 0, 0),
        ("duplication", "k1", 12, [5, 6, 6, 7]),
    ),
    (
        "reordering_swapped_tails.jsonl",
        {"expected": 10},
        (0, 0, 1, 0),
        ("reordering", "k2", 21, [2, 3, 4, 5]),
    ),
    (
        "reordering_inside_window.jsonl",
        {"expected": 10},
        (0, 0, 1, 0),
        ("reordering", "k3", 13, [1, 3, 2, 4]),
    ),
    (
        "corruption_wrong_size.jsonl",
        {"expected": 10},
        (0, 0, 0, 1),
        ("corruption", "k1", 17, [6, 7, 8]),
    ),
    (
        "corruption_non_integer.jsonl",
        {"expected": 10},
        (0, 0, 0, 1),
        ("corruption", "k2", 14, [1, 2, "3", 4]),
    ),
    (
        "corruption_zero_after_nonzero.jsonl",
        {"expected": 10},
        (0, 0, 0, 1),
        ("corruption", "k3", 18, [3, 0, 5, 6]),
    ),
    (
        "corruption_missing_window.jsonl",
        {"expected": 10},
        (0, 0, 0, 1),
        ("corruption", "k2", 25, MISSING),
    ),
    (
        "partition_interference.jsonl",
        {"expected": 10},
        (1, 1, 0, 0),
        ("duplication", "k1", 8, [2, 3, 4, 6]),
    ),
    ("sink", {"expected": 12}, (0, 0, 0, 0), None),
]


@pytest.mark.parametrize(
    ("name", "options", "expected_counts", "witness"),
    CORPUS_CASES,
    ids=[f"{c[0]}-{'-'.join(map(str, c[1].values()))}" for c in CORPUS_CASES],
)
def test_corpus(
    name: str, options: dict[str, Any], expected_counts: tuple[int, ...], witness: Any
) -> None:
    report = check_windows(read_windows(CORPUS / name), **options)
    assert counts(report) == expected_counts
    assert report.verdict == ("pass" if witness is None else "fail")
    if witness is None:
        assert report.violations == ()
        return
    assert first(report) == witness
    if name != "sink":  # the witness is the record at its position in the file
        lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
        row = json.loads(lines[witness[2]])
        assert (row["key"], row.get("window", MISSING)) == (witness[1], witness[3])


def test_corpus_sizes_and_replays() -> None:
    assert (CORPUS / "pass.jsonl").read_text().count("\n") == 30
    replayed = check_windows(read_windows(CORPUS / "pass_at_least_once.jsonl"), at_least_once=True)
    assert (replayed.records, replayed.keys, replayed.replayed) == (33, 3, 3)
    sink = check_windows(read_windows(CORPUS / "sink"), expected=12)
    assert (sink.records, sink.keys) == (36, 3)


def test_partition_interference_fails_both_keys() -> None:
    report = check_windows(read_windows(CORPUS / "partition_interference.jsonl"), expected=10)
    assert [(v.kind, v.key) for v in report.violations] == [("duplication", "k1"), ("loss", "k2")]
    assert report.violations[0].detail == (
        "tail 6 comes before update 5 and shows again in its place: update 6 shows twice "
        "(expected 5)"
    )


def test_the_sink_fails_when_read_in_name_order() -> None:
    """What the log is for: part names are random, and the orphan duplicates batch 11.
    Every reader of an output follows the log (``data_files``), the comparison's too."""
    named = sorted(p for p in (CORPUS / "sink").iterdir() if p.name.startswith("part-"))
    events = [event for path in named for event in read_events(path)]
    report = check_windows(((e["key"], e["window"]) for e in events), expected=12)
    assert report.records == 38
    assert report.counts["duplication"] == 2
    assert not report.passed
    logged = check_windows(
        ((e["key"], e["window"]) for e in read_events(CORPUS / "sink")), expected=12
    )
    assert (logged.records, logged.passed) == (36, True)


def test_the_corpus_is_what_generate_writes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(CORPUS / "generate.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(CORPUS)
        for p in CORPUS.rglob("*")
        if p.is_file() and p.name != "generate.py" and "__pycache__" not in p.parts
    )
    assert written == committed
    for relative in written:
        assert (tmp_path / relative).read_bytes() == (CORPUS / relative).read_bytes(), relative


# --- the rules, one by one ------------------------------------------------------------------


def test_canonical_windows() -> None:
    assert [canonical(t) for t in (1, 2, 3, 4, 10)] == [
        [0, 0, 0, 1],
        [0, 0, 1, 2],
        [0, 1, 2, 3],
        [1, 2, 3, 4],
        [7, 8, 9, 10],
    ]


def test_interleaved_correct_keys_pass() -> None:
    records = [r for t in range(1, 8) for r in key_windows("a", [t]) + key_windows("b", [t])]
    report = check_windows(records, expected=7)
    assert (report.verdict, report.records, report.keys, counts(report)) == (
        "pass",
        14,
        2,
        (0, 0, 0, 0),
    )


def test_a_first_window_that_is_not_the_first_is_a_loss() -> None:
    v = only(check_windows(key_windows("k", [2, 3])))
    assert (v.kind, v.position, v.count) == ("loss", 0, 1)
    assert v.detail == "tail jumps from 0 to 2: update 1 never shows"


def test_a_tail_jump_counts_each_missing_update_once() -> None:
    report = check_windows(key_windows("k", [1, 2, 3, 4, 5, 8, 9]))
    assert counts(report) == (2, 0, 0, 0)
    v = only(report)
    assert (v.position, v.window, v.count) == (5, [5, 6, 7, 8], 2)
    assert v.detail == "tail jumps from 5 to 8: updates 6, 7 never show"


def test_a_skipped_update_that_shows_later_is_a_reordering_not_also_a_loss() -> None:
    report = check_windows(key_windows("k", [1, 2, 5, 3, 6]))
    assert counts(report) == (1, 0, 1, 0)
    lost, late = report.violations
    assert (late.kind, late.position, late.window) == ("reordering", 3, [0, 1, 2, 3])
    assert late.detail == (
        "tail 3 comes after 5: update 3 arrives after a later one (expected 3 before 5)"
    )
    assert (lost.kind, lost.position, lost.count) == ("loss", 2, 1)
    assert lost.detail == "tail jumps from 2 to 5: update 4 never shows (update 3 shows later)"


def test_swapped_tails_are_one_reordering() -> None:
    report = check_windows(key_windows("k", [1, 2, 3, 5, 4, 6]), expected=6)
    assert counts(report) == (0, 0, 1, 0)
    assert first(report) == ("reordering", "k", 4, [1, 2, 3, 4])


def test_a_repeated_window_is_a_duplication() -> None:
    v = only(check_windows(key_windows("k", [1, 2, 3, 3, 4])))
    assert (v.kind, v.position, v.window, v.count) == ("duplication", 3, [0, 1, 2, 3], 1)
    assert v.detail == "tail 3 repeats: update 3 shows again (expected 4)"


def test_a_rewind_and_what_follows_it_is_one_duplication_counting_each_record() -> None:
    report = check_windows(key_windows("k", [1, 2, 3, 4, 5, 3, 4, 5, 6]))
    assert counts(report) == (0, 3, 0, 0)
    v = only(report)
    assert (v.position, v.count) == (5, 3)
    assert v.detail == "tail goes back from 5 to 3: updates 3..5 show again (expected 6)"


def test_a_value_twice_in_a_window_is_a_duplication_counted_once() -> None:
    records = key_windows("k", [1, 2, 3]) + of_key(
        "k",
        [2, 3, 3, 4],  # 3 applied twice to the ring
        [3, 3, 4, 5],  # the ring carries it: no new fault
        [3, 4, 5, 6],
    )
    v = only(check_windows(records))
    assert (v.kind, v.position) == ("duplication", 3)
    assert v.detail == "3 shows twice: an update was applied twice (expected [1, 2, 3, 4])"


def test_values_out_of_order_in_a_window_are_a_reordering() -> None:
    records = [*key_windows("k", [1, 2, 3]), ("k", [1, 3, 2, 4]), ("k", [3, 2, 4, 5])]
    v = only(check_windows(records))
    assert (v.kind, v.position) == ("reordering", 3)
    assert v.detail == (
        "3 comes before 2: a later update was applied before an earlier one (expected [1, 2, 3, 4])"
    )


def test_a_gap_inside_a_window_is_a_loss() -> None:
    records = [*key_windows("k", [1, 2, 3, 4]), ("k", [1, 2, 4, 5]), ("k", [2, 4, 5, 6])]
    v = only(check_windows(records))
    assert (v.kind, v.position, v.count) == ("loss", 4, 1)
    assert v.detail == (
        "the window skips from 2 to 4: update 3 gone from the state (expected [2, 3, 4, 5])"
    )


def test_a_state_reset_is_one_loss() -> None:
    records = key_windows("k", range(1, 10)) + of_key(
        "k", [0, 0, 0, 10], [0, 0, 10, 11], [0, 10, 11, 12], [10, 11, 12, 13]
    )
    report = check_windows(records, expected=13)
    assert counts(report) == (1, 0, 0, 0)
    v = only(report)
    assert (v.position, v.window) == (9, [0, 0, 0, 10])
    assert v.detail == (
        "3 leading zeros for tail 10: the state was reset, updates 7..9 gone from it "
        "(expected [7, 8, 9, 10])"
    )


def test_too_many_leading_zeros_is_a_loss() -> None:
    records = [*key_windows("k", [1, 2, 3, 4, 5]), ("k", [0, 0, 5, 6])]
    v = only(check_windows(records))
    assert (v.kind, v.position) == ("loss", 5)
    assert v.detail.startswith("2 leading zeros for tail 6: the state was reset, updates 3, 4")


@pytest.mark.parametrize(
    ("window", "detail"),
    [
        ([1, 2, 3, 4.0], "the tail 4.0 is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, 2, 3, "4"], 'the tail "4" is not in the sequence (expected [1, 2, 3, 4])'),
        ([1, 2, 3, True], "the tail true is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, 2, 3, -4], "the tail -4 is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, 2, 3, None], "the tail null is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, 2, 3, 0], "the tail 0 is not in the sequence (expected [1, 2, 3, 4])"),
        ([0, 0, 0, 0], "the tail 0 is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, 2.5, 3, 4], "the value 2.5 is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, False, 3, 4], "the value false is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, -2, 3, 4], "the value -2 is not in the sequence (expected [1, 2, 3, 4])"),
        ([1, 0, 3, 4], "a zero follows 1: zeros only lead a window (expected [1, 2, 3, 4])"),
        ([1, 2, 3], "the window has 3 values, not 4 (expected [1, 2, 3, 4])"),
        ([0, 1, 2, 3, 4], "the window has 5 values, not 4 (expected [1, 2, 3, 4])"),
        ("1,2,3,4", 'the window is "1,2,3,4", not a list (expected [1, 2, 3, 4])'),
        (None, "the window is null, not a list (expected [1, 2, 3, 4])"),
        (MISSING, 'the record has no "window" field (expected [1, 2, 3, 4])'),
    ],
)
def test_corruption(window: Any, detail: str) -> None:
    """Each stands for update 4, so the key goes on at 5 without another violation."""
    records = [*key_windows("k", [1, 2, 3]), ("k", window), *key_windows("k", [5, 6, 7, 8])]
    v = only(check_windows(records, expected=8))
    assert (v.kind, v.key, v.position, v.detail) == ("corruption", "k", 3, detail)


def test_a_tail_beyond_expected_is_a_corruption() -> None:
    records = [*key_windows("k", [1, 2, 3, 4]), ("k", [2, 3, 4, 99]), *key_windows("k", [6])]
    v = only(check_windows(records, expected=6))
    assert v.detail == (
        "the tail 99 is not in the sequence, which ends at 6 (expected [2, 3, 4, 5])"
    )
    unbounded = only(check_windows(records))  # without expected, 6 follows: 99 stands for 5
    assert (unbounded.kind, unbounded.position) == ("corruption", 4)
    assert unbounded.detail == (
        "tail 99 is out of line: the records after it go on from 6, so it stands for update 5 "
        "(expected [2, 3, 4, 5])"
    )


@pytest.mark.parametrize(
    ("key", "detail"),
    [
        (None, "the key null is not a string"),
        (7, "the key 7 is not a string"),
        (MISSING, 'the record has no "key" field'),
    ],
)
def test_a_record_without_a_string_key_is_a_corruption_of_no_key(key: Any, detail: str) -> None:
    report = check_windows([*key_windows("k", [1]), (key, [0, 0, 0, 2])])
    v = only(report)
    assert (v.kind, v.key, v.position, v.detail) == ("corruption", key, 1, detail)
    assert report.keys == 1


def test_a_corrupt_value_carried_by_the_ring_counts_once() -> None:
    records = [
        *key_windows("k", [1, 2, 3]),
        ("k", [1, 2, "x", 4]),
        ("k", [2, "x", 4, 5]),
        ("k", ["x", 4, 5, 6]),
        ("k", [4, 5, 6, 7]),
    ]
    assert counts(check_windows(records, expected=7)) == (0, 0, 0, 1)


def test_a_key_that_stops_short_of_expected_is_a_loss() -> None:
    report = check_windows(key_windows("a", [1, 2, 3]) + key_windows("b", [1]), expected=3)
    v = only(report)
    assert (v.kind, v.key, v.position, v.window, v.count) == ("loss", "b", 3, [0, 0, 0, 1], 2)
    assert v.detail == "the key stops at 1: updates 2, 3 never show (expected 3)"


def test_an_empty_output() -> None:
    assert check_windows([]).verdict == "pass"
    v = only(check_windows([], expected=3))
    assert (v.kind, v.key, v.detail) == (
        "loss",
        None,
        "the output has no records (expected every key to reach 3)",
    )


def test_partition_interference_shows_for_the_key_whose_ring_took_the_value() -> None:
    """b's update 6 lands in a's ring and comes out under key a; b never gets it."""
    a = [canonical(t) for t in (1, 2, 3, 4)] + [[2, 3, 4, 6], [3, 4, 6, 5], [4, 6, 5, 6]]
    a += [[6, 5, 6, 7], [5, 6, 7, 8]]
    b = [canonical(t) for t in (1, 2, 3, 4, 5)] + [[3, 4, 5, 7], [4, 5, 7, 8]]
    records = [("a", w) for w in a] + [("b", w) for w in b]
    report = check_windows(records, expected=8)
    assert {v.key for v in report.violations} == {"a", "b"}
    assert [v.kind for v in report.violations if v.key == "a"] == ["duplication"]


def test_the_limit_keeps_the_first_violations_and_counts_all() -> None:
    records = [(f"k{i}", [0, 0, 0, 2]) for i in range(5)]
    report = check_windows(records, limit=2)
    assert [v.position for v in report.violations] == [0, 1]
    assert (report.total_violations, report.counts["loss"]) == (5, 5)
    assert check_windows(records, limit=0).violations == ()


def test_violations_are_in_position_order_across_rules() -> None:
    """A loss is known only at the end, yet it is listed where it showed."""
    records = [*key_windows("k", [1, 3]), ("k", "bad"), *key_windows("j", [1, 1])]
    report = check_windows(records)
    assert [(v.kind, v.position) for v in report.violations] == [
        ("loss", 1),
        ("corruption", 2),
        ("duplication", 4),
    ]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="expected must be a whole number from 1 to 4294967296"):
        check_windows([], expected=0)
    with pytest.raises(ValueError, match="limit must be >= 0"):
        check_windows([], limit=-1)


def test_to_dict_is_strict_json() -> None:
    records = [*key_windows("k", [1]), (MISSING, [0, 0, 0, float("nan")])]
    document = check_windows(records, expected=1).to_dict()
    assert json.loads(json.dumps(document, allow_nan=False)) == {
        "verdict": "fail",
        "counts": {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 1},
        "total_violations": 1,
        "violations": [
            {
                "kind": "corruption",
                "key": None,
                "position": 1,
                "window": [0, 0, 0, "NaN"],
                "detail": 'the record has no "key" field',
                "count": 1,
            }
        ],
        "records": 2,
        "keys": 1,
        "expected": 1,
        "at_least_once": False,
        "replayed": 0,
    }


# --- at-least-once --------------------------------------------------------------------------


def test_a_replay_is_accepted_at_least_once() -> None:
    tails = [1, 2, 3, 4, 5, 6, 3, 4, 5, 6, 7]
    report = check_windows(key_windows("k", tails), expected=7, at_least_once=True)
    assert (report.verdict, report.replayed) == ("pass", 4)
    exactly_once = check_windows(key_windows("k", tails), expected=7)
    assert counts(exactly_once) == (0, 4, 0, 0)


def test_a_replay_interrupted_by_another_crash_is_accepted() -> None:
    tails = [1, 2, 3, 4, 5, 6, 4, 5, 2, 3, 4, 5, 6, 7]
    report = check_windows(key_windows("k", tails), at_least_once=True)
    assert (report.verdict, report.replayed) == ("pass", 7)


def test_a_replay_cut_short_is_a_duplication() -> None:
    tails = [1, 2, 3, 4, 5, 6, 3, 4, 7]
    v = only(check_windows(key_windows("k", tails), at_least_once=True))
    assert (v.kind, v.position, v.count) == ("duplication", 6, 2)
    assert v.detail == (
        "tail goes back from 6 to 3: updates 3, 4 show again (expected 7); "
        "not a replay: it stops at 4 before 6"
    )
    at_the_end = check_windows(key_windows("k", [1, 2, 3, 4, 2]), at_least_once=True)
    assert counts(at_the_end) == (0, 1, 0, 0)


def test_a_replay_onto_the_latest_state_is_a_duplication() -> None:
    """The state was not restored: the replayed update is pushed on top of it again."""
    records = [
        *key_windows("k", [1, 2, 3, 4, 5]),
        ("k", [3, 4, 5, 4]),
        ("k", [4, 5, 4, 5]),
        ("k", [5, 4, 5, 6]),
    ]
    v = only(check_windows(records, at_least_once=True))
    assert (v.kind, v.position, v.count) == ("duplication", 5, 2)
    assert v.detail.endswith(
        "; not a replay: its window is the latest state with the update pushed again"
    )


def test_a_replay_onto_a_reset_state_is_the_reset_only() -> None:
    records = [
        *key_windows("k", [1, 2, 3, 4, 5, 6]),
        ("k", [0, 0, 0, 5]),
        ("k", [0, 0, 5, 6]),
        ("k", [0, 5, 6, 7]),
    ]
    report = check_windows(records, at_least_once=True)
    assert counts(report) == (1, 0, 0, 0)
    assert report.replayed == 2


# --- properties -----------------------------------------------------------------------------


@st.composite
def correct_outputs(draw: st.DrawFn) -> tuple[list[Record], int]:
    """Any interleaving of keys that each read 1..n, and n."""
    n = draw(st.integers(2, 7))
    keys = [f"k{i}" for i in range(draw(st.integers(1, 4)))]
    order = draw(st.permutations([key for key in keys for _ in range(n)]))
    seen = dict.fromkeys(keys, 0)
    records = []
    for key in order:
        seen[key] += 1
        records.append((key, canonical(seen[key])))
    return records, n


def late_records(tails: list[int]) -> int:
    """Brute force: the records that some greater tail came before."""
    return sum(1 for i, t in enumerate(tails) if any(u > t for u in tails[:i]))


def out_of_place(tails: list[int]) -> int:
    """Brute force: the fewest records that, moved, put ``tails`` in order (all but a
    longest increasing subsequence, found over every subset)."""
    return min(
        len(tails) - len(kept)
        for size in range(len(tails) + 1)
        for kept in itertools.combinations(tails, size)
        if list(kept) == sorted(kept)
    )


@given(correct_outputs())
def test_every_correct_interleaving_passes(output: tuple[list[Record], int]) -> None:
    records, n = output
    report = check_windows(records, expected=n)
    assert (report.verdict, report.records) == ("pass", len(records))


@given(correct_outputs(), st.data())
def test_deleting_a_record_is_one_loss(output: tuple[list[Record], int], data: Any) -> None:
    records, n = output
    i = data.draw(st.integers(0, len(records) - 1))
    report = check_windows(records[:i] + records[i + 1 :], expected=n)
    assert counts(report) == (1, 0, 0, 0)


@given(correct_outputs(), st.data())
def test_duplicating_a_record_is_one_duplication(
    output: tuple[list[Record], int], data: Any
) -> None:
    records, n = output
    i = data.draw(st.integers(0, len(records) - 1))
    j = data.draw(st.integers(i + 1, len(records)))  # the copy goes anywhere after it
    report = check_windows([*records[:j], records[i], *records[j:]], expected=n)
    assert counts(report) == (0, 1, 0, 0)


@given(correct_outputs(), st.data())
def test_swapping_two_records_of_a_key_is_a_reordering(
    output: tuple[list[Record], int], data: Any
) -> None:
    records, n = output
    key = data.draw(st.sampled_from(sorted({k for k, _ in records})))
    places = [p for p, (k, _) in enumerate(records) if k == key]
    i, j = sorted(data.draw(st.lists(st.sampled_from(places), min_size=2, max_size=2, unique=True)))
    swapped = list(records)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    report = check_windows(swapped, expected=n)
    tails = [w[-1] for k, w in swapped if k == key]
    assert counts(report) == (0, 0, out_of_place(tails), 0)
    neighbours = places.index(j) - places.index(i) == 1
    assert out_of_place(tails) == (1 if neighbours else 2)  # two records swapped


@given(correct_outputs(), st.data())
def test_shuffling_a_key_counts_its_late_records(
    output: tuple[list[Record], int], data: Any
) -> None:
    """Any order of a key's records is only reorderings: at least the records out of place,
    at most the records that come after a greater one (each read as it comes)."""
    records, n = output
    key = records[0][0]
    windows = data.draw(st.permutations([w for k, w in records if k == key]))
    shuffled = iter(windows)
    mixed = [(k, next(shuffled) if k == key else w) for k, w in records]
    report = check_windows(mixed, expected=n)
    tails = [w[-1] for w in windows]
    loss, duplication, reordering, corruption = counts(report)
    assert (loss, duplication, corruption) == (0, 0, 0)
    assert out_of_place(tails) <= reordering <= late_records(tails)


@given(correct_outputs(), st.data())
def test_a_replay_passes_at_least_once_and_is_a_duplication_otherwise(
    output: tuple[list[Record], int], data: Any
) -> None:
    records, n = output
    at = data.draw(st.integers(0, len(records) - 1))
    key, window = records[at]
    rewind = data.draw(st.integers(1, window[-1]))
    replay = key_windows(key, list(range(rewind, window[-1] + 1)))
    replayed = [*records[: at + 1], *replay, *records[at + 1 :]]
    report = check_windows(replayed, expected=n, at_least_once=True)
    assert (report.verdict, report.replayed) == ("pass", len(replay))
    assert counts(check_windows(replayed, expected=n)) == (0, len(replay), 0, 0)


# --- reading outputs ------------------------------------------------------------------------


def test_json_lines_and_gzip(tmp_path: Path) -> None:
    rows = [{"key": "k", "window": canonical(t)} for t in (1, 2)]
    path = write_jsonl(tmp_path / "out.jsonl", rows)
    assert list(read_windows(path)) == [("k", [0, 0, 0, 1]), ("k", [0, 0, 1, 2])]
    packed = tmp_path / "out.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert list(read_windows(packed)) == list(read_windows(path))


def test_a_record_without_key_or_window_is_read_as_missing(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "out.jsonl", [{"window": [0, 0, 0, 1]}, {"key": "k"}])
    assert list(read_windows(path)) == [(MISSING, [0, 0, 0, 1]), ("k", MISSING)]


def test_parquet(tmp_path: Path) -> None:
    table = pa.table(
        {
            "key": ["a", "b", "a"],
            "window": [canonical(1), canonical(1), canonical(2)],
        }
    )
    pq.write_table(table, tmp_path / "out.parquet")
    report = check_windows(read_windows(tmp_path / "out.parquet"), expected=2)
    assert (report.verdict, report.records, counts(report)) == ("fail", 3, (1, 0, 0, 0))
    floats = pa.table({"key": ["a"], "window": pa.array([[0.0, 0.0, 0.0, 1.0]])})
    pq.write_table(floats, tmp_path / "floats.parquet")
    assert counts(check_windows(read_windows(tmp_path / "floats.parquet"))) == (0, 0, 0, 1)


def test_csv_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out.csv").write_text('key,window\nk,"[0,0,0,1]"\n', encoding="utf-8")
    with pytest.raises(InputError, match="a window is a list, which CSV cannot hold"):
        list(read_windows(tmp_path / "out.csv"))


def test_a_directory_without_a_log_is_read_in_name_order(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "part-00001.json", [{"key": "k", "window": canonical(2)}])
    write_jsonl(tmp_path / "part-00000.json", [{"key": "k", "window": canonical(1)}])
    (tmp_path / "_SUCCESS").write_text("")
    assert [p.name for p, _ in data_files(tmp_path)] == ["part-00000.json", "part-00001.json"]


def entry(path: str, action: str = "add") -> str:
    return json.dumps({"path": path, "size": 1, "isDir": False, "action": action})


def write_log(root: Path, files: dict[str, list[str]]) -> None:
    log = root / "_spark_metadata"
    log.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (log / name).write_text("\n".join(["v1", *lines]), encoding="utf-8")


def sink(tmp_path: Path, names: list[str]) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    for tail, name in enumerate(names, start=1):
        write_jsonl(out / name, [{"key": "k", "window": canonical(tail)}])
    return out


def test_the_log_gives_the_order_from_the_latest_compact_file(tmp_path: Path) -> None:
    out = sink(tmp_path, ["p-c.json", "p-a.json", "p-d.json", "p-b.json"])
    uri = f"file://{out}"
    write_log(
        out,
        {
            "0": [entry(f"{uri}/p-c.json")],
            "1.compact": [entry(f"{uri}/p-c.json"), entry(f"{uri}/p-a.json")],
            "2": [entry(f"{uri}/p-d.json")],
            "3.compact": [entry(f"{uri}/p-c.json"), entry(f"{uri}/p-a.json")],  # 2 left out
            "4": [entry(f"{uri}/p-d.json"), entry(f"{uri}/p-b.json")],
            ".4.crc": [],
            ".5.tmp": [entry(f"{uri}/p-x.json")],
        },
    )
    assert [p.name for p, _ in data_files(out)] == [
        "p-c.json",
        "p-a.json",
        "p-d.json",
        "p-b.json",
    ]
    assert check_windows(read_windows(out), expected=4).passed


def test_files_the_log_does_not_list_are_not_read(tmp_path: Path) -> None:
    out = sink(tmp_path, ["p-1.json", "p-2.json"])
    write_jsonl(out / "p-0-orphan.json", [{"key": "k", "window": canonical(1)}])
    write_log(out, {"0": [entry(f"file://{out}/p-1.json")], "1": [entry(f"file://{out}/p-2.json")]})
    assert [p.name for p, _ in data_files(out)] == ["p-1.json", "p-2.json"]
    assert check_windows(read_windows(out)).passed


def test_a_delete_removes_an_added_file(tmp_path: Path) -> None:
    out = sink(tmp_path, ["a.json", "b.json"])
    write_log(
        out,
        {"0": [entry(f"{out}/a.json"), entry(f"{out}/b.json"), entry(f"{out}/a.json", "delete")]},
    )
    assert [p.name for p, _ in data_files(out)] == ["b.json"]


def test_paths_are_percent_decoded_and_found_by_name_when_moved(tmp_path: Path) -> None:
    out = sink(tmp_path, ["part one.json", "b.json"])
    write_log(
        out,
        {
            "0": [entry(f"file://{out}/part%20one.json")],
            "1": [entry("file:///gone/elsewhere/b.json")],
        },
    )
    assert data_files(out) == [(out / "part one.json", "json"), (out / "b.json", "json")]


def test_an_empty_log_is_an_empty_output(tmp_path: Path) -> None:
    out = sink(tmp_path, ["orphan.json"])
    (out / "_spark_metadata").mkdir()
    assert data_files(out) == []


@pytest.mark.parametrize(
    ("log", "message"),
    [
        (
            {"0": [entry("hdfs://namenode/out/a.json")]},
            "hdfs://namenode/out/a.json is not a local file",
        ),
        ({"0": [entry("s3a://bucket/a.json")]}, "s3a://bucket/a.json is not a local file"),
        ({"0": [entry("file:///x/nothere.json")]}, "nothere.json, which is not a file"),
        ({"0": [entry("file:///x/a.json")], "2": []}, "batch 1 is missing (batches 0..2)"),
        ({"0": ["{not json"]}, "_spark_metadata/0: line 2: malformed JSON"),
        (
            {"0": [json.dumps({"path": "file:///x/a.json", "action": "merge"})]},
            'expected "action" add or delete',
        ),
    ],
)
def test_a_bad_log_is_an_input_error(
    tmp_path: Path, log: dict[str, list[str]], message: str
) -> None:
    out = sink(tmp_path, ["a.json"])
    write_log(out, log)
    with pytest.raises(InputError) as caught:
        data_files(out)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_log_of_another_version_is_an_input_error(tmp_path: Path) -> None:
    out = sink(tmp_path, ["a.json"])
    (out / "_spark_metadata").mkdir()
    (out / "_spark_metadata" / "0").write_text("v2\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1: expected the sink log version v1, got 'v2'"):
        data_files(out)


@pytest.mark.spark
@pytest.mark.slow
def test_a_real_spark_file_sink(spark: Any, tmp_path: Path) -> None:
    """Spark writes the log this module reads: five batches, compacted every two."""
    source, out = tmp_path / "source", tmp_path / "out"
    source.mkdir()
    expected: list[Record] = []
    for batch in range(5):
        rows = [{"key": key, "window": canonical(batch + 1)} for key in ("a", "b")]
        path = write_jsonl(source / f"batch-{batch}.json", rows)
        os.utime(path, (1_700_000_000 + batch, 1_700_000_000 + batch))  # the source's order
        expected += [(row["key"], row["window"]) for row in rows]
    session = spark.newSession()  # its own SQL settings: the shared session's stay as they are
    session.conf.set("spark.sql.streaming.fileSink.log.compactInterval", "2")
    query = (
        session.readStream.schema("key string, window array<bigint>")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .writeStream.format("json")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start(str(out))
    )
    query.awaitTermination()
    logged = sorted(
        p.name for p in (out / "_spark_metadata").iterdir() if not p.name.startswith(".")
    )
    assert logged == ["0", "1.compact", "2", "3.compact", "4"]
    assert list(read_windows(out)) == expected
    write_jsonl(out / "part-00000-killed-c000.json", [{"key": "a", "window": canonical(9)}])
    assert list(read_windows(out)) == expected
    assert check_windows(read_windows(out), expected=5).passed
    # Both engines of a comparison read what Spark reads: the logged files, not the orphan.
    from_spark = [(r["key"], r["window"]) for r in session.read.json(str(out)).collect()]
    assert sorted(from_spark) == sorted(expected)
    assert [(e["key"], e["window"]) for e in read_events(out)] == expected


# --- parity windows -------------------------------------------------------------------------


def test_cli_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, str(CORPUS / "pass.jsonl"), "--expected", "10")
    assert (code, out, err) == (0, "windows: pass (30 records, 3 keys)\n", "")


def test_cli_fail(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, str(CORPUS / "loss_state_reset.jsonl"))
    assert (code, err) == (1, "")
    assert out == (
        "windows: fail: loss 1, duplication 0, reordering 0, corruption 0 (30 records, 3 keys)\n"
        "  loss at record 19, key 'k3': [0, 0, 0, 7]: 3 leading zeros for tail 7: the state "
        "was reset, updates 4..6 gone from it (expected [4, 5, 6, 7])\n"
    )


def test_cli_at_least_once_and_limit(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CORPUS / "pass_at_least_once.jsonl")
    code, out, _ = call(capsys, path, "--at-least-once")
    assert (code, out) == (0, "windows: pass (33 records, 3 keys, 3 replayed)\n")
    code, out, _ = call(capsys, str(CORPUS / "partition_interference.jsonl"), "--limit", "1")
    assert code == 1
    assert out.splitlines()[2:] == ["  ... and 1 more (--limit)"]


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(
        capsys, str(CORPUS / "loss_tail_jump.jsonl"), "--json", "--expected", "10"
    )
    assert (code, err, out.count("\n")) == (1, "", 1)
    document = json.loads(out)
    assert document["verdict"] == "fail"
    assert document["counts"] == {"loss": 2, "duplication": 0, "reordering": 0, "corruption": 0}
    assert (document["records"], document["keys"], document["expected"]) == (28, 3, 10)
    assert document["at_least_once"] is False
    assert document["violations"] == [
        {
            "kind": "loss",
            "key": "k1",
            "position": 8,
            "window": [4, 5, 6, 7],
            "detail": "tail jumps from 4 to 7: updates 5, 6 never show",
            "count": 2,
        }
    ]


def test_cli_escapes_a_hostile_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "k\x1b[2J\u202e"
    path = write_jsonl(tmp_path / "out.jsonl", [{"key": hostile, "window": [0, 0, 0, 2]}])
    code, out, _ = call(capsys, str(path))
    assert code == 1
    assert "\x1b" not in out and "\u202e" not in out
    assert "  loss at record 0, key 'k\\x1b[2J\\u202e': [0, 0, 0, 2]: " in out
    code, out, _ = call(capsys, str(path), "--json")
    assert json.loads(out)["violations"][0]["key"] == hostile


def test_cli_escapes_a_hostile_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "out.jsonl", [{"key": "k", "window": [0, 0, 0, "\x1b]0;x\x07"]}])
    code, out, _ = call(capsys, str(path))
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file or directory"),
        ('{"key": "k", "window": [0, 0, 0, 1]}\n{"key": \n', "line 2: malformed JSON"),
    ],
)
def test_cli_unreadable_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "out.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, out, err = call(capsys, str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"parity: error: {path}") and err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argument", ["--expected=0", "--expected=x", "--limit=-1"])
def test_cli_bad_usage(capsys: pytest.CaptureFixture[str], argument: str) -> None:
    code, out, err = call(capsys, str(CORPUS / "pass.jsonl"), argument)
    assert (code, out) == (2, "")
    assert "expected a whole number" in err


def test_cli_as_a_real_process() -> None:
    result = subprocess.run(
        [str(PARITY), "windows", "examples/windows/sink", "--expected", "12"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "windows: pass (36 records, 3 keys)\n",
        "",
    )
    result = subprocess.run(
        [str(PARITY), "windows", "examples/windows/reordering_swapped_tails.jsonl"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (
        "windows: fail: loss 0, duplication 0, reordering 1, corruption 0 (30 records, 3 keys)"
    )
