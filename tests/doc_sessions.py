"""The shell sessions of the README and the docs site, read from their Markdown and run.

A session is a fenced block tagged ``console`` or ``text`` whose first line starts with
``$ ``: each ``$ COMMAND`` line (a line ending in ``\\`` continues it) is run with ``bash -c``
in the repository root, the venv's ``bin`` first on ``PATH``, and what it prints on stdout
must be the lines below it, exactly. Two HTML comments on the line before the fence change
that (docs/contributing.md, "Examples in the docs"):

* ``<!-- abridged -->``: a line ``...`` stands for any lines (none included); every other
  line must still come out, in order, exactly;
* ``<!-- not executed: REASON -->``: the block is not run (it takes minutes, or needs a
  deployment); the reason is required.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ABRIDGED = "<!-- abridged -->"
_NOT_EXECUTED = re.compile(r"^<!-- not executed: (?P<reason>\S.*?) -->$")
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


@dataclass(frozen=True, slots=True)
class Command:
    """One ``$`` line and the stdout shown under it."""

    command: str
    expected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Session:
    """A shell block: where it is, its commands, and how it is checked."""

    path: str
    line: int
    commands: tuple[Command, ...]
    abridged: bool
    not_executed: str | None

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"


def documents() -> list[Path]:
    """The README and every page of the docs site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def sessions(path: Path, root: Path = ROOT) -> list[Session]:
    """Every shell session of one Markdown file, in order (named relative to ``root``)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        end = next(j for j in range(index + 1, len(lines)) if lines[j].startswith("```"))
        body = lines[index + 1 : end]
        if fence["lang"] in ("console", "text") and body and body[0].startswith("$ "):
            marker = _marker(lines, index)
            not_executed = _NOT_EXECUTED.match(marker)
            found.append(
                Session(
                    path=str(path.relative_to(root)),
                    line=index + 1,
                    commands=_commands(body),
                    abridged=marker == ABRIDGED,
                    not_executed=not_executed["reason"] if not_executed else None,
                )
            )
        index = end + 1
    return found


def _marker(lines: list[str], fence: int) -> str:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    return lines[before].strip() if before >= 0 else ""


def _commands(body: list[str]) -> tuple[Command, ...]:
    commands: list[Command] = []
    command: str | None = None
    output: list[str] = []
    continued = False
    for line in body:
        if continued:
            command = f"{command}\n{line}"
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            if command is not None:
                commands.append(Command(command, _trimmed(output)))
            command, output = line[2:], []
            continued = line.endswith("\\")
        else:
            output.append(line)
    if command is not None:
        commands.append(Command(command, _trimmed(output)))
    return tuple(commands)


def _trimmed(output: list[str]) -> tuple[str, ...]:
    """The output without the blank lines that separate it from the next command."""
    while output and not output[-1].strip():
        output = output[:-1]
    return tuple(output)


def matches(expected: tuple[str, ...], actual: str, *, abridged: bool) -> bool:
    """Whether ``actual`` (a command's stdout) is the output shown: line for line, or, when
    abridged, with each ``...`` line standing for any lines."""
    got = actual.rstrip("\n").split("\n") if actual.strip("\n") else []
    if not abridged:
        return list(expected) == [line.rstrip() for line in got]
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == "..." else re.escape(line) + r"[ \t]*\n" for line in expected
    )
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in got)) is not None


def run(command: str, home: Path) -> subprocess.CompletedProcess[str]:
    """One command, as the docs' reader runs it from the repository root."""
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PARITY_")},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PARITY_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
    }
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


_SH_BLOCK = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def parity_commands(path: Path) -> list[str]:
    """The ``parity`` command lines of a page's ``sh`` blocks (which are not run): each as
    far as its first ``&&``, ``||`` or pipe, a line's ``\\`` continuations joined. Lines with
    ``...`` or ``[`` are synopses, not commands, and are left out."""
    found = []
    for block in _SH_BLOCK.findall(path.read_text(encoding="utf-8")):
        for line in block.replace("\\\n", " ").split("\n"):
            line = line.strip()
            if not line.startswith(("parity ", ".venv/bin/parity ")):
                continue
            command = re.split(r"\s(?:&&|\|\||\|)\s", line)[0]
            if "..." not in command and "[" not in command:
                found.append(command)
    return found
