"""Locations: a local path or a Hadoop-compatible URI (``file://``, ``hdfs://``,
``s3a://``, ...), named the way Spark names them; joined and told apart here, without
touching storage (``matcher.files.locations`` reads and writes them).

Plain paths and ``file://`` URIs are local: ``local_path`` gives them as ``Path``, for the
code that must see a local file (a process's working directory, a served file).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

#: the URI schemes a root of run folders may have besides ``file``: shared storage that Spark
#: writes to, each naming its bucket, container or name node in the authority
ROOT_SCHEMES = ("s3a", "s3", "gs", "hdfs", "abfss")


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


def check_root(location: str) -> str:
    """``location`` as a root to create folders under (``PARITY_WORKSPACE``), else
    ``ValueError`` saying what a root may be: an absolute local path (``~`` expanded),
    ``file:///ABSOLUTE``, or one of ``ROOT_SCHEMES`` with a non-empty authority
    (``s3a://bucket/...``, ``hdfs://namenode/...``). Anything else (``javascript:x``,
    ``file:``, ``s3a://``, ``file://host/DIR``, ``-rf``) would have runs write into a relative
    folder of whatever directory a worker runs in, or on a host it does not mean."""
    expected = (
        "expected an absolute path, file:///PATH, or "
        + ", ".join(f"{scheme}://" for scheme in ROOT_SCHEMES)
        + " with a bucket or host"
    )
    if re.search(r"[\x00-\x1f\x7f]", location):
        raise ValueError(f"{location!r} holds a control character: {expected}")
    if not is_uri(location):
        path = Path(location).expanduser()
        if not path.is_absolute():
            raise ValueError(f"{location!r} is not an absolute path: {expected}")
        return str(path)
    parts = urlsplit(location)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ValueError(f"{location!r} is not a local file:/// URI: {expected}")
        return location
    if scheme not in ROOT_SCHEMES:
        raise ValueError(f"{location!r} has an unknown scheme {parts.scheme!r}: {expected}")
    if not parts.netloc or parts.netloc.startswith("@") or parts.netloc.endswith("@"):
        raise ValueError(f"{location!r} names no bucket or host: {expected}")
    return location
