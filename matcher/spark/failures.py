"""Spark's failures as Parity's errors: one translation, used by the command line and by every
Spark job (``jobs/entry.py``).

``known_failure`` names the foreign exceptions a user can act on (a spec's function that
raised, a value nested too deeply, text that is not UTF-8, a Parquet file that names a
column twice, Spark's own analysis errors) as ``InputError`` or ``SpecError``; ``None``
means a bug, which ``matcher.failures.internal_error_line`` reports.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from matcher.errors import InputError, ParityError, SpecError
from matcher.failures import first_line, raised


def is_spark_error(exc: BaseException) -> bool:
    """Spark's user-facing errors (a missing path, an unreadable file), by name: importing
    pyspark's exception classes just to test for them would start nothing but costs time."""
    return type(exc).__name__ in {
        "AnalysisException",
        "IllegalArgumentException",
        "PySparkException",
        "SparkRuntimeException",
    }


def known_failure(
    exc: BaseException, functions: Mapping[str, Callable[..., Any]] | None = None
) -> ParityError | None:
    """A one-line error for a foreign exception a user can act on; ``None``: a bug.

    ``functions``: the spec's ``module:function`` references, to recognise an exception
    raised inside one of them (in this process, or in a Spark worker's traceback)."""
    if isinstance(exc, ParityError):
        return exc
    duplicate = _duplicate_field(exc)
    if duplicate is not None:
        return duplicate
    malformed = _malformed_csv(exc)
    if malformed is not None:
        return malformed
    if is_spark_error(exc):
        return InputError(first_line(exc))
    if isinstance(exc, RecursionError):
        return InputError(
            "a value is nested too deeply to compare (Python's recursion limit, "
            f"{sys.getrecursionlimit()}, was reached)"
        )
    if isinstance(exc, MemoryError):
        return InputError("out of memory")
    user = _user_function(exc, functions or {})
    if user is not None:
        return SpecError(f"the spec's function {user} raised {raised(exc)}")
    if type(exc).__name__ == "PythonException":  # a Spark worker's exception, as text
        return InputError(f"a Spark worker failed: {raised(exc)}")
    if any(c.__name__ == "PySparkException" for c in type(exc).__mro__):
        return InputError(first_line(exc))  # pyspark's own: a schema too deep to parse
    if type(exc).__name__ == "Py4JJavaError":  # the JVM's, as text after its call
        lines = [line for line in str(exc).splitlines() if line.startswith(": ")]
        return InputError(f"Spark failed: {lines[0][2:] if lines else first_line(exc)}")
    if isinstance(exc, UnicodeError):
        return InputError(f"text that is not UTF-8 cannot be handled: {exc}")
    return None


def _duplicate_field(exc: BaseException) -> InputError | None:
    """A Spark job that failed on a Parquet file naming a column twice: the core's error."""
    if type(exc).__name__ not in ("Py4JJavaError", "SparkRuntimeException", "SparkException"):
        return None
    from matcher.spark.columns import duplicate_field_error

    return duplicate_field_error(str(exc))


def _malformed_csv(exc: BaseException) -> InputError | None:
    """A Spark job that failed on a CSV value not of its declared type (``output.schema``)."""
    if type(exc).__name__ not in ("Py4JJavaError", "SparkRuntimeException", "SparkException"):
        return None
    from matcher.spark.streams import malformed_csv_error

    return malformed_csv_error(str(exc))


def _user_function(exc: BaseException, functions: Mapping[str, Callable[..., Any]]) -> str | None:
    """The reference of the spec's function the exception came through, if any."""
    codes = {getattr(fn, "__code__", None): ref for ref, fn in functions.items()}
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code in codes:
            return codes[frame.f_code]
    if type(exc).__name__ == "PythonException":
        text = str(exc)
        for ref, fn in functions.items():
            code = getattr(fn, "__code__", None)
            if (
                code is not None
                and f'"{code.co_filename}", line' in text
                and (f"in {code.co_name}\n" in text)
            ):
                return ref
    return None
