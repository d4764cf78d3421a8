"""Which engine decides a run's match: small outputs are matched by the core matcher in a
Python process, without ``spark-submit``.

    limit = core_match_limit()                       # PARITY_CORE_MATCH_BYTES, default 8 MiB
    if limit is not None and local_bytes(outputs, limit) is not None:   # matcher.files
        command = core_match_argv(match_job)         # [python, jobs/match.py, ..., --engine, core]

A ``spark-submit`` of the match job costs a JVM and a Spark session before it reads a row:
about 15-20 s on a two-core machine, most of a validation whose slice holds a few thousand
rows. Under the limit, in bytes on disk for the reference, the candidate and the reruns
together, the DAG's ``match`` task and a recovery run's differential check run the same
``jobs/match.py`` with ``--engine core`` on this machine's Python: the same verdict (the
engines agree, ``tests/test_examples.py`` checks it on every bundled validation), recorded
the same way, with the run's engine stored as ``core``. The outputs must be local to the
worker (a path or ``file://``); on shared storage, past the limit, or with the limit at 0 the
job is submitted to Spark as before. The core holds the events it has not matched yet (and a
whole output when the spec orders it, ``output.order_by``), so the limit bounds the memory a
match takes on an Airflow worker: 8 MiB of Parquet is up to about a million rows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from matcher.errors import ParityError
from parity.runs.submits import SparkJob

BYTES_VARIABLE = "PARITY_CORE_MATCH_BYTES"
DEFAULT_BYTES = 8 * 1024 * 1024
ENGINE_ARGS = ("--engine", "core")


class EngineSettingError(ParityError):
    """``PARITY_CORE_MATCH_BYTES`` is not a whole number of bytes."""


def core_match_limit(environ: Mapping[str, str] = os.environ) -> int | None:
    """``PARITY_CORE_MATCH_BYTES`` (a whole number of bytes), else 8 MiB; ``None`` when it
    is 0: every match on Spark."""
    text = environ.get(BYTES_VARIABLE, "").strip()
    if not text:
        return DEFAULT_BYTES
    if not text.isascii() or not text.isdigit():
        raise EngineSettingError(f"{BYTES_VARIABLE}={text!r}: expected a whole number of bytes")
    return int(text) or None


def core_match_argv(job: SparkJob, python: str = sys.executable) -> list[str]:
    """The match job as a Python process deciding with the core matcher: its application
    and arguments as ``spark-submit`` would get them, then ``--engine core``."""
    return [python, *job.argv(), *ENGINE_ARGS]
