"""The one table of output and capture formats: their names, the file extensions that name
them, and how a format is told from a path. The spec's ``output.format``, the core's file
readers (``matcher.files.readers``), Spark's reader (``matcher.spark.streams``) and the slice
job all read it here, so that a new format is added in one place.

    format_of_name("part-00000.snappy.parquet")   # 'parquet'
    format_of_path("out/reference")               # from the data files in the directory
    spark_format("jsonl")                         # 'json': Spark's name for JSON lines
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Literal

from matcher.errors import InputError

FORMATS = ("parquet", "json", "jsonl", "csv")
Format = Literal["parquet", "json", "jsonl", "csv"]
#: a data file's last extension (before an optional ``.gz``) and the format it names
EXTENSIONS = {".parquet": "parquet", ".jsonl": "jsonl", ".json": "json", ".csv": "csv"}


def spark_format(format: str) -> str:
    """The name Spark's reader and writer use: JSON lines are ``json`` to Spark."""
    return "json" if format == "jsonl" else format


def check_format(format: str | None, where: str) -> None:
    """Refuse a format name outside the table, naming ``where`` it was given."""
    if format is not None and format not in FORMATS:
        raise InputError(f"{where}: unknown format {format!r} (known: {', '.join(FORMATS)})")


def is_data_file(name: str) -> bool:
    """Not a marker Spark or Hadoop leaves beside the data (``_SUCCESS``, ``.crc``, hidden)."""
    return not name.startswith((".", "_")) and not name.endswith(".crc")


def format_of_name(path: PurePath | str) -> str | None:
    """The format a file's name gives (``x.jsonl.gz`` is ``jsonl``); ``None``: no known one."""
    suffixes = [s.lower() for s in PurePath(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return EXTENSIONS.get(suffixes[-1]) if suffixes else None


def format_of_path(path: str | Path) -> str:
    """The one format the data files at ``path`` (a file, or a directory of them) are in, as
    Spark names it; an ``InputError`` when the names give none or several."""
    root = Path(path)
    if not root.exists():
        raise InputError(f"{path}: no such file or directory (or give the format)")
    files = [p for p in root.iterdir() if is_data_file(p.name)] if root.is_dir() else [root]
    found = {format_of_name(p) for p in files if p.is_file()}
    found.discard(None)
    kinds = {spark_format(f) for f in found if f is not None}
    if len(kinds) != 1:
        shown = ", ".join(sorted(kinds)) or "no data files"
        raise InputError(f"{path}: cannot tell the format ({shown}): give the format")
    return kinds.pop()
