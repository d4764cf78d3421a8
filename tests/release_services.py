"""A real Airflow on loopback for the release-loop tests: ``airflow api-server``, ``airflow
scheduler`` and ``airflow dag-processor`` as subprocesses, no ``dag.test()``.

    with release_services(tmp_path, ["maxrow_wellformed"]) as airflow:
        run_id = airflow.trigger("parity_maxrow_wellformed")
        assert airflow.wait_dag_run("parity_maxrow_wellformed", run_id)["state"] == "success"
        assert airflow.parity("gate", "maxrow_wellformed", "--json").returncode == 0

What it sets up under ``home`` (a temporary directory of the test's):

* ``airflow/``: ``AIRFLOW_HOME`` with a metadata database made by ``airflow db migrate``: a
  fresh PostgreSQL database on 127.0.0.1:5432, dropped afterwards, or SQLite
  (``metadata="sqlite"``: Airflow 3 runs the LocalExecutor on it, as ``airflow standalone``
  does, but on a busy machine its one writer stalls the API server for tens of seconds), the
  repository's real dags and plugins folders, the simple auth manager with one admin user
  whose password is set here (``[core] simple_auth_manager_users`` and its passwords file),
  one JWT secret shared by every component, the dags folder listed every few seconds and
  each file parsed once;
* ``validations/``: ``PARITY_VALIDATIONS_DIR``, copies of only the bundled specs the test
  names, each reading a capture generated under ``captures/`` (not the repository's
  ``data/``) and without its ``schedule`` (an unpaused DAG with a cron schedule would start a
  scheduled run of its own beside the test's);
* ``parity.db``: the results store (``PARITY_DB_URL``), ``runs/`` the workspaces;
* ``spark-conf/``: no web UI, few shuffle partitions, a JVM tuned for jobs of seconds;
* ``logs/<component>.log``: each process's output (``ReleaseServices.tail`` for a failure's
  message).

Readiness is ``/api/v2/monitor/health`` saying the database, the scheduler and the DAG
processor are healthy, then each validation's DAG known to the API (parsed) and unpaused,
and the Spark pool the validations' tasks wait for. Teardown ends each process group
(SIGTERM, then SIGKILL), which takes the executor's task processes and their ``spark-submit``
JVMs with it.

Every ``parity`` command a test runs is a subprocess of ``.venv/bin/parity`` with the same
environment as the services (``ReleaseServices.parity``), plus what the test adds.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BUNDLED = ROOT / "dags" / "validations"
#: the admin user the tests log in as (simple auth manager)
USERNAME = "release"
#: the Spark pool of the validations' tasks (``AirflowSpec.pool``'s default, tools/demo.py)
SPARK_POOL, SPARK_POOL_SLOTS = "parity_spark", 2
#: the PostgreSQL server of the tests (tests/store_fixtures.py), for ``metadata="postgres"``
PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
COMPONENTS = ("api-server", "scheduler", "dag-processor")
#: settings a test's own environment must not leak into the services
_OWN_PREFIXES = ("AIRFLOW", "PARITY_", "SPARK_", "PYSPARK_", "AWS_", "_AIRFLOW")
SPARK_DEFAULTS = """\
spark.ui.enabled false
spark.ui.showConsoleProgress false
spark.sql.shuffle.partitions 4
spark.driver.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
"""
_CAPTURE = re.compile(r"^(\s*path:\s*)data/captures/([\w.-]+)\s*$", re.MULTILINE)
_SCHEDULE = re.compile(r"^schedule:.*$", re.MULTILINE)
TERMINAL = ("success", "failed")


class ServicesError(RuntimeError):
    """The services did not start, or a request to them failed (with the logs' tails)."""


@dataclass
class ReleaseServices:
    """The running services and how a test talks to them."""

    url: str
    home: Path
    env: dict[str, str]
    password: str
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _token: str | None = None

    @property
    def validations(self) -> Path:
        return Path(self.env["PARITY_VALIDATIONS_DIR"])

    @property
    def db_url(self) -> str:
        return self.env["PARITY_DB_URL"]

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    # --- the REST API -------------------------------------------------------------------

    def token(self) -> str:
        """A JWT for the admin user (``POST /auth/token``), made once."""
        if self._token is None:
            body = {"username": USERNAME, "password": self.password}
            self._token = self._send("POST", "/auth/token", body, token=None)["access_token"]
        return self._token

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """``method`` ``/api/v2{path}`` with the token; the JSON answer."""
        return self._send(method, f"/api/v2{path}", body, token=self.token())

    def _send(self, method: str, path: str, body: Any, *, token: str | None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise ServicesError(f"{method} {path}: HTTP {exc.code}: {detail}") from None
        return json.loads(text) if text else None

    def trigger(self, dag_id: str, conf: Mapping[str, Any] | None = None) -> str:
        """A manual DAG run of ``dag_id`` with ``conf`` (``POST .../dagRuns``): its run id."""
        body = {"logical_date": None, "conf": dict(conf or {})}
        return str(self.api("POST", f"/dags/{quote(dag_id)}/dagRuns", body)["dag_run_id"])

    def dag_runs(self, dag_id: str) -> list[dict[str, Any]]:
        runs = self.api("GET", f"/dags/{quote(dag_id)}/dagRuns?order_by=-run_after&limit=100")
        return list(runs["dag_runs"])

    def wait_dag_run(self, dag_id: str, run_id: str, timeout: float = 900) -> dict[str, Any]:
        """The DAG run once it finished (success or failed)."""
        path = f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}"
        run: dict[str, Any] = {}

        def done() -> bool:
            nonlocal run
            run = self.api("GET", path)
            return run["state"] in TERMINAL

        self.wait_for(done, timeout, f"DAG run {dag_id}/{run_id} to finish")
        return run

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        path = f"/dags/{quote(dag_id)}/dagRuns/{quote(run_id)}/taskInstances"
        return {ti["task_id"]: ti["state"] for ti in self.api("GET", path)["task_instances"]}

    def wait_for(self, check: Any, timeout: float, what: str, every: float = 1.0) -> None:
        """Poll ``check()`` until it is true; ``ServicesError`` with the logs' tails after
        ``timeout`` seconds, or at once when a service died."""
        deadline = time.monotonic() + timeout
        while not check():
            dead = self.dead()
            if dead or time.monotonic() > deadline:
                why = f"exited: {dead}" if dead else f"{timeout:g}s passed"
                raise ServicesError(f"waiting for {what}: {why}\n{self.tails()}")
            time.sleep(every)

    # --- parity, logs ---------------------------------------------------------------------

    def parity(
        self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 2700
    ) -> subprocess.CompletedProcess[str]:
        """``.venv/bin/parity ARGS`` in the services' environment, logged in as the admin
        user for ``parity run`` (plus ``env``). ``ServicesError`` if a service dies meanwhile
        (a ``parity run --wait`` would wait for a scheduler that is gone) or after
        ``timeout`` seconds."""
        login = {"PARITY_AIRFLOW_USERNAME": USERNAME, "PARITY_AIRFLOW_PASSWORD": self.password}
        command = [str(BIN / "parity"), *args]
        with subprocess.Popen(
            command,
            env={**self.env, **login, **(env or {})},
            cwd=self.home,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    out, err = process.communicate(timeout=2)
                    return subprocess.CompletedProcess(command, process.returncode, out, err)
                except subprocess.TimeoutExpired:
                    dead = self.dead()
                    if dead or time.monotonic() > deadline:
                        process.kill()
                        out, err = process.communicate()
                        why = f"{dead} exited" if dead else f"{timeout:g}s passed"
                        raise ServicesError(
                            f"parity {args[0]}: {why}\n{out}{err}\n{self.tails()}"
                        ) from None

    def dead(self) -> dict[str, int | None]:
        """The services that exited, with their exit status (not reaped: ``stop`` still
        reaches what is left of their process groups)."""
        ended = {name: _exit_status(p) for name, p in self.processes.items()}
        return {name: status for name, status in ended.items() if status is not False}

    def tail(self, component: str, lines: int = 30) -> str:
        log = self.logs / f"{component}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def tails(self, lines: int = 30) -> str:
        return "\n".join(f"--- {c} ---\n{self.tail(c, lines)}" for c in COMPONENTS)


def free_port() -> int:
    """A TCP port free on loopback now (the api-server binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_environment() -> dict[str, str]:
    """This process's environment without its Airflow, Parity, Spark and AWS settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}


def services_env(home: Path, port: int, password_file: Path) -> dict[str, str]:
    """The environment of every service and every ``parity`` command of a test."""
    airflow = home / "airflow"
    url = f"http://127.0.0.1:{port}"
    return {
        **base_environment(),
        "AIRFLOW_HOME": str(airflow),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USERNAME}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file),
        # One secret for every component: the scheduler signs the tasks' tokens, the
        # api-server checks them.
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        # A busy machine answers a task's first call to the API server in tens of seconds,
        # not the 5 s a worker waits by default (then the task fails before it starts).
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "120",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(airflow / "logs"),
        # The scheduler's log server: a free port of its own, not 8793 (another Airflow's).
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
        # The dags folder is listed every few seconds (cheap) and each file parsed once at
        # the start: a re-parse every 30 s (the default) costs a core's share of a small
        # machine that the Spark jobs need, and the tests change no DAG file.
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PARITY_HOME": str(home),
        "PARITY_DB_URL": f"sqlite:///{home / 'parity.db'}",
        "PARITY_VALIDATIONS_DIR": str(home / "validations"),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": str(BIN / "python"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(home / "spark-conf"),
    }


@contextmanager
def metadata_database(kind: str, home: Path) -> Iterator[dict[str, str]]:
    """Airflow's metadata database: SQLite under ``home``, or a fresh PostgreSQL database
    on 127.0.0.1:5432 (``PARITY_TEST_PG_URL``'s server), dropped afterwards. PostgreSQL
    keeps the API server answering while the scheduler, the DAG processor and the tasks
    write at once (SQLite makes them queue for its one writer). The settings to use it."""
    if kind == "sqlite":
        yield {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}"}
        return
    if kind != "postgres":
        raise ValueError(f"metadata database: {kind!r} is neither 'sqlite' nor 'postgres'")
    import psycopg
    from sqlalchemy.engine import make_url

    server = make_url(os.environ.get("PARITY_TEST_PG_URL", PG_SERVER))
    name = f"parity_release_{secrets.token_hex(6)}"
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    url = server.set(database=name).render_as_string(hide_password=False)
    try:
        # Airflow's async engine needs a driver of its own: psycopg 3 is both.
        yield {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": url,
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": url,
        }
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def copy_validations(names: Sequence[str], home: Path) -> Path:
    """The bundled specs ``names`` in ``home/validations``, each reading its capture
    generated under ``home/captures`` and with no schedule of its own."""
    from jobs.examples.generate import generate

    target = home / "validations"
    target.mkdir(parents=True, exist_ok=True)
    captures = home / "captures"
    for name in names:
        text = (BUNDLED / f"{name}.yaml").read_text(encoding="utf-8")
        for capture in sorted(set(_CAPTURE.findall(text)), key=str):
            if not (captures / capture[1]).exists():
                generate(capture[1], captures)
        text = _CAPTURE.sub(lambda m: f"{m.group(1)}{captures / m.group(2)}", text)
        (target / f"{name}.yaml").write_text(_SCHEDULE.sub("schedule: null", text))
    return target


def write_spark_conf(directory: Path) -> None:
    from tools.demo import LOG4J2

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "spark-defaults.conf").write_text(SPARK_DEFAULTS)
    (directory / "log4j2.properties").write_text(LOG4J2)


def airflow_command(*args: str, env: Mapping[str, str], cwd: Path, log: Path) -> None:
    """A one-off ``airflow`` command (``db migrate``); its output to ``log``."""
    with log.open("ab") as out:
        done = subprocess.run(
            [str(BIN / "airflow"), *args], env=dict(env), cwd=cwd, stdout=out, stderr=out
        )
    if done.returncode:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise ServicesError(f"airflow {' '.join(args)}: exit {done.returncode}\n{tail}")


def start(component: str, services: ReleaseServices, *args: str) -> None:
    """``airflow COMPONENT ARGS`` in its own process group, its output to its log."""
    log = (services.logs / f"{component}.log").open("ab")
    services.processes[component] = subprocess.Popen(
        [str(BIN / "airflow"), component, *args],
        env=services.env,
        cwd=services.home,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a group: the teardown ends its task processes too
    )
    log.close()


def stop(processes: Mapping[str, subprocess.Popen[bytes]], grace: float = 20) -> None:
    """SIGTERM to each process group, SIGKILL to what is left after ``grace`` seconds."""
    for process in processes.values():
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not all(map(_exited, processes.values())):
        time.sleep(0.2)
    for process in processes.values():
        _signal_group(process, signal.SIGKILL)  # the group's stragglers (JVMs, workers)
        process.wait()


def _exited(process: subprocess.Popen[bytes]) -> bool:
    return _exit_status(process) is not False


def _exit_status(process: subprocess.Popen[bytes]) -> int | bool | None:
    """False while the process runs, else its exit status (None once reaped), without
    reaping it: until it is reaped its pid stays its group's id, so a SIGKILL to the group
    cannot reach another process that took the pid."""
    if process.returncode is not None:
        return process.returncode
    try:
        ended = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped elsewhere
        return None
    return False if ended is None else ended.si_status


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if process.returncode is None:  # not reaped: the group id is still this process's
        with suppress(ProcessLookupError):
            os.killpg(process.pid, sig)


def healthy(services: ReleaseServices) -> bool:
    try:
        with urllib.request.urlopen(f"{services.url}/api/v2/monitor/health", timeout=5) as r:
            health = json.loads(r.read())
    except (OSError, ValueError):
        return False
    wanted = ("metadatabase", "scheduler", "dag_processor")
    return all((health.get(part) or {}).get("status") == "healthy" for part in wanted)


def dag_ready(services: ReleaseServices, dag_id: str) -> bool:
    """True once the DAG processor has written ``dag_id`` (then it is unpaused)."""
    try:
        dag = services.api("GET", f"/dags/{quote(dag_id)}")
    except ServicesError as exc:
        if "HTTP 404" in str(exc):
            return False
        raise
    if dag["is_paused"]:
        services.api("PATCH", f"/dags/{quote(dag_id)}", {"is_paused": False})
    return True


@contextmanager
def release_services(
    home: Path,
    validations: Sequence[str],
    *,
    dags: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    metadata: str = "postgres",
    timeout: float = 240,
) -> Iterator[ReleaseServices]:
    """The services on a free loopback port, the DAGs of ``validations`` (bundled spec names)
    and ``dags`` (other DAG ids of the dags folder) parsed and unpaused; Airflow's metadata
    in ``metadata`` ("sqlite" or "postgres", ``metadata_database``)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    (home / "airflow").mkdir(exist_ok=True)
    password_file = home / "airflow" / "passwords.json"
    password = secrets.token_urlsafe(16)
    password_file.write_text(json.dumps({USERNAME: password}))
    port = free_port()
    copy_validations(validations, home)
    write_spark_conf(home / "spark-conf")
    with ExitStack() as stack:
        database = stack.enter_context(metadata_database(metadata, home / "airflow"))
        env = {**services_env(home, port, password_file), **database, **(extra_env or {})}
        services = ReleaseServices(f"http://127.0.0.1:{port}", home, env, password)
        log = services.logs / "db-migrate.log"
        airflow_command("db", "migrate", env=env, cwd=home, log=log)
        stack.callback(stop, services.processes)
        start("dag-processor", services)
        start("scheduler", services)
        # Two workers: a task's first call to the execution API can hold one for most of a
        # minute on a busy machine (seen: PATCH .../run, 51 s), and ``parity run``'s polls
        # must still be answered meanwhile.
        api = ("--port", str(port), "--host", "127.0.0.1", "--workers", "2")
        start("api-server", services, *api)
        services.wait_for(lambda: healthy(services), timeout, "the services to be healthy")
        services.api(
            "POST",
            "/pools",
            {"name": SPARK_POOL, "slots": SPARK_POOL_SLOTS, "include_deferred": False},
        )
        from matcher.store.run_ids import dag_id_for

        for dag_id in [*(dag_id_for(n) for n in validations), *dags]:
            services.wait_for(lambda d=dag_id: dag_ready(services, d), timeout, f"DAG {dag_id}")
        yield services
        # A service that died during the test (a listener that broke the scheduler) is a
        # failure even when the test's own checks were met before it died.
        dead = services.dead()
        if dead:
            raise ServicesError(f"exited during the test: {dead}\n{services.tails()}")
