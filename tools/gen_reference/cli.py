"""The command-line reference page, read from the ``parity`` parsers: each subcommand's
usage, its help line and a table of its arguments, as argparse holds them."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

from parity.cli.commands import COMMANDS, SUMMARY
from parity.cli.main import build_parser
from tools.gen_reference import REGENERATE

#: the width usage lines are wrapped at: fixed, so the page does not follow the terminal
WIDTH = 100

INTRO = """
`parity --version` prints the version; `python -m parity` is the same command. Each
subcommand's usage, then its arguments as its parser defines them. What the commands print
and decide is in the how-to guides and the explanations; the exit codes are on their own
page, [Exit codes](exit-codes.md).
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands() -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """(``parity NAME [SUB]``, its parser, its help line) of every subcommand, nested ones
    (``db upgrade``) in place of their group."""
    for name in COMMANDS:
        parser = _subparsers(build_parser(name))[name]
        nested = _subparsers(parser)
        if not nested:
            yield name, parser, SUMMARY[name]
            continue
        helps = {a.dest: a.help or "" for a in _choices_actions(parser)}
        for sub, subparser in nested.items():
            yield f"{name} {sub}", subparser, helps.get(sub) or SUMMARY[name]


def _choices_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action._choices_actions)
    return []


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    metavar = ""
    if action.nargs != 0:
        metavar = " " + str(action.metavar or action.dest.upper())
    return ", ".join(f"`{option}{metavar}`" for option in action.option_strings)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help:
        return ""
    text = parser._get_formatter()._expand_help(action)
    if action.choices is not None and "{" not in text:
        text += f" (one of: {', '.join(map(str, action.choices))})"
    return " ".join(text.split()).replace("|", "\\|")


def render_cli_page() -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)  # argparse wraps usage at the terminal's width
    try:
        return _render()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def _render() -> str:
    lines = [
        "# Command line",
        "",
        f"<!-- Generated from the parsers of parity/cli/ by `{REGENERATE}`; do not edit. -->",
        "",
        INTRO.strip(),
        "",
    ]
    for name, parser, summary in _commands():
        usage = parser.format_usage().removeprefix("usage: ").rstrip()
        lines += [f"## `parity {name}`", "", summary[0].upper() + summary[1:] + ".", ""]
        lines += ["```text", usage, "```", ""]
        if parser.description:
            lines += [" ".join(parser.description.split()), ""]
        rows = [
            f"| {_names(action)} | {_help(parser, action)} |"
            for action in parser._actions
            if not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS
        ]
        if rows:
            lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)
