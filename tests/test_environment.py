"""The installed environment is the one the lock describes, and its known traps are closed.

* ``pyspark-client`` (pulled in by the Airflow Spark provider) ships a ``pyspark/`` package
  of its own; installed over ``pyspark`` it leaves 4.2 Python files beside 4.3 jars. The
  lock drops it (``[tool.uv] override-dependencies``); these tests prove the Python side
  and the JVM side of PySpark are one release.
* PySpark warns on pandas >= 3, which ``filterwarnings = error`` would turn into failures
  far from the cause; the pin keeps pandas 2.x and a test says so here.
* Great Expectations and Airflow import cleanly. They run in a subprocess so that their
  import-time side effects (Airflow's config and logging set-up, GX's warnings filters)
  stay out of the test process.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

SPARK_CORE_JAR = re.compile(r"^spark-core_(?P<scala>\d+\.\d+)-(?P<version>\d+\.\d+\.\d+)\.jar$")


def _project_requirement(name: str) -> Requirement:
    """The requirement on ``name`` in parity's own installed metadata."""
    for line in importlib.metadata.requires("parity") or []:
        requirement = Requirement(line)
        if requirement.name == name and requirement.marker is None:
            return requirement
    raise AssertionError(f"parity does not declare a dependency on {name}")


def _spark_core_jar_version() -> str:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    versions = {
        match["version"] for path in jars.iterdir() if (match := SPARK_CORE_JAR.match(path.name))
    }
    assert len(versions) == 1, f"expected one spark-core jar in {jars}, found {sorted(versions)}"
    return versions.pop()


def _run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_pyspark_python_files_match_the_spark_jars() -> None:
    import pyspark

    jar_version = _spark_core_jar_version()

    assert pyspark.__version__ == jar_version
    assert importlib.metadata.version("pyspark") == jar_version
    assert Version(jar_version) in _project_requirement("pyspark").specifier


def test_pyspark_client_does_not_shadow_pyspark() -> None:
    try:
        client_version = importlib.metadata.version("pyspark-client")
    except importlib.metadata.PackageNotFoundError:
        return  # what the lock installs
    # Installed by hand: harmless only if it is the same release as the jars, since its
    # pyspark/ files replace pyspark's.
    assert client_version == _spark_core_jar_version(), (
        f"pyspark-client {client_version} overwrote pyspark/ files of "
        f"pyspark {_spark_core_jar_version()}; run `make clean install`"
    )


def test_pandas_satisfies_the_pin_and_pyspark_accepts_it_silently() -> None:
    import pandas
    from pyspark.sql.pandas.utils import (
        require_minimum_pandas_version,
        require_minimum_pyarrow_version,
    )

    assert Version(pandas.__version__) in _project_requirement("pandas").specifier
    assert Version(pandas.__version__) < Version("3")

    # The very checks PySpark runs before every pandas/Arrow conversion; pandas >= 3
    # makes the first one emit a FutureWarning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        require_minimum_pandas_version()
        require_minimum_pyarrow_version()


def test_great_expectations_imports() -> None:
    expected = importlib.metadata.version("great-expectations")

    # The sentinel matters: a broken pyspark.sql.connect import path once made this
    # exact command exit 0 without running the print.
    result = _run_python(
        "import great_expectations as gx; print('GX', gx.__version__)",
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"GX {expected}"


def test_airflow_and_the_spark_provider_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = importlib.metadata.version("apache-airflow")
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")

    result = _run_python(
        "import airflow\n"
        "from airflow.sdk import DAG\n"
        "from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator\n"
        "print('AIRFLOW', airflow.__version__)\n",
        env=dict(os.environ),
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"AIRFLOW {expected}"


@pytest.mark.spark
@pytest.mark.slow
def test_local_spark_session_runs_the_installed_release() -> None:
    """The JVM that pyspark launches is the release pyspark's Python files belong to."""
    import pyspark

    result = _run_python(
        "from pyspark.sql import SparkSession\n"
        "spark = (SparkSession.builder.master('local[1]')\n"
        "         .config('spark.ui.enabled', 'false').getOrCreate())\n"
        "spark.sparkContext.setLogLevel('ERROR')\n"
        "print('COUNT', spark.range(3).count())\n"
        "print('VERSION', spark.version)\n"
        "spark.stop()\n",
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["COUNT 3", f"VERSION {pyspark.__version__}"]
