"""Parity's matcher on Spark: the core's verdict on two outputs too big for one process.

    from matcher.spark import read_stream, compare_dataframes
    reference = read_stream(spark, "out/reference", format="parquet")
    candidate = read_stream(spark, "out/candidate", format="parquet")
    verdict = compare_dataframes(reference, candidate, by_key("taxi_id"), equality)

``read_stream`` puts an output in stream order (``__pos``, see ``matcher.spark.streams``);
``compare_dataframes`` returns the ``matcher.Verdict`` that ``matcher.compare`` gives on the
same events: the same verdict, kinds, counts and witnesses (positions, events, columns).
Keys that agree are settled in SQL; only what the core would leave unmatched reaches
Python, where the core's own classifier explains it. ``SparkComparison`` is the same call
as a value: ``route()`` says which path it takes and why, ``matching_plan()`` gives the
DataFrame to ``explain()`` (``matcher.spark.comparison``).

What differs from the core: ``peak_unmatched`` is 0 and ``detected_at`` ``None`` (no single
interleaved run to report them); ``side_stats`` carry ``rows``, ``keys`` (distinct keys of
the keyed forms, 0 otherwise) and ``barriers``; beyond ``grouped_run.EXACT_LIMIT`` unmatched
events in forms with barriers, where a lost or extra event would stand and the partner
a reordering names may differ, and beyond ``grouped_run.DRIVER_LIMIT``
events are explained key by key (the verdict warns). ``__pos`` must be dense and 0-based
(``read_stream`` makes it so). Python workers must be able to import ``matcher`` and any
``module:function`` the spec names (``spark.pyspark.python`` pointing at the project's
environment).

This is the only matcher package that imports ``pyspark`` (an import contract checks it).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matcher.spark.comparison import Route, SparkComparison, compare_dataframes
    from matcher.spark.streams import read_stream

__all__ = ["Route", "SparkComparison", "compare_dataframes", "read_stream"]

#: where each name of ``__all__`` lives: imported when first used, so that importing a
#: submodule that needs no pyspark (``matcher.spark.failures``) does not import pyspark
_HOMES = {
    "Route": "matcher.spark.comparison",
    "SparkComparison": "matcher.spark.comparison",
    "compare_dataframes": "matcher.spark.comparison",
    "read_stream": "matcher.spark.streams",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
