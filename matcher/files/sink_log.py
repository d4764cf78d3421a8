"""The committed files of a Spark file-sink output, in batch order.

    logged_files("out/windows/")     # [Path('out/windows/part-00000-9c...json'), ...]

A streaming query that writes files (``writeStream.format("json" | "parquet")``) records
each batch's files in ``OUTPUT/_spark_metadata/`` (Spark's ``FileStreamSinkLog``), and a
reader trusts that log, not the directory: a batch killed mid-write leaves part files that
no log entry names, and the batch is written again, under new names, when the query
restarts. The log holds one file per batch, named by its id (``0``, ``1``, ...); every
``spark.sql.streaming.fileSink.log.compactInterval`` batches (10 by default) the batch's
file is ``N.compact`` instead and holds every entry so far. Each file is a version line,
``v1``, then one JSON object per line::

    {"path":"file:///data/out/part-00000-dea1...-c000.json","size":32,"isDir":false,
     "modificationTime":1795551480614,"blockReplication":1,"blockSize":33554432,
     "action":"add"}

The files are the latest compact file's entries, then those of the batch files after it,
in batch-id order, each file's in its order; a ``delete`` removes an earlier ``add``. Older
batch files and Spark's ``.crc`` and ``.tmp`` files are not read. Part names carry random
UUIDs, so name order is not batch order.

A path is a ``file:`` URI (percent-encoded), or a plain absolute path; any other scheme is
refused. The log keeps the absolute path the file was written at: an entry outside
OUTPUT (the output was moved or copied) is looked up by its name in OUTPUT.

Without ``_spark_metadata`` there is no log (``None``): ``matcher.files.readers.data_files``,
which every reader of an output goes through, then takes the directory's data files in name
order. Every problem is a one-line ``InputError``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from matcher.errors import InputError

METADATA = "_spark_metadata"
#: the log versions Spark 2.x .. 4.x write
VERSION = "v1"
_BATCH = re.compile(r"(0|[1-9][0-9]*)(\.compact)?")


def logged_files(path: str | Path) -> list[Path] | None:
    """The files the output's sink log lists, in the order the query committed them;
    ``None`` when ``path`` is not a directory with a sink log."""
    root = Path(path)
    log = root / METADATA
    if not (root.is_dir() and log.is_dir()):
        return None
    return _logged(root, log)


def _logged(root: Path, log: Path) -> list[Path]:
    """The paths the log adds and does not delete, in log order."""
    batches: dict[int, Path] = {}
    compacts: set[int] = set()
    for child in log.iterdir():
        match = _BATCH.fullmatch(child.name)
        if match is None:
            continue  # .crc, .tmp, and anything Spark does not read either
        batch = int(match.group(1))
        if batch in batches:
            raise InputError(f"{log}: batch {batch} is logged twice ({child.name})")
        batches[batch] = child
        if match.group(2):
            compacts.add(batch)
    if not batches:
        return []
    latest = max(batches)
    first = max(compacts, default=0)
    order: dict[Path, None] = {}  # a dict keeps the order of first addition
    wheres: dict[Path, str] = {}
    for batch in range(first, latest + 1):
        if batch not in batches:
            raise InputError(f"{log}: batch {batch} is missing (batches {first}..{latest})")
        for action, where, file in _entries(batches[batch], root):
            if action == "add":
                order[file] = None
                wheres[file] = where
            else:
                order.pop(file, None)
    for file in order:
        if not file.is_file():
            raise InputError(f"{wheres[file]}: lists {file}, which is not a file")
    return list(order)


def _entries(file: Path, root: Path) -> list[tuple[str, str, Path]]:
    """The (action, where, local path) of each entry of one log file."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: cannot read the sink log: {exc}") from exc
    if not lines or lines[0].strip() != VERSION:
        found = repr(lines[0][:20]) if lines else "an empty file"
        raise InputError(f"{file}: line 1: expected the sink log version {VERSION}, got {found}")
    entries = []
    for number, text in enumerate(lines[1:], start=2):
        if not text.strip():
            continue
        where = f"{file}: line {number}"
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: malformed JSON: {exc.msg} (column {exc.pos + 1})") from exc
        if not isinstance(entry, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(entry).__name__}")
        action, uri = entry.get("action"), entry.get("path")
        if action not in ("add", "delete"):
            raise InputError(f'{where}: expected "action" add or delete, got {action!r}')
        if not isinstance(uri, str) or not uri:
            raise InputError(f'{where}: expected "path" to be a file URI, got {uri!r}')
        entries.append((action, where, _local(uri, root, where)))
    return entries


def _local(uri: str, root: Path, where: str) -> Path:
    """The file ``uri`` names, in ``root``: a ``file:`` URI or an absolute path."""
    parts = urlsplit(uri)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        path = Path(unquote(parts.path))
    elif parts.scheme == "" and uri.startswith("/"):
        path = Path(uri)
    else:
        raise InputError(f"{where}: {uri} is not a local file (only file: URIs are read)")
    resolved, base = path.resolve(), root.resolve()
    if resolved.is_relative_to(base):
        return root / resolved.relative_to(base)
    return root / path.name  # written elsewhere: the output was moved or copied
