"""A small Spark application that loads the classes a validation's JVMs load: run once with
``-XX:ArchiveClassesAtExit`` to build the class archive later JVMs start from
(``tools.class_archive``).

    spark-submit --master 'local[2]' jobs/class_warmup.py

It writes and reads back Parquet, JSON lines and CSV in a temporary directory, ranks with a
window, joins, aggregates and collects through Arrow: what the slice, the bundled
applications, the match and the expectations do first. It prints one line and keeps nothing.
"""

from __future__ import annotations

import tempfile

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F


def main() -> int:
    spark = SparkSession.builder.appName("parity-class-warmup").getOrCreate()
    try:
        with tempfile.TemporaryDirectory(prefix="parity-warmup-") as tmp:
            rows = spark.range(2_000).select(
                F.col("id"),
                (F.col("id") % 7).alias("k"),
                F.concat(F.lit("v"), F.col("id").cast("string")).alias("s"),
                (F.col("id") / 3).alias("d"),
                F.current_timestamp().alias("t"),
            )
            rows.write.parquet(f"{tmp}/parquet")
            rows.write.json(f"{tmp}/json")
            rows.write.option("header", True).csv(f"{tmp}/csv")
            parquet = spark.read.parquet(f"{tmp}/parquet")
            json = spark.read.json(f"{tmp}/json")
            csv = spark.read.option("header", True).csv(f"{tmp}/csv")
            ranked = parquet.select(
                "*", F.row_number().over(Window.partitionBy("k").orderBy("id")).alias("r")
            )
            joined = ranked.join(json.select("id", "s"), "id").groupBy("k")
            totals = joined.agg(F.count(F.lit(1)).alias("n"), F.sum("d").alias("d"))
            shown = totals.orderBy("k").toArrow()
            print(f"class warm-up: {shown.num_rows} groups, {csv.count()} CSV rows")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
