"""The validation spec: one YAML file per pipeline under test, loaded into typed values.

    spec = load_spec("examples/taxi/spec.yaml")
    verdict = compare(reference, candidate, spec.build_dependence(), spec.build_equality())

Everything is checked when the file is loaded, so that a typo fails in a second rather than
after two Spark jobs: unknown keys, wrong types, ``module:function`` references (imported
here), and the compatibility of the equality with the dependence (DiffStream's soundness
condition). Every problem is one ``SpecError`` line, ``FILE: dotted.key: problem``, because
the person reading it is fixing a YAML file, not debugging Python.

The YAML boundary is pydantic (``matcher.spec_schema``); the matcher objects are built
from those values by ``Spec.build_dependence`` and ``Spec.build_equality``.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from matcher import dependence as dep
from matcher.equality import ALL_COLUMNS, Equality, Tolerance
from matcher.errors import IncompatibleEqualityError, SpecError
from matcher.formats import FORMATS
from matcher.gate import GateSpec
from matcher.spec_schema import (
    DEPENDENCE_FORMS,
    PLACEHOLDERS,
    RERUN_CONF,
    SCHEDULE_PRESETS,
    AirflowSpec,
    ApplicationSpec,
    BarrierSpec,
    ClassifySpec,
    DependenceSpec,
    EqualitySpec,
    EventTestSpec,
    ExpectationsSpec,
    InputSpec,
    NoiseSpec,
    OutputSpec,
    PropertyTestSpec,
    PunctuationSpec,
    RecoverySpec,
    SchemaSpec,
    SliceSpec,
    SpecDocument,
    ToleranceSpec,
    TypedSpec,
    parse_duration,
    placeholders,
    validate_document,
)

__all__ = [
    "DEPENDENCE_FORMS",
    "FORMATS",
    "PLACEHOLDERS",
    "RERUN_CONF",
    "SCHEDULE_PRESETS",
    "AirflowSpec",
    "ApplicationSpec",
    "BarrierSpec",
    "ClassifySpec",
    "DependenceSpec",
    "EqualitySpec",
    "ExpectationsSpec",
    "GateSpec",
    "InputSpec",
    "NoiseSpec",
    "OutputSpec",
    "PropertyTestSpec",
    "PunctuationSpec",
    "RecoverySpec",
    "SchemaSpec",
    "SliceSpec",
    "Spec",
    "SpecDocument",
    "ToleranceSpec",
    "TypedSpec",
    "load_spec",
    "parse_duration",
    "parse_spec",
    "parse_yaml",
    "placeholders",
]


@dataclass(frozen=True, slots=True)
class Spec:
    """A loaded validation spec: its sections, where it came from, and the functions its
    ``module:function`` references named (imported once, when the spec was loaded)."""

    source: str
    name: str
    dependence: DependenceSpec
    equality: EqualitySpec
    output: OutputSpec
    reference: ApplicationSpec | None
    candidate: ApplicationSpec | None
    #: a recovery validation's application and how it is crashed and checked
    application: ApplicationSpec | None
    recovery: RecoverySpec | None
    input: InputSpec | None
    expectations: ExpectationsSpec
    noise: NoiseSpec
    schedule: str | None
    gate: GateSpec
    #: how its DAG runs on Airflow: concurrency, pool, task timeouts
    airflow: AirflowSpec = field(default_factory=AirflowSpec)
    #: how schema differences weigh in the verdict (``matcher.schema``)
    schema: SchemaSpec = field(default_factory=SchemaSpec)
    #: operators to re-test for their properties on each scheduled run (``parity properties``)
    properties: tuple[PropertyTestSpec, ...] = ()
    functions: Mapping[str, Callable[..., Any]] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )

    def build_dependence(self) -> dep.Dependence:
        """The matcher's dependence relation for this spec (a new object each call)."""
        d = self.dependence
        if d.typed is not None:
            classify = d.typed.classify
            return dep.typed(
                classify.column or self.functions[classify.function or ""],
                d.typed.types,
                d.typed.edges,
                classify_columns=classify.columns,
            )
        if d.punctuation is not None:
            test, columns = self._event_test(d.punctuation)
            return dep.punctuation(test, d.punctuation.timestamp, columns)
        if d.predicate is not None:
            return dep.Predicate(self.functions[d.predicate], d.columns, name=d.predicate)
        if d.key is not None:
            base = dep.by_key(*d.key)
        else:
            base = dep.ordered() if d.ordered else dep.unordered()
        if d.barrier is None:
            return base
        test, columns = self._event_test(d.barrier)
        return dep.with_barriers(base, test, columns)

    def _event_test(self, test: EventTestSpec) -> tuple[dep.EventTest, tuple[str, ...] | None]:
        if test.function is not None:
            return self.functions[test.function], test.columns
        assert test.column is not None and test.equals is not None  # the model checked it
        return dep.column_equals(test.column, *test.equals), (test.column,)

    def build_equality(self) -> Equality:
        """The matcher's equality for this spec."""
        e = self.equality
        return Equality(
            ignore=frozenset(e.ignore),
            tolerance={c: Tolerance(abs=t.abs, rel=t.rel) for c, t in e.tolerance.items()},
            normalize=dict(e.normalize),
            nan_equal=e.nan_equal,
            function=None if e.function is None else self.functions[e.function],
            function_name=e.function,
        )

    def referenced_columns(self) -> Iterator[tuple[str, str]]:
        """Every ``(dotted.key, column)`` the spec names, in file order."""
        d, e = self.dependence, self.equality
        for column in d.key or ():
            yield "dependence.key", column
        for name, test in (("barrier", d.barrier), ("punctuation", d.punctuation)):
            if test is not None:
                if isinstance(test, PunctuationSpec):
                    yield "dependence.punctuation.timestamp", test.timestamp
                if test.column is not None:
                    yield f"dependence.{name}.column", test.column
                for column in test.columns or ():
                    yield f"dependence.{name}.columns", column
        if d.typed is not None:
            classify = d.typed.classify
            if classify.column is not None:
                yield "dependence.typed.classify", classify.column
            for column in classify.columns or ():
                yield "dependence.typed.classify.columns", column
            for type_name, key in d.typed.types.items():
                for column in key or ():
                    yield f"dependence.typed.types.{type_name}", column
        for column in d.columns or ():
            yield "dependence.columns", column
        for column in e.ignore:
            yield "equality.ignore", column
        for column in e.tolerance:
            yield "equality.tolerance", column
        for column in e.normalize:
            if column != ALL_COLUMNS:
                yield "equality.normalize", column
        for column in self.output.order_by:
            yield "output.order_by", column

    def check_columns(
        self, columns: Sequence[str], where: str = "", other: Sequence[str] = ()
    ) -> None:
        """Fail when the spec names a column that an output lacks (a typo, or a schema
        change), before any event is compared. A column in ``equality.ignore`` need only be
        in one of the outputs (``other``: the other one's columns): it is exempt from the
        schema comparison, so it may come or go."""
        known = set(columns)
        either = known | set(other)
        for key, column in self.referenced_columns():
            if key == "equality.ignore" and column in either:
                continue
            if column not in known:
                shown = ", ".join(columns[:30]) + (", ..." if len(columns) > 30 else "")
                place = f" in {where}" if where else ""
                raise SpecError(
                    f"{self.source}: {key}: unknown column {column!r}{place} "
                    f"(output columns: {shown or 'none'})"
                )


def load_spec(path: str | Path) -> Spec:
    """Read, validate and build the spec in ``path``; ``module:function`` references are
    imported from ``sys.path`` and the spec file's directory."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{source}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise SpecError(f"{source}: cannot read the spec: {exc.strerror or exc}") from exc
    return parse_spec(parse_yaml(text, source), source, base_dir=Path(path).resolve().parent)


def parse_spec(data: Any, source: str = "<spec>", base_dir: str | Path | None = None) -> Spec:
    """Validate a mapping (parsed YAML) and build the spec; errors name ``source``."""
    doc = validate_document(data, source)
    functions = {
        ref: _import(ref, f"{source}: {key}", base_dir) for key, ref in _function_refs(doc)
    }
    spec = Spec(
        source=source,
        name=doc.name or Path(source).stem,
        functions=MappingProxyType(functions),
        schema=doc.schema_,
        **{name: getattr(doc, name) for name in _SECTIONS},
    )
    try:
        dependence = spec.build_dependence()
    except SpecError as exc:
        raise SpecError(f"{source}: dependence: {exc}") from exc
    try:
        equality = spec.build_equality()
    except SpecError as exc:
        raise SpecError(f"{source}: equality: {exc}") from exc
    try:
        equality.check_compatible(dependence.columns)
    except IncompatibleEqualityError as exc:
        key = _loosening_key(equality, dependence.columns or frozenset())
        raise IncompatibleEqualityError(f"{source}: {key}: {exc}") from exc
    return spec


_SECTIONS = (
    "dependence", "equality", "output", "reference", "candidate", "application", "recovery",
    "input", "expectations", "noise", "schedule", "gate", "airflow", "properties",
)  # fmt: skip


def _loosening_key(equality: Equality, columns: frozenset[str]) -> str:
    # The same search as Equality.check_compatible, to point at the key to change.
    for column in sorted(columns):
        for key, loosened in (
            ("ignore", equality.ignore),
            ("tolerance", equality.tolerance),
            ("normalize", equality.normalize),
        ):
            if column in loosened:
                return f"equality.{key}"
    return "equality.normalize"


def function_refs(data: Any, source: str = "<spec>") -> dict[str, str]:
    """The ``module:function`` references of a spec document, by key
    (``dependence.predicate``), validated but not imported: importing runs the module's
    code, so whoever decides whether it may run asks this first (``parity.airflow.plan``)."""
    return dict(_function_refs(validate_document(data, source)))


def _function_refs(doc: SpecDocument) -> Iterator[tuple[str, str]]:
    d = doc.dependence
    candidates = (
        ("dependence.predicate", d.predicate),
        ("dependence.barrier.function", d.barrier and d.barrier.function),
        ("dependence.typed.classify.function", d.typed and d.typed.classify.function),
        ("dependence.punctuation.function", d.punctuation and d.punctuation.function),
        ("equality.function", doc.equality.function),
    )
    return ((key, ref) for key, ref in candidates if ref)


def _import(ref: str, where: str, base_dir: str | Path | None) -> Callable[..., Any]:
    """Import ``module:function``; the spec's directory is searched after ``sys.path``.

    The directory is on ``sys.path`` only while importing, so that loading a spec leaves
    the interpreter as it found it (modules imported stay in ``sys.modules``).
    """
    module_name, _, attribute = ref.partition(":")
    extra = [] if base_dir is None or str(base_dir) in sys.path else [str(base_dir)]
    sys.path.extend(extra)
    try:
        importlib.invalidate_caches()
        target: object = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # user code: any failure while importing it (a
        # sys.exit() too: it would end the command with its code) is a spec problem
        problem = " ".join(str(exc).split())
        raise SpecError(f"{where}: cannot import {ref!r}: {type(exc).__name__}: {problem}") from exc
    finally:
        for directory in extra:
            sys.path.remove(directory)
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise SpecError(f"{where}: cannot import {ref!r}: no attribute {part!r}") from exc
    if not callable(target):
        raise SpecError(f"{where}: {ref!r} is not callable")
    return target


# --- YAML --------------------------------------------------------------------------------


#: How deeply a spec's mappings and lists may nest (a real one nests about six levels).
#: Checked on the parser's events, which come from a loop, before PyYAML's composer, which
#: recurses per level and would otherwise meet Python's recursion limit (a RecursionError
#: no caller expects, at a depth that depends on the caller's stack).
MAX_SPEC_NESTING = 100


class _Loader(yaml.SafeLoader):
    """Safe YAML that rejects duplicate keys (the later one would silently win) and reads
    ``1e-9`` as a number, as YAML 1.2 does (PyYAML's 1.1 rules make it a string)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text; a syntax error becomes one line naming the file and line."""
    try:
        _check_nesting(text, source)
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(f"{source}: {where}YAML syntax error: {problem}") from exc
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: YAML syntax error: {' '.join(str(exc).split())}") from exc


def _check_nesting(text: str, source: str) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_SPEC_NESTING:
                line = f"line {event.start_mark.line + 1}: " if event.start_mark else ""
                raise SpecError(
                    f"{source}: {line}nested deeper than {MAX_SPEC_NESTING} levels: not a "
                    "validation spec"
                )
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1
