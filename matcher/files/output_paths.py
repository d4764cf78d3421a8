"""Writing a file a command was asked to write, without following or replacing what is there.

``parity report --html PATH`` used to open PATH and replace it with a regular file, whatever
it was: ``/dev/null`` or ``/dev/stdout`` (as root, the device node itself), a symbolic
link, a FIFO. ``write_output`` writes to a new temporary file in the same folder, then puts
it in place only over a **missing** path (a hard link, which fails if anything appeared
meanwhile) or an **existing regular file with one link** (a rename, which replaces the
name, never what a link points to). Anything else at the path, a symbolic link (even to a
regular file), a device, a FIFO, a socket, a folder, a file with other hard links, is
refused with one line naming it, and nothing is written. The folder must exist already.

Every command that writes a path it was given uses it (``parity report --html``, the match
job's ``--json-out`` and ``--report-dir``); ``-`` (standard output) is the caller's to
handle.

    write_output("report.html", page, what="--html")
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from matcher.errors import OutputPathError

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def refusal(mode: int, links: int) -> str | None:
    """Why a path whose ``lstat`` says ``mode`` and ``links`` may not be replaced (``None``:
    it may, a regular file with one link)."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if links != 1:
        return f"a file with {links} hard links"
    return None


def check_output_path(path: str | os.PathLike[str], what: str = "output") -> None:
    """Refuse, before any work is done, a path ``write_output`` would refuse (a command checks
    its output paths first, so that nothing runs for a page it cannot write)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputPathError(f"{what}: {os.fsdecode(path)}: {exc.strerror or exc}") from exc
    why = refusal(info.st_mode, info.st_nlink)
    if why is not None:
        raise OutputPathError(
            f"{what}: {os.fsdecode(path)} is {why}: refusing to replace it (give a new file "
            "name, or an existing regular file)"
        )


def write_output(path: str | os.PathLike[str], text: str, what: str = "output") -> None:
    """Write ``text`` (UTF-8) at ``path``: whole or not at all, never through or over what
    is not a regular file with one link (see the module's docstring)."""
    staged = StagedOutput.write(path, text, what)
    staged.place()


class StagedOutput:
    """A file written under a temporary name beside ``path``, put in place by ``place`` (or
    removed by ``discard``): a job stages its documents, commits its store, then places them,
    so that no finished document is left for a run the store does not hold as finished."""

    def __init__(self, directory: int, name: str, temporary: str, shown: str, what: str,
                 existing: os.stat_result | None) -> None:  # fmt: skip
        self._directory, self._name, self._temporary = directory, name, temporary
        self._shown, self._what, self._existing = shown, what, existing

    @classmethod
    def write(cls, path: str | os.PathLike[str], text: str, what: str = "output") -> StagedOutput:
        """Check ``path`` and write ``text`` beside it; ``OutputPathError`` when it may not be
        replaced or cannot be written (nothing is left behind then)."""
        shown = os.fsdecode(path)
        name = Path(path).name
        if not name or name in (".", ".."):
            raise OutputPathError(f"{what}: {shown}: not a file name")
        try:
            directory = os.open(str(Path(path).parent), os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise OutputPathError(
                f"{what}: {shown}: cannot open its folder: {exc.strerror or exc}"
            ) from exc
        try:
            existing = _lstat(directory, name, shown, what)
            if existing is not None:
                why = refusal(existing.st_mode, existing.st_nlink)
                if why is not None:
                    raise OutputPathError(
                        f"{what}: {shown} is {why}: refusing to replace it (give a new file "
                        "name, or an existing regular file)"
                    )
            temporary = f".{name}.{os.getpid()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                with contextlib.suppress(FileNotFoundError):  # a killed earlier attempt's
                    os.unlink(temporary, dir_fd=directory)
                handle = os.open(temporary, flags, 0o666, dir_fd=directory)
            except OSError as exc:
                raise OutputPathError(
                    f"{what}: {shown}: cannot write: {exc.strerror or exc}"
                ) from exc
            staged = cls(directory, name, temporary, shown, what, existing)
        except BaseException:
            os.close(directory)
            raise
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(text.encode("utf-8"))
                file.flush()
                os.fsync(file.fileno())
        except BaseException as exc:
            staged.discard()
            if isinstance(exc, OSError):
                raise OutputPathError(
                    f"{what}: {shown}: cannot write: {exc.strerror or exc}"
                ) from exc
            raise
        return staged

    def place(self) -> None:
        """Give the written file its name: over the regular file found there (if it is still
        the same one), or where nothing was (never over what appeared meanwhile)."""
        directory, name, shown, what = self._directory, self._name, self._shown, self._what
        try:
            if self._existing is None:
                _place_new(directory, self._temporary, name, shown, what)
            else:
                now = _lstat(directory, name, shown, what)
                before = (self._existing.st_dev, self._existing.st_ino)
                if now is None or (now.st_dev, now.st_ino) != before:
                    raise OutputPathError(
                        f"{what}: {shown} changed while it was written: not replaced"
                    )
                os.rename(self._temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException as exc:
            self.discard()
            if isinstance(exc, FileExistsError):
                raise OutputPathError(
                    f"{what}: {shown} appeared while it was written: not replaced"
                ) from exc
            if isinstance(exc, OSError):
                raise OutputPathError(
                    f"{what}: {shown}: cannot write: {exc.strerror or exc}"
                ) from exc
            raise
        os.close(directory)
        self._directory = -1

    def discard(self) -> None:
        """Remove the written file; nothing at ``path`` changes."""
        if self._directory < 0:
            return
        with contextlib.suppress(OSError):
            os.unlink(self._temporary, dir_fd=self._directory)
        os.close(self._directory)
        self._directory = -1


def _place_new(directory: int, temporary: str, name: str, shown: str, what: str) -> None:
    """Give the written file a name that was missing: a hard link fails if anything took
    the name meanwhile, so it never replaces; where links are not supported (some network
    and FAT file systems), a rename after checking the name is still missing."""
    try:
        os.link(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if _lstat(directory, name, shown, what) is not None:
            raise FileExistsError(errno.EEXIST, "appeared meanwhile") from exc
        os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        return
    os.unlink(temporary, dir_fd=directory)


def _lstat(directory: int, name: str, shown: str, what: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputPathError(f"{what}: {shown}: {exc.strerror or exc}") from exc


class StagedRemote:
    """A document staged on a store's URI (``s3a://``, ``hdfs://``): written under a
    temporary name beside it, moved in place by ``place``. A store has no symbolic links or
    devices to refuse; its move replaces an object, which is what a job's own folder holds."""

    def __init__(self, location: str, temporary: str, what: str) -> None:
        self._location, self._temporary, self._what = location, temporary, what

    def place(self) -> None:
        from matcher.files.locations import resolve

        filesystem, path = resolve(self._location)
        _, temporary = resolve(self._temporary)
        try:
            filesystem.move(temporary, path)
        except OSError as exc:
            self.discard()
            raise OutputPathError(f"{self._what}: {self._location}: cannot write: {exc}") from exc

    def discard(self) -> None:
        from matcher.files.locations import resolve

        filesystem, temporary = resolve(self._temporary)
        with contextlib.suppress(OSError):
            filesystem.delete_file(temporary)


def stage_output(location: str, text: str, what: str = "output") -> StagedOutput | StagedRemote:
    """``text`` staged for ``location``, a local path (its folder made first, then
    ``StagedOutput``) or a store's URI (``StagedRemote``); ``place()`` puts it there."""
    from matcher import uris

    local = uris.local_path(location)
    if local is not None:
        local = local.expanduser()
        try:
            local.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputPathError(
                f"{what}: {location}: cannot make its folder: {exc.strerror or exc}"
            ) from exc
        return StagedOutput.write(local, text, what)
    from matcher.files.locations import write_text

    folder, _, name = location.rstrip("/").rpartition("/")
    temporary = f"{folder}/.{name}.{os.getpid()}.tmp"
    try:
        write_text(temporary, text)
    except OSError as exc:
        raise OutputPathError(f"{what}: {location}: cannot write: {exc}") from exc
    return StagedRemote(location, temporary, what)
