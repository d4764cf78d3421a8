"""A run's Great Expectations Data Docs, served from its report folder and never from
anywhere else.

The report folder is written by the run, and the candidate application under test runs
with write access to its run folder, so everything below the folder is untrusted: a
planted ``data_docs -> /`` (or a link deeper down) must not turn the page into a way to
read any file the API server can read. So the folder recorded in the store is resolved
once (Parity made it), and from there each component of the requested path is opened
relative to the previous one's descriptor with ``O_NOFOLLOW``: a symbolic link at any
level, even one that points back inside the folder, is refused, as are ``.``, ``..`` and
empty components (so ``//etc/passwd`` too). What is served is the descriptor that was
checked — a regular file with one link — so swapping a component for a link between the
check and the read changes nothing (no time-of-check/time-of-use gap). Every refusal is
the same ``None``: the caller answers 404 and says nothing about why.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from matcher import uris
from matcher.store import DATA_DOCS_DIR

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class DocsFile:
    """An open, checked Data Docs file; ``chunks()`` reads it and closes it (so does the
    garbage collector, should a response never be sent)."""

    file: BinaryIO
    media_type: str

    def chunks(self) -> Iterator[bytes]:
        with self.file:
            while chunk := self.file.read(_CHUNK):
                yield chunk


def open_data_docs_file(report_path: str, file: str) -> DocsFile | None:
    """``file`` (a ``/``-separated path) of the Data Docs in ``report_path``, opened, or
    ``None`` when it is not a regular file reached without following a link."""
    parts = file.split("/")
    local = uris.local_path(report_path)  # None: on shared storage, not served
    if local is None or any(part in ("", ".", "..") for part in parts):
        return None
    try:
        root = os.open(local.resolve(), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    folder = root
    try:
        for name in (DATA_DOCS_DIR, *parts[:-1]):
            inner = os.open(name, _DIRECTORY, dir_fd=folder)
            _close(folder)
            folder = inner
        fd = os.open(parts[-1], _FILE, dir_fd=folder)
    except (OSError, ValueError):
        return None
    finally:
        _close(folder)
    return _regular(fd, parts[-1])


def _regular(fd: int, name: str) -> DocsFile | None:
    """The open file if it is a regular file with a single link (a hard link could bring
    in a file from outside the folder), else closed and ``None``."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return DocsFile(open(fd, "rb"), media_type)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
