"""The schema of the validation spec: pydantic models of every section, as the YAML says it.

The models are the typed boundary: frozen, unknown keys forbidden, single names accepted
where a list is expected (``key: taxi_id``). ``validate_document`` turns pydantic's
``ValidationError`` into one ``SpecError`` line, ``FILE: dotted.key: problem``, because the
person reading it is fixing a YAML file, not debugging Python. ``matcher.spec`` loads files
and builds matcher objects from these values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from matcher.errors import SpecError

FORMATS = ("parquet", "json", "jsonl", "csv")
DEPENDENCE_FORMS = ("unordered", "ordered", "key", "typed", "punctuation", "predicate")
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_WINDOW = re.compile(r"^[1-9][0-9]*[smhdw]$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def _listify(value: Any) -> Any:
    """A single name stands for a one-item list: ``key: taxi_id`` is ``key: [taxi_id]``."""
    return [value] if isinstance(value, str) else value


def _text(value: Any) -> Any:
    # Spark arguments and conf values are strings; YAML reads 8 and true as number and bool.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, (int, float)) else value


def _scalars(value: Any) -> Any:
    """``equals`` is a value or a list of values, each a string, number or boolean."""
    values = value if isinstance(value, list) else [value]
    for item in values:
        if not isinstance(item, str | int | float | bool):
            raise ValueError(f"expected strings, numbers or booleans, got {_show(item)}")
    return values


def _ref(value: str) -> str:
    if not _REF.match(value):
        raise ValueError(f"expected 'module:function', got {value!r}")
    return value


Name = Annotated[str, Field(min_length=1)]
Columns = Annotated[tuple[Name, ...], BeforeValidator(_listify), Field(min_length=1)]
Text = Annotated[str, BeforeValidator(_text)]
Ref = Annotated[str, AfterValidator(_ref)]
Format = Literal["parquet", "json", "jsonl", "csv"]
Normalisation = Literal["trim", "lower", "upper", "casefold"]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ApplicationSpec(_Section):
    """A Spark application run by the pipeline (used by the Airflow pipeline)."""

    application: Name
    args: tuple[Text, ...] = ()
    conf: dict[str, Text] = {}
    version: str | None = None


class SliceSpec(_Section):
    """Which part of the replayed input to use: a time window and/or a key-hash sample."""

    column: Name | None = None
    window: str | None = None
    sample: Annotated[float, Field(gt=0, le=1)] | None = None

    @field_validator("window")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value is not None and not _WINDOW.match(value):
            raise ValueError(f"expected a duration such as 30m, 6h, 1d or 2w, got {value!r}")
        return value

    @model_validator(mode="after")
    def _window_needs_column(self) -> SliceSpec:
        if self.window is not None and self.column is None:
            raise ValueError("a window needs the time column it applies to ('column')")
        return self


class InputSpec(_Section):
    """The replayed production input both versions read (used by the Airflow pipeline)."""

    path: Name
    format: Format | None = None
    slice: SliceSpec | None = None


class OutputSpec(_Section):
    """How to read both outputs: their format, and the columns that give their order when
    file and row order do not (an output written by many tasks)."""

    format: Format | None = None
    order_by: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()


class NoiseSpec(_Section):
    """Reference reruns: a reference that disagrees with itself makes a verdict noisy."""

    reference_runs: Annotated[int, Field(ge=1)] = 1


class GateSpec(_Section):
    """What opens the deploy gate (used by the Airflow pipeline and ``parity gate``)."""

    require: Literal["equivalent"] = "equivalent"
    allow_noisy: bool = False
    expectations: bool = True


class EventTestSpec(_Section):
    """Recognises events: ``column`` equal to one of ``equals``, or ``function(event)``."""

    column: Name | None = None
    equals: Annotated[tuple[Any, ...], BeforeValidator(_scalars)] | None = None
    function: Ref | None = None
    columns: Annotated[tuple[Name, ...], BeforeValidator(_listify)] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> EventTestSpec:
        by_column = self.column is not None or self.equals is not None
        if by_column == (self.function is not None):
            raise ValueError("give either 'column' and 'equals', or 'function'")
        if by_column and (self.column is None or self.equals is None):
            raise ValueError("'column' and 'equals' go together")
        if by_column and self.columns is not None:
            raise ValueError("'columns' describes a 'function'; with 'column' it is implied")
        return self


class BarrierSpec(EventTestSpec):
    """Barrier events: dependent with every event (end-of-day, end-of-file markers)."""


class PunctuationSpec(EventTestSpec):
    """Punctuation events and the timestamp column they are ordered against."""

    timestamp: Name


class ClassifySpec(_Section):
    """How a typed dependence finds an event's type: a column, or a function."""

    column: Name | None = None
    function: Ref | None = None
    columns: Annotated[tuple[Name, ...], BeforeValidator(_listify)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_column(cls, value: Any) -> Any:
        return {"column": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_way(self) -> ClassifySpec:
        if (self.column is None) == (self.function is None):
            raise ValueError("give a column name or {function: 'module:function'}")
        return self


class TypedSpec(_Section):
    """Event types, their key columns (``None``: unkeyed) and the dependence graph."""

    classify: ClassifySpec
    types: dict[Name, Columns | None]
    edges: tuple[tuple[Name, ...], ...] = ()


class DependenceSpec(_Section):
    """Exactly one form, plus ``barrier`` (with key/ordered/unordered) or ``columns``
    (what a predicate reads)."""

    unordered: bool = False
    ordered: bool = False
    key: Columns | None = None
    barrier: BarrierSpec | None = None
    typed: TypedSpec | None = None
    punctuation: PunctuationSpec | None = None
    predicate: Ref | None = None
    columns: Annotated[tuple[Name, ...], BeforeValidator(_listify)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_word(cls, value: Any) -> Any:
        if isinstance(value, str) and value in ("unordered", "ordered"):
            return {value: True}
        if not isinstance(value, Mapping):
            raise ValueError(f"expected 'unordered', 'ordered' or a mapping, got {_show(value)}")
        return value

    @model_validator(mode="after")
    def _one_form(self) -> DependenceSpec:
        given = [name for name in DEPENDENCE_FORMS if getattr(self, name) not in (None, False)]
        if len(given) != 1:
            got = " and ".join(given) or "none"
            raise ValueError(f"give exactly one of {', '.join(DEPENDENCE_FORMS)}; got {got}")
        if self.barrier is not None and given[0] not in ("unordered", "ordered", "key"):
            raise ValueError(f"'barrier' combines with key, ordered or unordered, not {given[0]}")
        if self.columns is not None and given[0] != "predicate":
            raise ValueError("'columns' names what a predicate reads; it needs 'predicate'")
        return self

    @property
    def form(self) -> str:
        return next(name for name in DEPENDENCE_FORMS if getattr(self, name) not in (None, False))


class ToleranceSpec(_Section):
    """Numeric closeness; the matcher's ``Tolerance`` checks it again, this reports where."""

    abs: NonNegative = 0.0
    rel: NonNegative = 0.0


class EqualitySpec(_Section):
    """When two events count as equal; a ``function`` replaces the column rules."""

    ignore: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    tolerance: dict[Name, ToleranceSpec] = {}
    normalize: dict[Name, Annotated[tuple[Normalisation, ...], BeforeValidator(_listify)]] = {}
    nan_equal: bool = True
    function: Ref | None = None

    @model_validator(mode="after")
    def _function_alone(self) -> EqualitySpec:
        if self.function is not None and (self.ignore or self.tolerance or self.normalize):
            raise ValueError("'function' replaces ignore, tolerance and normalize: give one")
        return self


class SpecDocument(_Section):
    """The whole file, as validated; ``Spec`` adds where it came from and its functions."""

    name: str | None = None
    reference: ApplicationSpec | None = None
    candidate: ApplicationSpec | None = None
    input: InputSpec | None = None
    output: OutputSpec = OutputSpec()
    dependence: DependenceSpec
    equality: EqualitySpec = EqualitySpec()
    expectations: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    noise: NoiseSpec = NoiseSpec()
    schedule: Name | None = None
    gate: GateSpec = GateSpec()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError(f"use letters, digits, '_', '-' and '.', got {value!r}")
        return value


def validate_document(data: Any, source: str) -> SpecDocument:
    """Validate parsed YAML; the first problem becomes a ``SpecError`` naming ``source``."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: expected a mapping of sections, got {_show(data)}")
    try:
        return SpecDocument.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{source}: {_first_problem(exc)}") from exc


# --- one line per validation problem ---------------------------------------------------

_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "finite_number": "a finite number",
}
_BOUNDS = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
_BOUND_KEYS = {"greater_than_equal": "ge", "greater_than": "gt", "less_than_equal": "le"}


def _first_problem(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    key = _dotted(loc)
    problem = _problem(first, loc)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{key}: {problem}{more}" if key else f"{problem}{more}"


def _problem(error: Any, loc: tuple[Any, ...]) -> str:
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        known = _known_keys(loc[:-1])
        return "unknown key" + (f" (expected one of: {', '.join(known)})" if known else "")
    if kind in _EXPECTED:
        hint = " (quote it)" if kind == "string_type" and isinstance(value, int | float) else ""
        return f"expected {_EXPECTED[kind]}, got {_show(value)}{hint}"
    if kind == "literal_error":
        return f"expected {ctx.get('expected')}, got {_show(value)}"
    if kind in ("too_short", "string_too_short"):
        return "must not be empty"
    if kind in _BOUNDS:
        return f"must be {_BOUNDS[kind]} {ctx.get(_BOUND_KEYS[kind])}, got {_show(value)}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    return str(error["msg"])


def _dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed at ``loc``, found by walking the models' annotations."""
    annotation: Any = SpecDocument
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            info = annotation.model_fields.get(str(part))
            annotation = None if info is None else info.annotation
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        elif get_origin(annotation) is tuple:
            annotation = get_args(annotation)[0]
        else:
            return []
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or origin is UnionType:
            rest = [a for a in get_args(annotation) if a is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return repr(value)
