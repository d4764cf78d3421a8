"""The project's zip cache (``parity.runs.package``) stays bounded: a build keeps the zips used
last and removes the others, beside other processes building, reusing and pruning the same
folder. Real files in a temporary folder; the zip itself (deterministic, cached by content)
and its place on a command line are ``test_cluster_validation.py``'s."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PosixPath

from parity.runs.package import KEEP, ProjectCode, digest, prune

#: the times the test's builds happened at, one per version: a filesystem's own clock ticks
#: coarsely, so two builds in a row may otherwise carry the same time
BASE = 1_700_000_000


def _code(source: Path, version: int) -> ProjectCode:
    """A one-package project whose content is ``version``."""
    (source / "alpha").mkdir(parents=True, exist_ok=True)
    (source / "alpha" / "__init__.py").write_text(f"VERSION = {version}\n")
    return ProjectCode((("alpha", str(source / "alpha")),))


def _build(source: Path, cache: Path, version: int, at: int | None = None) -> Path:
    """Bundle ``version`` into ``cache``, then date it ``at`` (default: its version)."""
    zipped = _code(source, version).bundle(cache)
    stamp = BASE + (version if at is None else at)
    os.utime(zipped, (stamp, stamp))
    return zipped


def _name(source: Path, version: int) -> str:
    return f"parity-{digest(_code(source, version).files())}.zip"


def _names(source: Path, versions: list[int]) -> list[str]:
    return sorted(_name(source, v) for v in versions)


def test_a_build_keeps_the_zips_used_last_and_removes_the_others(tmp_path: Path) -> None:
    source, cache = tmp_path / "src", tmp_path / "packages"
    assert KEEP == 3
    for version in (1, 2, 3):
        _build(source, cache, version)
    assert sorted(p.name for p in cache.iterdir()) == _names(source, [1, 2, 3])
    _build(source, cache, 4)
    assert sorted(p.name for p in cache.iterdir()) == _names(source, [2, 3, 4])
    _build(source, cache, 5)
    assert sorted(p.name for p in cache.iterdir()) == _names(source, [3, 4, 5])


def test_reusing_a_zip_makes_it_recent_so_a_later_build_keeps_it(tmp_path: Path) -> None:
    """Back to an older version of the code (a revert, a rollback): its zip is reused, not
    rebuilt, and marked used now; the next build removes the least recently used instead."""
    source, cache = tmp_path / "src", tmp_path / "packages"
    first = _build(source, cache, 1)
    for version in (2, 3):
        _build(source, cache, version)
    inode = first.stat().st_ino
    assert _code(source, 1).bundle(cache) == first
    assert first.stat().st_ino == inode  # not written again
    assert first.stat().st_mtime > BASE + 3  # but used now
    _build(source, cache, 4)
    assert sorted(p.name for p in cache.iterdir()) == _names(source, [1, 3, 4])


def test_only_the_cache_s_zips_are_removed_and_never_the_one_just_built(tmp_path: Path) -> None:
    """The zip just built stays even when its time is the oldest (a clock set back, another
    machine's on a shared mount); a staging file (another process writing a zip right now)
    and a user's files that look almost like the cache's zips are not the cache's."""
    cache = tmp_path / "packages"
    cache.mkdir()
    staging = cache / ".parity-00000000000000aa.zip.k2j4x"
    others = [staging, cache / "parity-mine.zip", cache / "parity-00000000000000AA.zip"]
    for path in others:
        path.write_bytes(b"")
    zips = [cache / f"parity-{n:016x}.zip" for n in range(1, 6)]
    for age, path in enumerate(zips):
        path.write_bytes(b"PK")
        os.utime(path, (BASE + age, BASE + age))
    os.utime(staging, (BASE - 1, BASE - 1))  # oldest of all: still not ours to remove
    spare = zips[0]  # the one just built, though the oldest
    removed = prune(cache, keep=3, spare=spare)
    assert sorted(removed) == zips[1:3]
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [
            ".parity-00000000000000aa.zip.k2j4x",
            "parity-00000000000000AA.zip",
            "parity-0000000000000001.zip",
            "parity-0000000000000004.zip",
            "parity-0000000000000005.zip",
            "parity-mine.zip",
        ]
    )


class _Raced(PosixPath):
    """The cache folder as another process changes it while ``prune`` reads it: a zip listed
    but removed before its time is read, and one removed between its time being read and
    ``prune`` removing it."""

    ghost: Path
    vanishing: Path

    def glob(self, pattern: str) -> Iterator[Path]:  # type: ignore[override]  # plain paths
        yield self.ghost
        yield from Path(self).glob(pattern)
        self.vanishing.unlink()  # every time was read: another pruner removes this one


def test_zips_another_process_removes_meanwhile_are_skipped(tmp_path: Path) -> None:
    cache = tmp_path / "packages"
    cache.mkdir()
    zips = [cache / f"parity-{n:016x}.zip" for n in range(1, 6)]
    for age, path in enumerate(zips):
        path.write_bytes(b"PK")
        os.utime(path, (BASE + age, BASE + age))
    raced = _Raced(cache)
    raced.ghost = cache / "parity-00000000000000ff.zip"  # listed, never there
    raced.vanishing = zips[0]  # the oldest: the one prune would remove first
    removed = prune(raced, keep=2, spare=zips[4])
    assert sorted(removed) == zips[1:3]  # the vanished one is not claimed
    assert sorted(p.name for p in cache.iterdir()) == [zips[3].name, zips[4].name]
