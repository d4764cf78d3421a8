"""Read an output (a file or a Spark output directory) as a stream of events, lazily.

    for event in read_events("out/candidate/"):      # part files in name order
        ...

Formats, chosen by ``format`` or else by each file's extension:

* JSON lines (``.jsonl``, ``.json``; what Spark's JSON writer produces): one object per
  line; blank lines are skipped. A field an object lacks reads as null when the caller
  names the output's columns (Spark's writer drops null fields).
* CSV (``.csv``): a header line, then rows, typed as the Spark engine types them: by
  Spark's ``inferSchema`` (a pass over the output first) or by the spec's declared
  ``output.schema`` (``matcher.files.csv_files``); an unquoted empty field is null, a
  quoted one (``""``) the empty string in a ``string`` column. A zero-byte file is an
  empty stream (Spark writes one for an empty partition); a header-only file too.
* Parquet (``.parquet``): read a row group batch at a time, so memory stays constant. A
  map column's values are dicts, as on the Spark engine.

``.gz`` after ``.jsonl``, ``.json`` or ``.csv`` is read through gzip. A directory stands for
its data files in name order (Spark's part numbers), skipping ``_SUCCESS``, ``.crc`` and
hidden files; a subdirectory other than ``_temporary``-like ones is refused, because a
partitioned output keeps column values in directory names that rows lack. A streaming file
sink's output (with ``_spark_metadata``) stands for the files its log lists, in batch order,
as Spark reads it (``matcher.files.sink_log``): a batch killed mid-write leaves part files
that no reader may take.

Column names may not repeat, nor differ only in case (``matcher.columns`` says why): a CSV
header or a Parquet file's schema that breaks either rule is an error, and so is a JSON
object that names a key twice, at any depth. JSON names that differ only in case, in one
object or across objects, are found by the schema's inference, which reads every object
(``matcher.files.output_schema``; ``json_name_error`` then finds the line).

Every problem is an ``InputError`` of one line naming the file (and line, where there is
one): the CLI prints it as is.

JSON lines are read a block at a time with pyarrow (``matcher.files.columnar``), which
gives the events this module's per-line reader gives, and hands it every line it cannot
vouch for, so values, key order and errors are the per-line reader's. A gzipped file is
read line by line; so is every file when ``PARITY_READER=lines`` is set (to compare the
two readers, as ``bench/compare_files.py --reader lines`` does).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from matcher.columns import (
    NameProblem,
    RepeatedKeyError,
    decode_checked,
    decode_plain,
    json_groups,
    json_problem,
    name_problem,
    vouches_unique,
)
from matcher.errors import InputError
from matcher.files.arrow_columns import check_arrow_schema
from matcher.files.columnar import JsonBatch, json_batches
from matcher.files.csv_files import CsvTypes, csv_events, csv_records, csv_types
from matcher.files.lines import line_text, lines
from matcher.files.sink_log import logged_files
from matcher.formats import FORMATS, check_format, format_of_name, is_data_file

PARQUET_BATCH_ROWS = 8192
#: set to ``lines`` to read JSON lines with the per-line reader only (the columnar one is
#: proven to give the same events), or to ``events`` to read them columnar but to events
#: only, without ``matcher.files.columnar_equivalence``'s proof on their texts: the
#: variable is there to compare the paths
READER_VARIABLE = "PARITY_READER"
LINE_BATCH = 4096  # objects per ``JsonBatch`` of the per-line reader
#: how many JSON objects ``read_columns`` looks at: Spark drops null fields from JSON lines,
#: so one object may lack a column that the output has
COLUMN_SAMPLE = 1000

Event = dict[str, Any]


def read_events(
    path: str | Path,
    format: str | None = None,
    columns: Sequence[str] = (),
    csv: CsvTypes | None = None,
) -> Iterator[Event]:
    """The events of ``path`` in stream order: files in name order, rows in file order.

    A JSON object that lacks one of ``columns`` gets it as null: Spark's JSON writer drops
    null fields, so a missing field *is* a null (``read_columns`` finds the columns). A CSV
    output's values are read to ``csv``'s types, inferred from the output when not given
    (``matcher.files.csv_files``: a pass over it first)."""
    files = data_files(path, format)
    if csv is None and any(kind == "csv" for _, kind in files):
        csv = csv_types([file for file, _ in files])
    for file, file_format in files:
        events = _read_file(file, file_format, csv)
        if columns and file_format in ("json", "jsonl"):
            events = with_missing_as_null(events, columns)
        yield from events


def with_missing_as_null(events: Iterator[Event], columns: Sequence[str]) -> Iterator[Event]:
    """``events``, each given the ``columns`` it lacks as null, in place.

    Spark's JSON writer drops null fields, so a column an object lacks is a null: given as
    one, a dependence reads it as a value instead of failing on a missing column. Public
    because ``matcher.files.compare`` adds the nulls itself, once it has inferred the
    batch's schema from the objects as written."""
    wanted = frozenset(columns)
    for event in events:
        if not event.keys() >= wanted:
            for column in columns:
                event.setdefault(column, None)
        yield event


def read_columns(path: str | Path, format: str | None = None) -> tuple[str, ...] | None:
    """The output's columns, or ``None`` when the output has no rows to tell (empty JSON).

    Parquet: the schema of the first file; CSV: the first header; JSON lines: the keys of
    the first ``COLUMN_SAMPLE`` objects, in order of first appearance.
    """
    files = data_files(path, format)
    seen: dict[str, None] = {}
    sampled = 0
    for file, file_format in files:
        if file_format == "parquet":
            parquet = parquet_file(file)
            try:
                return tuple(parquet.schema_arrow.names)
            finally:
                parquet.close()
        if file_format == "csv":
            header = next(csv_records(file), None)
            if header is not None:
                return tuple(name or "" for name in header[1])
            continue
        for _, event in _json_objects(file):
            seen.update(dict.fromkeys(event))
            sampled += 1
            if sampled >= COLUMN_SAMPLE:
                return tuple(seen)
    return tuple(seen) if seen else None


def data_files(path: str | Path, format: str | None = None) -> list[tuple[Path, str]]:
    """The files that make up the output at ``path``, each with its format, in order."""
    if str(path) == "":
        raise InputError("an output path is empty")
    check_format(format, str(path))
    root = Path(path)
    if root.is_dir():
        logged = logged_files(root)
        files = _listed_files(root) if logged is None else logged
        found = [(file, format or _format_of(file)) for file in files]
        formats = {"json" if f == "jsonl" else f for _, f in found}  # both are JSON lines
        if len(formats) > 1:
            raise InputError(f"{path}: mixes formats ({', '.join(sorted(formats))})")
        return found
    if not root.exists():
        raise InputError(f"{path}: no such file or directory")
    return [(root, format or _format_of(root))]


def _listed_files(root: Path) -> list[Path]:
    """A directory's data files in name order; a subdirectory is refused."""
    files = []
    for child in sorted(root.iterdir(), key=lambda p: p.name):
        if not is_data_file(child.name):
            continue
        if child.is_dir():
            raise InputError(
                f"{child}: a subdirectory in an output (a partitioned output?) "
                "is not supported: point at a directory of data files"
            )
        files.append(child)
    return files


def _format_of(path: Path) -> str:
    known = format_of_name(path)
    if known is not None:
        return known
    raise InputError(
        f"{path}: cannot tell the format from the name: set output.format in the spec "
        f"({', '.join(FORMATS)})"
    )


def _read_file(path: Path, file_format: str, csv: CsvTypes | None) -> Iterator[Event]:
    if file_format == "parquet":
        yield from _parquet_events(path)
    elif file_format == "csv":
        yield from csv_events(path, csv)
    else:
        yield from _json_events(path)


def _json_objects(path: Path) -> Iterator[tuple[int, Event]]:
    """The file's objects with their lines, read line by line (``_object_decoder``)."""
    decode = _object_decoder(path)
    for number, text in lines(path):
        value = decode(number, text)
        if value is not None:
            yield number, value


def _object_decoder(path: Path) -> Callable[[int, str], Event | None]:
    """Decodes one line of ``path`` to its object, ``None`` for a blank line.

    An object that names a key twice, at any depth, is an error (``json.loads`` would keep
    the last value). A line is decoded without the check when ``vouches_unique`` proves it
    needless; from the first line it cannot vouch for (nested objects), the rest of the file
    is decoded with it."""
    decode = decode_plain

    def decode_line(number: int, text: str) -> Event | None:
        nonlocal decode
        text = text.rstrip("\r\n")
        if not text.strip():
            return None
        try:
            value = decode(text)
            if decode is decode_plain and not vouches_unique(text, value):
                decode = decode_checked
                value = decode(text)
        except RepeatedKeyError as exc:
            raise _repeated_key_error(path, number, text) from exc
        except json.JSONDecodeError as exc:
            raise _malformed(path, number, text, exc) from exc
        if not isinstance(value, dict):
            raise InputError(
                f"{path}: line {number}: expected a JSON object, got {type(value).__name__}"
            )
        return value

    return decode_line


def json_event_batches(path: Path) -> Iterator[JsonBatch]:
    """The objects of the JSON lines file ``path`` in batches, each ending at its first bad
    line (``JsonBatch.error``): read columnar (``matcher.files.columnar``) unless the file is
    gzipped or ``PARITY_READER=lines`` asks for the per-line reader."""
    if os.environ.get(READER_VARIABLE) != "lines" and path.suffix.lower() != ".gz":
        decode = _object_decoder(path)
        yield from json_batches(path, lambda n, raw: decode(n, line_text(path, n, raw)))
        return
    events: list[Event] = []
    try:
        for _, event in _json_objects(path):
            events.append(event)
            if len(events) == LINE_BATCH:
                yield JsonBatch(events, (), tuple(range(len(events))))
                events = []
    except InputError as exc:
        yield JsonBatch(events, (), tuple(range(len(events))), exc)
        return
    if events:
        yield JsonBatch(events, (), tuple(range(len(events))))


def _json_events(path: Path) -> Iterator[Event]:
    for batch in json_event_batches(path):
        yield from batch.events
        if batch.error is not None:
            raise batch.error


def _malformed(path: Path, number: int, text: str, exc: json.JSONDecodeError) -> InputError:
    message = exc.msg
    if text.startswith("\ufeff"):  # as json.loads says it
        message = "Unexpected UTF-8 BOM (decode using utf-8-sig)"
    return InputError(f"{path}: line {number}: malformed JSON: {message} (column {exc.pos + 1})")


def _repeated_key_error(path: Path, number: int, text: str) -> InputError:
    try:
        problem = name_problem(json_groups(text))
    except json.JSONDecodeError as exc:  # malformed after the repeat: the first error stands
        return _malformed(path, number, text, exc)
    paths = problem.paths if problem is not None else ()
    return NameProblem(paths, repeated=True).error(f"{path}: line {number}", "object")


def json_name_error(files: Iterable[Path]) -> InputError | None:
    """The error for the first line of the JSON lines ``files`` whose names break a rule
    of ``matcher.columns`` (names that differ only in case, in one object or from an
    earlier one), if any: the whole output is read, so only once a check found a problem."""
    texts = ((f"{file}: line {number}", text) for file in files for number, text in lines(file))
    found = json_problem(texts)
    if found is None:
        return None
    where, problem = found
    return problem.error(where, "object")


def parquet_file(path: Path) -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pyarrow is a dependency; this guards a partial install
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from exc
    try:
        parquet = pq.ParquetFile(path)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file or directory") from exc
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {one_line_message(exc)}") from exc
    try:
        schema = parquet.schema_arrow
    except Exception:  # pyarrow's errors vary by version: the caller's own read says it
        return parquet
    try:  # a row as a dict would keep one value of a name given twice
        check_arrow_schema(str(path), schema)
    except InputError:
        parquet.close()
        raise
    return parquet


def _parquet_events(path: Path) -> Iterator[Event]:
    import pyarrow as pa

    parquet = parquet_file(path)
    try:
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            # A map as a dict, as the Spark engine's events hold it (not a list of pairs).
            yield from batch.to_pylist(maps_as_pydicts="lossy")
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InputError(f"{path}: cannot read Parquet rows: {one_line_message(exc)}") from exc
    finally:
        parquet.close()


def one_line_message(exc: BaseException) -> str:
    """A library's error message folded to one line, for an ``InputError``."""
    return " ".join(str(exc).split())
