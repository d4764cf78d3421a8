"""DataFrame-shape operators with known properties: common Spark idioms and mutants of
them (``parity properties --shape dataframe``). Input: ``key, offset, x, y``."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def select(df: DataFrame) -> DataFrame:
    """A projection: stateless, one-to-one."""
    return df.select("key", (F.col("x") * 2).alias("x2"))


def where_positive(df: DataFrame) -> DataFrame:
    """A filter: stateless, selective."""
    return df.where(F.col("x") > 0)


def explode_pairs(df: DataFrame) -> DataFrame:
    """``explode`` of two values per row: prolific."""
    return df.select("key", F.explode(F.array("x", "y")).alias("v"))


def drop_duplicates(df: DataFrame) -> DataFrame:
    """``dropDuplicates()`` on whole rows: deterministic, stateful, commutative."""
    return df.dropDuplicates()


def drop_duplicates_by_key(df: DataFrame) -> DataFrame:
    """``dropDuplicates(["key"])``: which row of a key survives depends on arrival."""
    return df.dropDuplicates(["key"])


def first_per_key(df: DataFrame) -> DataFrame:
    """``first`` in an aggregation: Spark documents it as non-deterministic."""
    return df.groupBy("key").agg(F.first("x").alias("x"))


def sum_per_key(df: DataFrame) -> DataFrame:
    """``groupBy(key).sum``: stateful, commutative, partition-isolated by key."""
    return df.groupBy("key").agg(F.sum("x").alias("x"))


def count_all(df: DataFrame) -> DataFrame:
    """A global count: stateful, keys interfere."""
    return df.groupBy().agg(F.count(F.lit(1)).alias("n"))


def rank_total_order(df: DataFrame) -> DataFrame:
    """``row_number`` over a total order (every column): deterministic."""
    window = Window.partitionBy("key").orderBy("x", "y", "offset")
    return df.withColumn("rank", F.row_number().over(window))


def rank_ties(df: DataFrame) -> DataFrame:
    """Mutant: ``row_number`` ordered by ``x`` alone, so ties go by arrival."""
    window = Window.partitionBy("key").orderBy("x")
    return df.withColumn("rank", F.row_number().over(window)).select("key", "y", "rank")


def with_id(df: DataFrame) -> DataFrame:
    """``monotonically_increasing_id``: the partition's number is in the id."""
    return df.withColumn("id", F.monotonically_increasing_id())


def with_rand(df: DataFrame) -> DataFrame:
    """``rand(7)``: seeded, but per partition."""
    return df.withColumn("r", F.rand(7))


def sessions(df: DataFrame) -> DataFrame:
    """Sessionisation: a new session per key when ``x`` jumps by more than 2, over a total
    order: deterministic, stateful, commutative, partition-isolated by key."""
    order = Window.partitionBy("key").orderBy("x", "offset")
    gap = (F.col("x") - F.lag("x").over(order) > 2).cast("int")
    started = F.coalesce(gap, F.lit(0))
    return df.withColumn("session", F.sum(started).over(order)).select("key", "x", "session")


def last_x_global(df: DataFrame) -> DataFrame:
    """Mutant of a per-key running value: ``last`` over the whole input in arrival order
    (one partition: order-sensitive and keys interfere)."""
    return df.coalesce(1).groupBy().agg(F.last("x").alias("x"))
