"""The generated reference pages (``python -m tools.gen_reference``) match the code: the spec's
schema, the ``parity`` parsers and the store's models. A key, an option or a column added
without regenerating fails here, with the command that regenerates them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from matcher.spec_schema import SpecDocument
from tools import gen_reference
from tools.gen_reference import REGENERATE
from tools.gen_reference import __main__ as generator
from tools.gen_reference import cli as cli_page
from tools.gen_reference import spec as spec_page
from tools.gen_reference.spec_meanings import MEANINGS

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_pages_are_what_the_code_gives_now() -> None:
    stale = generator.stale_pages()
    assert not stale, f"{', '.join(stale)} out of date: run `{REGENERATE}` and commit them"


def test_check_names_the_stale_page_and_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(generator, "render_cli_page", lambda: "# not the page\n")
    assert generator.main(["--check"]) == 1
    assert capsys.readouterr().err == (
        "docs/reference/cli.md is out of date: run `python -m tools.gen_reference`\n"
    )


def test_a_new_option_makes_the_cli_page_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    build = cli_page.build_parser

    def with_an_option(command: str | None = None) -> argparse.ArgumentParser:
        parser = build(command)
        if command == "compare":
            sub = cli_page._subparsers(parser)["compare"]
            sub.add_argument("--colour", help="paint the report")
        return parser

    monkeypatch.setattr(cli_page, "build_parser", with_an_option)
    page = cli_page.render_cli_page()
    assert "| `--colour COLOUR` | paint the report |" in page
    assert generator.stale_pages() == ["docs/reference/cli.md"]


def test_a_new_spec_key_needs_its_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    class WithOwner(SpecDocument):
        owner: str | None = None

    monkeypatch.setattr(spec_page, "SpecDocument", WithOwner)
    with pytest.raises(ValueError, match=r"missing: \['owner'\]; for keys the schema lacks: none"):
        spec_page.render_spec_page()
    monkeypatch.setitem(MEANINGS, "owner", "the team that owns the pipeline")
    assert "| `owner` | string | none | the team that owns the pipeline |" in (
        spec_page.render_spec_page()
    )
    assert generator.stale_pages() == ["docs/reference/spec.md"]


def test_a_meaning_for_no_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MEANINGS, "equality.fuzzy", "not a key")
    with pytest.raises(ValueError, match=r"for keys the schema lacks: \['equality.fuzzy'\]"):
        spec_page.render_spec_page()


@pytest.mark.parametrize(
    ("key", "words", "default"),
    [
        ("airflow.max_active_runs", "integer, 1 to 64", "`1`"),
        ("input.slice.sample", "number, > 0 and ≤ 1", "none"),
        ("recovery.kill", "`driver` or `executor`", "`driver`"),
        ("dependence", "mapping (below)", "**required**"),
        ("dependence.barrier.equals", "a string, number or boolean, or a list of them", "none"),
        ("equality.ignore", "list of strings (one item may be written alone)", "`[]`"),
        ("gate.allow_noisy", "boolean", "`false`"),
        ("properties", "list of mappings (below)", "`[]`"),
    ],
)
def test_types_and_defaults_come_from_the_schema(key: str, words: str, default: str) -> None:
    found: dict[str, Any] = {k.path: k for k in spec_page.spec_keys()}
    assert spec_page.describe(found[key].annotation, found[key].metadata) == words
    assert spec_page.default_text(found[key]) == default


def test_every_command_has_its_section() -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    from parity.cli.commands import COMMANDS

    for name in COMMANDS:
        assert f"## `parity {name}" in page
    assert gen_reference.ROOT == ROOT
