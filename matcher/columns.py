"""The names an output's columns may have: none twice, and none twice but for its case.

Both engines refuse an output that breaks either rule, with the same one-line message
(``InputError``, naming the file, the line where there is one, and the columns):

* a name twice in one place (a CSV header, a JSON object, a Parquet schema, a struct inside
  any of them): a reader keeps one of the two values (Python's JSON module and pyarrow's
  rows the last, Spark's Parquet reader the first), so the output cannot be read as it
  was written;
* two names that differ only in case (``a`` and ``A``) in one place, or at the same place
  of two JSON objects of one output: Spark resolves names without their case
  (``spark.sql.caseSensitive`` is false by default) and takes them for one column. It
  refuses them side by side, and where JSON objects spell a name two ways it reads the
  values of one spelling as null. The core could tell them apart; refusing them on both
  engines, whatever Spark's setting, keeps one verdict for one pair of outputs.

A place inside a column is written as a path: ``s.x`` is field ``x`` of struct ``s``,
``pts[].x`` a field of the structs in list ``pts``, ``m{}.x`` a field of a map's values.

Checking every JSON object is on the reader's hot path: ``decode_checked`` is a decoder
whose hook refuses a repeated key, and ``vouches_unique`` the cheap count that lets a
reader decode a line without it when it proves that no key can repeat there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from matcher.errors import InputError

#: the names at one place of an output: the path of the place ("" for the top level)
Group = tuple[str, Sequence[str]]

CASE_NOTE = "(Spark takes them for one column)"


def join(parent: str, name: str) -> str:
    """The path of ``name`` inside the place ``parent``."""
    return f"{parent}.{name}" if parent else name


@dataclass(frozen=True, slots=True)
class NameProblem:
    """Names that break a rule: the same name twice in one place (``repeated``), or else
    names that differ only in case; ``paths`` sorted."""

    paths: tuple[str, ...]
    repeated: bool

    def error(self, where: str, place: str) -> InputError:
        """``where: duplicate columns in the <place>: [...]``, as a CSV header's error says
        it, or ``where: columns that differ only in case: [...] (...)``."""
        paths = list(self.paths)
        if self.repeated:
            return InputError(f"{where}: duplicate columns in the {place}: {paths}")
        return InputError(f"{where}: columns that differ only in case: {paths} {CASE_NOTE}")


def name_problem(groups: Iterable[Group]) -> NameProblem | None:
    """The paths named twice in one place, else the paths whose name differs only in case
    from another name of the same place; ``None`` when the names keep both rules."""
    repeated: set[str] = set()
    variants: set[str] = set()
    for parent, names in groups:
        seen: set[str] = set()
        spellings: dict[str, str] = {}
        for name in names:
            if name in seen:
                repeated.add(join(parent, name))
                continue
            seen.add(name)
            # lower(), not casefold(): Spark compares names with toLowerCase(Locale.ROOT)
            first = spellings.setdefault(name.lower(), name)
            if first != name:
                variants.update((join(parent, first), join(parent, name)))
    if repeated:
        return NameProblem(tuple(sorted(repeated)), repeated=True)
    if variants:
        return NameProblem(tuple(sorted(variants)), repeated=False)
    return None


def check_groups(where: str, place: str, groups: Iterable[Group]) -> None:
    """Raise the error for the rule the names break, if any."""
    problem = name_problem(groups)
    if problem is not None:
        raise problem.error(where, place)


# -- JSON objects ------------------------------------------------------------------------------


class RepeatedKeyError(ValueError):
    """A JSON object names a key twice (raised while decoding; ``json_problem`` says where)."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        raise RepeatedKeyError
    return obj


_PLAIN = json.JSONDecoder()
_CHECKED = json.JSONDecoder(object_pairs_hook=_unique_object)
decode_plain: Callable[[str], Any] = _PLAIN.decode
#: decodes one JSON text, raising ``RepeatedKeyError`` where an object repeats a key
decode_checked: Callable[[str], Any] = _CHECKED.decode


def vouches_unique(text: str, value: Any) -> bool:
    """Whether ``text``, which decoded to ``value``, surely names no key twice.

    Every key of a JSON text is followed by a colon of its own (strings may hold more), so
    the text has at most as many keys as colons. The decoded objects hold as many keys as
    the text, less one per repeat, and at least the top-level object's. So as many colons
    as top-level keys means no key twice, and no nested object with keys: a flat line
    without a colon in its values passes; a nested one, or one holding a time of day, is
    decoded with the check.
    """
    return type(value) is dict and text.count(":") == len(value)


class _Members(list):  # type: ignore[type-arg]
    """A JSON object's members in order, repeats kept (``object_pairs_hook``)."""


def _json_groups(path: str, value: Any) -> Iterator[Group]:
    if isinstance(value, _Members):
        yield path, [name for name, _ in value]
        for name, item in value:
            yield from _json_groups(join(path, name), item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_groups(path + "[]", item)


def json_groups(text: str) -> list[Group]:
    """The places of one JSON text, as written (a key named twice is there twice)."""
    return list(_json_groups("", json.loads(text, object_pairs_hook=_Members)))


def json_problem(lines: Iterable[tuple[str, str]]) -> tuple[str, NameProblem] | None:
    """The first JSON line that breaks a rule, and how: a name twice in an object, two
    names that differ only in case in one object, or a name spelled in another case than
    in an earlier object at the same place. ``lines``: each line's text after where it is
    (``FILE: line N``), which comes back with the problem. Lines that are not JSON are
    skipped (their reader says what is wrong with them)."""
    spellings: dict[tuple[str, str], str] = {}
    for where, text in lines:
        try:
            groups = json_groups(text)
        except ValueError:
            continue
        problem = name_problem(groups)
        if problem is not None:
            return where, problem
        for parent, names in groups:
            for name in names:
                first = spellings.setdefault((parent, name.lower()), name)
                if first != name:
                    paths = tuple(sorted([join(parent, first), join(parent, name)]))
                    return where, NameProblem(paths, repeated=False)
    return None
