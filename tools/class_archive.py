"""The JVM's class archive: the demo's Spark JVMs start from classes already parsed.

A validation starts about five JVMs (the slice, the reference, its rerun, the candidate, the
expectations), and each spends seconds loading and verifying Spark's classes before it
reads a row. Java's application class-data sharing maps them from an archive instead: a
JVM started with ``-XX:SharedArchiveFile=ARCHIVE`` skips that work for every class the
archive holds. On the 2-core project machine a small ``spark-submit`` took 4.6 s instead of
8.8 s with the demo's options (paired whole processes).

    archive = ensure_archive(directory, spark_submit, options, app=warmup, env=env)  # once
    env["SPARK_SUBMIT_OPTS"] = with_archive(options, archive)

The archive is written by one run of ``jobs/class_warmup.py`` with
``-XX:ArchiveClassesAtExit``, into ``directory`` under a name made of what it depends on
(the ``java`` that runs it, pyspark's version, the JVM options), so an upgrade makes a new
one and the old ones are removed. The JVM archives only a class path without a non-empty
directory, and Spark's launcher puts ``SPARK_CONF_DIR`` on it: the demo keeps that
directory empty and gives Spark its settings as ``-D`` properties (``tools.demo``). A JVM that
cannot use an archive (another JDK, another class path, a damaged file) starts as it would
without one: the JVM checks the archive and falls back by itself, and ``-Xlog:cds=off``
keeps it quiet.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PREFIX, SUFFIX = "spark-classes-", ".jsa"
#: building the archive is one small Spark application and the dump at its exit
BUILD_TIMEOUT = 600
QUIET = "-Xlog:cds=off"
#: the driver's JVM options in client mode (``local[*]``: the whole application)
OPTIONS_VARIABLE = "SPARK_SUBMIT_OPTS"


def archive_name(java: str, spark: str, options: str) -> str:
    """The archive's file name for this ``java -version`` text, Spark version and options."""
    digest = hashlib.sha256("\0".join((java, spark, options)).encode()).hexdigest()[:16]
    return f"{PREFIX}{digest}{SUFFIX}"


def java_version(env: Mapping[str, str]) -> str | None:
    """``java -version`` of the JVM ``spark-submit`` starts (``JAVA_HOME``'s, else ``PATH``'s),
    or None when there is none."""
    home = env.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else "java"
    try:
        done = subprocess.run(
            [java, "-version"], env=dict(env), capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stderr.strip() if done.returncode == 0 else None


def spark_version() -> str:
    try:
        return version("pyspark")
    except PackageNotFoundError:
        return "unknown"


def ensure_archive(
    directory: Path,
    spark_submit: str,
    options: str,
    *,
    app: Path,
    env: Mapping[str, str] | None = None,
) -> Path | None:
    """The archive in ``directory`` for JVMs started with ``options``, built by one
    ``spark-submit`` of ``app`` if it is not there yet; None when it cannot be built (no
    ``java``, a JVM or class path that cannot be archived, a failed run, a path with a
    space, which the options cannot carry)."""
    environ = dict(os.environ if env is None else env)
    if any(c.isspace() for c in str(directory)):
        return None
    java = java_version(environ)
    if java is None:
        return None
    path = directory / archive_name(java, spark_version(), options)
    if path.is_file():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f".{path.name}.{os.getpid()}"
    environ[OPTIONS_VARIABLE] = f"{options} -XX:ArchiveClassesAtExit={partial} {QUIET}".strip()
    argv = [spark_submit, "--master", "local[2]", str(app)]
    try:
        done = subprocess.run(
            argv, env=environ, capture_output=True, text=True, timeout=BUILD_TIMEOUT
        )
        if done.returncode != 0 or not partial.is_file():
            return None
        os.replace(partial, path)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        partial.unlink(missing_ok=True)
    for old in directory.glob(f"{PREFIX}*{SUFFIX}"):  # archives of an earlier JDK or Spark
        if old != path:
            old.unlink(missing_ok=True)
    return path


def with_archive(options: str, archive: Path | None) -> str:
    """``options`` for a JVM that starts from ``archive`` (unchanged without one)."""
    if archive is None:
        return options
    return f"{options} -XX:SharedArchiveFile={archive} {QUIET}".strip()
