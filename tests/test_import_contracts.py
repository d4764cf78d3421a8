"""The import contracts (pyproject.toml, ``[tool.importlinter]``) hold, and each one can fail.

For every contract, a copy of the tree gets one import the contract forbids, and
``lint-imports --contract ID`` must then report that contract broken: a contract that cannot
fail checks nothing. The tree itself must keep every contract.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = ("matcher", "parity", "jobs", "expectations", "dags", "tools", "plugins/parity_ui")

#: contract id -> (file, an import that contract forbids), appended to the file in a copy
PLANTED = {
    # the issue's own example: the core reaching for the Spark engine
    "core": ("matcher/verdict.py", "import matcher.spark.comparison"),
    "files": ("matcher/files/readers.py", "import matcher.store"),
    "spark": ("matcher/spark/outputs.py", "import matcher.store.repository"),
    "store": ("matcher/store/records.py", "import pyarrow"),
    "views": ("parity/views/report.py", "import matcher.spark.outputs"),
    "airflow": ("parity/airflow/plan.py", "import matcher.spark.streams"),
    "cli": ("parity/cli/compare.py", "import parity.airflow.factory"),
    "runs": ("parity/runs/submits.py", "import matcher.store"),
    "recovery": ("parity/recovery/crashes.py", "import matcher.spark.outputs"),
    "minimize": ("parity/minimize/ddmin.py", "import matcher.spark.outputs"),
    "properties": ("parity/properties/runner.py", "import parity.views.report"),
    "testing": ("parity/testing.py", "import matcher.store"),
    "expectations": ("expectations/suites.py", "import parity.views.report"),
    "jobs": ("jobs/match.py", "import parity.cli.render"),
    "plugin": ("plugins/parity_ui/views.py", "import matcher.spark.streams"),
    "dags": ("dags/parity_validations.py", "import matcher.store"),
    "installed": ("parity/cli/main.py", "import tools.demo"),
}


def _config() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        config: dict[str, object] = tomllib.load(file)["tool"]["importlinter"]
    return config


def _contracts() -> list[dict[str, object]]:
    contracts = _config()["contracts"]
    assert isinstance(contracts, list)
    return contracts


def _lint(tree: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    selected = [arg for c in contracts for arg in ("--contract", c)]
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", "--config", "pyproject.toml", *selected],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'plugins'}"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project's packages and its pyproject.toml."""
    copy = tmp_path_factory.mktemp("contracts")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package,
            copy / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "data", "static", "validations"),
        )
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def test_every_contract_is_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in result.stdout


def test_every_contract_has_a_planted_violation() -> None:
    assert sorted(str(c["id"]) for c in _contracts()) == sorted(PLANTED)


@pytest.mark.parametrize("contract", sorted(PLANTED))
def test_a_planted_violation_breaks_its_contract(tree: Path, contract: str) -> None:
    relative, line = PLANTED[contract]
    target = tree / relative
    original = target.read_text(encoding="utf-8")
    target.write_text(f"{original}\n{line}  # planted\n", encoding="utf-8")
    try:
        result = _lint(tree, contract)
    finally:
        target.write_text(original, encoding="utf-8")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 broken" in result.stdout, result.stdout
    assert "BROKEN" in result.stdout


def test_the_copy_keeps_every_contract_without_plants(tree: Path) -> None:
    """The plants are what break the contracts above, not the copy itself."""
    result = _lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_core_contract_names_every_core_module() -> None:
    """The core is listed module by module: a new core module must join the list."""
    core = next(c for c in _contracts() if c["id"] == "core")
    listed = set(core["source_modules"])  # type: ignore[call-overload]
    modules = {"matcher"} | {f"matcher.{p.stem}" for p in (ROOT / "matcher").glob("*.py")}
    assert listed == modules - {"matcher.__init__"}


def test_every_package_is_a_root_package() -> None:
    """Every folder of importable code is checked: none is left out of the graph."""
    roots = set(_config()["root_packages"])  # type: ignore[call-overload]
    found = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    found |= {p.parent.name for p in (ROOT / "plugins").glob("*/__init__.py")}
    assert found - {"tests", "bench", "docker"} == roots
