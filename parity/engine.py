"""Matching on Spark for the ``parity`` command and the match job: one transform, two callers.

``compare_on_spark`` reads both outputs as streams and matches them partitioned by the
dependence key (``matcher.spark``); ``local_session`` gives the command a local Spark whose
Python workers run this interpreter, so that they can import ``matcher``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    """Read both outputs in stream order and match them under the spec."""
    from matcher.spark import compare_dataframes, read_stream

    started = time.perf_counter()
    order_by = list(spec.output.order_by) or None
    streams = [
        read_stream(spark, path, format=spec.output.format, order_by=order_by)
        for path in (reference, candidate)
    ]
    if not common:
        for side, path, stream in zip(
            ("reference", "candidate"), (reference, candidate), streams, strict=True
        ):
            columns = [c for c in stream.columns if not c.startswith("__")]
            spec.check_columns(columns, where=f"{side} {path}")
    verdict = compare_dataframes(
        streams[0],
        streams[1],
        spec.build_dependence(),
        spec.build_equality(),
        limit=limit,
        common_columns=common,
    )
    return Timed(verdict, time.perf_counter() - started)


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
