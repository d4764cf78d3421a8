"""Expectation suites as values: read from the JSON files a spec names, or derived.

A suite file is Great Expectations 1.x's own JSON form of an ``ExpectationSuite`` (what
``suite.to_json_dict()`` writes), of which Parity reads ``name`` and ``expectations``::

    {
      "name": "taxi_output",
      "expectations": [
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "taxi_id"}},
        {"type": "expect_column_values_to_be_between",
         "kwargs": {"column": "distance_km", "min_value": 0, "max_value": 500}}
      ]
    }

Reading checks the file's shape (one line per problem, naming the file and the place);
``check_columns`` checks the columns each expectation names against an output's, before any
Spark job runs. Great Expectations itself checks the expectation types and arguments when
the suite is built (``expectations.runner``). This module imports no Great Expectations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from matcher.errors import InputError, SpecError

#: what GX writes beside ``name`` and ``expectations``; read and ignored
_SUITE_KEYS = frozenset({"name", "expectations", "id", "meta", "notes", "suite_parameters"})
_EXPECTATION_KEYS = frozenset(
    {"type", "kwargs", "meta", "id", "notes", "description", "severity", "rendered_content"}
)
#: the kwargs through which an expectation names columns
_COLUMN_KWARGS = ("column", "column_A", "column_B")
_COLUMN_LIST_KWARGS = ("column_list", "column_set")
#: table-level expectations whose column lists describe the expected schema, not a lookup
_SCHEMA_EXPECTATIONS = frozenset(
    {
        "expect_table_columns_to_match_set",
        "expect_table_columns_to_match_ordered_list",
        "expect_column_to_exist",
    }
)


@dataclass(frozen=True, slots=True)
class ExpectationConfig:
    """One expectation: its GX type (``expect_...``) and arguments."""

    type: str
    kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    meta: Mapping[str, Any] | None = None

    def to_gx(self) -> dict[str, Any]:
        """The dict ``great_expectations.ExpectationSuite(expectations=[...])`` takes."""
        config: dict[str, Any] = {"type": self.type, "kwargs": dict(self.kwargs)}
        if self.meta is not None:
            config["meta"] = dict(self.meta)
        return config


@dataclass(frozen=True, slots=True)
class Suite:
    """A named list of expectations; ``source`` is its file (or ``derived``)."""

    name: str
    expectations: tuple[ExpectationConfig, ...]
    source: str


def load_suite(path: str | Path, where: str) -> Suite:
    """Read the suite file at ``path``; ``where`` names the spec key that points at it
    (``taxi.yaml: expectations.suites[0]``) and starts every error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{where}: {path}: no such suite file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{where}: {path}: cannot read the suite: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"{where}: {path}: line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
        ) from exc
    return parse_suite(data, f"{where}: {path}", source=str(path))


def parse_suite(data: Any, where: str, source: str = "<suite>") -> Suite:
    """Check a parsed suite document's shape and make it a ``Suite``."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{where}: expected a JSON object with 'name' and 'expectations'")
    unknown = sorted(set(data) - _SUITE_KEYS)
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r} (expected name, expectations)")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where}: name: expected a non-empty string")
    items = data.get("expectations")
    if not isinstance(items, list):
        raise SpecError(f"{where}: expectations: expected a list")
    return Suite(
        name=name,
        expectations=tuple(
            _expectation(item, f"{where}: expectations[{i}]") for i, item in enumerate(items)
        ),
        source=source,
    )


def _expectation(item: Any, where: str) -> ExpectationConfig:
    if not isinstance(item, Mapping):
        raise SpecError(f"{where}: expected an object with 'type' and 'kwargs'")
    unknown = sorted(set(item) - _EXPECTATION_KEYS)
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r} (expected type, kwargs, meta)")
    kind, kwargs, meta = item.get("type"), item.get("kwargs", {}), item.get("meta")
    if not isinstance(kind, str) or not kind.startswith("expect_"):
        raise SpecError(f"{where}: type: expected an expectation type such as 'expect_...'")
    if not isinstance(kwargs, Mapping):
        raise SpecError(f"{where}: kwargs: expected an object")
    if meta is not None and not isinstance(meta, Mapping):
        raise SpecError(f"{where}: meta: expected an object")
    return ExpectationConfig(kind, MappingProxyType(dict(kwargs)), meta)


def referenced_columns(expectation: ExpectationConfig) -> Iterator[tuple[str, str]]:
    """``(kwarg, column)`` for every column the expectation reads."""
    if expectation.type in _SCHEMA_EXPECTATIONS:
        return
    for name in _COLUMN_KWARGS:
        value = expectation.kwargs.get(name)
        if isinstance(value, str):
            yield name, value
    for name in _COLUMN_LIST_KWARGS:
        value = expectation.kwargs.get(name)
        if isinstance(value, list | tuple):
            yield from ((name, c) for c in value if isinstance(c, str))


def check_columns(suite: Suite, columns: Sequence[str], where: str, side: str) -> None:
    """Fail, naming the suite file and expectation, when it reads a column the ``side``
    output lacks: GX would only report it as a failed expectation with a stack trace."""
    known = set(columns)
    for i, expectation in enumerate(suite.expectations):
        for kwarg, column in referenced_columns(expectation):
            if column not in known:
                shown = ", ".join(columns[:30]) + (", ..." if len(columns) > 30 else "")
                raise InputError(
                    f"{where}: expectations[{i}] ({expectation.type}): {kwarg}: unknown column "
                    f"{column!r} in the {side} output (columns: {shown or 'none'})"
                )
