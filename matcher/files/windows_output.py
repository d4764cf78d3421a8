"""A sequence-window detector's output as ``(key, window)`` records, for
``matcher.windows.check_windows``.

    report = check_windows(read_windows("out/windows/"), expected=10)

OUTPUT is a file or a directory: a Spark file sink's committed files in batch order
(``matcher.files.sink_log``), else its data files in name order; records in file order.
JSON lines or Parquet (CSV, which would hold every window as a string, is refused), through
``matcher.files.readers``. A record that lacks ``key`` or ``window`` yields
``matcher.windows.MISSING`` for it: a corruption for the validator, not an error. An
unreadable output is an ``InputError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from matcher.errors import InputError
from matcher.files.readers import data_files, read_events
from matcher.windows import MISSING


def read_windows(path: str | Path, format: str | None = None) -> Iterator[tuple[Any, Any]]:
    """The ``(key, window)`` of every record of the output at ``path``, in reading order;
    ``format``: the files' format when their names do not tell it."""
    for file, file_format in data_files(path, format):
        if file_format == "csv":
            raise InputError(
                f"{file}: a window is a list, which CSV cannot hold: write JSON lines or Parquet"
            )
        for event in read_events(file, file_format):
            yield event.get("key", MISSING), event.get("window", MISSING)
