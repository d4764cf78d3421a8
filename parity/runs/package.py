"""The project's own code for a cluster's executors: one zip of its packages, built once per
content (cached by its hash) and shipped with the jobs that import it.

    code = ProjectCode.installed()                    # where matcher, parity, ... are imported from
    bundle = code.bundle(home / "packages")           # HOME/packages/parity-3f2a9c0e1b7d4a55.zip
    ship_project(job, str(bundle)).conf
    # {..., 'spark.archives': '/…/parity-3f2a9c0e1b7d4a55.zip#parity-code',
    #       'spark.executorEnv.PYTHONPATH': 'parity-code'}

Shipped as an *archive* that Spark unpacks in each executor's working directory
(``parity-code/``), put on the executors' ``PYTHONPATH``, not with ``--py-files``:
``--py-files`` also goes first on the *driver's* ``PYTHONPATH`` (client mode), and then the
driver imports the project from inside the zip, where nothing that reads a file beside its
module works (the store's Alembic migrations are a directory: ``Store.open`` fails). Unpacked,
it is plain files on the executors, and the driver keeps the installed project.

Which jobs get it is one rule, ``submitted_to``, shared by everything that submits
(``parity.airflow.operators``, ``parity.recovery.runner``): on ``local[...]`` none (the
executors are the driver's own process and interpreter), on a cluster Parity's own jobs and
the applications that are modules of its packages (the bundled examples, ``jobs/examples/``).

The zip is deterministic: entries in name order, fixed times and modes, so the same code
gives the same bytes and the same name; it is written beside its final name and renamed, so
that two tasks building it at once never see half a file.

The cache keeps the ``KEEP`` zips used last (a zip's time is when it was last built or
reused): each build removes the others. A job reads its zip while it runs (executors that
start late, or again after a crash, fetch it from the driver, which serves it from that
path), so a zip is removed only once ``KEEP`` other versions of the code were built after
its last use, never the one just built.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from matcher.errors import ParityError
from parity.runs.submits import SparkJob, is_local

#: the packages of the wheel (pyproject.toml, ``[tool.hatch.build.targets.wheel]``)
PACKAGES = ("matcher", "parity", "expectations", "jobs")
#: where, under the Parity home, the zips are cached (one per content)
PACKAGES_DIR = "packages"
#: how many zips the cache keeps: the one just built or reused and those used before it
KEEP = 3
#: the directory the archive is unpacked to in an executor's working directory
ALIAS = "parity-code"
ARCHIVES = "spark.archives"
EXECUTOR_PYTHONPATH = "spark.executorEnv.PYTHONPATH"
#: part of the digest: a change to how the zip is laid out is a new zip
LAYOUT = b"parity-code-zip/1"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
#: the cache's zips (``bundle``'s names), and nothing else a user may have put beside them
ZIP_PATTERN = "parity-" + "[0-9a-f]" * 16 + ".zip"


class ProjectCodeError(ParityError):
    """A package of the project cannot be found where this interpreter imports it (a
    ``ParityError`` below ``matcher.errors``' tree, as ``StoreError`` is)."""


def is_local_master(master: str) -> bool:
    """``local`` and ``local[N]``/``local[*]``/``local[N,F]``: the executors are threads of the
    driver, which imports the installed project. Anything else (``spark://``, ``yarn``,
    ``k8s://``, ``local-cluster[...]``) starts executors elsewhere."""
    return master == "local" or master.startswith("local[")


def submitted_to(
    job: SparkJob,
    master: str,
    *,
    own: bool,
    cache_dir: Path,
    code: ProjectCode | None = None,
) -> SparkJob:
    """``job`` as it is submitted to ``master``: on a cluster, when it is Parity's own
    (``own``) or its application is a module of the project's packages (``code``, default the
    installed ones), with the project's zip for its executors (built into ``cache_dir``
    unless the same code is already there); otherwise as it is, and nothing is built."""
    if is_local_master(master):
        return job
    code = ProjectCode.installed() if code is None else code
    if not (own or code.contains(job.application)):
        return job
    return ship_project(job, str(code.bundle(cache_dir)))


def ship_project(job: SparkJob, bundle: str) -> SparkJob:
    """``job`` with the project's zip ``bundle`` unpacked beside its executors and first on
    their ``PYTHONPATH``; archives and a ``PYTHONPATH`` it already has are kept, after ours."""
    entry = f"{bundle}#{ALIAS}"
    conf = dict(job.conf)
    archives = [a for a in conf.get(ARCHIVES, "").split(",") if a.strip()]
    conf[ARCHIVES] = ",".join([entry, *(a for a in archives if a != entry)])
    paths = [p for p in conf.get(EXECUTOR_PYTHONPATH, "").split(os.pathsep) if p]
    conf[EXECUTOR_PYTHONPATH] = os.pathsep.join([ALIAS, *(p for p in paths if p != ALIAS)])
    return replace(job, conf=conf)


@dataclass(frozen=True, slots=True)
class ProjectCode:
    """The project's packages: each name and the directory it is imported from."""

    packages: tuple[tuple[str, str], ...]

    @classmethod
    def installed(cls, names: Sequence[str] = PACKAGES) -> ProjectCode:
        """The packages as this interpreter imports them (the checkout of an editable
        install, else site-packages): the code the driver runs is the code that ships.
        Finding a top-level package does not import it."""
        found = []
        for name in names:
            spec = importlib.util.find_spec(name)
            locations = list(spec.submodule_search_locations or []) if spec else []
            if len(locations) != 1:
                raise ProjectCodeError(f"cannot find the package {name!r} to ship to executors")
            found.append((name, locations[0]))
        return cls(tuple(found))

    def contains(self, path: str) -> bool:
        """``path`` (a local file) is a module of one of the packages: a bundled application
        that imports the project."""
        if not is_local(path):
            return False
        target = Path(os.path.normpath(path))
        return any(target.is_relative_to(directory) for _, directory in self.packages)

    def files(self) -> list[tuple[str, bytes]]:
        """``(name in the zip, content)`` of every file of the packages, in name order:
        sources and package data, no byte code, caches or hidden files."""
        entries = []
        for name, directory in self.packages:
            top = Path(directory)
            for path in sorted(top.rglob("*")):
                relative = path.relative_to(top)
                if not path.is_file() or _left_out(relative):
                    continue
                entries.append((f"{name}/{relative.as_posix()}", path.read_bytes()))
        return sorted(entries)

    def bundle(self, cache_dir: Path, keep: int = KEEP) -> Path:
        """``cache_dir/parity-<digest>.zip`` of ``files()``: an existing one is marked used
        now (its time), else it is written and the cache pruned to the ``keep`` used last."""
        entries = self.files()
        target = cache_dir / f"parity-{digest(entries)}.zip"
        try:
            os.utime(target)
        except FileNotFoundError:
            cache_dir.mkdir(parents=True, exist_ok=True)
            write_zip(entries, target)
            prune(cache_dir, keep=keep, spare=target)
        except PermissionError:
            pass  # another user's zip (0644): used as it is, its time left to its owner
        return target


def digest(entries: Iterable[tuple[str, bytes]]) -> str:
    """The first 16 hex digits of a SHA-256 over the names and contents."""
    hasher = hashlib.sha256(LAYOUT)
    for name, content in entries:
        encoded = name.encode()
        hasher.update(b"%d:%b%d:" % (len(encoded), encoded, len(content)))
        hasher.update(content)
    return hasher.hexdigest()[:16]


def prune(cache_dir: Path, *, keep: int, spare: Path) -> list[Path]:
    """Remove the zips of ``cache_dir`` but ``spare`` and the newest others (``keep`` in all,
    by modification time); the ones removed. Another process may be building, reusing or
    pruning at the same time: a zip that vanishes meanwhile is skipped, and a staging file
    (``.parity-...``, ``write_zip``'s) is never a zip here. A zip this user may not remove
    (another's, in a sticky directory) stays: cleaning up never fails a submission."""
    aged = []
    for path in cache_dir.glob(ZIP_PATTERN):
        if path == spare:
            continue
        with contextlib.suppress(FileNotFoundError):
            aged.append((path.stat().st_mtime_ns, path.name, path))
    removed = []
    for _, _, path in sorted(aged, reverse=True)[max(keep - 1, 0) :]:
        with contextlib.suppress(FileNotFoundError, PermissionError):
            path.unlink()
            removed.append(path)
    return removed


def write_zip(entries: Iterable[tuple[str, bytes]], target: Path) -> None:
    """A deterministic zip of ``entries`` at ``target``, written to a temporary file beside it
    and renamed over it."""
    handle, staging = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for name, content in entries:
                info = zipfile.ZipInfo(name, date_time=_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3  # Unix, so that the mode below is read
                info.external_attr = 0o644 << 16
                archive.writestr(info, content)
        os.chmod(staging, 0o644)  # mkstemp's file is private; executors' users read it
        os.replace(staging, target)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)


def _left_out(relative: Path) -> bool:
    parts = relative.parts
    return (
        "__pycache__" in parts
        or any(part.startswith(".") for part in parts)
        or relative.suffix in (".pyc", ".pyo")
    )
