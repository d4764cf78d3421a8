"""Shared test set-up: Hypothesis profiles.

``HYPOTHESIS_PROFILE`` picks the profile (default ``ci``):

* ``ci``: derandomized (the same examples on every run, so a red build is reproducible),
  200 examples per property, no deadline (the brute-force oracles are slow on purpose),
  and no example database written into the work tree;
* ``dev``: random, 1,000 examples, with the local example database, for hunting bugs.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_QUIET_CHECKS = (HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much)

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=200,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=_QUIET_CHECKS,
)
settings.register_profile(
    "dev",
    max_examples=1_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=_QUIET_CHECKS,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
