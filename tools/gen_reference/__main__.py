"""``python -m tools.gen_reference [--check]``: write (or check) the generated reference
pages, ``docs/reference/spec.md``, ``cli.md`` and ``store-tables.md``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tools.gen_reference import REGENERATE, ROOT
from tools.gen_reference.cli import render_cli_page
from tools.gen_reference.spec import render_spec_page
from tools.gen_reference.store import render_store_page


def pages() -> dict[str, str]:
    """Each generated page's path (relative to the repository root) and its text now."""
    return {
        "docs/reference/spec.md": render_spec_page(),
        "docs/reference/cli.md": render_cli_page(),
        "docs/reference/store-tables.md": render_store_page(),
    }


def stale_pages() -> list[str]:
    """The generated pages whose committed text differs from what the code gives now."""
    stale = []
    for path, text in pages().items():
        target = ROOT / path
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gen_reference", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is out of date")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for path in stale:
            print(f"{path} is out of date: run `{REGENERATE}`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in pages().items():
        (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / path).write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
