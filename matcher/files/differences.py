"""Every difference of a run as a table, to query: the export a report's witnesses are the
first rows of.

One row per divergence, on both engines, with these columns:

* ``kind``: loss, duplication, reordering or corruption;
* ``key``: the divergence's key as JSON text (``null`` for a dependence without keys);
* ``reference_position``, ``candidate_position``: the events' 0-based positions in each
  output (for a loss, the candidate position is where the event would stand, and the
  ``candidate`` is null; the other way round for a duplication);
* ``columns``: for a corruption, the columns that differ;
* ``reference``, ``candidate``: the two events, as structs of the outputs' columns.

Parquet keeps the structs and lists as they are. CSV has no nested values: the events'
columns become ``reference.NAME`` and ``candidate.NAME``, and a value that is itself a
struct, list or map, as does ``columns``, becomes JSON text.

The core writes the table from its divergences (``write_divergences``); the Spark match job
writes it where the data is, into the run's workspace (``matcher.spark.differences``), and
``parity report RUN --differences PATH`` copies that table batch by batch
(``copy_table``): millions of differences never pass through one process's memory.
Either way the file appears whole or not at all (written beside, then renamed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from matcher.errors import InputError, MatcherError
from matcher.serialize import json_safe
from matcher.verdict import Divergence, Verdict

SIDES = ("reference", "candidate")
#: the columns before the two events
HEAD = pa.schema(
    [
        ("kind", pa.string()),
        ("key", pa.string()),
        ("reference_position", pa.int64()),
        ("candidate_position", pa.int64()),
        ("columns", pa.list_(pa.string())),
    ]
)
#: the table's name in a run's report folder
DIFFERENCES_FILE = "differences.parquet"
#: the file formats an export may take, by the path's extension
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def export_format(path: str | Path) -> str:
    """``parquet`` or ``csv``, by the extension of ``path``; anything else is an error."""
    found = FORMATS.get(Path(path).suffix.lower())
    if found is None:
        raise InputError(
            f"{path}: expected a path ending in .parquet or .csv for the differences "
            f"(the format is taken from the extension)"
        )
    return found


def key_text(key: Any) -> str:
    """A key as the table holds it: JSON text, keys sorted."""
    return _json(key, sort_keys=True)


def _json(value: Any, sort_keys: bool = False) -> str:
    try:
        return json.dumps(json_safe(value), ensure_ascii=False, sort_keys=sort_keys)
    except RecursionError:
        raise InputError(
            "a value is nested too deep to write into the table of differences as JSON"
        ) from None


def _event_array(events: Sequence[Any]) -> pa.Array:
    """The events of one side as a struct array; JSON text when Arrow cannot type them as
    one struct (a column holding numbers in one event and text in another)."""
    try:
        return pa.array(list(events))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        texts = [None if e is None else _json(e) for e in events]
        return pa.array(texts, type=pa.string())


def divergence_batches(divergences: Sequence[Divergence]) -> Iterator[pa.RecordBatch]:
    """The table's rows for ``divergences``: one batch, so that each side's events are
    typed once, over all of them."""
    if divergences:
        yield _batch(divergences)


def _batch(chunk: Sequence[Divergence]) -> pa.RecordBatch:
    head = [
        pa.array([d.kind for d in chunk], pa.string()),
        pa.array([key_text(d.key) for d in chunk], pa.string()),
        pa.array([d.reference_position for d in chunk], pa.int64()),
        pa.array([d.candidate_position for d in chunk], pa.int64()),
        pa.array([list(d.columns) for d in chunk], pa.list_(pa.string())),
    ]
    events = [
        _event_array([d.reference_event for d in chunk]),
        _event_array([d.candidate_event for d in chunk]),
    ]
    return pa.RecordBatch.from_arrays([*head, *events], names=[*HEAD.names, *SIDES])


def write_divergences(divergences: Sequence[Divergence], path: str | Path) -> int:
    """Write ``divergences`` (all of a verdict's, not its first ``limit``) to ``path``,
    Parquet or CSV by its extension; the number of rows written."""
    return write_batches(divergence_batches(divergences), path)


def write_verdict_differences(verdict: Verdict, path: str | Path) -> int:
    """Write every divergence of a core verdict (``Verdict.every_divergence``)."""
    every = verdict.every_divergence
    if every is None:
        if verdict.total_divergences:
            raise MatcherError("this verdict did not keep its divergences (a Spark verdict?)")
        every = ()
    return write_divergences(every, path)


def copy_table(source: str | Path | None, path: str | Path) -> int:
    """Copy the differences table at ``source`` (a Parquet file or directory, as the Spark
    match job writes it; ``None``: no table, there being no difference) to ``path``, batch
    by batch; the number of rows written."""
    import pyarrow.dataset as ds

    if source is None:
        return write_batches([], path)
    try:
        dataset = ds.dataset(str(source), format="parquet")
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{source}: cannot read the run's differences table: {exc}") from exc
    return write_batches(dataset.to_batches(), path)


def write_batches(batches: Iterable[pa.RecordBatch], path: str | Path) -> int:
    """Write the table's batches to ``path`` (Parquet or CSV by its extension), whole or
    not at all; the number of rows written."""
    target = Path(path)
    kind = export_format(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    rows = 0
    writer: Any = None
    schema: pa.Schema | None = None
    try:
        for batch in batches:
            if kind == "csv":
                batch = _flat(batch)
            if schema is None:
                schema = batch.schema
                writer = _writer(kind, partial, schema)
            elif batch.schema != schema:
                batch = batch.cast(schema)  # a column null throughout one batch
            writer.write_batch(batch)
            rows += batch.num_rows
        if writer is None:  # no difference: an empty table, with the head's columns
            schema = HEAD if kind == "parquet" else _flat_schema(HEAD)
            writer = _writer(kind, partial, schema)
        writer.close()
        writer = None
        partial.replace(target)
    finally:
        if writer is not None:
            writer.close()
        partial.unlink(missing_ok=True)
    return rows


def _writer(kind: str, path: Path, schema: pa.Schema) -> Any:
    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetWriter(str(path), schema)
    import pyarrow.csv as pcsv

    return pcsv.CSVWriter(str(path), schema)


def _nested(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_struct(dtype)
        or pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_map(dtype)
    )


def _as_text(array: pa.Array) -> pa.Array:
    """Nested values as JSON text (CSV cannot hold them)."""
    values = array.to_pylist()
    return pa.array([None if v is None else _json(v) for v in values], pa.string())


def _flat(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch as CSV holds it: events spread into ``SIDE.NAME`` columns, nested values
    and ``columns`` as JSON text."""
    arrays: list[pa.Array] = []
    names: list[str] = []
    for name, array in zip(batch.schema.names, batch.columns, strict=True):
        if name in SIDES and pa.types.is_struct(array.type):
            # ``flatten`` leaves a field null where its event is (``field`` would not)
            for field, child in zip(array.type, array.flatten(), strict=True):
                arrays.append(_as_text(child) if _nested(field.type) else child)
                names.append(f"{name}.{field.name}")
        else:
            arrays.append(_as_text(array) if _nested(array.type) else array)
            names.append(name)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _flat_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([(f.name, pa.string() if _nested(f.type) else f.type) for f in schema])
