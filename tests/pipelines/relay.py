"""A tiny real PySpark pipeline for the DAG tests: the input slice, in stream order, as is.

    spark-submit tests/pipelines/relay.py --input SLICE --output OUT [--drop-offset N]

Reads the Parquet slice, orders it by ``offset`` and writes it as one Parquet file.
``--drop-offset N`` loses the row whose offset is N: a candidate with a known bug.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main() -> int:
    parser = argparse.ArgumentParser(prog="relay")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--drop-offset", type=int)
    args = parser.parse_args()
    spark = SparkSession.builder.appName("relay").getOrCreate()
    df = spark.read.parquet(args.input)
    if args.drop_offset is not None:
        df = df.where(F.col("offset") != args.drop_offset)
    df.orderBy("offset").coalesce(1).write.mode("overwrite").parquet(args.output)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
