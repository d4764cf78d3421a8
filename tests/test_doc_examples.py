"""Every shell session shown in the README and the docs site is run, and prints what the
page says it prints (``tests/doc_sessions.py`` states the rules: exact, or abridged with
``...`` lines, or explicitly not executed with a reason)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from doc_sessions import (
    ROOT,
    Command,
    Session,
    documents,
    matches,
    parity_commands,
    run,
    sessions,
)

from parity.cli.main import build_parser

ALL = [session for path in documents() for session in sessions(path)]
EXECUTED = [session for session in ALL if session.not_executed is None]
#: Sessions that take minutes or need a deployment. Few, each with its reason: a new one
#: needs its line here, so that skipping an example is a decision, not an accident.
NOT_EXECUTED = {
    "README.md": 1,
    "docs/demo.md": 1,
    "docs/how-to/properties.md": 2,
    "docs/how-to/recovery.md": 2,
    "docs/reference/properties.md": 3,
    "docs/reference/reports.md": 1,
}


def _check(session: Session, home: Path) -> list[str]:
    """What differs between the page and the commands' real output, one entry a command."""
    problems = []
    for command in session.commands:
        result = run(command.command, home)
        if not matches(command.expected, result.stdout, abridged=session.abridged):
            problems.append(
                f"{session.name}: `$ {command.command}` printed\n{result.stdout}"
                f"(stderr: {result.stderr.strip() or 'none'})\nbut the page shows\n"
                + "\n".join(command.expected)
            )
    return problems


@pytest.mark.parametrize("session", EXECUTED, ids=[s.name for s in EXECUTED])
def test_the_session_prints_what_the_page_shows(session: Session, tmp_path: Path) -> None:
    problems = _check(session, tmp_path)
    assert not problems, "\n\n".join(problems)


def test_only_the_listed_sessions_are_not_executed() -> None:
    skipped: dict[str, int] = {}
    for session in ALL:
        if session.not_executed is not None:
            skipped[session.path] = skipped.get(session.path, 0) + 1
    assert skipped == NOT_EXECUTED
    assert len(EXECUTED) >= 10


def test_a_changed_output_fails(tmp_path: Path) -> None:
    """The README's worked example with one digit of its output changed: the runner says so,
    whether the block is exact or abridged."""
    worked = next(
        s
        for s in sessions(ROOT / "README.md")
        if s.commands and s.commands[0].command.startswith("parity compare examples/taxi/")
    )
    first = worked.commands[0]
    changed = tuple(line.replace("matched 40", "matched 41") for line in first.expected)
    assert changed != first.expected
    for abridged in (False, True):
        altered = Session(
            worked.path, worked.line, (Command(first.command, changed),), abridged, None
        )
        problems = _check(altered, tmp_path)
        assert len(problems) == 1
        assert "matched 41" in problems[0]
        assert _check(Session(worked.path, worked.line, (first,), abridged, None), tmp_path) == []


def test_abridged_lines_stand_for_any_lines() -> None:
    out = "verdict: divergent\ncounts: loss 1\nrows: 3\nend\n"
    assert matches(("verdict: divergent", "...", "end"), out, abridged=True)
    assert matches(("...", "rows: 3", "..."), out, abridged=True)
    assert not matches(("verdict: divergent", "...", "end"), out, abridged=False)
    assert not matches(("verdict: equivalent", "..."), out, abridged=True)
    assert not matches(("end", "...", "verdict: divergent"), out, abridged=True)
    assert matches(("a",), "a\n", abridged=False)
    assert not matches(("a",), "a\nb\n", abridged=False)


def test_sessions_are_read_with_their_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- abridged -->\n```console\n$ echo a \\\n  b\na b\n...\n\n$ true\n```\n\n"
        "<!-- not executed: takes an hour -->\n```text\n$ sleep 3600\n```\n"
        "```text\nno session\n```\n",
        encoding="utf-8",
    )
    first, second = sessions(page, root=tmp_path)
    assert first.commands == (Command("echo a \\\n  b", ("a b", "...")), Command("true", ()))
    assert (first.abridged, first.not_executed) == (True, None)
    assert (second.abridged, second.not_executed) == (False, "takes an hour")


def test_the_parity_commands_the_pages_do_not_run_still_parse() -> None:
    """A ``sh`` block is not run (it has no output to compare, or it takes minutes), but its
    ``parity`` commands must still be ones the parser takes: a renamed option fails here."""
    refused = []
    commands = [(path, c) for path in documents() for c in parity_commands(path)]
    for path, command in commands:
        words = shlex.split(command, comments=True)[1:]
        try:
            build_parser(words[0] if words else None).parse_args(words)
        except SystemExit:
            refused.append(f"{path.relative_to(ROOT)}: {command}")
    assert refused == []
    assert len(commands) >= 15
