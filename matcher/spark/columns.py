"""Column names on Spark: ``matcher.columns``'s rule, checked before ``read_stream`` reads.

What Spark 4.3 does by itself, with ``spark.sql.caseSensitive`` false (its default):

* JSON lines: schema inference reads every object. A key twice in one object, at any
  depth, or two keys that differ only in case side by side, fail the read
  (``COLUMN_ALREADY_EXISTS``, naming the column but not the file or line, nor the struct a
  nested key is in). A key spelled in two cases in different objects becomes one column,
  and the values of one spelling are read as null, silently.
* Parquet: the schema is one file's footer; a column twice there (or two differing only in
  case) fails the read as above. In another file, it fails a task ("Found duplicate
  field(s)"), or, with ``caseSensitive`` true, the first of the two is read, silently.
* CSV: a header that names a column twice is read with the names made unique (``a1``,
  ``a2``), silently.

``check_column_names`` refuses each of these before Spark reads, with the core's message.
Parquet footers and CSV headers of local files are read here, with pyarrow and Python, as
the core reads them. JSON is inferred once more, by a case-sensitive session, which keeps
the spellings Spark's own inference merges (a pass over the output: only the names of
every object tell); when that finds a problem in a local output, its lines are read up to
the first that shows it. An output that is not local (HDFS, S3, a glob) is checked through
that inference alone: the message names the output and the columns, not the file or line.
"""

from __future__ import annotations

import csv
import gzip
import re
from collections.abc import Iterator
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from matcher.columns import (
    Group,
    NameProblem,
    check_groups,
    join,
    json_problem,
    name_problem,
)
from matcher.errors import InputError
from matcher.files.arrow_columns import check_arrow_schema
from matcher.files.sink_log import logged_files
from matcher.formats import FORMATS, format_of_path, is_data_file, spark_format


def check_column_names(
    spark: SparkSession, path: str | Path | DataFrame, format: str | None
) -> StructType | None:
    """Refuse the output at ``path`` (as ``read_stream`` takes it) if its column names
    repeat or differ only in case (``matcher.columns``). A path that Spark cannot read, or
    a table, is left for ``read_stream`` to report.

    Returns the schema it inferred of JSON lines (``None`` otherwise): with no name twice,
    it is the schema Spark infers, and reading with it spares a second pass over the
    data."""
    if isinstance(path, DataFrame):
        check_groups("(a DataFrame)", "schema", struct_groups(path.schema))
        return None
    text = str(path)
    kind = _kind(spark, text, format)
    if kind is None:
        return None
    files = local_files(text)
    if kind == "parquet" and files is not None:
        for file in files:
            _check_footer(file)
    elif kind == "csv" and files is not None:
        for file in files:
            _check_header(file)
    elif kind in ("json", "parquet"):
        schema = _check_inferred(spark, text, kind, files)
        return schema if kind == "json" else None
    return None


def struct_groups(schema: StructType, path: str = "") -> Iterator[Group]:
    """The places of a Spark schema: its columns, and the fields of every struct inside
    them (in arrays and maps too)."""
    yield path, [f.name for f in schema.fields]
    for f in schema.fields:
        yield from _type_groups(join(path, f.name), f.dataType)


def _type_groups(path: str, type_: DataType) -> Iterator[Group]:
    if isinstance(type_, StructType):
        yield from struct_groups(type_, path)
    elif isinstance(type_, ArrayType):
        yield from _type_groups(path + "[]", type_.elementType)
    elif isinstance(type_, MapType):
        yield from _type_groups(path + "{}", type_.keyType)
        yield from _type_groups(path + "{}", type_.valueType)


def _kind(spark: SparkSession, text: str, format: str | None) -> str | None:
    """The format ``read_stream`` reads ``text`` in; ``None``: a table, or a path that it
    refuses (it says why)."""
    if not text:
        return None
    if format is not None:
        return spark_format(format) if format in FORMATS else None
    try:
        if "/" not in text and spark.catalog.tableExists(text):
            return None
    except AnalysisException:  # not a table name
        pass
    if not Path(text).exists():
        return None
    return format_of_path(text)


def local_files(text: str) -> list[Path] | None:
    """The data files Spark reads at ``text`` when it is a local file or directory: a file
    sink's logged files (``matcher.files.sink_log``), else every data file below it in name
    order (``matcher.formats.is_data_file`` at every level, as Spark skips them); ``None``
    otherwise."""
    root = Path(text)
    if not root.exists():
        return None
    if root.is_file():
        return [root]
    logged = logged_files(root)
    if logged is not None:
        return logged
    return sorted(
        (
            p
            for p in root.rglob("*")
            if p.is_file() and all(is_data_file(part) for part in p.relative_to(root).parts)
        ),
        key=str,
    )


def _check_footer(file: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
    except (OSError, ValueError, pa.ArrowException):  # not Parquet: Spark says so
        return
    check_arrow_schema(str(file), schema)


def _text_lines(file: Path) -> Iterator[tuple[int, str]]:
    """A local file's lines with their numbers, as the core splits them (at ``\\n``)."""
    with gzip.open(file) if file.suffix.lower() == ".gz" else file.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            text = raw.decode("utf-8", "replace")
            yield number, text.removeprefix("\ufeff") if number == 1 else text


def _check_header(file: Path) -> None:
    """The first record of a CSV file, as the core reads it (blank lines skipped)."""
    for number, text in _text_lines(file):
        if text.strip():
            names = next(csv.reader([text]), [])
            check_groups(f"{file}: line {number}", "header", [("", names)])
            return


def _json_lines(files: list[Path]) -> Iterator[tuple[str, str]]:
    for file in files:
        for number, text in _text_lines(file):
            yield f"{file}: line {number}", text


def _located(files: list[Path] | None, kind: str) -> InputError | None:
    """The error at the first line that shows a problem, for a local JSON output."""
    if files is None or kind != "json":
        return None
    found = json_problem(_json_lines(files))
    if found is None:
        return None
    where, problem = found
    return problem.error(where, "object")


def _check_inferred(
    spark: SparkSession, text: str, kind: str, files: list[Path] | None
) -> StructType | None:
    """Infer the schema case-sensitively and refuse what it shows; the schema (``None``:
    Spark could not infer one, which ``read_stream`` reports)."""
    place = "JSON objects" if kind == "json" else "Parquet schema"
    try:
        schema = _case_sensitive(spark).read.format(kind).load(text).schema
    except AnalysisException as exc:
        if exc.getCondition() != "COLUMN_ALREADY_EXISTS":
            return None  # read_stream reads it again, and says what is wrong
        name = _unquote((exc.getMessageParameters() or {}).get("columnName", "?"))
        raise _located(files, kind) or NameProblem((name,), True).error(text, place) from exc
    problem = name_problem(struct_groups(schema))
    if problem is not None:
        raise _located(files, kind) or problem.error(text, place)
    return schema


def _case_sensitive(spark: SparkSession) -> SparkSession:
    """A session of the same context and settings, but resolving names with their case.
    A new session, so that the caller's own is never changed, even for a moment."""
    session = spark.newSession()
    for key, value in spark.conf.getAll.items():
        if spark.conf.isModifiable(key):
            session.conf.set(key, value)
    session.conf.set("spark.sql.caseSensitive", "true")
    return session


#: how a Parquet reader task says a file holds a name twice (case-insensitive mode)
_DUPLICATE_FIELD = re.compile(r'Found duplicate field\(s\) "[^"]*": \[([^\]]*)\]')
#: the file a failed read task names
_FAILED_FILE = re.compile(r"while reading file (\S+?)\.?\s")


def duplicate_field_error(message: str) -> InputError | None:
    """The core's error for a Spark job that failed on a Parquet file naming a column twice
    (or two that differ only in case) beyond the file Spark took the schema from; ``None``
    when ``message`` (a failed job's text) says nothing of the kind. Local outputs never
    get here (their footers are checked first)."""
    found = _DUPLICATE_FIELD.search(message)
    if found is None:
        return None
    names = found.group(1).split(", ")
    file = _FAILED_FILE.search(message)
    where = file.group(1) if file else "a Parquet file of the output"
    if len(set(names)) == 1:
        return NameProblem((names[0],), True).error(where, "Parquet schema")
    return NameProblem(tuple(sorted(set(names))), False).error(where, "Parquet schema")


def _unquote(name: str) -> str:
    """A name as Spark's messages quote it (```a```), unquoted."""
    if len(name) >= 2 and name[0] == name[-1] == "`":
        return name[1:-1].replace("``", "`")
    return name
