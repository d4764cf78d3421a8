"""Two outputs on disk compared in this process: the core matcher fed from the file readers.

    verdict = compare_files(spec, "out/reference.jsonl", "out/candidate.jsonl", limit=10)
    result = compare_files_with_noise(spec, "out/reference", "out/candidate",
                                      reruns=["out/rerun"], limit=100)   # the match job's core

Both outputs are read as streams (``matcher.files.readers``) and fed, interleaved, to the
online matcher (``matcher.online.StreamMatcher``); memory follows the unmatched events only,
unless ``output.order_by`` asks for a sort, which holds an output whole. The schema findings
(``matcher.files.output_schema``) join the verdict (``matcher.schema.judge``).

A JSON lines output's schema is inferred from every object, which used to cost a pass of
its own before the events'. Two JSON lines outputs are now matched in the pass that infers
their schemas, on the bet that the events need no projection (the two schemas have the same
columns at the same types, the usual case): the verdict is then the one the two passes
give. When they need one, the events are matched again, projected; when the pass fails
with one of Parity's own errors (an unreadable line, a key the dependence cannot read...),
the two passes run as before, so that the error raised is theirs, in their order. Any
other exception (a spec's function that raised, a bug) propagates from the pass.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

from matcher.errors import InputError, ParityError
from matcher.files.columnar_equivalence import prove_equivalent
from matcher.files.csv_files import CsvTypes
from matcher.files.json_schema import JsonInference
from matcher.files.output_schema import (
    OutputTypes,
    SchemaPlan,
    output_types,
    plan_schemas,
)
from matcher.files.readers import (
    READER_VARIABLE,
    data_files,
    json_event_batches,
    read_columns,
    read_events,
    with_missing_as_null,
)
from matcher.noise import NOISE_LIMIT, NoisyComparison, compare_with_noise
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
    schemas = None
    csv: tuple[CsvTypes | None, CsvTypes | None] = (None, None)
    json_lines = _json_lines(reference, fmt) and _json_lines(candidate, fmt)
    if json_lines and spec.output.schema_ is None and not spec.output.order_by:
        verdict = _columnar(spec, (reference, candidate), known)
        if verdict is not None:
            return verdict
        verdict, schemas = _one_pass(spec, (reference, candidate), known, limit)
        if verdict is not None:
            return verdict
    if schemas is None:
        # findings, the compared columns, a CSV output's types (a pass over it)
        types = output_types(spec, reference, candidate)
        schemas = plan_schemas(spec, *types)
        csv = (types[0].csv, types[1].csv)
    matcher = StreamMatcher(spec.build_dependence(), spec.build_equality(), limit=limit)
    # A JSON object lacking one of its output's columns holds a null there.
    matcher.feed(
        schemas.events(0, _events(spec, reference, known[0], csv[0])),
        schemas.events(1, _events(spec, candidate, known[1], csv[1])),
    )
    return judge(matcher.finish(), schemas.diff)


def compare_files_with_noise(
    spec: Spec,
    reference: str,
    candidate: str,
    *,
    reruns: Sequence[str] = (),
    limit: int,
    noise_limit: int = NOISE_LIMIT,
) -> NoisyComparison:
    """The reference against each of its reruns, then against the candidate, in this
    process: the match job's ``--engine core`` (``matcher.noise.compare_with_noise``)."""

    def compare(left: str, right: str, kept: int) -> tuple[Verdict, float]:
        started = time.perf_counter()
        verdict = compare_files(spec, left, right, kept)
        return verdict, time.perf_counter() - started

    return compare_with_noise(
        compare, reference, candidate, reruns=reruns, limit=limit, noise_limit=noise_limit
    )


def _json_lines(path: str, fmt: str | None) -> bool:
    return all(f in ("json", "jsonl") for _, f in data_files(path, fmt))


def _columnar(spec: Spec, paths: tuple[str, str], known: list[tuple[str, ...]]) -> Verdict | None:
    """The equivalent verdict when ``columnar_equivalence`` proves it and the events need no
    projection; ``None`` otherwise (or on any of Parity's errors, which the passes after it
    raise again in their order): the online matcher decides."""
    if os.environ.get(READER_VARIABLE) in ("lines", "events"):  # see ``readers``
        return None
    files = tuple([file for file, _ in data_files(path, spec.output.format)] for path in paths)
    if any(file.suffix.lower() == ".gz" for file in chain.from_iterable(files)):
        return None
    inferences = (JsonInference(), JsonInference())
    try:
        verdict = prove_equivalent(spec, (files[0], files[1]), known, inferences)
        if verdict is None:
            return None
        schemas = [
            _schema(spec, path, inference)
            for path, inference in zip(paths, inferences, strict=True)
        ]
        plan = plan_schemas(spec, schemas[0], schemas[1])
    except ParityError:
        return None
    if plan.projections != (None, None):
        return None
    return judge(verdict, plan.diff)


def _one_pass(
    spec: Spec, paths: tuple[str, str], known: list[tuple[str, ...]], limit: int
) -> tuple[Verdict | None, SchemaPlan | None]:
    """Match two JSON lines outputs while inferring their schemas: the verdict when the
    events needed no projection, else the schema plan to match them with.

    ``None`` when the pass raised one of Parity's errors (an ``InputError`` for a bad
    output): the caller's two passes raise it again, or one that comes before it in their
    order. Any other exception would fail the two passes too: it propagates."""
    inferences = (JsonInference(), JsonInference())
    matcher = StreamMatcher(spec.build_dependence(), spec.build_equality(), limit=limit)
    try:
        matcher.feed(
            _inferring(spec, paths[0], known[0], inferences[0]),
            _inferring(spec, paths[1], known[1], inferences[1]),
        )
        schemas = [
            _schema(spec, path, inference)
            for path, inference in zip(paths, inferences, strict=True)
        ]
        plan = plan_schemas(spec, schemas[0], schemas[1])
    except ParityError:
        return None, None
    if plan.projections != (None, None):
        return None, plan
    return judge(matcher.finish(), plan.diff), plan


def _schema(spec: Spec, path: str, inference: JsonInference) -> OutputTypes:
    files = [file for file, _ in data_files(path, spec.output.format)]
    return OutputTypes(inference.schema(path, files), json_numbers=inference.numbers())


def _inferring(
    spec: Spec, path: str, columns: Sequence[str], inference: JsonInference
) -> Iterator[dict[str, Any]]:
    """``read_events`` of a JSON lines output, each batch added to ``inference`` first.

    The batches are chained in C, not yielded from a Python frame event by event; a
    batch's error is raised when the chain asks for the next batch, after its events."""
    return chain.from_iterable(_inferred_batches(spec, path, columns, inference))


def _inferred_batches(
    spec: Spec, path: str, columns: Sequence[str], inference: JsonInference
) -> Iterator[Iterable[dict[str, Any]]]:
    wanted = frozenset(columns)
    for file, _ in data_files(path, spec.output.format):
        for batch in json_event_batches(file):
            inference.add(batch)  # before ``with_missing_as_null`` adds the missing columns
            events: Iterable[dict[str, Any]] = batch.events
            if columns and not batch.complete(wanted):
                events = with_missing_as_null(iter(batch.events), columns)
            yield events
            if batch.error is not None:
                raise batch.error


def _events(
    spec: Spec, path: str, columns: Sequence[str], csv: CsvTypes | None
) -> Iterable[dict[str, Any]]:
    """The output's events in stream order: as written, or sorted by ``output.order_by``;
    a CSV output's values read to ``csv``'s types.

    Sorting needs the whole output in memory; without ``order_by`` the stream is read
    lazily and memory follows the unmatched events only.
    """
    events = read_events(path, spec.output.format, columns, csv)
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
