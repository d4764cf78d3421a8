"""Locations: a local path or a Hadoop-compatible URI (``file://``, ``hdfs://``,
``s3a://``, ...), named the way Spark names them; joined and told apart here, without
touching storage (``matcher.files.locations`` reads and writes them).

Plain paths and ``file://`` URIs are local: ``local_path`` gives them as ``Path``, for the
code that must see a local file (a process's working directory, a served file).
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from urllib.parse import urlsplit


def is_uri(location: str) -> bool:
    """``scheme://...`` (``file://`` included); a plain path otherwise."""
    return "://" in location


def local_path(location: str) -> Path | None:
    """The local file a plain path or ``file://`` URI names; ``None`` for any other URI."""
    if not is_uri(location):
        return Path(location)
    parts = urlsplit(location)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return Path(parts.path)


def join(location: str, *parts: str) -> str:
    """``location`` with ``parts`` appended, ``/``-separated, its scheme and authority
    kept."""
    if not is_uri(location):
        return str(Path(location).joinpath(*parts))
    return posixpath.join(location.rstrip("/"), *parts)
