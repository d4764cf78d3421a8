"""Pydantic's validation errors as the one line a person fixing a YAML file needs.

    first_problem(exc, SpecDocument)   # 'dependence.key[1]: expected a string, got 3 (quote it)'

The location becomes a dotted key (``equality.tolerance.x.abs``, ``args[2]``), the error a
short sentence; an unknown key lists the keys allowed there, found by walking the models'
annotations from ``root``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "dataclass_type": "a mapping",
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


def first_problem(exc: ValidationError, root: type[BaseModel]) -> str:
    """The first problem of ``exc`` as ``dotted.key: problem`` (plus how many more)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    key = _dotted(loc)
    problem = _problem(first, loc, root)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{key}: {problem}{more}" if key else f"{problem}{more}"


def _problem(error: Any, loc: tuple[Any, ...], root: type[BaseModel]) -> str:
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "required key is missing"
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):  # a model's, a dataclass's
        known = _known_keys(loc[:-1], root)
        return "unknown key" + (f" (expected one of: {', '.join(known)})" if known else "")
    if kind in _EXPECTED:
        hint = " (quote it)" if kind == "string_type" and isinstance(value, int | float) else ""
        return f"expected {_EXPECTED[kind]}, got {show(value)}{hint}"
    if kind == "literal_error":
        return f"expected {ctx.get('expected')}, got {show(value)}"
    if kind in ("too_short", "string_too_short"):
        return "must not be empty"
    if kind in _BOUNDS:
        return f"must be {_BOUNDS[kind]} {ctx.get(_BOUND_KEYS[kind])}, got {show(value)}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    return str(error["msg"])


def _dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _known_keys(loc: tuple[Any, ...], root: type[BaseModel]) -> list[str]:
    """The keys allowed at ``loc``, found by walking the models' annotations."""
    annotation: Any = root
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            info = _by_key(annotation).get(str(part))
            annotation = None if info is None else info.annotation
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        elif get_origin(annotation) is tuple:
            annotation = get_args(annotation)[0]
        else:
            return []
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(_by_key(annotation))
    if is_dataclass(annotation):  # a section kept free of pydantic (matcher.gate.GateSpec)
        return [f.name for f in fields(annotation)]
    return []


def _by_key(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by the key the YAML spells (an alias: ``schema`` for ``schema_``)."""
    return {info.alias or name: info for name, info in model.model_fields.items()}


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


def show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return repr(value)
