"""The demo's class archive (``tools.class_archive``): built once by a real ``spark-submit``
of ``jobs/class_warmup.py``, used by later JVMs (``-Xshare:on`` makes a JVM that cannot
map it fail, so a run under it proves the archive is used), renewed when what it depends
on changes, and never in the way: a damaged archive, no ``java``, or a path the options
cannot carry leaves the JVMs as they were."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from parity.recovery.runner import find_spark_submit
from tools.class_archive import (
    OPTIONS_VARIABLE,
    archive_name,
    ensure_archive,
    java_version,
    with_archive,
)

ROOT = Path(__file__).resolve().parent.parent
WARMUP = ROOT / "jobs" / "class_warmup.py"
OPTIONS = "-XX:+UseSerialGC -Dspark.ui.enabled=false"
TINY = "from pyspark.sql import SparkSession\n" + (
    "print('SUM', SparkSession.builder.getOrCreate().range(1000).selectExpr('sum(id)')"
    ".collect()[0][0])\n"
)


def _env(tmp_path: Path) -> dict[str, str]:
    conf = tmp_path / "spark-conf"  # empty: the launcher puts it on the class path
    conf.mkdir(exist_ok=True)
    return dict(
        os.environ,
        SPARK_CONF_DIR=str(conf),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
    )


def _submit(tmp_path: Path, options: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "tiny.py"
    script.write_text(TINY, encoding="utf-8")
    env = dict(_env(tmp_path), **{OPTIONS_VARIABLE: options})
    argv = [find_spark_submit(), "--master", "local[1]", str(script)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def test_the_name_changes_with_the_jdk_spark_and_the_options() -> None:
    names = {
        archive_name("java 17.0.15", "4.3.0", OPTIONS),
        archive_name("java 17.0.16", "4.3.0", OPTIONS),
        archive_name("java 17.0.15", "4.3.1", OPTIONS),
        archive_name("java 17.0.15", "4.3.0", OPTIONS + " -Xmx2g"),
    }
    assert len(names) == 4
    assert all(n.startswith("spark-classes-") and n.endswith(".jsa") for n in names)


def test_without_java_or_with_a_space_in_the_path_there_is_no_archive(tmp_path: Path) -> None:
    nowhere = dict(os.environ, JAVA_HOME=str(tmp_path / "no-jdk"))
    assert java_version(nowhere) is None
    assert ensure_archive(tmp_path / "a", "spark-submit", OPTIONS, app=WARMUP, env=nowhere) is None
    spaced = tmp_path / "with space"
    assert ensure_archive(spaced, "spark-submit", OPTIONS, app=WARMUP) is None
    assert not spaced.exists()
    assert with_archive(OPTIONS, None) == OPTIONS


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(900)
def test_the_archive_is_built_once_used_by_later_jvms_and_replaces_older_ones(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "classes"
    directory.mkdir()
    older = directory / "spark-classes-0123456789abcdef.jsa"  # an earlier JDK's
    older.write_bytes(b"old")
    env = _env(tmp_path)

    archive = ensure_archive(directory, find_spark_submit(), OPTIONS, app=WARMUP, env=env)
    assert archive is not None and archive.is_file()
    assert sorted(p.name for p in directory.iterdir()) == [archive.name]  # no partial left
    built = archive.stat().st_mtime_ns
    again = ensure_archive(directory, find_spark_submit(), OPTIONS, app=WARMUP, env=env)
    assert again == archive and archive.stat().st_mtime_ns == built  # not built twice

    # -Xshare:on: a JVM that could not map the archive would refuse to start.
    used = _submit(tmp_path, with_archive(OPTIONS, archive) + " -Xshare:on")
    assert used.returncode == 0, used.stderr[-2000:]
    assert "SUM 499500" in used.stdout

    damaged = tmp_path / "damaged.jsa"
    damaged.write_bytes(b"not an archive")
    refused = _submit(tmp_path, with_archive(OPTIONS, damaged) + " -Xshare:on")
    assert refused.returncode != 0 and "shared archive" in refused.stderr
    fallback = _submit(tmp_path, with_archive(OPTIONS, damaged))  # as without an archive
    assert fallback.returncode == 0, fallback.stderr[-2000:]
    assert "SUM 499500" in fallback.stdout
