"""What a streaming job's sink has written, seen from outside: its files' sizes and times.

A micro-batch is exactly-once only if what the sink wrote and what the checkpoint says agree
after a crash. The riskiest instant is after the sink wrote batch ``N`` and before Spark
wrote ``commits/N``: a restart replays the batch into the sink. The crash loop's ``written``
kills aim there; this module tells them when the sink has written.

    watch = SinkWatch((run_dir / "crashed",))
    before = watch.snapshot()                  # when batch N starts
    ...
    if watch.wrote_since(before): kill()       # the sink wrote, no write still open

A write counts once a file under the watched folders changed (its size or modification
time) or appeared, and no write is still open: no SQLite rollback journal (``*-journal``:
its transaction has not committed) and no Hadoop ``_temporary`` folder (a job commit in
progress). Files of the checkpoint, when it lies inside a watched folder, never count.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

#: (size, modification time in ns) of every file, by path
Snapshot = Mapping[str, tuple[int, int]]

#: names that say a write is still open
OPEN_SUFFIXES = ("-journal",)
OPEN_FOLDERS = ("_temporary",)


@dataclass(frozen=True, slots=True)
class SinkWatch:
    """The sink's folders (or files) to watch, and folders inside them to leave out."""

    paths: tuple[Path, ...]
    exclude: tuple[Path, ...] = ()

    def snapshot(self) -> Snapshot:
        """Every file under the watched paths now; a path that does not exist yet is empty."""
        return {path: (size, mtime) for path, size, mtime in self._files()}

    def wrote_since(self, before: Snapshot) -> bool:
        """Whether the sink wrote something since ``before`` and no write is still open."""
        changed = False
        for path, size, mtime in self._files():
            name = os.path.basename(path)
            if name.endswith(OPEN_SUFFIXES) or any(
                part in OPEN_FOLDERS for part in Path(path).parts
            ):
                return False
            changed = changed or before.get(path) != (size, mtime)
        return changed

    def _files(self) -> Iterator[tuple[str, int, int]]:
        skip = {str(p) for p in self.exclude}
        for root in self.paths:
            yield from _walk(str(root), skip)


def _walk(path: str, skip: set[str]) -> Iterator[tuple[str, int, int]]:
    if path in skip:
        return
    try:
        entries = list(os.scandir(path))
    except NotADirectoryError:
        try:
            stat = os.stat(path)
        except OSError:
            return
        yield path, stat.st_size, stat.st_mtime_ns
        return
    except OSError:  # not there yet, or gone meanwhile
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(entry.path, skip)
            else:
                stat = entry.stat(follow_symlinks=False)
                yield entry.path, stat.st_size, stat.st_mtime_ns
        except OSError:
            continue
