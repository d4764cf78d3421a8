"""The generated reference pages of the docs site: ``python -m tools.gen_reference`` writes
``docs/reference/spec.md`` from the spec's schema (``matcher.spec_schema``) and
``docs/reference/cli.md`` from the ``parity`` command's parsers (``parity.cli.main``) and
``docs/reference/store-tables.md`` from the store's models (``matcher.store.models``);
``--check`` exits 1 naming the pages that differ from what it would write.

The code is the truth for what exists: every key of the schema, its type, its default, and
every option of every subcommand with its help. The prose a key needs beyond that lives in
``spec_meanings.MEANINGS``, one entry per key: a key without one, or an entry for a key the
schema lacks, stops the generator, so a key cannot be added (or removed) without its page.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "python -m tools.gen_reference"
