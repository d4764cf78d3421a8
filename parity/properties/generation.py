"""Test generation (§IV-D of the paper): where a test's items come from.

* ``random``: each value drawn at random within a range for its type (integers and
  numbers in [-1000, 1000], strings of 1-6 letters, times in 2024, null now and then for a
  column the sample has nulls in).
* ``pool``: each value drawn from a pool per column: the sample's values, plus the
  constants of the operator's source code of that type (the paper scans the code for the
  constants its comparisons use). The paper's pools are a code's few constants, so values
  repeat within a test as a matter of course (two items of one key, with one attribute
  alike); a sample's pool holds dozens. So each pool test narrows every column to a few of
  its pool's values (1 to 3, or one test in four the whole pool), chosen afresh per test:
  each value is as likely to be drawn as before, but items within a test now share keys
  and attributes (what swarm testing, which the paper cites for hybrid's diversity, does
  with features).
* ``pairwise``: rows from an all-pairs covering array (``allpairspy``) over per-column
  value classes (the pool's extremes, a middle value, the code's constants, null): every
  pair of classes of every two columns appears in some row.

A two-input operator's test alternates ports from a port chosen at random, so that an item
on one port has items of the other around it (a Gate's acknowledgement, a join's matching
row); a test of one port (blocking) has that port's items only.

Two orthogonal options, as in the paper:

* ``mutation``: when a test produced no output, the next one is it plus mutated copies of
  its items (one attribute each: a string's character changed, a number plus or minus one,
  a time plus or minus a second, a boolean negated), to reach the comparisons that emit;
  no longer than the round's test length (the newest items kept).
* ``reuse``: first replay the tests that produced output while earlier properties were
  tested (Fig. 4's order), and the evidence found for this operator before (the evidence
  file), then generate.

``hybrid`` runs the 12 combinations together, a test of each in turn, and stops at the
first evidence.
"""

from __future__ import annotations

import ast
import datetime as dt
import inspect
import json
import os
import random
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from allpairspy import AllPairs

from matcher.errors import InputError
from parity.properties.elements import Element, Test, plain
from parity.properties.samples import Sample

BASES = ("random", "pool", "pairwise")
CHOICES = ("random", "pool", "pairwise", "mutation", "reuse", "hybrid")
EPOCH = dt.datetime(2024, 1, 1)
NULL_CHANCE = 0.05
#: how many of a column's pool values one pool test draws from (``0``: the whole pool)
NARROWED = (1, 2, 3, 0)


@dataclass(frozen=True, slots=True)
class Technique:
    """One of the paper's 12 techniques: a base generator, with or without mutation and
    reuse."""

    base: str
    mutation: bool = False
    reuse: bool = False

    @property
    def name(self) -> str:
        return "+".join(
            [self.base]
            + (["mutation"] if self.mutation else [])
            + (["reuse"] if self.reuse else [])
        )


ALL = tuple(
    Technique(base, mutation, reuse)
    for reuse, mutation, base in product((False, True), (False, True), BASES)
)


def parse_technique(text: str) -> tuple[Technique, ...]:
    """``random``, ``pool``, ``pairwise``; ``mutation`` (pool with mutation), ``reuse`` (pool
    with reuse); ``hybrid`` (all 12); or a combination like ``pairwise+mutation+reuse``."""
    if text == "hybrid":
        return ALL
    if text == "mutation":
        return (Technique("pool", mutation=True),)
    if text == "reuse":
        return (Technique("pool", reuse=True),)
    base, *options = text.split("+")
    if (
        base not in BASES
        or set(options) - {"mutation", "reuse"}
        or len(set(options)) < len(options)
    ):
        raise InputError(
            f"--technique {text}: expected one of {', '.join(CHOICES)}, or BASE[+mutation]"
            "[+reuse] with BASE random, pool or pairwise"
        )
    return (Technique(base, "mutation" in options, "reuse" in options),)


@dataclass(frozen=True, slots=True)
class Domain:
    """What one input port's items are made of."""

    columns: tuple[str, ...]
    types: Mapping[str, str]
    pools: Mapping[str, tuple[Any, ...]]
    nullable: frozenset[str]
    others: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)


def domain(sample: Sample, constants: Sequence[Any] = ()) -> Domain:
    pools: dict[str, tuple[Any, ...]] = {}
    others: dict[str, tuple[Any, ...]] = {}
    for column in sample.columns:
        kind = sample.types[column]
        values = sample.values(column)
        if kind == "other":
            others[column] = tuple(r.get(column) for r in sample.rows[:50])
            continue
        extra = [c for c in constants if _fits(c, kind) and c not in values]
        pools[column] = tuple(values + extra) or (_random_value(kind, random.Random(0)),)
    return Domain(sample.columns, dict(sample.types), pools, sample.nullable, others)


def source_constants(target: Any) -> list[Any]:
    """The literal numbers and strings in the operator's source (the paper's pools)."""
    try:
        source = inspect.getsource(target if callable(target) else type(target))
        tree = ast.parse(_dedent(source))
    except (OSError, TypeError, SyntaxError):
        return []
    found: dict[Any, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, str):
            if isinstance(node.value, str) and (len(node.value) > 40 or "\n" in node.value):
                continue  # docstrings and messages, not compared values
            found.setdefault(node.value, None)
    return list(found)


def _dedent(source: str) -> str:
    lines = source.splitlines()
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[indent:] for x in lines)


def _fits(value: Any, kind: str) -> bool:
    if kind == "int":
        return type(value) is int
    if kind == "float":
        return type(value) in (int, float)
    return kind == "str" and type(value) is str


class Generator:
    """Items for one technique on one operator: ``base(n)`` starts a test of ``n`` items
    (ports alternating for a two-input operator unless ``port`` is given); ``item`` draws
    one more item for the same test."""

    def __init__(
        self,
        technique: Technique,
        domains: Sequence[Domain],
        rng: random.Random,
        reused: Sequence[Test] = (),
    ) -> None:
        self.technique = technique
        self.domains = tuple(domains)
        self.rng = rng
        self.reused = list(reused) if technique.reuse else []
        self.unproductive: Test | None = None
        self._pairs = [self._pairwise_rows(d) for d in self.domains]
        self._pair_at = [0 for _ in self.domains]
        self._pools = [dict(d.pools) for d in self.domains]

    def next_reused(self) -> Test | None:
        """A test to replay (reuse), or None when every one has been replayed."""
        return self.reused.pop(0) if self.reused else None

    def feedback(self, test: Test, productive: bool) -> None:
        """Mutation's input: remember a test that produced no output."""
        self.unproductive = None if productive else test

    def base(self, n: int, port: int | None = None) -> Test:
        """A new test of ``n`` items, or with mutation after an unproductive test, that test
        and mutated copies of its items, the newest ``n`` kept (a mutated test that stays
        unproductive is mutated again: without the cap it doubled every round, a million
        items by the twentieth; with it the copies walk on, a step each round)."""
        if self.technique.mutation and self.unproductive is not None:
            items = [e for e in self.unproductive if not e.is_punctuation]
            if port is not None:
                items = [e for e in items if e.port == port]
            if items:
                self.unproductive = None
                grown = tuple(items) + tuple(self.mutate(e) for e in items)
                return grown[-max(n, 1) :]
        self._narrow()
        return tuple(self.item(p) for p in self._ports(n, port))

    def item(
        self,
        port: int | None = None,
        fixed: Mapping[str, Any] | None = None,
        differ: Mapping[str, Any] | None = None,
    ) -> Element:
        """One item; ``fixed`` columns take the given values, ``differ`` columns any value
        but the given one (drawn from the whole pool: the other keys of an interference
        test)."""
        chosen = port if port is not None else self.rng.randrange(len(self.domains))
        row = self.row(chosen)
        if fixed:
            row.update({k: v for k, v in fixed.items() if k in row})
        for column, value in (differ or {}).items():
            if column in row:
                row[column] = self.other_value(chosen, column, value)
        return Element(chosen, row)

    def row(self, port: int) -> dict[str, Any]:
        d = self.domains[port]
        if self.technique.base == "pairwise":
            rows = self._pairs[port]
            row = dict(rows[self._pair_at[port] % len(rows)])
            self._pair_at[port] += 1
            if self._pair_at[port] % len(rows) == 0:
                self.rng.shuffle(rows)
        else:
            row = {c: self.value(port, c) for c in d.columns if c not in d.others}
        for column, values in d.others.items():
            row[column] = self.rng.choice(values)
        return {c: row.get(c) for c in d.columns}

    def value(self, port: int, column: str) -> Any:
        d = self.domains[port]
        kind = d.types[column]
        if column in d.nullable and self.rng.random() < NULL_CHANCE:
            return None
        if self.technique.base == "random":
            return _random_value(kind, self.rng)
        return self.rng.choice(self._pools[port][column])

    def other_value(self, port: int, column: str, value: Any) -> Any:
        """A value of ``column`` other than ``value``: from the whole pool (random: a random
        value), else ``value`` mutated."""
        d = self.domains[port]
        if column in d.others:
            return value
        if self.technique.base == "random":
            drawn = _random_value(d.types[column], self.rng)
        else:
            drawn = self.rng.choice(d.pools[column])
        return drawn if drawn != value else _mutated(value, self.rng)

    def _narrow(self) -> None:
        """Pool tests: each column's values for this test, a few of its pool's."""
        if self.technique.base != "pool":
            return
        for port, d in enumerate(self.domains):
            for column, pool in d.pools.items():
                size = self.rng.choice(NARROWED) or len(pool)
                self._pools[port][column] = tuple(self.rng.sample(pool, min(size, len(pool))))

    def _ports(self, n: int, port: int | None) -> list[int]:
        if port is not None:
            return [port] * n
        first = self.rng.randrange(len(self.domains))
        return [(first + i) % len(self.domains) for i in range(n)]

    def mutate(self, element: Element) -> Element:
        """The element with one attribute mutated (the paper's mutation operators)."""
        assert element.item is not None
        d = self.domains[element.port]
        row = dict(element.item)
        columns = [c for c in d.columns if c not in d.others and row.get(c) is not None]
        if columns:
            column = self.rng.choice(columns)
            row[column] = _mutated(row[column], self.rng)
        return Element(element.port, row)

    def _pairwise_rows(self, d: Domain) -> list[dict[str, Any]]:
        columns = [c for c in d.columns if c not in d.others]
        classes = [_classes(d, c) for c in columns]
        if len(columns) == 1:
            rows = [{columns[0]: v} for v in classes[0]]
        elif not columns:
            rows = [{}]
        else:
            rows = [dict(zip(columns, values, strict=True)) for values in AllPairs(classes)]
        self.rng.shuffle(rows)
        return rows


def _classes(d: Domain, column: str) -> list[Any]:
    """A column's value classes: numbers' extremes and middle (and the code's constants),
    a few distinct strings, both booleans, null where the sample has nulls."""
    pool = list(d.pools[column])
    kind = d.types[column]
    if kind in ("int", "float", "datetime", "date"):
        ordered = sorted(pool)
        picks = [ordered[0], ordered[len(ordered) // 2], ordered[-1]]
        picks += [v for v in pool[len(ordered) :] if v not in picks]  # constants (appended)
        classes = list(dict.fromkeys(picks))
    else:
        classes = list(dict.fromkeys(pool))[:6]
    if column in d.nullable:
        classes.append(None)
    return classes


def _random_value(kind: str, rng: random.Random) -> Any:
    if kind == "int":
        return rng.randint(-1000, 1000)
    if kind == "float":
        return round(rng.uniform(-1000, 1000), 3)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "datetime":
        return EPOCH + dt.timedelta(seconds=rng.randrange(366 * 86400))
    if kind == "date":
        return EPOCH.date() + dt.timedelta(days=rng.randrange(366))
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 6)))


def _mutated(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + rng.choice((-1, 1))
    if isinstance(value, dt.datetime):
        return value + dt.timedelta(seconds=rng.choice((-1, 1)))
    if isinstance(value, dt.date):
        return value + dt.timedelta(days=rng.choice((-1, 1)))
    if isinstance(value, str):
        if not value:
            return rng.choice(string.ascii_lowercase)
        at = rng.randrange(len(value))
        return value[:at] + rng.choice(string.ascii_lowercase) + value[at + 1 :]
    return value


# --- the evidence file ------------------------------------------------------------------


def evidence_path(directory: str | None, ref: str) -> Path:
    """``DIR/<operator>.json``; DIR is ``--evidence-dir`` or ``$PARITY_HOME/properties``."""
    base = Path(directory) if directory else _home() / "properties"
    return base / (re.sub(r"[^A-Za-z0-9_.-]", "_", ref) + ".json")


def _home() -> Path:
    return Path(os.environ.get("PARITY_HOME") or Path.home() / ".parity")


def load_evidence(
    path: Path, domains: Sequence[Domain], warn: Callable[[str], None] | None = None
) -> list[Test]:
    """The tests that were evidence before: none when the file is missing; none either when
    it cannot be read or is not an evidence file (reuse is an optimisation, never a reason
    to fail), but then ``warn`` hears of it in one line: a corrupt file is never ignored
    without a word (this run's evidence, if any, replaces it)."""
    if not path.exists():
        return []
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        tests = [tuple(_element(e, domains) for e in test) for test in stored["tests"].values()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        if warn is not None:
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            warn(
                f"{path}: not a readable evidence file ({reason}): its tests are not reused; "
                "this run's evidence replaces it"
            )
        return []
    return [t for t in tests if t]


def save_evidence(path: Path, ref: str, tests: Mapping[str, Test]) -> None:
    """Keep this run's evidence inputs, one per property, merged into what was there."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))["tests"]
        if not isinstance(stored, dict):
            stored = {}
    except (OSError, ValueError, KeyError, TypeError):
        stored = {}
    stored.update({name: [e.to_dict() for e in test] for name, test in tests.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"operator": ref, "tests": plain(stored)}, indent=1, sort_keys=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    temporary.replace(path)


def _element(shown: Mapping[str, Any], domains: Sequence[Domain]) -> Element:
    port = int(shown["port"])
    if shown.get("punctuation"):
        return Element(port, None)
    d = domains[port]
    raw = shown["item"]
    return Element(port, {c: _typed(raw.get(c), d.types.get(c, "other")) for c in d.columns})


def _typed(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "datetime" and isinstance(value, str):
        return dt.datetime.fromisoformat(value)
    if kind == "date" and isinstance(value, str):
        return dt.date.fromisoformat(value)
    if kind == "float":
        return float(value)
    return value
