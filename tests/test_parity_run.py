"""``parity run``: its arguments, its answer, and both modes for real.

* Remote mode runs against Airflow's own API server app (``airflow.api_fastapi.app``, the
  Parity plugin loaded) served by uvicorn on loopback, on the test session's Airflow home
  with the DAGs of two bundled specs synced into it, the Simple auth manager's login, and a
  SQLite results store. No scheduler runs: the DAG runs ``parity run`` triggers stay queued
  (the timeout case), or a stand-in ends them through the same REST API
  (``PATCH .../dagRuns/{id}`` to success, which marks every task) after storing the run's
  verdict as the pipeline's ``record`` task would. The real-scheduler path is the e2e test's.
* Local mode runs ``parity run`` as a process, on a fresh demo home: a real ``dag.test()``
  of the bundled ``maxrow_wellformed`` with real ``spark-submit``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from matcher.spec import load_spec
from matcher.spec_digest import verdict_digest
from matcher.store import RunOutcome, RunStart, Store
from matcher.store.run_ids import pipeline_run_id
from parity.cli import run as run_cli
from parity.cli.main import main
from parity.cli.run import Outcome

pytest_plugins = ("airflow_fixtures",)  # the session's AIRFLOW_HOME and metadata database

pytestmark = [
    pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`"),
    pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning"),
]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BUNDLED = ROOT / "dags" / "validations"
KEYS = {
    "validation", "dag_id", "dag_run_id", "run_id", "state", "verdict", "counts", "gate",
    "exit_code", "reason", "mode",
}  # fmt: skip
PASSWORD = "ci-password-" + "7f3a" * 8
JWT_SECRET = "parity-run-tests-" + "0123456789abcdef" * 4


@pytest.fixture(autouse=True)
def _no_airflow_url(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PARITY_AIRFLOW_URL", "PARITY_AIRFLOW_TOKEN", "PARITY_VALIDATIONS_DIR"):
        monkeypatch.delenv(name, raising=False)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- arguments: checked before anything starts --------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["maxrow_wellformed", "--timeout", "5x"],
         "--timeout: expected a duration such as 30m, 6h, 1d or 2w, got '5x'"),
        (["maxrow_wellformed", "--window-start", "2024-05-01T00:00:00Z"],
         "--window-start: give --window-start and --window-end together"),
        (["maxrow_wellformed", "--window-end", "2024-05-01T00:00:00Z"],
         "--window-end: give --window-start and --window-end together"),
        (["maxrow_wellformed", "--window-start", "yesterday", "--window-end", "2024-05-01"],
         "--window-start: not an ISO 8601 date-time: 'yesterday'"),
        (["maxrow_wellformed", "--window-start", "2024-05-02", "--window-end", "2024-05-01"],
         "--window-end: must be after --window-start"),
        (["../etc", "--local"], "VALIDATION: not a validation name: '../etc'"),
        (["x", "--airflow", "ftp://host"], "--airflow: not an http(s) URL: 'ftp://host'"),
        (["x", "--airflow", "http://host", "--spec", "x.yaml"],
         "--spec: local mode only (Airflow's deployment has its own)"),
        (["maxrow_wellformd", "--local"],
         f"unknown validation 'maxrow_wellformd': no spec in {BUNDLED} has that name; did you "
         "mean maxrow_wellformed, strconcat_wellformed, firstn_wellformed?"),
        (["x", "--airflow", "http://ci:s3cret-pw@127.0.0.1:9"],
         "--airflow: put no credentials in the URL ('http://127.0.0.1:9'): set "
         "PARITY_AIRFLOW_TOKEN, or PARITY_AIRFLOW_USERNAME and PARITY_AIRFLOW_PASSWORD"),
        (["x", "--airflow", "http://127.0.0.1:9"],
         "cannot reach Airflow at http://127.0.0.1:9: [Errno 111] Connection refused"),
    ],
)  # fmt: skip
def test_a_bad_argument_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert run(capsys, *args) == (2, "", f"parity: error: {message}\n")


@pytest.mark.parametrize(
    ("args", "validation", "reason"),
    [
        (["--json"], None, "parity run: the following arguments are required: VALIDATION"),
        (["maxrow_wellformed", "--json", "--bogus"], None,
         "parity run: unrecognized arguments: --bogus"),
        (["maxrow_wellformed", "--json", "--timeout"], None,
         "parity run: argument --timeout: expected one argument"),
        (["maxrow_wellformed", "--json", "--timeout", "0s"], "maxrow_wellformed",
         "--timeout: expected a duration such as 30m, 6h, 1d or 2w, got '0s'"),
        (["nope", "--json", "--airflow", "http://127.0.0.1:9"], "nope",
         "cannot reach Airflow at http://127.0.0.1:9: [Errno 111] Connection refused"),
    ],
)  # fmt: skip
def test_under_json_every_error_is_one_object_on_stdout(
    capsys: pytest.CaptureFixture[str], args: list[str], validation: str | None, reason: str
) -> None:
    code, out, err = run(capsys, *args)
    document = json.loads(out)
    assert (code, err, out.count("\n")) == (2, "", 1)
    assert document == {
        **dict.fromkeys(KEYS),
        "validation": validation,
        "exit_code": 2,
        "reason": reason,
    }


# -- the answer rests on this run -----------------------------------------------------------

THIS = Outcome("taxi", "parity_taxi", "manual__1", "success", "airflow")


def gate_document(state: str, code: int, run_id: str | None, **run: Any) -> dict[str, Any]:
    deciding = None if run_id is None else {"run_id": run_id, **run}
    return {"state": state, "exit_code": code, "reason": f"why {state}", "run": deciding}


def test_a_gate_on_this_run_gives_its_exit_code_verdict_and_counts() -> None:
    gate = gate_document("closed", 1, "parity_taxi/manual__1", verdict="divergent",
                         counts={"loss": 0, "corruption": 3})  # fmt: skip
    answer = THIS.with_gate(gate)
    assert (answer.exit_code, answer.verdict, answer.counts) == (
        1, "divergent", {"loss": 0, "corruption": 3},
    )  # fmt: skip
    assert answer.lines() == [
        "taxi: DAG run manual__1 of parity_taxi: success",
        "run parity_taxi/manual__1: verdict divergent (corruption 3)",
        "taxi: gate closed: why closed",
    ]


@pytest.mark.parametrize("other", ["parity_taxi/manual__0", None])
def test_a_gate_on_another_run_is_no_usable_verdict(other: str | None) -> None:
    answer = THIS.with_gate(gate_document("open", 0, other, verdict="equivalent"))
    assert (answer.exit_code, answer.verdict) == (3, None)
    assert answer.reason == (
        f"the gate answers from {other or 'no run'}, not from this run parity_taxi/manual__1 "
        "(why open)"
    )


def test_a_gate_error_is_an_error() -> None:
    assert THIS.with_gate(gate_document("error", 2, None)).exit_code == 2


# -- remote mode: Airflow's own API server on loopback --------------------------------------


@dataclass(frozen=True)
class Served:
    url: str
    db_url: str
    validations: Path


#: Airflow's API server app (the core API, its auth manager's login, the plugins), served by
#: uvicorn on the port given, as ``airflow api-server`` serves it
SERVER = (
    "import sys, uvicorn; from airflow.api_fastapi.app import create_app; "
    "uvicorn.run(create_app('core'), host='127.0.0.1', port=int(sys.argv[1]), "
    "log_level='warning')"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(environment: dict[str, str], log: Path) -> Iterator[str]:
    """Airflow's API server in a process of its own (its logs to ``log``); its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(port)],
            env={**os.environ, **environment}, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        for _ in range(1200):
            if server.poll() is not None:
                raise RuntimeError(f"the API server ended: {log.read_text()[-3000:]}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5),
            ):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"the API server did not start: {log.read_text()[-3000:]}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory, airflow_db: Path) -> Iterator[Served]:
    """Airflow's API server with the Parity plugin, the DAGs of two bundled specs (paused,
    as new DAGs are), a user ``ci`` and an empty results store."""
    tmp = tmp_path_factory.mktemp("parity-run-remote")
    validations = tmp / "validations"
    validations.mkdir()
    for name in ("maxrow_wellformed", "maxrow_arbitrary"):
        shutil.copy(BUNDLED / f"{name}.yaml", validations)
    (tmp / "passwords.json").write_text(json.dumps({"ci": PASSWORD}))
    db_url = f"sqlite:///{tmp / 'results.db'}"
    Store.open(db_url).close()
    environment = {
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__API_AUTH__JWT_SECRET": JWT_SECRET,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "ci:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(tmp / "passwords.json"),
        "PARITY_DB_URL": db_url,
        "PARITY_VALIDATIONS_DIR": str(validations),
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PARITY_VALIDATIONS_DIR", str(validations))
        from tools.demo import _prepare_airflow

        assert _prepare_airflow() == {}  # the DAGs of both specs, in Airflow's database
    with serving(environment, tmp / "api-server.log") as url:
        yield Served(url, db_url, validations)


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch, airflow: Served) -> Served:
    monkeypatch.setenv("PARITY_AIRFLOW_URL", airflow.url)
    monkeypatch.setenv("PARITY_AIRFLOW_USERNAME", "ci")
    monkeypatch.setenv("PARITY_AIRFLOW_PASSWORD", PASSWORD)
    monkeypatch.setattr(run_cli, "POLL_SECONDS", 0.1)
    return airflow


def api(served: Served, method: str, path: str, body: Any = None) -> Any:
    """Airflow's REST API as the test's own client (a token from the same login)."""
    login = urllib.request.Request(
        f"{served.url}/auth/token",
        json.dumps({"username": "ci", "password": PASSWORD}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(login) as answer:
        token = json.load(answer)["access_token"]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(served.url + path, data, headers, method=method)
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def set_paused(served: Served, dag_id: str, paused: bool) -> None:
    api(served, "PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": paused})


def test_an_unknown_validation_names_the_nearest_dags(
    capsys: pytest.CaptureFixture[str], credentials: Served
) -> None:
    code, out, err = run(capsys, "maxrow_wellformd")
    assert (code, out) == (2, "")
    assert err.startswith(
        "parity: error: unknown validation 'maxrow_wellformd': Airflow has no DAG "
        "parity_maxrow_wellformd; did you mean maxrow_wellformed"
    )


def test_a_refused_login_is_an_error_that_shows_no_password(
    capsys: pytest.CaptureFixture[str], credentials: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARITY_AIRFLOW_PASSWORD", "wrong-" + PASSWORD)
    code, out, err = run(capsys, "maxrow_wellformed", "--json")
    document = json.loads(out)
    assert (code, err, document["exit_code"]) == (2, "", 2)
    assert document["reason"].startswith("logging in to Airflow as 'ci': HTTP 401")
    assert PASSWORD not in out


def test_a_paused_dag_is_an_error_unless_unpause(
    capsys: pytest.CaptureFixture[str], credentials: Served
) -> None:
    set_paused(credentials, "parity_maxrow_arbitrary", True)
    code, out, err = run(capsys, "maxrow_arbitrary")
    assert (code, out) == (2, "")
    assert err == (
        "parity: error: DAG parity_maxrow_arbitrary is paused in Airflow: unpause it, or "
        "pass --unpause\n"
    )
    code, out, err = run(capsys, "maxrow_arbitrary", "--unpause", "--json")
    assert (code, json.loads(out)["exit_code"]) == (3, 3)
    assert api(credentials, "GET", "/api/v2/dags/parity_maxrow_arbitrary")["is_paused"] is False


def test_without_wait_it_triggers_with_the_parameters_and_exits_3(
    capsys: pytest.CaptureFixture[str], credentials: Served
) -> None:
    set_paused(credentials, "parity_maxrow_wellformed", False)
    code, out, err = run(
        capsys, "maxrow_wellformed", "--json",
        "--candidate-application", "s3a://artifacts/etl/reducers-9.py",
        "--candidate-version", "9.0", "--candidate-arg=--reducer", "--candidate-arg", "maxrow",
        "--window-start", "2024-05-01T06:00:00Z", "--window-end", "2024-05-01T12:00:00Z",
    )  # fmt: skip
    document = json.loads(out)
    dag_run_id = document["dag_run_id"]
    assert code == 3, document["reason"]
    assert document == {
        **dict.fromkeys(KEYS),
        "validation": "maxrow_wellformed",
        "dag_id": "parity_maxrow_wellformed",
        "dag_run_id": dag_run_id,
        "run_id": pipeline_run_id("parity_maxrow_wellformed", dag_run_id),
        "state": "queued",
        "exit_code": 3,
        "reason": "not waited for (--wait): DAG run queued",
        "mode": "airflow",
    }
    assert err == f"maxrow_wellformed: started DAG run {dag_run_id} of parity_maxrow_wellformed\n"
    stored = api(credentials, "GET", f"/api/v2/dags/parity_maxrow_wellformed/dagRuns/{dag_run_id}")
    assert stored["conf"] == {
        "candidate_application": "s3a://artifacts/etl/reducers-9.py",
        "candidate_args": ["--reducer", "maxrow"],
        "candidate_version": "9.0",
        "window_start": "2024-05-01T06:00:00Z",
        "window_end": "2024-05-01T12:00:00Z",
    }


def test_a_run_not_over_within_the_timeout_is_no_usable_verdict(
    capsys: pytest.CaptureFixture[str], credentials: Served
) -> None:
    set_paused(credentials, "parity_maxrow_wellformed", False)
    code, out, _ = run(capsys, "maxrow_wellformed", "--wait", "--timeout", "1s")
    assert code == 3
    assert out.splitlines()[-1] == (
        "maxrow_wellformed: gate no usable verdict: --timeout 1s passed: DAG run still queued"
    )


class StandIn(threading.Thread):
    """What the scheduler and the pipeline would do to the next queued DAG run: store its
    verdict (``verdict`` None: store nothing), then end the DAG run through the REST API."""

    def __init__(self, served: Served, dag_id: str, verdict: str | None, version: str) -> None:
        super().__init__(daemon=True)
        self.served, self.dag_id, self.verdict, self.version = served, dag_id, verdict, version
        path = f"/api/v2/dags/{dag_id}/dagRuns?state=queued"
        self.before = {r["dag_run_id"] for r in api(served, "GET", path)["dag_runs"]}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            dag_run_id = self._next_run()
            if self.verdict is not None:
                self._store(pipeline_run_id(self.dag_id, dag_run_id))
            path = f"/api/v2/dags/{self.dag_id}/dagRuns/{dag_run_id}"
            api(self.served, "PATCH", path, {"state": "success"})
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _next_run(self) -> str:
        for _ in range(600):
            path = f"/api/v2/dags/{self.dag_id}/dagRuns?state=queued"
            runs = {r["dag_run_id"] for r in api(self.served, "GET", path)["dag_runs"]}
            if runs - self.before:
                return sorted(runs - self.before)[0]
            time.sleep(0.1)
        raise TimeoutError("parity run triggered no DAG run")

    def _store(self, run_id: str) -> None:
        spec = load_spec(self.served.validations / "maxrow_wellformed.yaml")
        start = RunStart(
            run_id, "maxrow_wellformed", trigger="manual", reference_version="sequential",
            candidate_version=self.version, dag_id=self.dag_id,
            dag_run_id=run_id.partition("/")[2], spec_hash=verdict_digest(spec),
        )  # fmt: skip
        with Store.open(self.served.db_url) as store:
            store.start_run(start)
            store.record_run(
                run_id, RunOutcome(self.verdict or "", counts={"corruption": 2} if
                                   self.verdict == "divergent" else {},
                                   finished_at=dt.datetime.now(dt.UTC)),
            )  # fmt: skip
            passed = self.verdict == "equivalent"
            store.set_gate(run_id, passed, f"verdict {self.verdict}")


def test_with_wait_it_follows_the_run_and_answers_its_gate(
    capsys: pytest.CaptureFixture[str], credentials: Served
) -> None:
    dag_id = "parity_maxrow_wellformed"
    set_paused(credentials, dag_id, False)
    stand_in = StandIn(credentials, dag_id, "divergent", "9.1")
    stand_in.start()
    code, out, err = run(capsys, "maxrow_wellformed", "--candidate-version", "9.1", "--wait",
                         "--timeout", "5m", "--json")  # fmt: skip
    stand_in.join()
    assert stand_in.error is None
    document = json.loads(out)
    assert code == 1
    assert {k: document[k] for k in ("state", "verdict", "exit_code", "reason", "mode")} == {
        "state": "success",
        "verdict": "divergent",
        "exit_code": 1,
        "reason": "verdict divergent",
        "mode": "airflow",
    }
    assert {k: n for k, n in document["counts"].items() if n} == {"corruption": 2}
    assert document["gate"]["run"]["run_id"] == document["run_id"]
    assert (document["gate"]["state"], document["gate"]["candidate_version"]) == ("closed", "9.1")
    tasks = {t["task_id"] for t in api(credentials, "GET", f"/api/v2/dags/{dag_id}/tasks")["tasks"]}
    finished = {line.split()[0] for line in err.splitlines()[1:]}
    assert finished == tasks
    # Marking a DAG run success skips the tasks that never ran (no scheduler ran them here).
    assert {line.split()[1] for line in err.splitlines()[1:]} == {"skipped"}, err
    assert PASSWORD not in out + err


def test_a_gate_answering_from_an_older_run_is_no_usable_verdict(
    capsys: pytest.CaptureFixture[str], credentials: Served
) -> None:
    """The run stored nothing (its plan failed before the store): the gate's newest attempt
    for that version is an older run, which must not answer for this one."""
    dag_id = "parity_maxrow_wellformed"
    set_paused(credentials, dag_id, False)
    older = StandIn(credentials, dag_id, "equivalent", "9.2")
    older.start()
    assert run(capsys, "maxrow_wellformed", "--candidate-version", "9.2", "--wait")[0] == 0
    older.join()
    newer = StandIn(credentials, dag_id, None, "9.2")
    newer.start()
    code, out, _ = run(capsys, "maxrow_wellformed", "--candidate-version", "9.2", "--wait")
    newer.join()
    assert code == 3
    assert "the gate answers from parity_maxrow_wellformed/" in out.splitlines()[-1]


# -- local mode: dag.test() of a bundled validation ------------------------------------------


def clean_env(home: Path) -> dict[str, str]:
    """A CI job's environment: the venv's commands, a Parity home, nothing of the tests'."""
    env = {"HOME": str(home), "PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    env["PARITY_HOME"] = str(home / "parity")
    if "JAVA_HOME" in os.environ:
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    return env


@pytest.mark.timeout(1800)
def test_local_mode_runs_the_dag_and_answers_its_gate(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "parity"), "run", "maxrow_wellformed", "--candidate-version", "v-local",
         "--json"],
        env=clean_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=1700,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    document = json.loads(done.stdout)
    dag_run_id = document["dag_run_id"]
    assert set(document) == KEYS
    run_id = pipeline_run_id("parity_maxrow_wellformed", dag_run_id)
    assert {k: v for k, v in document.items() if k != "gate"} == {
        "validation": "maxrow_wellformed",
        "dag_id": "parity_maxrow_wellformed",
        "dag_run_id": dag_run_id,
        "run_id": run_id,
        "state": "success",
        "verdict": "equivalent",
        "counts": {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0},
        "exit_code": 0,
        "reason": document["gate"]["reason"],
        "mode": "local",
    }
    gate = document["gate"]
    assert (gate["state"], gate["candidate_version"], gate["run"]["run_id"]) == (
        "open", "v-local", run_id,
    )  # fmt: skip
    lines = done.stderr.splitlines()
    assert lines[0].startswith("maxrow_wellformed: running parity_maxrow_wellformed here")
    assert [line.split()[:2] for line in lines[1:]][-2:] == [
        ["record", "success"], ["gate", "success"],
    ]  # fmt: skip


def test_local_mode_stops_the_run_at_the_timeout(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "parity"), "run", "maxrow_wellformed", "--timeout", "1s"],
        env=clean_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (
        3,
        "maxrow_wellformed: gate no usable verdict: --timeout 1s passed: the run was stopped\n",
    )
