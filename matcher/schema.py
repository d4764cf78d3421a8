"""Schemas of the two outputs and how they differ: findings of the verdict, never a crash.

An output's ``Schema`` is its columns in order, each with a type spelled as Spark spells it
(``simpleString``: ``int``, ``bigint``, ``decimal(10,2)``, ``array<string>``,
``struct<a:int>``) and whether it may hold nulls. The readers build one without Spark
(``matcher.files.readers.read_schema``), the Spark engine from a ``StructType``
(``matcher.spark.schema``); ``diff_schemas`` is the one rule both engines apply.

Findings, for every column not in ``equality.ignore`` (those are exempt):

* ``added`` / ``removed``: the column is only in the candidate / only in the reference;
* ``retyped``: the type changed; ``widening`` when every value of the reference's type is
  exactly a value of the candidate's (``widens``); ``inferred`` when both types are number
  types inferred from text (JSON lines; CSV without ``output.schema``), which follow the
  values an output happened to hold (JSON has one number type: ``85`` is ``bigint``,
  ``85.1`` ``double``), at the top level or as the elements of arrays;
* ``nullability``: the column may hold nulls on one side only;
* ``order``: the columns both outputs have stand in another order (one finding).

``schema.mode`` says which findings make the verdict divergent: ``strict`` all of them;
``compatible`` (the default) added, removed and retyped ones that neither widen nor are
inferred, the others are listed; ``ignore`` none, and nothing is listed.

Widening (reference type -> candidate type) is lossless only, Spark's ``Cast.canUpCast``
less the casts it allows that round (int -> float, bigint -> float, bigint -> double,
decimal -> double): tinyint -> smallint -> int -> bigint; tinyint and smallint -> float;
tinyint, smallint and int -> double; float -> double; an integral type -> ``decimal(p,s)``
with ``p - s`` at least its digits (3, 5, 10, 20: Spark's ``DecimalType.forType``);
``decimal(p,s) -> decimal(p',s')`` with ``s' >= s`` and ``p'-s' >= p-s``. Nothing else
widens: not dates to timestamps (the value would depend on the session time zone), not
nested types (``array<int> -> array<bigint>`` is a retyping that does not widen).

Values are compared on every column both outputs have (``comparison_plan``). When the two
types have a common type, both sides are widened to it first (``widen``, as Spark casts):
the wider of the two when one widens to the other, else the tightest lossless one (``int``
and ``float`` as ``double``), else, for integral, float and decimal types, ``double`` or a
decimal wide enough (``bigint`` and ``double`` as ``double``: a rounding comparison, but the
retyping is divergent under ``compatible`` anyway). A decimal and a ``float`` or
``double`` have no common type: the float is the decimal's value only by rounding.

A column whose types have no common type is still compared, under every ``schema.mode``:
its values as read, by the rules of ``matcher.equality`` (exact equality is same kind and
value). So values of different kinds never equal each other, null vs null aside
(``string`` vs ``bigint``: ``"1"`` is not ``1``; ``boolean`` vs ``bigint``: ``true`` is not
``1``); a decimal never equals a double, unless the column has a tolerance, which compares
them in double precision; arrays, maps and structs are compared element by element, key
by key and field by field (``array<int>`` vs ``array<bigint>``: ``[1]`` is ``[1]``; a
struct field one side lacks reads as null). The Spark engine says the same in SQL
(``matcher.spark.conform``). A column the dependence reads must have a common type: else
the comparison is an error (exit 2), since events could not be keyed alike.

Worked examples (``schema: {mode: ignore}``, so only values count): ``v`` is
``decimal(10,2)`` holding 1.50 in the reference and ``double`` holding 1.5 in the
candidate: a corruption, equal under ``tolerance: {v: {abs: 1e-9}}``; ``s`` is ``string``
holding "1" and ``bigint`` holding 1: a corruption; both null: equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from matcher.verdict import Verdict

Mode = Literal["strict", "compatible", "ignore"]
MODES: tuple[Mode, ...] = ("strict", "compatible", "ignore")
DEFAULT_MODE: Mode = "compatible"
FindingKind = Literal["added", "removed", "retyped", "nullability", "order"]
FINDING_KINDS: tuple[FindingKind, ...] = ("added", "removed", "retyped", "nullability", "order")

#: integral types, narrowest first, with the decimal digits their values need
_INTEGRAL = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
#: the integral types whose every value a float (24-bit mantissa) / double (53) holds exactly
_EXACT_IN = {"float": ("tinyint", "smallint"), "double": ("tinyint", "smallint", "int")}
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")
_MAX_PRECISION = 38


@dataclass(frozen=True, slots=True)
class Field:
    """One column of an output: its name, type (Spark's spelling) and nullability;
    ``inferred``: the type was inferred from text (JSON lines, CSV without declared types),
    so a number type follows the values (not compared: a detail of how it was read)."""

    name: str
    type: str
    nullable: bool = True
    inferred: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class Schema:
    """An output's columns in order."""

    fields: tuple[Field, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


@dataclass(frozen=True, slots=True)
class SchemaFinding:
    """One schema difference. ``reference``/``candidate`` hold the column's type
    (``retyped``, and the one side of ``added``/``removed``), ``nullable``/``not null``
    (``nullability``) or the shared columns in each side's order (``order``).
    ``compared_as`` is the type a retyped column's values were compared at (``None``: no
    common type, compared as read); ``inferred``: both types are numbers inferred from text
    (listed under ``compatible``)."""

    kind: FindingKind
    column: str | None
    reference: str | tuple[str, ...] | None
    candidate: str | tuple[str, ...] | None
    divergent: bool
    widening: bool = False
    compared_as: str | None = None
    inferred: bool = False

    def explain(self) -> str:
        """One line for a human; column names are ``repr``'d and control characters in
        types escaped (both are data: a struct's field names are in its type)."""
        line = self._explain()
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)

    def _explain(self) -> str:
        name = repr(self.column)
        if self.kind == "added":
            return f"column {name} ({self.candidate}) is new in the candidate"
        if self.kind == "removed":
            return f"column {name} ({self.reference}) is missing from the candidate"
        if self.kind == "nullability":
            return (
                f"column {name} is {self.reference} in the reference, "
                f"{self.candidate} in the candidate"
            )
        if self.kind == "order":
            return (
                f"columns stand in another order: reference {list(self.reference or ())}, "
                f"candidate {list(self.candidate or ())}"
            )
        how = (
            "widening"
            if self.widening
            else "numbers inferred from text"
            if self.inferred
            else "not widening"
        )
        compared = (
            f"values compared as {self.compared_as}"
            if self.compared_as
            else "values compared as read"
        )
        return (
            f"column {name} changed type {self.reference} -> {self.candidate} ({how}; {compared})"
        )

    def to_dict(self) -> dict[str, Any]:
        def side(value: str | tuple[str, ...] | None) -> Any:
            return list(value) if isinstance(value, tuple) else value

        return {
            "kind": self.kind,
            "column": self.column,
            "reference": side(self.reference),
            "candidate": side(self.candidate),
            "divergent": self.divergent,
            "widening": self.widening,
            "compared_as": self.compared_as,
            "inferred": self.inferred,
            "explanation": self.explain(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchemaFinding:
        def side(value: Any) -> str | tuple[str, ...] | None:
            return tuple(value) if isinstance(value, list) else value

        return cls(
            kind=data["kind"],
            column=data.get("column"),
            reference=side(data.get("reference")),
            candidate=side(data.get("candidate")),
            divergent=bool(data.get("divergent")),
            widening=bool(data.get("widening")),
            compared_as=data.get("compared_as"),
            inferred=bool(data.get("inferred")),
        )


@dataclass(frozen=True, slots=True)
class SchemaDiff:
    """The schema findings of a comparison under ``mode``, in column order (the reference's,
    then the candidate's new columns, then ``order``)."""

    mode: Mode = DEFAULT_MODE
    findings: tuple[SchemaFinding, ...] = ()

    @property
    def divergent(self) -> bool:
        return any(f.divergent for f in self.findings)

    def summary(self) -> str:
        """``same``, or ``3 differences (1 divergent)``."""
        if not self.findings:
            return "same" if self.mode != "ignore" else "not compared (schema.mode ignore)"
        n, bad = len(self.findings), sum(f.divergent for f in self.findings)
        return f"{n} difference{'s' if n != 1 else ''} ({bad} divergent)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "divergent": self.divergent,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchemaDiff:
        mode = data.get("mode", DEFAULT_MODE)
        return cls(
            mode=mode if mode in MODES else DEFAULT_MODE,
            findings=tuple(SchemaFinding.from_dict(f) for f in data.get("findings", ())),
        )


@dataclass(frozen=True, slots=True)
class Compared:
    """A column whose values are compared: each side's type and the type both are compared
    at (``widen`` turns a side's value into it), ``None`` when they have no common type:
    the values are compared as read."""

    name: str
    reference: str
    candidate: str
    type: str | None


def decimal_of(type_: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of a decimal type, or of the decimal an integral type's
    values fit (Spark's ``DecimalType.forType``); ``None`` for other types."""
    if type_ in _INTEGRAL:
        return _INTEGRAL[type_], 0
    match = _DECIMAL.match(type_)
    return (int(match[1]), int(match[2])) if match else None


def widens(narrow: str, wide: str) -> bool:
    """Whether every value of ``narrow`` is exactly a value of ``wide`` (a different type)."""
    if narrow == wide:
        return False
    if narrow in _INTEGRAL and wide in _INTEGRAL:
        return _INTEGRAL[narrow] < _INTEGRAL[wide]
    if wide in _EXACT_IN:
        return narrow in _EXACT_IN[wide] or (narrow, wide) == ("float", "double")
    a, b = decimal_of(narrow), decimal_of(wide)
    if a is None or b is None or wide in _INTEGRAL:
        return False
    return b[1] >= a[1] and b[0] - b[1] >= a[0] - a[1]


def _numeric(type_: str) -> bool:
    return _floating(type_) or decimal_of(type_) is not None


def _floating(type_: str) -> bool:
    return type_ in ("float", "double")


def _is_decimal(type_: str) -> bool:
    return _DECIMAL.match(type_) is not None


def common_type(a: str, b: str) -> str | None:
    """The type values of types ``a`` and ``b`` are compared at, or ``None``: not comparable
    (see the module's docstring)."""
    if a == b or widens(b, a):
        return a
    if widens(a, b):
        return b
    if not (_numeric(a) and _numeric(b)):
        return None
    if _floating(a) != _floating(b) and (_is_decimal(a) or _is_decimal(b)):
        return None  # a decimal and a float: never equal exactly, so no common type
    if widens(a, "double") and widens(b, "double"):
        return "double"
    x, y = decimal_of(a), decimal_of(b)
    if x is not None and y is not None:
        scale = max(x[1], y[1])
        digits = max(x[0] - x[1], y[0] - y[1]) + scale
        if digits <= _MAX_PRECISION:
            return f"decimal({digits},{scale})"
    return "double"


def widen(value: Any, type_: str) -> Any:
    """``value`` as a value of ``type_``, as Spark's cast gives it (``None`` stays)."""
    if value is None or isinstance(value, bool):
        return value
    if type_ in ("double", "float"):
        return float(value) if isinstance(value, int | Decimal) else value
    scale = decimal_of(type_)
    if scale is not None and type_ not in _INTEGRAL and isinstance(value, int | Decimal):
        return Decimal(value).quantize(Decimal(1).scaleb(-scale[1]))
    return value


def comparison_plan(reference: Schema, candidate: Schema) -> tuple[Compared, ...]:
    """The columns compared, in the reference's order: every column both have, at their
    common type when there is one."""
    other = {f.name: f for f in candidate.fields}
    return tuple(
        Compared(f.name, f.type, g.type, common_type(f.type, g.type))
        for f in reference.fields
        if (g := other.get(f.name)) is not None
    )


def diff_schemas(
    reference: Schema,
    candidate: Schema,
    mode: Mode = DEFAULT_MODE,
    exempt: Iterable[str] = (),
) -> SchemaDiff:
    """The findings of ``candidate`` against ``reference`` under ``mode``; the ``exempt``
    columns (``equality.ignore``) are left out of every finding."""
    if mode not in MODES:
        raise ValueError(f"schema mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "ignore":
        return SchemaDiff(mode)
    skip = frozenset(exempt)
    ref = {f.name: f for f in reference.fields if f.name not in skip}
    cand = {f.name: f for f in candidate.fields if f.name not in skip}
    strict = mode == "strict"
    findings = []
    for f in ref.values():
        g = cand.get(f.name)
        if g is None:
            findings.append(SchemaFinding("removed", f.name, f.type, None, True))
            continue
        if f.type != g.type:
            wide = widens(f.type, g.type)
            inferred = f.inferred and g.inferred and _text_numbers(f.type, g.type)
            findings.append(
                SchemaFinding(
                    "retyped",
                    f.name,
                    f.type,
                    g.type,
                    strict or not (wide or inferred),
                    wide,
                    common_type(f.type, g.type),
                    inferred and not wide,
                )
            )
        if f.nullable != g.nullable:
            findings.append(
                SchemaFinding("nullability", f.name, _nulls(f.nullable), _nulls(g.nullable), strict)
            )
    findings.extend(
        SchemaFinding("added", g.name, None, g.type, True)
        for g in cand.values()
        if g.name not in ref
    )
    shared = [n for n in ref if n in cand]
    shared_in_candidate = tuple(n for n in cand if n in ref)
    if tuple(shared) != shared_in_candidate:
        findings.append(SchemaFinding("order", None, tuple(shared), shared_in_candidate, strict))
    return SchemaDiff(mode, tuple(findings))


#: the number types inferred from text: JSON's (``bigint``, ``decimal(p,0)``, ``double``)
#: and CSV's (``int`` too)
_TEXT_NUMBER = re.compile(r"int|bigint|double|decimal\(\d+,0\)")
#: a number type where a type stands in a type's spelling (not a struct's field name)
_NUMBER_TYPE = re.compile(
    r"(?:^|(?<=[<,:]))(?:tinyint|smallint|int|bigint|float|double|decimal\(\d+,\d+\))(?=$|[>,])"
)


def _text_numbers(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are number types a text format infers, or arrays of them to
    the same depth."""
    while a.startswith("array<") and b.startswith("array<"):
        a, b = a[6:-1], b[6:-1]
    return _TEXT_NUMBER.fullmatch(a) is not None and _TEXT_NUMBER.fullmatch(b) is not None


def holds_number(type_: str) -> bool:
    """Whether values of ``type_`` hold a number anywhere: a number type, or an array, map
    or struct with one inside (where a tolerance applies)."""
    return _NUMBER_TYPE.search(type_) is not None


def tolerance_problem(columns: Iterable[str], reference: Schema, candidate: Schema) -> str | None:
    """The problem with a tolerance on a column that holds no number in either output
    (``string`` on both sides, say: CSV read as text), where it could never apply; ``None``
    when every tolerance has numbers to apply to (or a column is in one output only, which
    the spec's column check reports)."""
    for name in columns:
        a, b = reference.field(name), candidate.field(name)
        if a is None or b is None or holds_number(a.type) or holds_number(b.type):
            continue
        types = (
            f"{a.type} in both outputs"
            if a.type == b.type
            else (f"{a.type} in the reference, {b.type} in the candidate")
        )
        hint = (
            " (in CSV, one value that is not a number makes a column text: declare its "
            "type in output.schema)"
            if "string" in (a.type, b.type)
            else ""
        )
        return (
            f"equality.tolerance: column {name!r} is {types}, not a number: a tolerance "
            f"applies to numbers only{hint}"
        )
    return None


def _nulls(nullable: bool) -> str:
    return "nullable" if nullable else "not null"


def judge(verdict: Verdict, schema: SchemaDiff) -> Verdict:
    """``verdict`` with its schema findings: divergent when one of them is. Without a
    finding it is ``verdict`` as it was (``schema`` stays ``None``): agreeing schemas add
    nothing, so a comparison on Spark gives exactly the verdict ``matcher.compare`` gives
    on the same events."""
    if not schema.findings:
        return verdict
    return replace(verdict, schema=schema, equivalent=verdict.equivalent and not schema.divergent)


def project(
    plan: Sequence[Compared], side: int, names: Sequence[str]
) -> Callable[[Mapping[str, Any]], dict[str, Any]] | None:
    """The function that turns one side's event into the compared columns, widened, or
    ``None`` when the events need no change (the same columns in the same order, no
    widening: the common case costs nothing per event)."""
    types: dict[str, str] = {}
    for c in plan:  # a column without a common type is compared as read
        if c.type is not None and (c.reference, c.candidate)[side] != c.type:
            types[c.name] = c.type
    if not types and tuple(c.name for c in plan) == tuple(names):
        return None
    columns = [c.name for c in plan]

    def projected(event: Mapping[str, Any]) -> dict[str, Any]:
        return {
            n: widen(event[n], types[n]) if n in types else event[n] for n in columns if n in event
        }

    return projected
