"""Matching on Spark for the ``parity`` command and the match job: one transform, two callers.

``compare_on_spark`` reads both outputs as streams and matches them partitioned by the
dependence key (``matcher.spark``); ``local_session`` gives the command a local Spark whose
Python workers run this interpreter, so that they can import ``matcher``.

Both callers also share how a failure becomes an exit code. Exit 1 means *divergent* and
nothing else, so every exception ends in exit 2 with one line on stderr: Parity's own
errors and Spark's as they are; ``known_failure`` names the foreign ones a user can act on
(a spec's function that raised, a value nested too deeply, text that is not UTF-8, a
Parquet file that names a column twice); the rest is a bug, reported as an internal error
whose traceback ``save_traceback`` writes to a file named in that line (a traceback on
stderr would bury the one line that matters).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcher.errors import InputError, ParityError, SpecError
from matcher.spec import Spec
from matcher.verdict import Verdict


@dataclass(frozen=True, slots=True)
class Timed:
    """A verdict and how long reading and matching took (seconds)."""

    verdict: Verdict
    seconds: float


def compare_on_spark(
    spark: Any, spec: Spec, reference: str, candidate: str, *, limit: int, common: bool = False
) -> Timed:
    """Read both outputs in stream order and match them under the spec. Two outputs without
    a data file (directories a job left empty) are the empty verdict the core gives them:
    Spark cannot read a schema from nothing, and there is nothing to compare."""
    from matcher.spark import compare_dataframes, read_stream

    started = time.perf_counter()
    if _holds_no_data(reference, spec) and _holds_no_data(candidate, spec):
        empty = Verdict(
            True,
            dependence=spec.build_dependence().describe(),
            side_stats={"reference": {"rows": 0}, "candidate": {"rows": 0}},
        )
        return Timed(empty, time.perf_counter() - started)
    order_by = list(spec.output.order_by) or None
    streams = [
        read_stream(spark, path, format=spec.output.format, order_by=order_by)
        for path in (reference, candidate)
    ]
    columns = [[c for c in stream.columns if not c.startswith("__")] for stream in streams]
    for side, path, own, other in (
        ("reference", reference, columns[0], columns[1]),
        ("candidate", candidate, columns[1], columns[0]),
    ):
        if own:  # no columns: an empty JSON output, nothing to check (as on the core)
            spec.check_columns(own, where=f"{side} {path}", other=other)
    verdict = compare_dataframes(
        streams[0],
        streams[1],
        spec.build_dependence(),
        spec.build_equality(),
        limit=limit,
        schema_mode=spec.schema.mode,
        nullability=(_declared(spark, spec, reference), _declared(spark, spec, candidate)),
    )
    return Timed(verdict, time.perf_counter() - started)


def _holds_no_data(path: str, spec: Spec) -> bool:
    """A local directory with no data file in it (only markers such as ``_SUCCESS``)."""
    from parity.readers import data_files

    return os.path.isdir(path) and not data_files(path, spec.output.format)


def _declared(spark: Any, spec: Spec, path: str) -> dict[str, bool] | None:
    """The nullability a Parquet output's footer declares (Spark's reader forgets it)."""
    from matcher.spark.schema import parquet_nullability
    from parity.readers import data_files

    kind = spec.output.format
    if kind is None:
        try:
            kinds = {k for _, k in data_files(path)}
        except ParityError:  # not a local path: let Spark try
            kinds = {"parquet"}
        kind = "parquet" if kinds == {"parquet"} else None
    return parquet_nullability(spark, path) if kind == "parquet" else None


def local_session(master: str = "local[*]") -> Any:
    """A local SparkSession for the command line (quiet, no UI)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    # The JVM inherits stderr when it starts and writes its start-up notes and log4j
    # warnings there; the command reports errors itself, so they go to a log file.
    log = Path(tempfile.gettempdir()) / "parity-spark.log"
    saved = os.dup(2)
    with log.open("ab") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            spark = (
                SparkSession.builder.master(master)
                .appName("parity-compare")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "8")
                .getOrCreate()
            )
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def is_spark_error(exc: BaseException) -> bool:
    """Spark's user-facing errors (a missing path, an unreadable file), by name: importing
    pyspark's exception classes just to test for them would start nothing but costs time."""
    return type(exc).__name__ in {
        "AnalysisException",
        "IllegalArgumentException",
        "PySparkException",
        "SparkRuntimeException",
    }


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


#: the last line of a Python traceback as a Spark worker reports it
_RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")


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
        return SpecError(f"the spec's function {user} raised {_raised(exc)}")
    if type(exc).__name__ == "PythonException":  # a Spark worker's exception, as text
        return InputError(f"a Spark worker failed: {_raised(exc)}")
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


def _raised(exc: BaseException) -> str:
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
    return f"{program}: internal error: {_raised(exc)} (a bug in Parity; {where})"


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
