"""An output file's lines, decoded: the one place where a file is opened (gzip too) and a
byte that is not UTF-8 becomes an error naming its line. The JSON lines and CSV readers
(``matcher.files.readers``, ``matcher.files.csv_files``) both read through it."""

from __future__ import annotations

import codecs
import gzip
import io
from collections.abc import Iterator
from pathlib import Path

from matcher.errors import InputError


def open_file(path: Path) -> io.BufferedIOBase:
    """The file's bytes, through gzip when its name ends ``.gz``."""
    try:
        if path.suffix.lower() == ".gz":
            return gzip.GzipFile(path, "rb")
        return path.open("rb")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file or directory") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def lines(path: Path) -> Iterator[tuple[int, str]]:
    """Decoded lines with their 1-based numbers; a byte that is not UTF-8 is an error at its
    line (decoding line by line is what lets the message say where)."""
    with open_file(path) as stream:
        try:
            for number, raw in enumerate(stream, start=1):
                yield number, line_text(path, number, raw)
        except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream
            raise InputError(f"{path}: cannot read: {exc}") from exc


def line_text(path: Path, number: int, raw: bytes) -> str:
    """One line's bytes as text; a byte order mark that starts the file is dropped."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: line {number}: not UTF-8 (byte 0x{raw[exc.start]:02x} "
            f"at column {exc.start + 1})"
        ) from exc
    if number == 1 and text.startswith(codecs.BOM_UTF8.decode("utf-8")):
        text = text[1:]
    return text
