"""Parity's pipeline around the matcher, one room per role:

* ``parity.views``: read-side models of the results store that the command line and the
  Airflow plugin both show (history rows, the run report, the gate's status); no Spark, no
  Airflow.
* ``parity.airflow``: the validation DAGs: the factory, the run plan, the operators and the
  task callables (Airflow, the store and the views).
* ``parity.cli``: the ``parity`` command and what it prints (everything but Airflow).

The comparison itself is ``matcher`` (the core, its file readers and its Spark engine).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("parity")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
