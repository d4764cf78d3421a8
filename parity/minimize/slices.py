"""A run's replayed slice as records that can be taken apart, and any subset of them written
back in the slice's own format and layout.

    whole = read_slice(Path(RUN) / "slice", "jsonl", key=("taxi_id",))
    whole.rows, len(whole.keys())               # 2000, 40
    write_subset(whole, [3, 4, 17], Path(TRIAL) / "input")

A record is a JSON line, a CSV record or a Parquet row. JSON lines and CSV records keep
their bytes (a CSV record may span lines; each file's header is kept), Parquet rows their
types and the file's schema, so a subset reads as the slice read. A subset keeps each
record in its file, in the slice's order, under the file's name; a file left with no
record is not written, and the files get increasing modification times in name order, as
the slice job gives them (a file stream source reads them in that order, one per
micro-batch).
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from matcher.errors import InputError
from matcher.files.csv_files import csv_records
from matcher.files.lines import open_file
from matcher.files.readers import data_files

_BLANK = (b"\n", b"\r\n", b"\r", b"")


@dataclass(frozen=True, slots=True)
class Record:
    """One record: the file it is in (an index into ``Slice.files``), its bytes (JSON lines,
    CSV) or its row in the file's table (Parquet), and its key's values as text."""

    file: int
    key: tuple[str, ...]
    raw: bytes = b""
    row: int = -1


@dataclass(slots=True)
class Slice:
    """A slice's files (names in stream order), its records in stream order, each CSV
    file's header and each Parquet file's table."""

    directory: Path
    format: str
    files: list[str]
    records: list[Record]
    headers: dict[int, bytes] = field(default_factory=dict)
    tables: dict[int, Any] = field(default_factory=dict)
    #: the Parquet files whose timestamps are INT96 (as Spark writes them by default)
    int96: dict[int, bool] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return len(self.records)

    def keys(self) -> dict[tuple[str, ...], list[int]]:
        """Each key's records (indexes, in stream order), keys in order of first record."""
        groups: dict[tuple[str, ...], list[int]] = {}
        for index, record in enumerate(self.records):
            groups.setdefault(record.key, []).append(index)
        return groups


def read_slice(directory: Path, fmt: str, key: Sequence[str] = ()) -> Slice:
    """The slice at ``directory`` (a folder of data files, or one file) in format ``fmt``
    (``parquet``, ``jsonl``/``json``, ``csv``); ``key``: the columns whose values group
    records (none: every record its own group). A key column the slice lacks is an
    ``InputError`` naming it."""
    found = data_files(directory, fmt)
    whole = Slice(directory, fmt, [path.name for path, _ in found], [])
    for number, (path, kind) in enumerate(found):
        if kind == "parquet":
            _read_parquet(whole, number, path, key)
        elif kind == "csv":
            _read_csv(whole, number, path, key)
        else:
            _read_json_lines(whole, number, path, key)
    return whole


def segments(whole: Slice, ends: Sequence[Any]) -> Slice:
    """The slice with each record's key replaced by its segment: the records up to and
    including one whose key (read from one column) is one of ``ends``, then the next ones
    (a barrier dependence's units: a document's words and its end-of-file row)."""
    texts = {_key_text(end) for end in ends} | {_key_text(str(end)) for end in ends}
    records, number = [], 0
    for record in whole.records:
        records.append(replace(record, key=(f"segment {number + 1}",)))
        if record.key[0] in texts:
            number += 1
    return replace(whole, records=records)


def write_subset(whole: Slice, indexes: Iterable[int], directory: Path) -> int:
    """Write the records at ``indexes`` to ``directory`` (created; it must not exist) as
    the slice lays them out; the number of records written."""
    chosen: dict[int, list[int]] = {}
    for index in sorted(set(indexes)):
        chosen.setdefault(whole.records[index].file, []).append(index)
    directory.mkdir(parents=True)
    names = []
    for number in sorted(chosen):
        name = whole.files[number]
        target = directory / name
        records = [whole.records[i] for i in chosen[number]]
        if whole.tables.get(number) is not None:
            table = whole.tables[number]
            rows = table.take(pa.array([r.row for r in records], pa.int64()))
            pq.write_table(
                rows,
                target,
                use_deprecated_int96_timestamps=whole.int96.get(number, False),
                coerce_timestamps=None if whole.int96.get(number, False) else "us",
                allow_truncated_timestamps=False,
            )
        else:
            data = whole.headers.get(number, b"") + b"".join(_ended(r.raw) for r in records)
            opener = gzip.open if name.lower().endswith(".gz") else open
            with opener(target, "wb") as sink:
                sink.write(data)
        names.append(name)
    (directory / "_SUCCESS").write_bytes(b"")
    base = time.time() - len(names) - 1
    for n, name in enumerate(names):
        os.utime(directory / name, (base + n, base + n))
    return sum(len(v) for v in chosen.values())


def _ended(raw: bytes) -> bytes:
    return raw if raw.endswith((b"\n", b"\r")) else raw + b"\n"


def _key_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _missing(path: Path, columns: Iterable[str], key: Sequence[str]) -> None:
    absent = [name for name in key if name not in set(columns)]
    if absent:
        raise InputError(f"{path}: the slice has no column {absent[0]!r} (a key column)")


def _read_parquet(whole: Slice, number: int, path: Path, key: Sequence[str]) -> None:
    try:
        # Spark writes timestamps as INT96 unless told otherwise: read them in microseconds
        # (Spark's unit; pyarrow's default, nanoseconds, is a type Spark cannot read back)
        # and write them as INT96 again
        physical = {column.physical_type for column in pq.ParquetFile(path).schema}
        table = pq.read_table(path, coerce_int96_timestamp_unit="us")
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
    _missing(path, table.column_names, key)
    whole.tables[number] = table
    whole.int96[number] = "INT96" in physical
    values = [table.column(name).to_pylist() for name in key]
    for row in range(table.num_rows):
        whole.records.append(Record(number, tuple(_key_text(v[row]) for v in values), row=row))


def _read_json_lines(whole: Slice, number: int, path: Path, key: Sequence[str]) -> None:
    with open_file(path) as stream:
        for line_number, raw in enumerate(stream, start=1):
            if raw.strip() == b"":
                continue
            try:
                document = json.loads(raw)
            except ValueError as exc:
                raise InputError(f"{path}: line {line_number}: not JSON: {exc}") from None
            if not isinstance(document, dict):
                raise InputError(f"{path}: line {line_number}: not a JSON object")
            if key:
                _missing(path, document, key)
            values = tuple(_key_text(document.get(name)) for name in key)
            whole.records.append(Record(number, values, raw=raw))


def _read_csv(whole: Slice, number: int, path: Path, key: Sequence[str]) -> None:
    with open_file(path) as stream:
        lines = stream.readlines()
    ended = 0
    names: list[str] | None = None
    for end, fields in csv_records(path):
        raw = b"".join(lines[ended:end])
        ended = end
        while raw.startswith((b"\n", b"\r")):  # blank lines before the record
            raw = raw.lstrip(b"\r\n")
        if names is None:
            names = [str(f) for f in fields]
            _missing(path, names, key)
            whole.headers[number] = _ended(raw)
            continue
        row = dict(zip(names, fields, strict=False))
        values = tuple(_key_text(row.get(name)) for name in key)
        whole.records.append(Record(number, values, raw=raw))
