"""The spec reference page, walked from the schema: every section of ``SpecDocument`` a
table of its keys, their types and defaults from the models, their meaning from
``spec_meanings``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import types
import typing
from collections.abc import Iterator
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from matcher.spec_schema import SpecDocument
from tools.gen_reference import REGENERATE
from tools.gen_reference.spec_meanings import INTRO, MEANINGS, SECTIONS

Model = type


@dataclasses.dataclass(frozen=True)
class Key:
    """One key of the spec: its dotted path, its annotation, its constraints and default."""

    path: str
    annotation: Any
    metadata: tuple[Any, ...]
    default: Any


def _fields(model: Model) -> Iterator[tuple[str, Any, tuple[Any, ...], Any]]:
    """(YAML key, annotation, constraints, default) of a pydantic model or a dataclass."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        for name, info in model.model_fields.items():
            yield info.alias or name, info.annotation, tuple(info.metadata), info.default
        return
    hints = typing.get_type_hints(model, include_extras=True)
    for field in dataclasses.fields(typing.cast(Any, model)):
        default = field.default if field.default is not dataclasses.MISSING else PydanticUndefined
        yield field.name, hints[field.name], (), default


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and (
        issubclass(value, BaseModel) or dataclasses.is_dataclass(value)
    )


def _strip(annotation: Any) -> tuple[Any, tuple[Any, ...], bool]:
    """The annotation without ``| None`` and ``Annotated``: (type, constraints, optional)."""
    metadata: list[Any] = []
    optional = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = typing.get_args(annotation)
            for item in extra:
                metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        elif origin in (typing.Union, types.UnionType):
            rest = [a for a in typing.get_args(annotation) if a is not type(None)]
            optional = True
            annotation = rest[0] if len(rest) == 1 else annotation
            if len(rest) != 1:
                return annotation, tuple(metadata), optional
        else:
            return annotation, tuple(metadata), optional


def _nested(annotation: Any) -> tuple[Model, str] | None:
    """The model a key holds, and how its keys are written below it (``.``, ``.COLUMN.``,
    ``[].``): a section, a mapping of sections, a list of sections."""
    bare, _, _ = _strip(annotation)
    if _is_model(bare):
        return bare, "."
    origin, args = typing.get_origin(bare), typing.get_args(bare)
    if origin is dict and _is_model(_strip(args[1])[0]):
        return _strip(args[1])[0], ".COLUMN."
    if origin is tuple and args and _is_model(_strip(args[0])[0]):
        return _strip(args[0])[0], "[]."
    return None


def spec_keys(model: Model | None = None, prefix: str = "") -> Iterator[Key]:
    """Every key of the spec (of ``model``, default the whole document), each section
    followed by its keys, in the schema's order."""
    for name, annotation, metadata, default in _fields(model or SpecDocument):
        path = prefix + name
        yield Key(path, annotation, metadata, default)
        nested = _nested(annotation)
        if nested is not None:
            yield from spec_keys(nested[0], path + nested[1])


def _bounds(metadata: tuple[Any, ...]) -> str:
    low = high = ""
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            low = f"≥ {item.ge}"
        elif isinstance(item, annotated_types.Gt):
            low = f"> {item.gt}"
        elif isinstance(item, annotated_types.Le):
            high = f"≤ {item.le}"
    if low.startswith("≥") and high:
        return f", {low[2:]} to {high[2:]}"
    return ", " + " and ".join(p for p in (low, high) if p) if low or high else ""


def _validators(metadata: tuple[Any, ...]) -> set[str]:
    return {getattr(getattr(m, "func", None), "__name__", "") for m in metadata}


def describe(annotation: Any, metadata: tuple[Any, ...] = ()) -> str:
    """A key's type in words, as a YAML writer needs it."""
    bare, inner, _ = _strip(annotation)
    metadata = (*metadata, *inner)
    origin, args = typing.get_origin(bare), typing.get_args(bare)
    if _is_model(bare):
        return "mapping (below)"
    if origin is typing.Literal:
        names = [f"`{json.dumps(a)}`" if not isinstance(a, str) else f"`{a}`" for a in args]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = describe(args[0])
            single = (
                " (one item may be written alone)" if "_listify" in _validators(metadata) else ""
            )
            if "_scalars" in _validators(metadata):
                return f"{item}, or a list of them"
            item = {"string": "strings", "mapping (below)": "mappings (below)"}.get(item, item)
            return f"list of {item}{single}"
        return "list"
    if origin is dict:
        return f"mapping of string to {describe(args[1])}"
    if bare is bool:
        return "boolean"
    if bare is int:
        return "integer" + _bounds(metadata)
    if bare is float:
        return "number" + _bounds(metadata)
    if bare is dt.datetime:
        return "ISO 8601 date-time with a zone"
    if bare is str:
        return "`module:function`" if "_ref" in _validators(metadata) else "string"
    if bare is typing.Any:
        return "a string, number or boolean"
    raise ValueError(f"no words for the type {bare!r}: teach tools/gen_reference/spec.py")


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return json.dumps(value)


def default_text(key: Key) -> str:
    """A key's default: required, none, or its value as YAML."""
    if key.default is PydanticUndefined:
        return "**required**"
    if key.default is None:
        return "none"
    if _is_model(type(key.default)):
        return "its keys' defaults"
    return f"`{_yaml(key.default)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_spec_page() -> str:
    """The whole page: an introduction, then a table per section."""
    every = list(spec_keys())
    paths = {k.path for k in every}
    missing = sorted(paths - MEANINGS.keys())
    unknown = sorted(MEANINGS.keys() - paths)
    if missing or unknown:
        raise ValueError(
            "tools/gen_reference/spec_meanings.py must give one meaning per spec key; "
            f"missing: {missing or 'none'}; for keys the schema lacks: {unknown or 'none'}"
        )
    sections: dict[str, list[Key]] = {"": []}
    for key in every:
        parent = next(
            (p for p in sorted(sections, key=len, reverse=True) if p and _under(key.path, p)), ""
        )
        sections[parent].append(key)
        if _nested(key.annotation) is not None:
            sections[key.path] = []
    lines = [
        "# The validation spec",
        "",
        f"<!-- Generated from matcher/spec_schema.py by `{REGENERATE}`; do not edit. -->",
        "",
        INTRO.strip(),
        "",
    ]
    for section, members in sections.items():
        title = f"`{section}`" if section else "Top-level keys"
        lines += [f"## {title}", ""]
        if section in SECTIONS:
            lines += [SECTIONS[section].strip(), ""]
        lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for key in members:
            cells = (
                f"`{key.path}`",
                describe(key.annotation, key.metadata),
                default_text(key),
                MEANINGS[key.path],
            )
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _under(path: str, section: str) -> bool:
    return path.startswith(section + ".") or path.startswith(section + "[]")
