"""The local SparkSession of the command line (``parity compare --engine spark``)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any


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
