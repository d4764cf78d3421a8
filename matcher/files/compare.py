"""Two outputs on disk compared in this process: the core matcher fed from the file readers.

    verdict = compare_files(spec, "out/reference.jsonl", "out/candidate.jsonl", limit=10)

Both outputs are read as streams (``matcher.files.readers``) and fed, interleaved, to the
online matcher (``matcher.online.StreamMatcher``); memory follows the unmatched events only,
unless ``output.order_by`` asks for a sort, which holds an output whole. The schema findings
(``matcher.files.output_schema``) join the verdict (``matcher.schema.judge``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from matcher.errors import InputError
from matcher.files.output_schema import schema_plan
from matcher.files.readers import read_columns, read_events
from matcher.online import StreamMatcher
from matcher.schema import judge
from matcher.spec import Spec
from matcher.verdict import Verdict


def compare_files(spec: Spec, reference: str, candidate: str, limit: int) -> Verdict:
    fmt = spec.output.format
    known = [read_columns(path, fmt) or () for path in (reference, candidate)]
    for side, path, columns, other in (
        ("reference", reference, known[0], known[1]),
        ("candidate", candidate, known[1], known[0]),
    ):
        if columns:
            spec.check_columns(columns, where=f"{side} {path}", other=other)
    schemas = schema_plan(spec, reference, candidate)  # findings, and the compared columns
    matcher = StreamMatcher(spec.build_dependence(), spec.build_equality(), limit=limit)
    # A JSON object lacking one of its output's columns holds a null there.
    matcher.feed(
        schemas.events(0, _events(spec, reference, known[0])),
        schemas.events(1, _events(spec, candidate, known[1])),
    )
    return judge(matcher.finish(), schemas.diff)


def _events(spec: Spec, path: str, columns: Sequence[str]) -> Iterable[dict[str, Any]]:
    """The output's events in stream order: as written, or sorted by ``output.order_by``.

    Sorting needs the whole output in memory; without ``order_by`` the stream is read
    lazily and memory follows the unmatched events only.
    """
    events = read_events(path, spec.output.format, columns)
    if not spec.output.order_by:
        return events
    return _sorted(events, spec.output.order_by, path)


def _sorted(events: Iterator[dict[str, Any]], order_by: Sequence[str], path: str) -> list[Any]:
    def sort_key(event: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
        # Nulls first, as Spark's ascending sort puts them.
        return tuple((event.get(c) is not None, event.get(c)) for c in order_by)

    rows = list(events)
    try:
        rows.sort(key=sort_key)
    except TypeError as exc:
        raise InputError(f"{path}: cannot sort by {', '.join(order_by)}: {exc}") from exc
    return rows
