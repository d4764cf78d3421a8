"""The demo's own logic: what a spec expects, the witness line, the verdict table, its
environment. (The demo itself runs every validation through Airflow: `make demo`.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from matcher.store import RunOutcome, RunRecord, RunStart, Store, StoredDivergence
from tools.demo import (
    BIN,
    HANDFUL,
    Expected,
    Outcome,
    _progress,
    _task_logs,
    _write_env_file,
    demo_env,
    env_file_text,
    expected_cost,
    expected_of,
    table,
    task_log_path,
    witness,
)

pytest_plugins = ("airflow_fixtures",)  # the session's Airflow home, for the pool test

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# Expected verdict: equivalent\nname: a\n", Expected("equivalent")),
        (
            "# x\n# Expected verdict: divergent (corruption) (DiffStream: bug found)\n",
            Expected("divergent", ("corruption",)),
        ),
        (
            "#  Expected verdict: divergent (loss, corruption)\n",
            Expected("divergent", ("loss", "corruption")),
        ),
        ("name: a\n", None),
    ],
)
def test_expected_verdict_comments(text: str, expected: Expected | None) -> None:
    assert expected_of(text) == expected


CORRUPTION = StoredDivergence(
    ordinal=0,
    kind="corruption",
    key="T3",
    reference_position=4,
    candidate_position=6,
    reference_event={"taxi_id": "T3", "km": 1.25, "seq": 2},
    candidate_event={"taxi_id": "T3", "km": 1.5000001, "seq": 9},
    columns=("km", "seq"),
)
LOSS = StoredDivergence(0, "loss", None, 7, None, {"word": "x\x00y"}, None)


def test_witness_lines() -> None:
    assert witness(CORRUPTION) == (
        "corruption at key 'T3', ref #4 / cand #6: km 1.25 vs 1.5 (+1 columns)"
    )
    assert witness(LOSS) == "loss at (no key), ref #7 / cand #-"


def record(tmp_path: Path, run_id: str, outcome: RunOutcome) -> RunRecord:
    with Store.open(f"sqlite:///{tmp_path / 'r.db'}") as store:
        store.start_run(RunStart(run_id, run_id, trigger="adhoc", candidate_version="2"))
        store.record_run(run_id, outcome)
        stored = store.get_run(run_id)
    assert stored is not None
    return stored


def test_the_verdict_table(tmp_path: Path) -> None:
    ok = record(tmp_path, "taxi_ok", RunOutcome(verdict="equivalent"))
    bad = record(
        tmp_path,
        "taxi_bug",
        RunOutcome(verdict="divergent", counts={"corruption": 3}, divergences=(CORRUPTION,)),
    )
    outcomes = [
        Outcome("taxi_ok", "2", Expected("equivalent"), ok, 1.0, "success"),
        Outcome("taxi_bug", "2", Expected("divergent", ("loss",)), bad, 1.0, "failed"),
    ]
    assert table(outcomes) == [
        "validation  candidate  verdict     kinds         expected                       "
        "first witness",
        "----------  ---------  ----------  ------------  -----------------------------  "
        "-------------",
        "taxi_ok     2          equivalent  -             ok                             -",
        "taxi_bug    2          divergent   corruption 3  MISMATCH (expected divergent)  "
        "corruption at key 'T3', ref #4 / cand #6: km 1.25 vs 1.5 (+1 columns)",
    ]


def test_the_demo_environment(tmp_path: Path) -> None:
    env = demo_env(tmp_path)
    root = ROOT
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"]) == {
        "conn_type": "spark",
        "host": "local[*]",
    }
    assert {
        k: env[k] for k in ("AIRFLOW_HOME", "PARITY_HOME", "PARITY_DB_URL", "SPARK_CONF_DIR")
    } == {
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "PARITY_HOME": str(tmp_path),
        "PARITY_DB_URL": f"sqlite:///{tmp_path / 'parity.db'}",
        "SPARK_CONF_DIR": str(tmp_path / "spark-conf"),
    }
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(root / "dags")
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(root / "plugins")
    assert env["AIRFLOW__LOGGING__BASE_LOG_FOLDER"] == str(tmp_path / "airflow" / "logs")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    # Spark's settings go to the driver's JVM, not to files in SPARK_CONF_DIR (kept empty
    # for the class archive, tools.class_archive).
    assert env["SPARK_SUBMIT_OPTS"].split() == [
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Dspark.ui.enabled=false",
        "-Dspark.ui.showConsoleProgress=false",
        f"-Dlog4j2.configurationFile={tmp_path / 'spark-log4j2.properties'}",
    ]


def test_env_sh_exports_the_whole_environment_quoted() -> None:
    env = {"AIRFLOW_HOME": "/h/it's here/airflow", "PARITY_HOME": "/h", "PATH": "/ignored"}
    assert env_file_text(env) == (
        "export AIRFLOW_HOME='/h/it'\"'\"'s here/airflow'\n"
        "export PARITY_HOME=/h\n"
        f'export PATH={BIN}:"$PATH"\n'
        "unset PARITY_VALIDATIONS_DIR\n"
    )


def test_sourcing_env_sh_gives_airflow_the_plugin_the_dags_and_the_logs(tmp_path: Path) -> None:
    """What `source env.sh && airflow standalone` sees, in a shell with nothing else set:
    the venv's airflow, the Parity plugin loaded (its page in the UI), the demo's folders."""
    home = tmp_path / "demo home"
    _write_env_file(home, demo_env(home))
    probe = (
        "import json, shutil; from airflow import plugins_manager; "
        "from airflow.configuration import conf; "
        "print(json.dumps({"
        "'airflow': shutil.which('airflow'), "
        "'plugins': [[p['name'], str(p['source'])] for p in plugins_manager.get_plugin_info()], "
        "'errors': plugins_manager.get_import_errors(), "
        "'dags': conf.get('core', 'dags_folder'), "
        "'logs': conf.get('logging', 'base_log_folder'), "
        "'parity_home': __import__('os').environ['PARITY_HOME']}))"
    )
    clean = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    done = subprocess.run(
        ["bash", "-c", 'source "$1" && python -c "$2"', "bash", str(home / "env.sh"), probe],
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "airflow": str(BIN / "airflow"),
        "plugins": [["parity", "$PLUGINS_FOLDER/parity_plugin.py"]],
        "errors": {},
        "dags": str(ROOT / "dags"),
        "logs": str(home / "airflow" / "logs"),
        "parity_home": str(home),
    }


def test_each_task_of_a_demo_run_writes_the_log_file_the_ui_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.execution_time import supervisor

    monkeypatch.setenv("AIRFLOW__LOGGING__BASE_LOG_FOLDER", str(tmp_path / "task-logs"))

    def fake_run(ti: Any, task: Any, client: Any = None) -> str:
        os.write(1, b"airflow: running\n")
        subprocess.run([sys.executable, "-c", "print('spark-submit: done')"], check=True)
        os.write(2, b"airflow: finished\n")
        return f"ran {task}"

    monkeypatch.setattr(supervisor, "run_task_in_process", fake_run)
    ti = SimpleNamespace(
        dag_id="parity_taxi",
        run_id="manual__2026-01-02",
        task_id="match",
        map_index=-1,
        try_number=2,
    )
    validation_log = tmp_path / "logs" / "taxi.log"
    validation_log.parent.mkdir()
    validation_log.write_bytes(b"before\n")
    with _task_logs(validation_log):
        assert supervisor.run_task_in_process(ti, "match-task") == "ran match-task"
    assert supervisor.run_task_in_process is fake_run

    path = (
        tmp_path
        / "task-logs/dag_id=parity_taxi/run_id=manual__2026-01-02/task_id=match/attempt=2.log"
    )
    assert task_log_path(ti) == path
    task_log = b"airflow: running\nspark-submit: done\nairflow: finished\n"
    assert path.read_bytes() == task_log
    assert validation_log.read_bytes() == (
        b"before\n" + f"--- task match (log: {path}) ---\n".encode() + task_log
    )


def test_the_demo_creates_the_pool_of_the_spark_tasks(parity_env: Any) -> None:
    """``airflow standalone`` on the demo's home starts the validations' Spark tasks only if
    their pool exists: the demo's set-up creates it (and again, idempotently)."""
    from airflow.models.pool import Pool

    from tools.demo import SPARK_POOL, SPARK_POOL_SLOTS, _prepare_airflow

    assert _prepare_airflow() == {}
    assert _prepare_airflow() == {}
    pool = Pool.get_pool(SPARK_POOL)
    assert pool is not None
    assert (pool.pool, pool.slots) == ("parity_spark", SPARK_POOL_SLOTS)


def test_the_default_handful_covers_each_kind_of_validation() -> None:
    """`make demo` runs an equivalent, a divergent, a noise-rerun and a streaming validation;
    ALL=1 runs every one."""
    texts = {n: (ROOT / "dags" / "validations" / f"{n}.yaml").read_text() for n in HANDFUL}
    verdicts = {n: expected_of(t) for n, t in texts.items()}
    assert {v.verdict for v in verdicts.values() if v is not None} == {"equivalent", "divergent"}
    assert any("reference_runs: 2" in t for t in texts.values())
    assert any("readStream" in t or "streaming" in t for t in texts.values())
    assert "$(if $(ALL),--all)" in (ROOT / "Makefile").read_text()


def test_the_longest_validations_start_first() -> None:
    """Recovery validations, then those with a rerun, then the rest (the bundled ones are
    ranked exactly so: three recovery runs, four with a rerun, fourteen others)."""
    specs = sorted((ROOT / "dags" / "validations").glob("*.yaml"))
    ranks: dict[int, list[str]] = {}
    for path in specs:
        ranks.setdefault(expected_cost(path), []).append(path.stem)
    assert ranks[2] == [
        "sequence_window_recovery", "sequence_window_recovery_buggy", "taxi_streaming_recovery",
    ]  # fmt: skip
    assert ranks[1] == [
        "taxi_parallel", "taxi_parallel_buggy", "topics_parallel", "topics_parallel_buggy",
    ]  # fmt: skip
    assert len(ranks[0]) == len(specs) - 7


def test_progress_names_the_validation_and_the_task_on_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "terminal"
    with path.open("wb") as terminal:
        line = _progress(terminal.fileno(), "taxi_parallel")
        line("run_candidate")
        line("match")
    shown = path.read_text().splitlines()
    assert [s.split()[:2] for s in shown] == [
        ["taxi_parallel", "run_candidate"],
        ["taxi_parallel", "match"],
    ]
