"""Parity off this machine (issue 16): the project's code shipped to executors.

* ``parity.runs.package``: the zip of the project's packages is deterministic, cached by its
  content, and leaves byte code and hidden files out; ``ship_project`` adds it to a job.
* End to end: a bundled validation (``maxrow_wellformed``) runs through its DAG
  (``dag.test()`` on the real dags folder) against a real Spark standalone cluster started
  here from pyspark's own distribution: a master and two workers in working directories of
  their own. The executors' Python is an interpreter that has the project's dependencies but
  *not* the project (the venv's editable install is a ``.pth`` file it does not read), so
  the run can only pass if the shipped zip provides ``matcher``, ``jobs``, ...; a probe in that
  interpreter records where each executor Python started and its ``sys.path``. It takes
  minutes (five spark-submits on the cluster), so it is marked ``cluster`` and runs with
  ``make cluster``, not in the default run.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import DAGS, ROOT, SPARK_DEFAULTS, ParityEnv, dag_bag

from matcher.store import Store
from parity.runs.package import ALIAS, PACKAGES, ProjectCode, digest, ship_project
from parity.runs.submits import SparkJob, spark_submit_argv

pytest_plugins = ("airflow_fixtures",)

pytestmark = [
    # Airflow's in-process execution API (dag.test) imports starlette.testclient, which
    # warns that it uses httpx; nothing of ours uses it.
    pytest.mark.filterwarnings(
        "ignore:Using `httpx` with `starlette.testclient` is deprecated:UserWarning"
    ),
    # The Spark provider's SparkSubmitHook never closes spark-submit's stdout pipe; our
    # operator closes it, an operator that does not leaks it until garbage collection.
    pytest.mark.filterwarnings("ignore:unclosed file <_io.TextIOWrapper name=:ResourceWarning"),
]


@pytest.fixture(autouse=True)
def collect_leaked_pipes() -> Iterator[None]:
    yield
    gc.collect()


# --- the zip ------------------------------------------------------------------------------


def _packages(base: Path) -> ProjectCode:
    for name, files in {
        "alpha": {"__init__.py": "A = 1\n", "core.py": "B = 2\n", "data/x.json": "{}\n"},
        "beta": {"__init__.py": ""},
    }.items():
        for relative, text in files.items():
            (base / name / relative).parent.mkdir(parents=True, exist_ok=True)
            (base / name / relative).write_text(text)
    # left out: byte code, caches, hidden files
    (base / "alpha" / "__pycache__").mkdir()
    (base / "alpha" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0")
    (base / "alpha" / "stale.pyc").write_bytes(b"\0")
    (base / "alpha" / ".core.py.swp").write_bytes(b"\0")
    return ProjectCode((("alpha", str(base / "alpha")), ("beta", str(base / "beta"))))


def test_the_zip_is_deterministic_and_cached_by_content(tmp_path: Path) -> None:
    code = _packages(tmp_path / "src")
    first = code.bundle(tmp_path / "cache-a")
    os.utime(tmp_path / "src" / "alpha" / "core.py", (0, 0))  # times do not matter
    again = code.bundle(tmp_path / "cache-b")
    assert first.name == again.name == f"parity-{digest(code.files())}.zip"
    assert len(first.name) == len("parity-0123456789abcdef.zip")
    assert first.read_bytes() == again.read_bytes()
    with zipfile.ZipFile(first) as archive:
        infos = archive.infolist()
    assert [i.filename for i in infos] == [
        "alpha/__init__.py",
        "alpha/core.py",
        "alpha/data/x.json",
        "beta/__init__.py",
    ]
    assert {(i.date_time, i.external_attr >> 16) for i in infos} == {((1980, 1, 1, 0, 0, 0), 0o644)}
    # cached: the same content is not written again (a rewrite is a new file, renamed over
    # it), only marked used now (test_package.py: the cache keeps the zips used last)
    inode = first.stat().st_ino
    assert code.bundle(tmp_path / "cache-a") == first and first.stat().st_ino == inode
    # new content, new name; the old zip stays for the runs that use it
    (tmp_path / "src" / "alpha" / "core.py").write_text("B = 3\n")
    changed = code.bundle(tmp_path / "cache-a")
    assert changed != first and first.exists()
    assert sorted(p.name for p in (tmp_path / "cache-a").iterdir()) == sorted(
        [first.name, changed.name]
    )


def test_the_installed_project_is_what_ships() -> None:
    code = ProjectCode.installed()
    assert [name for name, _ in code.packages] == list(PACKAGES)
    assert all((Path(d) / "__init__.py").is_file() for _, d in code.packages)
    import jobs
    import matcher

    assert dict(code.packages)["matcher"] == str(Path(matcher.__file__).parent)
    assert code.contains(str(Path(jobs.__file__).parent / "examples" / "reducers.py"))
    assert not code.contains(str(ROOT / "tests" / "pipelines" / "relay.py"))
    assert not code.contains("hdfs://nn/jobs/examples/reducers.py")


def test_a_shipped_job_s_whole_command_line() -> None:
    job = SparkJob(
        application="/repo/jobs/match.py",
        args=("--spec", "s.yaml"),
        conf={"spark.executor.memory": "2g", "spark.archives": "/x/dict.zip#dict"},
        name="parity-maxrow-match",
    )
    shipped = ship_project(job, "/home/packages/parity-0123456789abcdef.zip")
    assert ship_project(shipped, "/home/packages/parity-0123456789abcdef.zip") == shipped
    assert spark_submit_argv(
        shipped, spark_submit="spark-submit", master="spark://127.0.0.1:7077"
    ) == [
        *("spark-submit", "--master", "spark://127.0.0.1:7077", "--name", "parity-maxrow-match"),
        *("--conf", "spark.executor.memory=2g"),
        "--conf",
        "spark.archives=/home/packages/parity-0123456789abcdef.zip#parity-code,/x/dict.zip#dict",
        *("--conf", "spark.executorEnv.PYTHONPATH=parity-code"),
        *("/repo/jobs/match.py", "--spec", "s.yaml"),
    ]


# --- a validation on a standalone cluster ---------------------------------------------------

SPEC = ROOT / "dags" / "validations" / "maxrow_wellformed.yaml"
#: the applications of the run, as the master lists them (each job names its own session)
NAMES = [
    "parity-example-reducers",  # the reference and the candidate
    "parity-example-reducers",
    "parity-expectations",
    "parity-match",
    "parity-slice",
]
CLUSTER_DEFAULTS = """\
spark.executor.memory 512m
spark.executor.cores 1
spark.cores.max 2
spark.executor.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
spark.locality.wait 0
"""


def executor_python(directory: Path, probe: Path) -> Path:
    """A Python with the venv's packages but not the project: a venv of the same base
    interpreter whose one ``.pth`` line adds the venv's site-packages as a plain directory,
    so the ``.pth`` files in it (the editable install's, which adds the checkout) are not
    read. A second ``.pth`` records each start: pid, working directory, the shipped code's
    entries on ``sys.path``."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = directory / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "venv_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    record = (
        f"import os, sys, json; f = open({str(probe)!r}, 'a'); "
        f"f.write(json.dumps([os.getpid(), os.getcwd(), [p for p in sys.path if {ALIAS!r} in p]])"
        " + '\\n'); f.close()\n"
    )
    (Path(site) / "zz_probe.pth").write_text(record)
    return python


def _imports(python: Path, module: str, cwd: Path) -> bool:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([python, "-c", f"import {module}"], cwd=cwd, env=env, check=False)
    return done.returncode == 0


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(900)
def test_a_bundled_validation_runs_on_a_standalone_cluster_with_the_shipped_code(
    tmp_path: Path, parity_env: ParityEnv, airflow_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from standalone_cluster import master_state, standalone_cluster

    from jobs.examples.generate import generate

    started = time.monotonic()
    # The executors' interpreter cannot import the project, only its dependencies.
    probe = tmp_path / "executor-pythons.jsonl"
    python = executor_python(tmp_path / "executor-venv", probe)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert [_imports(python, m, elsewhere) for m in ("pyspark", "pyarrow", "pandas")] == [True] * 3
    assert [_imports(python, m, elsewhere) for m in ("matcher", "jobs", "parity")] == [False] * 3
    probe.unlink()

    # The bundled spec as it is, reading a capture generated here rather than in data/.
    text = SPEC.read_text(encoding="utf-8")
    captures = generate("maxrow_wellformed", tmp_path / "captures").path.parent
    assert text.count("path: data/captures/maxrow_wellformed\n") == 1
    (parity_env.validations / SPEC.name).write_text(
        text.replace("data/captures/maxrow_wellformed", str(captures / "maxrow_wellformed"))
    )
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(SPARK_DEFAULTS + CLUSTER_DEFAULTS)
    log4j = Path(os.environ["SPARK_CONF_DIR"]) / "log4j2.properties"
    (conf_dir / "log4j2.properties").write_text(log4j.read_text())
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    # Nothing reaches the executors by the environment or a shared working directory.
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("PYSPARK_PYTHON", str(python))
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    monkeypatch.chdir(elsewhere)

    with standalone_cluster(tmp_path / "cluster", workers=2) as cluster:
        connection = {"conn_type": "spark", "host": cluster.master_url}
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(connection))
        bag = dag_bag(DAGS)
        assert bag.import_errors == {}
        run = bag.dags["parity_maxrow_wellformed"].test()
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        applications = master_state(cluster.webui_url)
    wall = time.monotonic() - started

    assert (str(run.state), states) == (
        "success",
        {
            "plan": "success",
            "slice_input": "success",
            "run_reference": "success",
            "run_candidate": "success",
            "match": "success",
            "expectations": "success",
            "record": "success",
            "gate": "success",
        },
    ), states
    with Store.open(parity_env.db_url) as store:
        record = store.get_run(f"parity_maxrow_wellformed/{run.run_id}")
    assert record is not None
    assert (record.status, record.verdict, record.gate_passed) == ("completed", "equivalent", True)

    # Every Spark job of the run was an application of the cluster, and finished there.
    completed = applications["completedapps"]
    assert applications["activeapps"] == []
    assert sorted(app["name"] for app in completed) == NAMES
    assert {app["state"] for app in completed} == {"FINISHED"}
    # Each had an executor on each worker, in the worker's own directory.
    for worker in ("worker-0", "worker-1"):
        ran = {p.parts[-3] for p in (tmp_path / "cluster" / worker).glob("app-*/*/stderr")}
        assert ran == {app["id"] for app in completed}, worker
    # The executors' Python started in those directories, with the shipped code on its path.
    starts = [json.loads(line) for line in probe.read_text().splitlines()]
    where = {Path(cwd).relative_to(tmp_path / "cluster").parts[0] for _, cwd, _ in starts}
    assert where == {"worker-0", "worker-1"}
    assert {tuple(Path(p).name for p in paths) for _, _, paths in starts} == {(ALIAS,)}
    print(f"cluster validation: {wall:.0f} s, {len(starts)} executor Pythons", file=sys.stderr)
