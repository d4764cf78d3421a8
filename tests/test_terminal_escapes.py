"""Stored text on a terminal: the commands print escape sequences, C1 controls, DEL and
bidirectional overrides from versions, errors, gate reasons, column names and values as
visible escapes (``parity.cli.render.printable``), never as characters a terminal acts on.

Checked on what the user sees: ``parity report`` (its summary and ``--html -``) and
``parity compare``'s text, every character of the output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matcher.schema import SchemaDiff, SchemaFinding
from matcher.store import RunOutcome, RunRecord, RunStart, Store
from matcher.verdict import Divergence, Verdict
from parity.cli import main
from parity.cli.report_text import render_summary
from parity.views.printable import printable

pytest_plugins = ["store_fixtures"]

#: set the window title, clear the screen, an 8-bit CSI, DEL, a right-to-left override,
#: a carriage return that would hide what came before
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\x7f\u202egnp.exe\r!"
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x7f\\u202egnp.exe\\r!"


def terminal_safe(text: str, keep: str = "\n") -> bool:
    return all(c.isprintable() or c in keep for c in text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (HOSTILE, SHOWN),
        ("plain, 'quoted', back\\slash, café 東京", "plain, 'quoted', back\\slash, café 東京"),
        ("\u2066isolate\u2069 \u200bzero-width", "\\u2066isolate\\u2069 \\u200bzero-width"),
        ("tab\there\nnewline", "tab\\there\\nnewline"),
        ("\x00\x1f\x80\x9f\u2028", "\\x00\\x1f\\x80\\x9f\\u2028"),
    ],
)
def test_printable_escapes_what_a_terminal_would_act_on(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(shown) == shown  # escaping twice changes nothing


def test_printable_keeps_the_characters_asked_for() -> None:
    assert printable("a\n\x1b[1mb\tc", keep="\n\t") == "a\n\\x1b[1mb\tc"


def hostile_run(sqlite_url: str) -> RunRecord:
    finding = SchemaFinding("added", f"col{HOSTILE}", None, "string", divergent=True)
    verdict = Verdict(
        False,
        divergences=(Divergence("loss", HOSTILE, 0, 0, {HOSTILE: HOSTILE}, None),),
        counts={"loss": 1},
        reference_count=1,
        schema=SchemaDiff("compatible", (finding,)),
    )
    with Store.open(sqlite_url) as store:
        store.start_run(
            RunStart(
                "run-1",
                f"taxi{HOSTILE}",
                reference_version=f"v1{HOSTILE}",
                candidate_version=f"v2{HOSTILE}",
                slice={"window": HOSTILE},
            )
        )
        store.record_run("run-1", RunOutcome.from_verdict(verdict))
        store.set_gate("run-1", False, f"verdict divergent{HOSTILE}")
        record = store.get_run("run-1")
    assert record is not None
    return record


def test_the_report_summary_shows_stored_text_escaped(sqlite_url: str) -> None:
    summary = render_summary(hostile_run(sqlite_url))
    assert terminal_safe(summary)
    lines = summary.splitlines()
    assert lines[0].startswith(f"run run-1: taxi{SHOWN}, ")
    assert lines[0].endswith(f"(gate closed: verdict divergent{SHOWN})")
    assert lines[1].startswith("matched: ")
    assert lines[2] == f"versions: reference v1{SHOWN}, candidate v2{SHOWN}"
    assert any(line.startswith("  divergent added") and SHOWN in line for line in lines)


def test_a_stored_error_is_shown_escaped_line_by_line(sqlite_url: str) -> None:
    with Store.open(sqlite_url) as store:
        error = f"InputError: {HOSTILE}\nsecond line{HOSTILE}"
        store.mark_failed("run-2", error, start=RunStart("run-2", "taxi"))
        record = store.get_run("run-2")
    assert record is not None
    summary = render_summary(record)
    assert terminal_safe(summary)
    assert f"error: InputError: {SHOWN}\n  second line{SHOWN}\n" in summary


def test_report_html_on_standard_output_is_terminal_safe(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile_run(sqlite_url)
    assert main(["report", "run-1", "--html", "-", "--db", sqlite_url]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert terminal_safe(out, keep="\n\t")
    assert f"v1{SHOWN}" in out  # escaped, where the version is shown


def test_compare_text_escapes_column_names_and_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    column = f"col{HOSTILE}"
    reference, candidate = tmp_path / "reference.jsonl", tmp_path / "candidate.jsonl"
    reference.write_text(json.dumps({"k": 1, column: HOSTILE}) + "\n")
    candidate.write_text(json.dumps({"k": 1, column: "other"}) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: hostile\ndependence: {key: [k]}\n")

    code = main(["compare", str(reference), str(candidate), "--spec", str(spec)])
    out, err = capsys.readouterr()
    assert (code, err) == (1, "")
    assert terminal_safe(out)
    assert f"corrupted columns: col{SHOWN} 1" in out.splitlines()
    row = next(line for line in out.splitlines() if line.startswith(f"  * col{SHOWN}"))
    assert row.split(" | ")[1:] == [repr(HOSTILE)[:37] + "...", "'other'"]
