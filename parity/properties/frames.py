"""The DataFrame shapes: ``f(df) -> DataFrame`` and ``f(left, right) -> DataFrame``, run on
one local SparkSession for the whole command (``local[2]``, no UI, few shuffle partitions).

A DataFrame operator sees its whole input at once: there are no firings to tell apart and no
punctuations, and Spark defines no row order, so outputs are compared as multisets. A test's
rows become a DataFrame in one partition in list order (``coalesce(1)``: the input's order
is what the operator sees), or, for non-determinism, the same rows scattered over ``n``
partitions in a random order, with another ``spark.sql.shuffle.partitions``.

Every test of a command runs on the one session, and the tests a round of Algorithm 1 asks
for run together, in one Spark job each step (``frame_jobs``).
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from parity.properties.deadline import NO_DEADLINE, Deadline
from parity.properties.elements import Element, Run
from parity.properties.frame_jobs import assemble, run_together, warm_up, where
from parity.properties.operators import CANONICAL, Physical, operator_error, raised
from parity.properties.samples import Sample

_SPARK_TYPES: dict[str, DataType] = {
    "int": LongType(),
    "float": DoubleType(),
    "str": StringType(),
    "bool": BooleanType(),
    "datetime": TimestampType(),
    "date": DateType(),
}


def local_session() -> SparkSession:
    """The session every DataFrame run shares: the active one if there is one (a test's),
    else ``local[2]`` without a UI, two shuffle partitions and no adaptive coalescing (so a
    shuffle keeps the partition count a run asks for)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("parity-properties")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.adaptive.enabled", "false")
        # a round's job plans hundreds of branches: keep few of them for the (absent) UI
        .config("spark.sql.ui.retainedExecutions", "20")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def spark_schema(spark: SparkSession, sample: Sample) -> StructType:
    """The sample's schema for Spark: Parquet's own; otherwise from the inferred types, and
    nested columns as Spark infers them from the sample's values."""
    if sample.path.endswith(".parquet") or _is_parquet_dir(sample.path):
        schema: StructType = spark.read.parquet(sample.path).schema
        return schema
    fields = []
    for column in sample.columns:
        kind = sample.types[column]
        if kind in _SPARK_TYPES:
            fields.append(StructField(column, _SPARK_TYPES[kind], True))
        else:
            values = [(r.get(column),) for r in sample.rows[:100] if r.get(column) is not None]
            inferred = spark.createDataFrame(values, [column]).schema[column].dataType
            fields.append(StructField(column, inferred, True))
    return StructType(fields)


def _is_parquet_dir(path: str) -> bool:
    return os.path.isdir(path) and any(n.endswith(".parquet") for n in os.listdir(path))


@dataclass(frozen=True, slots=True)
class FrameOperator:
    """``f(df)`` (one port) or ``f(left, right)`` (two ports) on DataFrames."""

    ref: str
    shape: str
    target: Callable[..., DataFrame]
    spark: SparkSession
    schemas: tuple[StructType, ...]
    punctuates: bool = False
    fires: bool = False

    @property
    def ports(self) -> int:
        return len(self.schemas)

    def layout(
        self, rows: Sequence[Element], port: int, physical: Physical
    ) -> list[list[tuple[Any, ...]]]:
        """The port's rows, partition by partition: one partition in order; or scattered
        over ``physical.partitions`` partitions in a seeded random order, the arrival a
        cluster's shuffle gives (it depends on which map tasks finish first)."""
        schema = self.schemas[port]
        data = [_coerce(e.item or {}, schema) for e in rows if e.port == port and e.item]
        if physical.partitions == 1:
            return [data]
        random.Random(physical.partitions * 31 + physical.shuffle_partitions).shuffle(data)
        count, parts = len(data), physical.partitions
        return [data[i * count // parts : (i + 1) * count // parts] for i in range(parts)]

    def frame(self, rows: Sequence[Element], port: int, physical: Physical) -> DataFrame:
        """The port's rows as a DataFrame laid out as ``layout`` says: each partition built as
        such (not by a shuffle of the test's own: a shuffle is a stage and files, and
        costs a test more than the operator's work)."""
        schema = self.schemas[port]
        return assemble([self._local(part, schema) for part in self.layout(rows, port, physical)])

    def output(self, test: Sequence[Element], physical: Physical = CANONICAL) -> DataFrame:
        """``f`` called on the test's input (as ``physical`` lays it out): its DataFrame, not
        yet run (``OperatorError`` when ``f`` raises or returns something else)."""
        frames = [self.frame(test, port, physical) for port in range(self.ports)]
        try:
            result = self.target(*frames)
        except BaseException as exc:  # SystemExit too: the operator's error, not a property
            raise operator_error(self.ref, raised(exc), where(test)) from exc
        if not isinstance(result, DataFrame):
            problem = f"returned {type(result).__name__}, not a DataFrame"
            raise operator_error(self.ref, problem, where(test))
        return result

    def warm_up(self) -> None:
        """Make, tag, union and collect empty inputs, as a round's job does, without the
        operator: the session's first jobs load and compile what every later one uses, and
        that time is the session's, not the first property's share of the time budget."""
        warm_up(self, [self.frame((), 0, CANONICAL), self.frame((), 0, Physical(2, 3))])

    def run(self, test: Sequence[Element], physical: Physical = CANONICAL) -> Run:
        (run,) = run_together(self, [(test, physical)], NO_DEADLINE)
        return run

    def run_batch(
        self, requests: Sequence[tuple[Sequence[Element], Physical]], deadline: Deadline
    ) -> list[Run]:
        """The runs in as few Spark jobs as is faithful (``frame_jobs``)."""
        return run_together(self, requests, deadline)

    def _local(self, data: list[tuple[Any, ...]], schema: StructType) -> DataFrame:
        """The rows as a DataFrame: through Arrow, which the JVM reads on its own (a
        DataFrame made from Python rows runs a Python worker in every job that reads it,
        which made a test about three times slower), or from the rows where Arrow cannot hold
        a type."""
        try:
            arrow_schema = to_arrow_schema(schema, timezone=self._timezone())
            columns = schema.names
            table = pa.Table.from_pylist(
                [dict(zip(columns, map(_aware, row), strict=True)) for row in data],
                schema=arrow_schema,
            )
            return self.spark.createDataFrame(table, schema)
        except Exception:
            return self.spark.createDataFrame(data, schema, verifySchema=False)

    def _timezone(self) -> str:
        return self.spark.conf.get("spark.sql.session.timeZone") or "UTC"


def _aware(value: Any) -> Any:
    """A naive time as the local time it means to Spark's own conversion of Python rows."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.astimezone()
    return value


def _coerce(item: Any, schema: StructType) -> tuple[Any, ...]:
    values = []
    for struct_field in schema.fields:
        value = item.get(struct_field.name)
        if value is not None and isinstance(struct_field.dataType, DoubleType):
            value = float(value)
        elif (
            value is not None
            and isinstance(struct_field.dataType, LongType)
            and isinstance(value, float)
        ):
            value = int(value)
        values.append(value)
    return tuple(values)
