"""Shared test set-up: Hypothesis profiles.

``HYPOTHESIS_PROFILE`` picks the profile (default ``ci``):

* ``ci``: derandomized (the same examples on every run, so a red build is reproducible),
  200 examples per property, no deadline (the brute-force oracles are slow on purpose),
  and no example database written into the work tree;
* ``dev``: random, 1,000 examples, with the local example database, for hunting bugs.

and the ``--scale`` and ``--cluster`` options: tests marked ``scale`` (millions of rows) or
``cluster`` (a standalone cluster) run only with theirs.

At the end of the session it also detaches py4j's logger (``pytest_unconfigure``).
"""

from __future__ import annotations

import logging
import os

import pytest
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


#: markers whose tests run only with their option: minutes each, behind a make target
OPT_IN = {
    "scale": "millions of rows, minutes each (make scale)",
    "cluster": "a standalone Spark cluster running a validation's DAG, minutes (make cluster)",
    "crashes": "every crash-and-restart variant, and on a cluster: a minute each (make crashes)",
    "release_e2e": "the release loop on a real Airflow, minutes (make release-e2e)",
    "newcomer": "a fresh clone through make demo and the tutorial, minutes (make newcomer)",
    "minimize": "parity minimize on each bundled divergent run, minutes each (make minimize)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    for marker, what in OPT_IN.items():
        parser.addoption(
            f"--{marker.replace('_', '-')}",
            action="store_true",
            dest=marker,
            help=f"also run the tests marked {marker}: {what}",
        )


#: the test files of minutes, longest first. ``make test`` runs one process per core and a
#: file in one of them (``--dist loadfile``), handing files out in collection order
#: (``--no-loadscope-reorder``: by default xdist hands out the files with the most tests
#: first, which put these last): these go first, so that the last minutes are not one long
#: file running beside an idle process
LONG_FILES = (
    "test_release_services.py",
    "test_recovery.py",
    "test_sequence_window_app.py",
    "test_dags.py",
    "test_examples.py",
    "test_match_job.py",
    "test_recovery_dag.py",
    "test_adhoc_overrides.py",
    "test_cli.py",
    "test_artifacts.py",
    "test_airflow_release.py",
    "test_parity_run.py",
    "test_ci_recipes.py",
    "test_approvals_ui.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long files first (``LONG_FILES``; the order within a file is kept). Tests marked
    ``scale`` (``cluster``) run only with ``--scale`` (``--cluster``); otherwise they are
    deselected, not skipped, so the default run neither starts their sessions nor writes
    their data."""
    rank = {name: n for n, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))  # a stable sort
    left_out = [m for m in OPT_IN if not config.getoption(m)]
    if not left_out:
        return
    kept = [item for item in items if not any(item.get_closest_marker(m) for m in left_out)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


def pytest_unconfigure(config: pytest.Config) -> None:
    """Keep py4j's last words out of handlers whose streams are already closed.

    Importing Airflow configures the root logger (level INFO) with a handler on
    ``sys.stdout``, which under pytest is the capture's stream. After the session pytest
    closes that stream; then, at interpreter exit, py4j garbage-collects the Spark
    gateway's connections, and each ``ClientServerConnection.__del__`` logs "Closing down
    clientserver connection" at INFO into it: a ``--- Logging error ---`` traceback at the
    end of every run that used Spark. Once the tests are over py4j has nothing else to
    report, so its records go nowhere from here on (tests/test_fresh_machine.py)."""
    py4j = logging.getLogger("py4j")
    py4j.addHandler(logging.NullHandler())
    py4j.propagate = False
