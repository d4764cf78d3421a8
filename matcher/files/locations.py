"""A location is a local path or a Hadoop-compatible URI (``file://``, ``hdfs://``,
``s3a://``, ``gs://``, ...): what Spark reads and writes, read and written on the Python side
through ``pyarrow.fs``.

    root = join("s3a://bucket/parity/runs", "topics", "manual-1")
    write_text(join(root, "plan.json"), document)      # join: matcher.uris
    read_text(join(root, "plan.json"))

A run's workspace must be where every task can reach it: on a deployment whose Airflow
workers are separate machines (Celery, Kubernetes), the plan task, the Spark jobs and the
match task each run somewhere else, so the workspace is shared storage, named the way Spark
names it. Spark's Hadoop schemes differ from pyarrow's for the same store: ``s3a://`` and
``s3n://`` are pyarrow's ``s3://`` (credentials and endpoint from the usual ``AWS_*``
variables, ``AWS_ENDPOINT_URL`` included), ``gs://`` is ``gcs://``; ``hdfs://`` goes to
pyarrow's HDFS client (libhdfs, found through ``HADOOP_HOME``). A scheme
pyarrow does not know is tried through fsspec, if a filesystem for it is installed.

Plain paths and ``file://`` URIs are local (``matcher.uris.local_path``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from matcher.errors import InputError
from matcher.uris import local_path

if TYPE_CHECKING:
    from pyarrow import fs as pafs

#: Spark's (Hadoop's) scheme -> the scheme pyarrow's ``FileSystem.from_uri`` knows
_SCHEMES = {"s3a": "s3", "s3n": "s3", "gs": "gcs"}


def write_text(location: str, text: str) -> None:
    """Write ``text`` as UTF-8 to ``location`` (its folder made first), replacing it."""
    filesystem, path = resolve(location)
    filesystem.create_dir(posixpath.dirname(path), recursive=True)
    with filesystem.open_output_stream(path) as stream:
        stream.write(text.encode("utf-8"))


def read_text(location: str) -> str:
    """The UTF-8 text at ``location``; ``OSError`` when it cannot be read."""
    filesystem, path = resolve(location)
    with filesystem.open_input_stream(path) as stream:
        data: bytes = stream.read()
    return data.decode("utf-8")


def exists(location: str) -> bool:
    from pyarrow import fs as pafs

    filesystem, path = resolve(location)
    return bool(filesystem.get_file_info(path).type != pafs.FileType.NotFound)


def make_empty_dir(location: str) -> None:
    """An empty folder at ``location``: made, or emptied when it is there (a re-run of a
    DAG run starts clean)."""
    from pyarrow import fs as pafs

    filesystem, path = resolve(location)
    if filesystem.get_file_info(path).type == pafs.FileType.Directory:
        filesystem.delete_dir_contents(path)
    else:
        filesystem.create_dir(path, recursive=True)


def remove_tree(location: str) -> None:
    """Remove the folder at ``location`` and everything in it; nothing when it is not
    there."""
    from pyarrow import fs as pafs

    filesystem, path = resolve(location)
    if filesystem.get_file_info(path).type == pafs.FileType.Directory:
        filesystem.delete_dir(path)


def data_files(location: str) -> list[str]:
    """The names of the data files directly in the folder ``location``, in name order:
    Spark's ``_SUCCESS`` and hidden ``.crc`` files left out, as Spark skips them."""
    from pyarrow import fs as pafs

    filesystem, path = resolve(location)
    found = filesystem.get_file_info(pafs.FileSelector(path))
    names = (posixpath.basename(info.path) for info in found if info.is_file)
    return sorted(name for name in names if not name.startswith((".", "_")))


def total_bytes(locations: Iterable[str], limit: int) -> int | None:
    """The bytes of the files at or below ``locations``, or ``None`` once they pass
    ``limit`` (the walk stops there: a big output is not listed to the end) or when a
    location is not there."""
    from pyarrow import fs as pafs

    total = 0
    for location in locations:
        filesystem, path = resolve(location)
        info = filesystem.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            return None
        if info.is_file:
            total += info.size or 0
        else:
            for found in _files_below(filesystem, path):
                total += found.size or 0
                if total > limit:
                    return None
        if total > limit:
            return None
    return total


def local_bytes(locations: Iterable[str], limit: int) -> int | None:
    """The bytes of the files at or below ``locations`` when every one is local (a path or
    ``file://``) and they hold at most ``limit`` in all; else ``None``."""
    paths = [local_path(location) for location in locations]
    if any(path is None for path in paths):
        return None
    return total_bytes([str(path) for path in paths], limit)


def upload_tree(folder: Path, location: str) -> None:
    """Copy the local ``folder`` and everything in it to ``location`` (replaced)."""
    from pyarrow import fs as pafs

    target, path = resolve(location)
    remove_tree(location)
    pafs.copy_files(
        str(folder), path, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=target
    )


def download(location: str, folder: Path) -> Path:
    """A local copy of the file or folder at ``location`` (its name kept, for the format),
    made in ``folder``: the core reads local files, whatever store an output is on."""
    from pyarrow import fs as pafs

    source, path = resolve(location)
    info = source.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"{location}: no such file or directory")
    target = folder / (posixpath.basename(path.rstrip("/")) or "output")
    if info.type == pafs.FileType.Directory:
        target.mkdir(parents=True)
    pafs.copy_files(
        path,
        str(target),
        source_filesystem=source,
        destination_filesystem=pafs.LocalFileSystem(),
    )
    return target


def resolve(location: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem that holds ``location`` and its path there; a scheme no filesystem
    serves is an ``InputError`` naming it."""
    from pyarrow import fs as pafs

    local = local_path(location)
    if local is not None:
        return pafs.LocalFileSystem(), str(local.expanduser().absolute())
    parts = urlsplit(location)
    scheme = _SCHEMES.get(parts.scheme, parts.scheme)
    filesystem = _filesystem(scheme, parts.netloc)
    if isinstance(filesystem, pafs.HadoopFileSystem) or scheme == "hdfs":
        return filesystem, parts.path or "/"
    return filesystem, f"{parts.netloc}{parts.path}".rstrip("/") or parts.netloc


@lru_cache(maxsize=16)
def _filesystem(scheme: str, authority: str) -> pafs.FileSystem:
    """One filesystem per store (its clients hold connections): pyarrow's own, else
    fsspec's."""
    from pyarrow import fs as pafs

    try:
        filesystem, _ = pafs.FileSystem.from_uri(f"{scheme}://{authority}/")
        return filesystem
    except (OSError, ValueError) as native:  # ArrowInvalid is a ValueError
        try:
            import fsspec

            handler = pafs.FSSpecHandler(fsspec.filesystem(scheme))
        except (ImportError, ValueError) as exc:
            raise InputError(
                f"{scheme}://{authority}: no filesystem for this scheme here ({native}; "
                f"fsspec: {exc})"
            ) from exc
        return pafs.PyFileSystem(handler)


def _files_below(filesystem: pafs.FileSystem, path: str) -> Iterable[pafs.FileInfo]:
    """The files below ``path``, one folder listing at a time (a caller may stop early)."""
    from pyarrow import fs as pafs

    folders = [path]
    while folders:
        listing = filesystem.get_file_info(pafs.FileSelector(folders.pop()))
        for info in listing:
            if info.type == pafs.FileType.Directory:
                folders.append(info.path)
            elif info.is_file:
                yield info


def clear_clients() -> None:
    """Forget the stores' clients: the next access makes new ones, from the ``AWS_*`` and
    Hadoop settings as they are then (rotated credentials, another endpoint)."""
    _filesystem.cache_clear()
