"""``parity run``'s local mode: one validation's DAG through ``dag.test()``, as the demo runs it.

    python -m tools.local_run VALIDATION --home DIR --result FILE [--conf JSON]
                              [--validations DIR]

``parity run`` without an Airflow (``parity.cli.run``) starts this as a child process: the
local Airflow home must be in the environment before Airflow is first imported, and a child
can be stopped when ``--timeout`` is over. It prepares what ``make demo`` prepares
(``tools.demo``: the environment and ``env.sh`` under ``DIR``, Spark's settings, the class
archive if ``make demo`` built one, Airflow's SQLite database with the DAGs and the Spark
pool) plus the bundled examples' captures that are missing, then runs the DAG
``parity_<VALIDATION>`` with ``dag.test(run_conf=JSON)``: real ``spark-submit`` on
``local[*]``, the verdict in the results store (``PARITY_DB_URL`` as the parent sets it).
Airflow's and Spark's output goes to ``DIR/logs/<VALIDATION>.log``, each task's also to its
log file where the Airflow UI reads it; stderr gets one line per finished task. ``FILE``
receives one JSON object: ``dag_id``, ``dag_run_id``, ``state`` (the DAG run's), ``log``,
and ``error`` (a one-line reason, or null).

A checkout of Parity only (it uses ``tools.demo``, ``jobs.examples`` and the ``dags`` folder),
hence a developer tool, not part of the installed package: ``parity.cli.run_local`` starts it
by name and never imports it (the import contracts: nothing installed imports ``tools``,
``parity.runs`` and ``parity.cli`` never import Airflow).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: the repository this module is part of (its ``dags`` folder and ``data/captures``)
ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags"
CAPTURES = ROOT / "data" / "captures"
DAG_PREFIX = "parity_"
#: a deployment's Airflow settings in the caller's environment, which local mode ignores
_AIRFLOW_SETTINGS = ("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_", "AIRFLOW_HOME")


def default_home() -> Path:
    """The demo's home, ``$PARITY_HOME/demo`` (``~/.parity/demo``): ``parity run`` and
    ``make demo`` share the prepared Airflow database, class archive and ``env.sh``."""
    return Path(os.environ.get("PARITY_HOME") or "~/.parity").expanduser() / "demo"


def task_line(task_id: str, state: str, seconds: float) -> str:
    """One finished task, as both modes print it."""
    return f"  {task_id:<24} {state:<16} (at {round(seconds)}s)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.local_run")
    parser.add_argument("validation")
    parser.add_argument("--home", required=True)
    parser.add_argument("--result", required=True)
    parser.add_argument("--conf", default="{}")
    parser.add_argument("--validations")
    args = parser.parse_args(argv)
    home = Path(args.home).resolve()
    result: dict[str, Any] = {
        "dag_id": DAG_PREFIX + args.validation,
        "dag_run_id": None,
        "state": None,
        "log": str(home / "logs" / f"{args.validation}.log"),
        "error": None,
    }
    try:
        result.update(run(args.validation, home, json.loads(args.conf), args.validations))
    except Exception as exc:  # the parent reports it as one line, exit 2
        result["error"] = " ".join(f"{type(exc).__name__}: {exc}".split())
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")
    return 0 if result["error"] is None else 2


def run(
    validation: str, home: Path, conf: Mapping[str, Any], validations: str | None
) -> dict[str, Any]:
    """Prepare, then ``dag.test()`` the validation's DAG: its DAG run's id and state."""
    prepare(home, validations)
    log = home / "logs" / f"{validation}.log"
    dag = _dag(DAG_PREFIX + validation, log)
    started = time.monotonic()
    terminal = os.dup(2)  # the task lines go to the caller's stderr while the rest is quieted

    def report(task_id: str, state: str) -> None:
        os.write(terminal, (task_line(task_id, state, time.monotonic() - started) + "\n").encode())

    try:
        dag_run = _test(dag, dict(conf), log, report)
    finally:
        os.close(terminal)
    state = getattr(dag_run.state, "value", dag_run.state)
    return {"dag_run_id": dag_run.run_id, "state": str(state)}


def prepare(home: Path, validations: str | None) -> None:
    """This process set up as the demo's (``tools.demo.prepare`` without regenerating every
    capture nor building a class archive): the environment and ``env.sh``, Spark's settings,
    the captures that are missing, Airflow's database with the DAGs and the pool, the store."""
    from tools import demo

    env = demo.demo_env(home)
    db_url = os.environ.get("PARITY_DB_URL")  # the parent's choice (--db, PARITY_DB_URL)
    for key in [k for k in os.environ if k.startswith(_AIRFLOW_SETTINGS)]:
        del os.environ[key]  # the embedded default, not a deployment's database or config
    if db_url:
        env["PARITY_DB_URL"] = db_url
    os.environ.update(env)
    if validations:
        os.environ["PARITY_VALIDATIONS_DIR"] = validations
    else:
        os.environ.pop("PARITY_VALIDATIONS_DIR", None)
    demo._write_spark_settings(home, Path(env["SPARK_CONF_DIR"]))
    archive = existing_archive(home, env)
    if archive is not None:
        from tools import class_archive

        env["SPARK_SUBMIT_OPTS"] = class_archive.with_archive(env["SPARK_SUBMIT_OPTS"], archive)
        os.environ["SPARK_SUBMIT_OPTS"] = env["SPARK_SUBMIT_OPTS"]
    demo._write_env_file(home, env)
    missing_captures()
    from matcher.store import Store

    with demo._quiet(home / "logs" / "airflow-setup.log"):
        demo._prepare_airflow()  # import errors: reported if the DAG wanted is missing
        Store.open().close()


def existing_archive(home: Path, env: Mapping[str, str]) -> Path | None:
    """The class archive ``make demo`` built in ``home`` for these JVM options, if there is
    one. Never built here: building it takes half a minute or more, about what it saves over
    the few JVMs of one validation (the demo runs dozens)."""
    from tools import class_archive

    folder = home / "spark-classes"
    if not any(folder.glob(f"{class_archive.PREFIX}*{class_archive.SUFFIX}")):
        return None
    java = class_archive.java_version(env)
    if java is None:
        return None
    name = class_archive.archive_name(java, class_archive.spark_version(), env["SPARK_SUBMIT_OPTS"])
    path = folder / name
    return path if path.is_file() else None


def missing_captures() -> list[str]:
    """Write the bundled examples' captures that are not there yet (``make demo`` writes
    them all); the names written."""
    from jobs.examples.generate import CAPTURES as NAMES
    from jobs.examples.generate import generate
    from jobs.examples.sequence_input import write_input

    written = [name for name in NAMES if not (CAPTURES / name).is_dir()]
    for name in written:
        _unless_there(CAPTURES / name, functools.partial(generate, name, CAPTURES))
    if not (CAPTURES / "sequence_window").is_dir():
        folder = CAPTURES / "sequence_window"
        _unless_there(folder, lambda: write_input(folder, keys=6, count=40, files=20))
        written.append("sequence_window")
    return written


def _unless_there(folder: Path, write: Callable[[], Any]) -> None:
    """``write()`` the capture in ``folder``; another run that wrote it at the same moment
    (its rename came first) is as good."""
    try:
        write()
    except OSError:
        if not folder.is_dir():
            raise


def _dag(dag_id: str, log: Path) -> Any:
    """The DAG from the dags folder, or an error quoting why it did not load."""
    from airflow.dag_processing.dagbag import DagBag

    from tools import demo

    with demo._quiet(log):
        bag = DagBag(dag_folder=str(DAGS))
    dag = bag.dags.get(dag_id)
    if dag is None:
        errors = "; ".join(str(e).strip().splitlines()[-1] for e in bag.import_errors.values())
        raise LookupError(f"no DAG {dag_id} in {DAGS}" + (f": {errors}" if errors else ""))
    return dag


def _test(dag: Any, conf: dict[str, Any], log: Path, report: Callable[[str, str], None]) -> Any:
    """``dag.test(run_conf=conf)``, Airflow's and Spark's output in ``log`` and each task's
    own log file (``tools.demo._task_logs``), ``report`` told each task's final state."""
    from airflow.sdk.execution_time import supervisor

    from tools import demo

    with demo._quiet(log), demo._task_logs(log):
        inner = supervisor.run_task_in_process

        def reporting(ti: Any, task: Any, client: Any = None) -> Any:
            result = inner(ti, task, client=client)
            state = getattr(result, "state", "unknown")
            report(ti.task_id, str(getattr(state, "value", state)))
            return result

        # dag.test() looks the function up in the module at each task (tools.demo._task_logs)
        supervisor.run_task_in_process = reporting
        try:
            return dag.test(run_conf=conf)
        finally:
            supervisor.run_task_in_process = inner


if __name__ == "__main__":
    sys.exit(main())
