"""Every difference of a Spark comparison, written where the data is (``matcher.files.differences``
says what the table holds).

The verdict's counts come from whichever path decided it; the table comes from one job of
its own, run only when asked: the events of the groups that screening found in
disagreement are explained group by group on executors by the core's classifier, with the
core's per-key replay (``matcher.spark.result.group_explainer``), which is the core's
classification for keys that the core never pairs across. Each divergence becomes a small
row (kind, key, positions, columns), and its two events are joined back from the outputs
by position, so the values keep their Spark types and nothing passes through the driver.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from matcher.dependence import Dependence
from matcher.equality import Equality
from matcher.files.differences import HEAD, key_text
from matcher.spark.events import loads
from matcher.spark.result import DIVERGENCE_SCHEMA, group_explainer
from matcher.spark.schema import POS, column

SIDE = "__p_side"
#: a divergence without its events (``_small``'s output)
SMALL_SCHEMA = (
    "kind string, key string, reference_position long, candidate_position long, "
    "columns array<string>"
)
#: the same columns, as Arrow types them (``matcher.files.differences.HEAD``)
_SMALL = HEAD


def _small(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Divergences (pickled, ``DIVERGENCE_SCHEMA``'s ``blob``) as small rows."""
    for batch in batches:
        kinds = batch.column("kind").to_pylist()
        blobs = batch.column("blob").to_pylist()
        rows = []
        for kind, blob in zip(kinds, blobs, strict=True):
            if not kind:  # a row that only counts pairs matched while explaining
                continue
            d = loads(blob)
            rows.append(
                {
                    "kind": d.kind,
                    "key": key_text(d.key),
                    "reference_position": d.reference_position,
                    "candidate_position": d.candidate_position,
                    "columns": list(d.columns),
                }
            )
        yield pa.RecordBatch.from_pylist(rows, schema=_SMALL)


def difference_table(
    events: DataFrame,
    groups: list[str],
    names: list[str],
    reference: DataFrame,
    candidate: DataFrame,
    dependence: Dependence,
    equality: Equality,
    lengths: tuple[int, int],
) -> DataFrame:
    """The table of every divergence among ``events`` (both sides' events of the groups in
    disagreement, with ``__pos`` and the side), explained per ``groups`` columns;
    ``reference`` and ``candidate`` are the outputs (with ``__pos``) the events are joined
    back from."""
    explained = (
        events.select(*[column(c) for c in names], POS, SIDE, *[column(g) for g in groups])
        .groupBy(*[column(g) for g in groups])
        .applyInArrow(
            group_explainer(dependence, equality, list(lengths), names, True),
            DIVERGENCE_SCHEMA,
        )
    )
    small = explained.mapInArrow(_small, SMALL_SCHEMA)
    sides = {
        "reference": reference.select(
            F.col(POS).alias("__p_rpos"),
            F.struct(*[column(c) for c in names]).alias("reference"),
        ),
        "candidate": candidate.select(
            F.col(POS).alias("__p_cpos"),
            F.struct(*[column(c) for c in names]).alias("candidate"),
        ),
    }
    joined = small.join(
        sides["reference"],
        (F.col("reference_position") == F.col("__p_rpos")) & (F.col("kind") != "duplication"),
        "left",
    ).join(
        sides["candidate"],
        (F.col("candidate_position") == F.col("__p_cpos")) & (F.col("kind") != "loss"),
        "left",
    )
    return joined.select(
        "kind",
        "key",
        "reference_position",
        "candidate_position",
        "columns",
        "reference",
        "candidate",
    )


def write_table(table: DataFrame, path: str) -> None:
    """Write the table as Parquet at ``path`` (a directory, replaced)."""
    table.write.mode("overwrite").parquet(path)
