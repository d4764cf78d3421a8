"""The command line answers at once: a subcommand imports what it needs when it runs, so
``parity --version`` and ``--help`` import neither the store nor PySpark, and ``parity
history`` or ``gate`` read the store without Alembic, pydantic or PySpark (issue 15, item 6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from matcher.store.migrate import HEAD, head_revision

#: pydantic: the spec's schema, a quarter of a second; ``gate`` reads a run's stored policy
#: without it (matcher.gate.GateSpec is a dataclass)
HEAVY = (
    *("pyspark", "sqlalchemy", "alembic", "jinja2", "pyarrow", "great_expectations"),
    "pydantic",
)
PROBE = """
import json, sys
from parity.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if "." not in m)}))
"""


def loaded(*arguments: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *arguments], capture_output=True, text=True, timeout=120
    )
    document = json.loads(done.stdout.strip().splitlines()[-1])
    return document["code"], set(document["modules"]) & set(HEAVY)


@pytest.mark.parametrize("arguments", [["--version"], ["--help"], ["bogus"]])
def test_version_help_and_usage_errors_import_nothing_heavy(arguments: list[str]) -> None:
    code, heavy = loaded(*arguments)
    assert code == (2 if arguments == ["bogus"] else 0)
    assert heavy == set()


@pytest.mark.parametrize("command", ["history", "gate"])
def test_store_readers_import_the_store_but_not_alembic_or_spark(
    command: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'parity.db'}"
    subprocess.run(
        [sys.executable, "-m", "parity", "db", "upgrade", "--db", url], check=True, timeout=120
    )
    arguments = ["history"] if command == "history" else ["gate", "taxi"]
    code, heavy = loaded(*arguments, "--db", url)
    assert code in (0, 2)  # history lists nothing; the gate has no run to rest on
    assert heavy == {"sqlalchemy"}


def test_each_subcommand_still_gets_its_own_parser() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "parity", "runs", "expire", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "lease expired" in done.stdout


def test_the_readers_revision_is_alembics_head() -> None:
    assert head_revision() == HEAD
