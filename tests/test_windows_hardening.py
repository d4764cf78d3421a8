"""Issue 29, the sequence-window validator's part: a skip inside an at-least-once replay is a
loss (item 18), values far past any sane sequence are corruption, not billions of losses
(item 12), and ``parity windows`` takes any file name and speaks of its own options, not of a
spec it does not take (item 15)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matcher.windows import LARGEST_UPDATE, canonical, check_windows
from parity.cli import main

ROOT = Path(__file__).resolve().parents[1]
PARITY = Path(sys.executable).parent / "parity"
KINDS = ("loss", "duplication", "reordering", "corruption")
#: the store's count columns are 64-bit
INT64 = 2**63 - 1


def _tails(*tails: int) -> list[tuple[str, list[int]]]:
    return [("k", canonical(t)) for t in tails]


def _counts(report: object) -> tuple[int, ...]:
    return tuple(report.counts[kind] for kind in KINDS)  # type: ignore[attr-defined]


# --- item 18: a replay goes on by +1 -------------------------------------------------------


def test_a_skip_inside_a_replay_is_a_loss_at_least_once() -> None:
    report = check_windows(_tails(1, 2, 3, 4, 5, 3, 5), at_least_once=True)
    assert (report.verdict, _counts(report), report.replayed) == ("fail", (1, 0, 0, 0), 2)
    (v,) = report.violations
    assert (v.kind, v.key, v.position, v.window, v.count) == ("loss", "k", 6, [2, 3, 4, 5], 1)
    assert v.detail == (
        "tail skips from 3 to 5 inside a replay from 3 up to 5: update 4 never shows again "
        "(expected 4); a replay goes on by +1"
    )


def test_each_skip_of_a_replay_counts_what_it_skipped() -> None:
    report = check_windows(_tails(1, 2, 3, 4, 5, 6, 7, 2, 4, 7, 8), at_least_once=True)
    assert _counts(report) == (3, 0, 0, 0)
    assert [(v.position, v.count) for v in report.violations] == [(8, 1), (9, 2)]


@pytest.mark.parametrize(
    "tails",
    [
        (1, 2, 3, 4, 5, 3, 4, 5),  # the replay goes on by +1 to where it was
        (1, 2, 3, 4, 5, 6, 4, 5, 2, 3, 4, 5, 6, 7),  # a crash during recovery: a new rewind
    ],
)
def test_a_replay_by_plus_one_still_passes(tails: tuple[int, ...]) -> None:
    assert check_windows(_tails(*tails), at_least_once=True).verdict == "pass"


def test_exactly_once_a_skipping_replay_stays_a_duplication() -> None:
    report = check_windows(_tails(1, 2, 3, 4, 5, 3, 5))
    assert _counts(report) == (0, 2, 0, 0)


# --- item 12: bounded numbers ----------------------------------------------------------------

HUGE = 99999999999999999999999999999999


@pytest.mark.parametrize("value", [HUGE, LARGEST_UPDATE + 1, 2**63, 2**64 + 5])
def test_a_tail_past_the_largest_update_is_one_corruption(value: int) -> None:
    report = check_windows([("k", [0, 0, 0, 1]), ("k", [0, 0, 0, value])])
    assert _counts(report) == (0, 0, 0, 1)
    (v,) = report.violations
    assert v.detail == (
        f"the tail {value} is not in the sequence, which ends at {LARGEST_UPDATE} "
        "(expected [0, 0, 1, 2])"
    )


def test_counts_stay_within_the_stores_columns() -> None:
    """The largest jump a record can make, on many keys and after many replays."""
    records = []
    for key in range(50):
        records += [(f"k{key}", canonical(1)), (f"k{key}", canonical(LARGEST_UPDATE))]
    report = check_windows(records, expected=LARGEST_UPDATE)
    assert report.counts["loss"] == 50 * (LARGEST_UPDATE - 2)
    assert all(0 <= n <= INT64 for n in report.counts.values())


@pytest.mark.parametrize("expected", [0, LARGEST_UPDATE + 1, 10**40])
def test_expected_is_bounded(expected: int) -> None:
    with pytest.raises(ValueError, match=f"from 1 to {LARGEST_UPDATE}, got {expected}"):
        check_windows([], expected=expected)


def test_the_cli_reports_the_corruption(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(
        f'{{"key": "k", "window": [0, 0, 0, 1]}}\n{{"key": "k", "window": [0, 0, 0, {HUGE}]}}\n',
        encoding="utf-8",
    )
    assert main(["windows", str(path), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["counts"] == {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 1}


@pytest.mark.parametrize("given", [str(LARGEST_UPDATE + 1), "99999999999999999999"])
def test_the_cli_bounds_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text('{"key": "k", "window": [0, 0, 0, 1]}\n', encoding="utf-8")
    assert main(["windows", str(path), "--expected", given]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == (
        "parity windows: error: argument --expected: expected a whole number from 1 to "
        f"{LARGEST_UPDATE}, got '{given}'"
    )


# --- item 15: file names and messages ----------------------------------------------------------


def test_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """As a real process: the name reaches ``parity`` as bytes, as a shell passes it."""
    name = os.fsencode(tmp_path) + b"/out\xff.jsonl"
    with open(name, "wb") as file:
        file.write(b'{"key": "k", "window": [0, 0, 0, 1]}\n')
    result = subprocess.run(
        [os.fsencode(PARITY), b"windows", name], capture_output=True, timeout=120, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        b"windows: pass (1 records, 1 keys)\n",
        b"",
    )


def test_a_missing_file_whose_name_is_not_utf8(tmp_path: Path) -> None:
    name = os.fsencode(tmp_path) + b"/gone\xff.jsonl"
    result = subprocess.run(
        [os.fsencode(PARITY), b"windows", name], capture_output=True, timeout=120, check=False
    )
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr == b"parity: error: " + os.fsencode(tmp_path) + (
        b"/gone\\udcff.jsonl: no such file or directory\n"
    )


def test_a_name_without_a_format_asks_for_format_not_a_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "part-0.txt").write_text('{"key": "k", "window": [0, 0, 0, 1]}\n', encoding="utf-8")
    assert main(["windows", str(folder)]) == 2
    assert capsys.readouterr() == (
        "",
        f"parity: error: {folder}/part-0.txt: cannot tell the format from the name: pass "
        "--format (jsonl, json, parquet) or name the files .jsonl, .json or .parquet\n",
    )
    assert main(["windows", str(folder), "--format", "jsonl"]) == 0
    assert capsys.readouterr().out == "windows: pass (1 records, 1 keys)\n"
