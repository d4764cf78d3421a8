"""How a failure becomes one line: Parity's exit codes leave no room for a traceback.

Exit 1 means *divergent* and nothing else, so every exception ends in exit 2 with one line
on stderr. Parity's own errors (``matcher.errors``) print as they are; a foreign exception a
user can act on is translated where its kind is known (``matcher.spark.failures`` for
Spark's); anything else is a bug, reported by ``internal_error_line``, which writes the
traceback to a file named in that line (a traceback on stderr would bury the line that
matters).

    try:
        ...
    except BaseException as exc:
        print(internal_error_line(exc, "match"), file=sys.stderr)   # match: internal error: ...
"""

from __future__ import annotations

import os
import re
import tempfile
import traceback
from collections.abc import Sequence

from matcher.errors import InputError


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


#: the last line of a Python traceback as a Spark worker reports it
_RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")


def raised(exc: BaseException) -> str:
    """``Type: message`` of the exception; for a Spark worker's, the one it reports last."""
    if type(exc).__name__ == "PythonException":
        for line in reversed(str(exc).splitlines()):
            match = _RAISED.match(line.strip())
            if match:
                return f"{match.group(1).rsplit('.', 1)[-1]}: {match.group(2)}".rstrip(": ")
    message = first_line(exc)
    name = type(exc).__name__
    return name if message == name else f"{name}: {message}"


def save_traceback(exc: BaseException, program: str) -> str | None:
    """Write the exception's traceback to a new file in the temporary directory; its path,
    or ``None`` when it cannot be written."""
    try:
        handle, path = tempfile.mkstemp(prefix=f"{program}-traceback-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as file:
            file.write("".join(traceback.format_exception(exc)))
    except OSError:
        return None
    return path


def internal_error_line(exc: BaseException, program: str) -> str:
    """The one line an unexpected exception (a bug) prints, naming where its traceback is."""
    path = save_traceback(exc, program)
    where = f"traceback in {path}" if path else "its traceback could not be saved"
    return f"{program}: internal error: {raised(exc)} (a bug in Parity; {where})"


def check_text_arguments(arguments: Sequence[str]) -> None:
    """Refuse an argument that is not UTF-8 (Python keeps its bytes as lone surrogates):
    it would reach a database or a document that holds text only."""
    for argument in arguments:
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            try:
                raw = argument.encode("utf-8", "surrogateescape")  # the bytes as given
            except UnicodeEncodeError:
                raw = argument.encode("utf-8", "backslashreplace")
            raise InputError(f"argument {raw!r} is not UTF-8 text") from None
