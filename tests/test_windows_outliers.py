"""Issue 31, ``parity windows`` and tails out of line: the issue's example (one corrupted
tail is one corruption, not thousands of losses), corrupted tails side by side or dense
are as many corruptions, never a flood of losses and late arrivals, and a garbled key,
every record out of line, costs a bounded amount of weighing (``matcher.window_explain``'s
credit)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from matcher.window_explain import CREDIT, DEEP, FIRST_CREDIT, KeyExplainer
from matcher.window_records import Record, Rules, tail_of
from matcher.windows import Violation, canonical, check_windows
from parity.cli import main


def detector(values: list[int], ring: tuple[int, ...]) -> list[list[int]]:
    """The windows the detector emits for ``values`` pushed onto ``ring``."""
    windows, current = [], list(ring)
    for value in values:
        current = [*current[1:], value]
        windows.append(list(current))
    return windows


# --- the issue's example ----------------------------------------------------------------------


def issue_example(*after: list[int]) -> list[tuple[str, list[int]]]:
    """Key k reads 1..60; its window for 50 has the tail 5000, then ``after``, then 52..60
    (or 56..60 after the state carried 5000 out of its ring)."""
    resume = 52 if len(after) <= 1 else 56
    windows = [canonical(t) for t in range(1, 50)] + [[47, 48, 49, 5000], *after]
    windows += [canonical(t) for t in range(resume, 61)]
    return [("k", w) for w in windows]


def test_one_corrupted_tail_is_one_corruption_not_thousands_of_losses() -> None:
    report = check_windows(issue_example([48, 49, 50, 51]), expected=60)
    assert (report.counts["corruption"], report.total_violations) == (1, 1)
    (v,) = report.violations
    assert (v.kind, v.position, v.window, v.count) == ("corruption", 49, [47, 48, 49, 5000], 1)
    unbounded = check_windows(issue_example([48, 49, 50, 51]))  # 5000 is a valid update here
    assert unbounded.violations == (
        Violation(
            "corruption",
            "k",
            49,
            [47, 48, 49, 5000],
            "tail 5000 is out of line: the records after it go on from 51, so it stands for "
            "update 50 (expected [47, 48, 49, 50])",
        ),
    )


def test_a_corrupted_tail_the_state_carries_is_one_corruption() -> None:
    carried = [[48, 49, 5000, 51], [49, 5000, 51, 52], [5000, 51, 52, 53], [51, 52, 53, 54]]
    carried.append(canonical(55))
    report = check_windows(issue_example(*carried))
    assert [(v.kind, v.position) for v in report.violations] == [("corruption", 49)]


def test_a_jump_the_records_after_it_go_on_from_is_a_loss() -> None:
    records = [("k", canonical(t)) for t in range(1, 50)]
    records += [("k", w) for w in detector(list(range(5000, 5010)), ring=(46, 47, 48, 49))]
    (v,) = check_windows(records).violations
    assert (v.kind, v.position, v.count) == ("loss", 49, 4950)
    assert v.detail == "tail jumps from 49 to 5000: updates 50..4999 never show"


def test_at_the_very_end_the_fewest_updates_decide() -> None:
    """Nothing follows the last record: a jump and a corrupted tail are one fault each. A
    window that is the previous one with a far tail pushed is one corrupted record, not
    4,950 losses; a whole window of a later update is a loss."""
    records = [("k", canonical(t)) for t in range(1, 50)]
    (corrupted,) = check_windows([*records, ("k", [47, 48, 49, 5000])]).violations
    assert (corrupted.kind, corrupted.position, corrupted.count) == ("corruption", 49, 1)
    assert corrupted.detail == (
        "tail 5000 is out of line: the records around it do not go on from it, so it stands "
        "for update 50 (expected [47, 48, 49, 50])"
    )
    (lost,) = check_windows([*records, ("k", canonical(5000))]).violations
    assert (lost.kind, lost.count) == ("loss", 4950)
    with_expected = check_windows([*records, ("k", [47, 48, 49, 5000])], expected=50)
    assert [(v.kind, v.position) for v in with_expected.violations] == [("corruption", 49)]


def test_the_cli_says_one_corruption(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.jsonl"
    rows = issue_example([48, 49, 50, 51])
    path.write_text("".join(json.dumps({"key": k, "window": w}) + "\n" for k, w in rows))
    assert main(["windows", str(path), "--expected", "60"]) == 1
    assert capsys.readouterr().out == (
        "windows: fail: loss 0, duplication 0, reordering 0, corruption 1 (60 records, 1 keys)\n"
        "  corruption at record 49, key 'k': [47, 48, 49, 5000]: the tail 5000 is not in the "
        "sequence, which ends at 60 (expected [47, 48, 49, 50])\n"
    )


# --- many faults ------------------------------------------------------------------------------


@pytest.mark.parametrize("expected", [None, 1000])
@pytest.mark.parametrize("rate", [0.01, 0.05, 0.1])
def test_many_corrupted_tails_are_as_many_corruptions(expected: int | None, rate: float) -> None:
    """A tail bug in one record out of 100, 20 or 10, some side by side: each is one
    corruption, whatever its value (most are far ahead of the sequence)."""
    rng = random.Random(2)
    records = [(f"k{k}", canonical(t)) for t in range(1, 1001) for k in range(4)]
    picks = rng.sample(range(len(records)), int(len(records) * rate))
    for place in picks:
        key, window = records[place]
        records[place] = (key, [*window[:3], rng.randint(1, 10**6)])
    report = check_windows(records, expected=expected, limit=0)
    assert dict(report.counts) == {
        "loss": 0,
        "duplication": 0,
        "reordering": 0,
        "corruption": len(picks),
    }


def test_a_garbled_key_costs_a_bounded_number_of_trials() -> None:
    """Every record out of line: weighing is rationed, ``CREDIT`` records in trials per
    record read on top of a first allowance, so garbage costs a few times a clean output."""
    rng = random.Random(3)
    explainer = KeyExplainer("k", Rules(None, False), lambda violation, rule: None)
    for position in range(3000):
        window = [rng.randint(0, 50) for _ in range(4)]
        explainer.feed(Record(position, window, tail_of(window, None)))
    explainer.flush()
    taken = explainer.steps[0] - 3000  # the records taken in trials
    assert 0 < taken <= FIRST_CREDIT + CREDIT * 3000 + DEEP


@pytest.mark.parametrize("expected", [None, 100])
@pytest.mark.parametrize("size", [2, 3, 6, 8, 12])
def test_corrupted_tails_side_by_side_are_as_many_corruptions(
    expected: int | None, size: int
) -> None:
    """Longer than the look-ahead too: the key going on below the jumps takes them back.
    (Past a dozen garbled records in a row, a few more faults may show.)"""
    rng = random.Random(size)
    records = [("k", canonical(t)) for t in range(1, 101)]
    for place in range(40, 40 + size):
        records[place] = ("k", [*records[place][1][:3], rng.randint(200, 10**6)])
    report = check_windows(records, expected=expected, limit=0)
    assert (report.counts["corruption"], report.total_violations) == (size, size)
