"""Reference against its reruns, then against the candidate, on Spark: a run's verdict,
noise included (``matcher.noise.compare_with_noise`` with Spark's comparison).

    result = compare_with_noise(spark, spec, "out/reference", "out/candidate",
                                reruns=["out/rerun"], limit=100)
    result.status            # "equivalent", "noisy" or "divergent"
    result.report            # matcher.noise.NoiseReport (None without reruns)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matcher import noise
from matcher.noise import NOISE_LIMIT, NoisyComparison
from matcher.spark.outputs import compare_on_spark
from matcher.spec import Spec
from matcher.verdict import Verdict

__all__ = ["NOISE_LIMIT", "NoisyComparison", "compare_with_noise"]


def compare_with_noise(
    spark: Any,
    spec: Spec,
    reference: str,
    candidate: str,
    *,
    reruns: Sequence[str] = (),
    limit: int,
    noise_limit: int = NOISE_LIMIT,
    common: bool = False,
    differences: str | None = None,
) -> NoisyComparison:
    """Compare the reference with each rerun, then with the candidate, under ``spec``;
    every difference of the candidate's comparison is written at ``differences`` when
    given (``matcher.spark.differences``)."""

    def compare(left: str, right: str, kept: int) -> tuple[Verdict, float]:
        table = differences if right == candidate else None
        timed = compare_on_spark(
            spark, spec, left, right, limit=kept, common=common, differences=table
        )
        return timed.verdict, timed.seconds

    return noise.compare_with_noise(
        compare, reference, candidate, reruns=reruns, limit=limit, noise_limit=noise_limit
    )
