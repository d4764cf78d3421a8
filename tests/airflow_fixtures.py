"""Airflow for tests: a temporary AIRFLOW_HOME, a SQLite metadata database migrated once per
session, the repository's real dags folder, and a Spark connection to ``local[2]``.

A test module registers it with ``pytest_plugins = ("airflow_fixtures",)``. Airflow reads its
configuration once, when it is first imported, so the environment is set when this module is
imported, before any test imports Airflow; a session that imported Airflow earlier with
another home fails loudly rather than writing to ``~/airflow``.

* ``airflow_db``: the migrated metadata database (session-scoped);
* ``parity_env``: per test, a fresh ``PARITY_HOME`` (run workspaces), a SQLite results store
  (``PARITY_DB_URL``), ``PARITY_VALIDATIONS_DIR`` pointing at the test's specs
  (``parity_env.validations``), so the DAG files build DAGs from them, and a Spark
  configuration directory (no web UI, few shuffle partitions);
* ``dag_bag(folder)``: a ``DagBag`` of a dags folder, as the DAG processor would load it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tools.demo import LOG4J2

ROOT = Path(__file__).resolve().parent.parent
DAGS = ROOT / "dags"
# One home per test session, even if this module is imported under two names.
_HOME = Path(
    os.environ.get("PARITY_TEST_AIRFLOW_HOME") or tempfile.mkdtemp(prefix="parity-airflow-")
)
_SPARK_CONF = _HOME / "spark-conf"
BIN = Path(sys.executable).parent

AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME / 'airflow.db'}",
    "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[2]"}',
    # spark-submit comes from the venv; its Python workers run this interpreter.
    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    "PYSPARK_PYTHON": sys.executable,
    "SPARK_LOCAL_IP": "127.0.0.1",
    "PARITY_TEST_AIRFLOW_HOME": str(_HOME),
}
SPARK_DEFAULTS = """\
spark.ui.enabled false
spark.ui.showConsoleProgress false
spark.sql.shuffle.partitions 4
spark.driver.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
"""

if "airflow" in sys.modules and os.environ.get("AIRFLOW_HOME") != AIRFLOW_ENV["AIRFLOW_HOME"]:
    # Too late to point Airflow at a test home: its configuration is already read.
    from airflow.configuration import AIRFLOW_HOME as _ACTIVE

    if not str(_ACTIVE).startswith(tempfile.gettempdir()):
        raise RuntimeError(
            f"airflow was imported before tests/airflow_fixtures.py (AIRFLOW_HOME={_ACTIVE}): "
            "register the plugin before importing airflow"
        )
else:
    os.environ.update(AIRFLOW_ENV)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The metadata database, created by Airflow's migrations (as ``airflow db migrate``)."""
    from airflow.utils import db

    db.upgradedb()
    return _HOME / "airflow.db"


@dataclass(frozen=True)
class ParityEnv:
    home: Path
    db_url: str
    validations: Path


@pytest.fixture
def parity_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ParityEnv]:
    """A fresh Parity home, results store and validations directory for one test."""
    env = ParityEnv(
        home=tmp_path / "parity",
        db_url=f"sqlite:///{tmp_path / 'results.db'}",
        validations=tmp_path / "validations",
    )
    env.validations.mkdir()
    monkeypatch.setenv("PARITY_HOME", str(env.home))
    monkeypatch.setenv("PARITY_DB_URL", env.db_url)
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(env.validations))
    # The match of small outputs on the core, as deployed by default (parity.runs.engines).
    monkeypatch.delenv("PARITY_CORE_MATCH_BYTES", raising=False)
    # spark-defaults.conf for the test's spark-submits: no web UI, no progress bars, a
    # JVM tuned for jobs of seconds (as the demo's).
    _SPARK_CONF.mkdir(parents=True, exist_ok=True)
    (_SPARK_CONF / "spark-defaults.conf").write_text(SPARK_DEFAULTS)
    (_SPARK_CONF / "log4j2.properties").write_text(LOG4J2)
    monkeypatch.setenv("SPARK_CONF_DIR", str(_SPARK_CONF))
    yield env


def dag_bag(folder: Path = DAGS) -> Any:
    """The DAGs of ``folder`` as Airflow's DAG processor loads them (import errors kept)."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(folder))


@contextmanager
def scheduled_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``dag.test()`` runs, within the block, in a DAG run made the way the scheduler makes
    one for a due schedule: run type ``scheduled``, triggered by the timetable, the run id
    ``scheduled__<logical date>``, the data interval the DAG's timetable gives. ``dag.test()``
    alone makes only manual runs, and what depends on the run type needs the scheduler's
    (``DagRunType`` reaches tasks as the task SDK's enum). The tasks then run as
    ``dag.test()`` runs them, for real."""
    import airflow.models.dagrun as dagrun
    from airflow.utils.state import DagRunState
    from airflow.utils.types import DagRunTriggeredByType, DagRunType

    def create(*, dag: Any, logical_date: Any, session: Any, **_: Any) -> Any:
        interval = dag.timetable.infer_manual_data_interval(run_after=logical_date)
        run_after = interval.end  # the scheduler creates a run once its interval is over
        run = dag.create_dagrun(
            run_id=dagrun.DagRun.generate_run_id(
                run_type=DagRunType.SCHEDULED, logical_date=logical_date, run_after=run_after
            ),
            logical_date=logical_date,
            data_interval=(interval.start, interval.end),
            run_after=run_after,
            run_type=DagRunType.SCHEDULED,
            triggered_by=DagRunTriggeredByType.TIMETABLE,
            state=DagRunState.RUNNING,  # queued, then started: dag.test() starts it at once
            start_date=logical_date,
            session=session,
        )
        return run

    with monkeypatch.context() as patch:  # undoes this patch only, not the test's others
        patch.setattr(dagrun, "get_or_create_dagrun", create)
        yield
