"""Reference against its reruns, then against the candidate: a run's verdict, noise included.

    result = compare_with_noise(spark, spec, "out/reference", "out/candidate",
                                reruns=["out/rerun"], limit=100)
    result.status            # "equivalent", "noisy" or "divergent"
    result.report            # matcher.noise.NoiseReport (None without reruns)

Each rerun of the reference is compared with the reference under the spec, exactly as the
candidate is, with witnesses kept for up to ``noise_limit`` divergences so that every noisy
key is known (``matcher.noise`` explains why that matters and what happens beyond it). When
the reference is noisy, the candidate is compared keeping as many witnesses, so that every
candidate divergence can be checked against the noise; the verdict returned keeps the first
``limit``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from matcher.noise import Noise, NoiseReport, explain
from matcher.spark.outputs import compare_on_spark
from matcher.spec import Spec
from matcher.verdict import Verdict

#: Witnesses kept per rerun comparison (and for the candidate's, when the reference is noisy).
NOISE_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class NoisyComparison:
    """The candidate's verdict (first ``limit`` witnesses), its reading against the
    reference's noise, and how long each half took (seconds)."""

    verdict: Verdict
    report: NoiseReport | None
    seconds: float
    noise_seconds: float

    @property
    def status(self) -> str:
        """The run's verdict: the noise report's, else the comparison's."""
        return self.verdict.status if self.report is None else self.report.verdict


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
) -> NoisyComparison:
    """Compare the reference with each rerun, then with the candidate, under ``spec``."""
    started = time.perf_counter()
    measured = [
        compare_on_spark(spark, spec, reference, rerun, limit=noise_limit, common=common).verdict
        for rerun in reruns
    ]
    noise = Noise.measure(measured)
    noise_seconds = time.perf_counter() - started
    wide = limit if noise.silent else max(limit, noise_limit)
    timed = compare_on_spark(spark, spec, reference, candidate, limit=wide, common=common)
    full = timed.verdict
    report = explain(noise, full).trim(limit) if reruns else None
    verdict = replace(full, divergences=full.divergences[:limit])
    return NoisyComparison(verdict, report, timed.seconds, noise_seconds)
