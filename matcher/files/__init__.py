"""Outputs on disk for the core matcher: ``readers`` reads Parquet, JSON lines and CSV files
(or a directory of them) as events in stream order, ``output_schema`` reads and compares
their schemas, ``compare`` matches two of them in this process. Formats are
``matcher.formats``'; the Spark engine reads the same files with Spark
(``matcher.spark.streams``). Imports the core and pyarrow; never Spark.
"""
