"""The one SparkSession every Spark test shares (``local[2]``, four shuffle partitions),
and helpers for Spark tests.

A test module registers this file as a plugin, ``pytest_plugins = ("tests.spark_fixtures",)``,
so that every module gets the same session-scoped ``spark`` fixture (importing the fixture
function into each module would make one fixture per module). The environment is set
before the session starts: Spark binds to 127.0.0.1, and Python workers run this
interpreter, so that they import the project's ``matcher`` and pyarrow.

PYTEST_DONT_REWRITE: test modules import helpers from here before pytest registers the
plugin; there are no assertions to rewrite.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("parity-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


_SPLIT_CONF = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")


@pytest.fixture
def tiny_splits(spark: SparkSession) -> Iterator[None]:
    """Splits of 1 KiB, and no packing discount: every file of a few KiB is split, and many
    small files share a partition."""
    old = {k: spark.conf.get(k) for k in _SPLIT_CONF}
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1024")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    yield
    for key, value in old.items():
        if value is not None:
            spark.conf.set(key, value)


def near(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    """A predicate dependence for tests: same group ``g`` and values ``v`` within 1.5 (or
    either missing). Defined here because Spark's Python workers import it by name, and
    they find ``tests.spark_fixtures`` but not a test module."""
    if x["g"] != y["g"]:
        return False
    a, b = x["v"], y["v"]
    return a is None or b is None or abs(a - b) <= 1.5


def same_ignoring_case(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """An equality function for tests: events equal but for the case of ``s`` (importable by
    Spark's Python workers, like ``near``)."""
    if a.keys() != b.keys():
        return False
    for column in a:
        x, y = a[column], b[column]
        if column == "s" and isinstance(x, str) and isinstance(y, str):
            x, y = x.lower(), y.lower()
        if x != y and not (x != x and y != y):  # NaN equals NaN
            return False
    return True


def stream_frames(
    spark: SparkSession,
    schema: str,
    reference: Sequence[Mapping[str, Any]],
    candidate: Sequence[Mapping[str, Any]],
) -> tuple[DataFrame, DataFrame]:
    """Both streams as DataFrames with ``__pos`` (list order), from one ``createDataFrame``.

    ``schema`` is a DDL string of the data columns; events may leave columns out (null).
    """
    names = [part.strip().split()[0] for part in schema.split(",")]
    rows = [
        (side, pos, *(event.get(name) for name in names))
        for side, events in enumerate((reference, candidate))
        for pos, event in enumerate(events)
    ]
    both = spark.createDataFrame(rows, f"__side int, __pos long, {schema}")
    return tuple(  # type: ignore[return-value]
        both.where(f"__side = {side}").select(*names, "__pos") for side in (0, 1)
    )


def write_files(path: Path, rows: list[dict[str, Any]], files: int, row_group: int) -> None:
    """``rows`` in order as Parquet, cut into ``files`` files named in that order, each in
    row groups of ``row_group`` rows."""
    path.mkdir()
    size = -(-len(rows) // files)
    for n in range(files):
        chunk = rows[n * size : (n + 1) * size]
        if chunk:
            table = pa.Table.from_pylist(chunk)
            pq.write_table(table, path / f"part-{n:05d}.parquet", row_group_size=row_group)
