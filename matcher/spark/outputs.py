"""Two outputs on disk compared on Spark: ``compare_on_spark`` reads both as streams
(``read_stream``) and matches them partitioned by the spec's dependence key
(``compare_dataframes``). The command line and the match job both call it.

    timed = compare_on_spark(spark, spec, "out/reference", "out/candidate", limit=10)
    timed.verdict.equivalent, timed.seconds
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from matcher.errors import ParityError
from matcher.files.readers import data_files
from matcher.spark.comparison import compare_dataframes
from matcher.spark.schema import parquet_nullability
from matcher.spark.streams import read_stream
from matcher.spec import Spec
from matcher.verdict import Verdict


@dataclass(frozen=True, slots=True)
class Timed:
    """A verdict and how long reading and matching took (seconds)."""

    verdict: Verdict
    seconds: float


def compare_on_spark(
    spark: Any,
    spec: Spec,
    reference: str,
    candidate: str,
    *,
    limit: int,
    common: bool = False,
    differences: str | None = None,
) -> Timed:
    """Read both outputs in stream order and match them under the spec (writing every
    difference at ``differences`` when given). Two outputs without a data file
    (directories a job left empty) are the empty verdict the core gives them: Spark cannot
    read a schema from nothing, and there is nothing to compare (nor a table to write)."""
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
        read_stream(
            spark,
            path,
            format=spec.output.format,
            order_by=order_by,
            declared=spec.output.declared_columns(),
        )
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
        differences=differences,
    )
    return Timed(verdict, time.perf_counter() - started)


def _holds_no_data(path: str, spec: Spec) -> bool:
    """A local directory with no data file in it (only markers such as ``_SUCCESS``)."""
    return os.path.isdir(path) and not data_files(path, spec.output.format)


def _declared(spark: Any, spec: Spec, path: str) -> dict[str, bool] | None:
    """The nullability a Parquet output's footer declares (Spark's reader forgets it)."""
    kind = spec.output.format
    if kind is None:
        try:
            kinds = {k for _, k in data_files(path)}
        except ParityError:  # not a local path: let Spark try
            kinds = {"parquet"}
        kind = "parquet" if kinds == {"parquet"} else None
    return parquet_nullability(spark, path) if kind == "parquet" else None
