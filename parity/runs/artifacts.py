"""Applications by URL: what an artifact URL may look like, when it is under an allowed
prefix, and ``stage``, which copies one to a local file for ``spark-submit``.

    url = parse_url("s3a://artifacts/etl/etl-1.5.0.py")
    url.is_under(parse_prefix("s3a://artifacts/etl"))          # True: whole segments
    staged = stage("s3a://artifacts/etl/etl-1.5.0.py", Path(tmp), open_stored=open_stored)
    staged.path, staged.size, staged.sha256                    # tmp/etl-1.5.0.py, 5120, '9f…'

A CI job validates the build it just made by its artifact URL (``s3a://``, ``s3://``,
``gs://``, ``hdfs://``, ``abfs(s)://``, ``https://``, ``http://``). Who may trigger a run
names that URL, so ``parity.airflow.plan.AdhocPolicy`` lets it through only under a prefix
the deployment allows (``PARITY_ADHOC_APPLICATION_ROOTS``), compared here on a normal form:
the scheme lower-cased, no credentials, query or fragment, no ``.``/``..`` segment (nor one
percent-encoded, nor an encoded ``/``), and a prefix matching whole path segments
(``s3a://artifacts/etl/`` allows ``s3a://artifacts/etl/x.py``, never
``s3a://artifacts/etl-evil/x.py``). Everything else is compared exactly: another scheme
(``s3://`` for ``s3a://``, ``http`` for ``https``), another port spelling or another case of
the authority is another place.

The Spark task stages the URL itself (``ParitySparkSubmitOperator``) rather than leaving it
to ``spark-submit``: the bytes that run are the bytes whose size and SHA-256 the task's log
shows, and ``spark-submit`` needs no filesystem client (``hadoop-aws``) for the artifact.
Hadoop-style URIs are read through the ``open_stored`` the caller gives (the operator's
reads them through ``pyarrow.fs`` as the workspace is read, ``matcher.files.locations``:
``AWS_*`` settings for ``s3a://``; this package imports the core alone), HTTP(S) through
urllib with a timeout; both stop at a size limit. The file keeps its name and extension
(``.py``, ``.jar`` or ``.zip``: how ``spark-submit`` tells a Python application from a JAR)
and is written beside its final name, then renamed: no reader sees half a file.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol
from urllib.parse import unquote, urlsplit

from matcher.errors import ConfigurationError, ParityError

#: the schemes an application URL may have (``http`` only under an ``http`` prefix)
SCHEMES = ("s3a", "s3", "gs", "hdfs", "abfs", "abfss", "https", "http")
#: what ``spark-submit`` runs: a Python file, a JAR, or a zip of Python code
EXTENSIONS = (".py", ".jar", ".zip")
#: the largest artifact staged, unless ``PARITY_ARTIFACT_MAX_BYTES`` says otherwise
MAX_BYTES = 512 * 1024 * 1024
MAX_BYTES_VARIABLE = "PARITY_ARTIFACT_MAX_BYTES"
#: seconds an HTTP(S) connection or read may take before the download fails
TIMEOUT = 60.0
_CHUNK = 1 << 20
# Schemes whose authority is ``container@account``: an ``@`` there is no credential.
_CONTAINER_SCHEMES = ("abfs", "abfss")
# One entry of a ``:``-separated list that is a URL: userinfo (kept whole, refused later),
# host, optional port, then the path up to the next ``:``.
_URL_ENTRY = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/:@]*(?::[^/@]*)?@)?[^/:]*(?::[0-9]+)?(?:/[^:]*)?"
)


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class ArtifactError(ParityError):
    """An application URL cannot be staged: not a usable URL, not there, empty, too big, or
    not a ``.py``, ``.jar`` or ``.zip`` file. Retrying does not mend it."""


class ArtifactFetchError(ArtifactError):
    """Reading the artifact failed on the way (network, store, timeout): a retry may work."""


@dataclass(frozen=True, slots=True)
class ArtifactURL:
    """An application URL or an allowed prefix, in the normal form they are compared in
    (a prefix's path ends with ``/``)."""

    scheme: str
    authority: str
    path: str

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path}"

    @property
    def name(self) -> str:
        """The file name: the path's last segment."""
        return self.path.rsplit("/", 1)[-1]

    def is_under(self, prefix: ArtifactURL) -> bool:
        """The same scheme and authority, and ``prefix``'s path segments first."""
        return (self.scheme, self.authority) == (prefix.scheme, prefix.authority) and (
            self.path.startswith(prefix.path)
        )


def is_url(location: str) -> bool:
    """``scheme://...``: what ``parse_url`` judges (a plain path is not a URL)."""
    return "://" in location


def is_stageable(location: str) -> bool:
    """A URL of one of ``SCHEMES``: the Spark task stages it (others, such as ``file://``
    and Spark's ``local:``, go to ``spark-submit`` as they are)."""
    return is_url(location) and urlsplit(location).scheme.lower() in SCHEMES


def parse_url(text: str) -> ArtifactURL:
    """``text`` as an application URL, else ``ValueError`` saying what is wrong with it."""
    url = _parse(text)
    if not url.name or url.path.endswith("/"):
        raise ValueError("names a folder, not a file")
    if not url.name.endswith(EXTENSIONS):
        raise ValueError(f"is not a {', '.join(EXTENSIONS[:-1])} or {EXTENSIONS[-1]} file")
    return url


def parse_prefix(text: str) -> ArtifactURL:
    """``text`` as an allowed URL prefix (``s3a://artifacts/etl`` is
    ``s3a://artifacts/etl/``), else ``ValueError``."""
    url = _parse(text)
    return url if url.path.endswith("/") else ArtifactURL(url.scheme, url.authority, url.path + "/")


def split_entries(text: str, separator: str = os.pathsep) -> tuple[str, ...]:
    """The entries of a ``separator``-separated list of local paths and URL prefixes,
    stripped, empty ones left out. With ``:`` (POSIX) a URL keeps its ``scheme://`` and its
    ``:port``; its path runs to the next ``:``."""
    entries = []
    rest: str | None = text
    while rest is not None:
        rest = rest.lstrip()
        found = _URL_ENTRY.match(rest) if separator == ":" else None
        start = found.end() if found else 0
        cut = rest.find(separator, start)
        entry, rest = (rest, None) if cut < 0 else (rest[:cut], rest[cut + 1 :])
        if entry.strip():
            entries.append(entry.strip())
    return tuple(entries)


def shown(url: str) -> str:
    """``url`` as logs and messages show it: any user information masked (an ``abfs``
    container, ``container@account``, stays)."""
    parts = urlsplit(url) if is_url(url) else None
    if parts is None or "@" not in parts.netloc:
        return url
    userinfo = parts.netloc.rpartition("@")[0]
    if parts.scheme.lower() in _CONTAINER_SCHEMES and ":" not in userinfo:
        return url
    return url.replace(f"{userinfo}@", "***@", 1)


def masked(text: str) -> str:
    """``text`` (an error message) with the user information of any URL in it masked."""
    return re.sub(r"(?<=://)[^/@\s]+@", "***@", text)


def max_bytes(environ: Mapping[str, str] = os.environ) -> int:
    """The size limit: ``PARITY_ARTIFACT_MAX_BYTES`` (a positive integer) when set, else
    ``MAX_BYTES``."""
    named = environ.get(MAX_BYTES_VARIABLE, "").strip()
    if not named:
        return MAX_BYTES
    if not named.isdigit() or int(named) == 0:
        raise ConfigurationError(
            f"{MAX_BYTES_VARIABLE}: expected a positive integer, got {named!r}"
        )
    return int(named)


@dataclass(frozen=True, slots=True)
class Staged:
    """An artifact copied to a local file: where, its SHA-256 (hex), its size, its URL."""

    path: Path
    sha256: str
    size: int
    url: str


#: opens a Hadoop-style URI's file (``s3a://``, ``hdfs://``...): a context manager giving
#: its size (``None`` when unknown) and a stream of its bytes; ``FileNotFoundError`` when it
#: is not there, ``IsADirectoryError`` when it is a folder. ``parity.runs`` builds command
#: lines from the core alone (no ``pyarrow``): the caller gives one
#: (``parity.airflow.operators.open_stored``, ``pyarrow.fs`` as the workspace is read).
OpenStored = Callable[[str], AbstractContextManager[tuple[int | None, _Readable]]]


def stage(
    url: str,
    directory: Path,
    *,
    open_stored: OpenStored | None = None,
    limit: int = MAX_BYTES,
    timeout: float = TIMEOUT,
) -> Staged:
    """Copy the application at ``url`` to ``directory`` (made if missing), under its own
    name: HTTP(S) through urllib, any other scheme through ``open_stored``.
    ``ArtifactError`` (one line, credentials masked) when it is not a usable URL, not a
    file, empty or larger than ``limit``; ``ArtifactFetchError`` when reading fails."""
    where = shown(url)
    try:
        parsed = parse_url(url)
    except ValueError as exc:
        raise ArtifactError(f"{where}: {exc}") from None
    if parsed.scheme not in ("http", "https") and open_stored is None:
        raise ArtifactError(f"{where}: no reader for {parsed.scheme}:// was given")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / _local_name(parsed.name)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    try:
        with (
            os.fdopen(handle, "wb") as out,
            _opened(url, where, limit, timeout, open_stored) as source,
        ):
            sha256, size = _copy(source, out, where, limit)
        if size == 0:
            raise ArtifactError(f"{where}: the file is empty")
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return Staged(target, sha256, size, url)


# --- building blocks ----------------------------------------------------------------------


def _parse(text: str) -> ArtifactURL:
    if re.search(r"[\x00-\x20\x7f\\]", text):
        raise ValueError("holds a space, a control character or a backslash")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if not is_url(text) or scheme not in SCHEMES:
        raise ValueError(f"has an unknown scheme (expected one of: {', '.join(SCHEMES)})")
    if "?" in text or "#" in text:
        raise ValueError("has a query or a fragment")
    userinfo, _, host = parts.netloc.rpartition("@")
    if "@" in parts.netloc and (scheme not in _CONTAINER_SCHEMES or ":" in userinfo):
        raise ValueError("holds credentials (give them to the workers' environment instead)")
    if not host or host.startswith(":"):
        raise ValueError("names no bucket or host")
    try:
        _ = parts.port  # a port that is not a number raises
    except ValueError:
        raise ValueError("has a port that is not a number") from None
    for segment in parts.path.split("/"):
        decoded = unquote(segment)
        if decoded in (".", "..") or "/" in decoded or "\\" in decoded:
            raise ValueError("has a '.' or '..' segment or an encoded separator")
    return ArtifactURL(scheme, parts.netloc, parts.path or "/")


def _local_name(name: str) -> str:
    """The file name kept, with what a shell or ``spark-submit`` could misread replaced."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", unquote(name)).lstrip(".") or "application"


@contextmanager
def _opened(
    url: str, where: str, limit: int, timeout: float, open_stored: OpenStored | None
) -> Iterator[_Readable]:
    """A stream of the artifact's bytes; errors on the way as ``ArtifactFetchError``."""
    try:
        if urlsplit(url).scheme.lower() in ("http", "https"):
            with _http(url, where, limit, timeout) as response:
                yield response
        else:
            assert open_stored is not None
            with open_stored(url) as (size, stream):
                _check_size(size, where, limit)
                yield stream
    except urllib.error.HTTPError as exc:
        exc.close()
        raise ArtifactFetchError(f"{where}: HTTP {exc.code} {exc.reason}") from None
    except FileNotFoundError:
        raise ArtifactError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise ArtifactError(f"{where}: not a file") from None
    except OSError as exc:  # a store's errors, URLError and timeouts are OSErrors
        detail = " ".join(str(getattr(exc, "reason", None) or exc).split())
        raise ArtifactFetchError(f"{where}: cannot be read: {masked(detail)}") from None


@contextmanager
def _http(url: str, where: str, limit: int, timeout: float) -> Iterator[Any]:
    opener = urllib.request.build_opener(_NoDowngrade())
    with opener.open(url, timeout=timeout) as response:
        length = response.headers.get("Content-Length")
        _check_size(int(length) if length and length.isdigit() else None, where, limit)
        yield response


def _check_size(size: int | None, where: str, limit: int) -> None:
    """Refuse an artifact whose announced size is over ``limit`` before reading it."""
    if size is not None and size > limit:
        raise ArtifactError(f"{where}: {size} bytes, more than the limit of {limit}")


def _copy(source: _Readable, out: BinaryIO, where: str, limit: int) -> tuple[str, int]:
    """Copy ``source`` to ``out`` in chunks, hashing; stop past ``limit`` (a size the
    server did not announce, or one that grew, is still bounded)."""
    hasher, size = hashlib.sha256(), 0
    while chunk := source.read(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise ArtifactError(f"{where}: more than the limit of {limit} bytes")
        hasher.update(chunk)
        out.write(chunk)
    return hasher.hexdigest(), size


class _NoDowngrade(urllib.request.HTTPRedirectHandler):
    """Redirects are followed (artifact servers send downloads to signed storage URLs),
    but never from ``https`` to anything else."""

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        if urlsplit(req.full_url).scheme == "https" and urlsplit(newurl).scheme != "https":
            fp.close()
            where = shown(req.full_url)
            raise ArtifactError(f"{where}: redirected to {shown(newurl)}, which is not https")
        return super().redirect_request(req, fp, code, msg, headers, newurl)
