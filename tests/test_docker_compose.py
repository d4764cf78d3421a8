"""docker-compose.yaml, checked without a Docker engine: valid against the Compose
Specification's JSON schema, the services a production-like stack needs, the same Python and
Java on the Airflow side (where Spark drivers run) and the Spark side (where executors run),
and a Spark connection that Airflow's own Spark provider resolves to the master.

``tests/data/compose-spec.json`` is the Compose Specification's schema, vendored from
github.com/compose-spec/compose-spec (schema/compose-spec.json at commit 170098ba07d9,
Apache License 2.0).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

pytest_plugins = ("airflow_fixtures",)

ROOT = Path(__file__).resolve().parent.parent
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
AIRFLOW = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
SPARK = ("spark-master", "spark-worker")
CAPTURES = "parity-captures"
HOWTO = (ROOT / "docs" / "how-to" / "compose.md").read_text()


def test_valid_against_the_compose_specification() -> None:
    schema = json.loads((ROOT / "tests" / "data" / "compose-spec.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    problems = sorted(f"{list(e.path)}: {e.message}" for e in validator.iter_errors(COMPOSE))
    assert problems == []


def test_the_stack_has_airflow_postgres_and_a_spark_cluster() -> None:
    assert sorted(SERVICES) == sorted(["postgres", "airflow-init", *AIRFLOW, *SPARK, CAPTURES])
    commands = {name: SERVICES[name]["command"] for name in AIRFLOW}
    assert commands == {
        "airflow-apiserver": "api-server",
        "airflow-scheduler": "scheduler",
        "airflow-dag-processor": "dag-processor",
        "airflow-triggerer": "triggerer",
    }
    for name in AIRFLOW:
        assert SERVICES[name]["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "airflow-init": {"condition": "service_completed_successfully"},
        }
        assert "healthcheck" in SERVICES[name]
    assert "airflow db migrate" in SERVICES["airflow-init"]["command"][-1]
    assert SERVICES["postgres"]["image"].startswith("postgres:")


def test_every_file_the_stack_uses_exists_and_the_project_is_mounted() -> None:
    for name, service in SERVICES.items():
        build = service.get("build")
        if build is not None:
            assert (ROOT / build["context"] / build["dockerfile"]).is_file(), name
        else:
            assert "image" in service, name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (ROOT / source).exists(), (name, volume)
            else:
                assert source in COMPOSE["volumes"], (name, volume)
    for name in (*AIRFLOW, *SPARK):
        assert ".:/opt/parity" in SERVICES[name]["volumes"]
        assert "parity-home:/opt/parity-home" in SERVICES[name]["volumes"]
        assert SERVICES[name]["environment"]["PYTHONPATH"] == "/opt/parity"


def _python_of_airflow_image() -> str:
    args = SERVICES["airflow-scheduler"]["build"]["args"]
    found = re.fullmatch(r"apache/airflow:3\.3\.\d+-python(3\.\d+)", args["AIRFLOW_IMAGE"])
    assert found is not None, args["AIRFLOW_IMAGE"]
    return found.group(1)


def test_airflow_and_spark_run_the_same_python_and_java() -> None:
    python = _python_of_airflow_image()
    worker = SERVICES["spark-worker"]
    assert worker["build"]["args"]["PYTHON_VERSION"] == python == "3.11"
    dockerfile = (ROOT / worker["build"]["dockerfile"]).read_text()
    assert 'apt-get install -y --no-install-recommends "python${PYTHON_VERSION}"' in dockerfile
    # Both sides name the interpreter the same way; each resolves it on its own PATH.
    assert worker["environment"]["PYSPARK_PYTHON"] == f"python{python}"
    scheduler = SERVICES["airflow-scheduler"]["environment"]
    assert scheduler["PYSPARK_PYTHON"] == scheduler["PYSPARK_DRIVER_PYTHON"] == f"python{python}"
    # One Spark image, Java 17, for the cluster and for the JRE copied into the Airflow image.
    spark_image = worker["build"]["args"]["SPARK_IMAGE"]
    assert spark_image == "apache/spark:4.3.0-scala2.13-java17-ubuntu"
    assert SERVICES["spark-master"]["build"]["args"]["SPARK_IMAGE"] == spark_image
    assert SERVICES["airflow-scheduler"]["build"]["args"]["SPARK_IMAGE"] == spark_image
    airflow_dockerfile = (ROOT / "docker" / "airflow.Dockerfile").read_text()
    assert "COPY --from=spark /opt/java/openjdk /opt/java/openjdk" in airflow_dockerfile


def test_spark_version_matches_the_locked_pyspark() -> None:
    lock = (ROOT / "uv.lock").read_text()
    pyspark = re.search(r'name = "pyspark"\nversion = "([^"]+)"', lock)
    assert pyspark is not None
    spark_image = SERVICES["spark-worker"]["build"]["args"]["SPARK_IMAGE"]
    assert spark_image.startswith(f"apache/spark:{pyspark.group(1)}-")


def test_worker_python_packages_are_pinned_as_in_uv_lock() -> None:
    lock = (ROOT / "uv.lock").read_text()
    dockerfile = (ROOT / "docker" / "spark.Dockerfile").read_text()
    pins = dict(re.findall(r"([a-z]+)==([0-9][^\s\\]*)", dockerfile))
    assert sorted(pins) == ["pandas", "pyarrow", "pydantic", "pyyaml"]
    for name, version in pins.items():
        assert f'name = "{name}"\nversion = "{version}"' in lock, name


def test_the_spark_connection_resolves_to_the_master(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    for name in AIRFLOW:
        environment = SERVICES[name]["environment"]
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", environment["AIRFLOW_CONN_SPARK_DEFAULT"])
        hook = SparkSubmitHook(conn_id="spark_default")
        assert (hook._connection["master"], hook._connection["deploy_mode"]) == (
            "spark://spark-master:7077",
            "client",
        )
    master = SERVICES["spark-master"]
    assert master["command"][1:] == [
        "org.apache.spark.deploy.master.Master",
        *("--host", "spark-master", "--port", "7077", "--webui-port", "8080"),
    ]
    assert not any("7077" in port for port in master["ports"])  # see the next test
    assert SERVICES["spark-worker"]["command"][1:3] == [
        "org.apache.spark.deploy.worker.Worker",
        "spark://spark-master:7077",
    ]
    # Executors connect back to the driver, which runs in the scheduler's container.
    assert SERVICES["airflow-scheduler"]["hostname"] == "airflow-scheduler"


def test_parity_results_go_to_their_own_postgres_database() -> None:
    urls = {SERVICES[name]["environment"]["PARITY_DB_URL"] for name in AIRFLOW}
    assert urls == {"postgresql+psycopg://parity:parity@postgres:5432/parity"}
    init = (ROOT / "docker" / "postgres-init.sql").read_text()
    assert "CREATE USER parity WITH PASSWORD 'parity';" in init
    assert "CREATE DATABASE parity OWNER parity;" in init
    assert (
        "./docker/postgres-init.sql:/docker-entrypoint-initdb.d/10-parity.sql:ro"
        in (SERVICES["postgres"]["volumes"])
    )
    airflow_db = SERVICES["airflow-scheduler"]["environment"]["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert airflow_db == "postgresql+psycopg2://airflow:airflow@postgres:5432/airflow"
    assert SERVICES["airflow-scheduler"]["environment"]["AIRFLOW__CORE__DAGS_FOLDER"] == (
        "/opt/parity/dags"
    )


def _doc_page(path: str) -> str:
    """A page of the docs site (the README's sections moved there, issue 33)."""
    return (ROOT / "docs" / path).read_text(encoding="utf-8")


def test_the_docs_login_is_the_one_the_stack_configures() -> None:
    """`admin:admin` in SIMPLE_AUTH_MANAGER_USERS is user admin with the *role* admin; the
    password is the passwords file's, which airflow-init installs where the API server reads
    it. The HTTP API's curl example must be that user and that password."""
    environment = SERVICES["airflow-apiserver"]["environment"]
    users = [
        u.split(":") for u in environment["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(",")
    ]
    assert users == [["admin", "admin"]]
    passwords = json.loads((ROOT / "docker" / "simple_auth_manager_passwords.json").read_text())
    assert passwords == {"admin": "admin"}
    installed = environment["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
    assert installed == "/opt/airflow/auth/simple_auth_manager_passwords.json"
    script = SERVICES["airflow-init"]["command"][-1].splitlines()
    assert f"cp /opt/parity/docker/simple_auth_manager_passwords.json {installed}" in script
    assert "airflow-auth:/opt/airflow/auth" in SERVICES["airflow-apiserver"]["volumes"]
    for name in AIRFLOW:
        env = SERVICES[name]["environment"]
        assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:admin", name
        assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == installed, name

    # (the compose how-to's login: test_the_howto_commands_match_the_compose_file)
    page = _doc_page("reference/http-api.md")
    logins = re.findall(r"-d '(\{\"username\": [^']*\})'", page)
    assert [json.loads(login) for login in logins] == [{"username": "admin", "password": "admin"}]
    for login in logins:
        user = json.loads(login)
        assert passwords[user["username"]] == user["password"]


def test_init_creates_the_workspace_volume_for_the_airflow_user_first() -> None:
    init = SERVICES["airflow-init"]
    assert init["user"] == "0:0"
    assert "parity-home:/opt/parity-home" in init["volumes"]
    script = init["command"][-1].splitlines()
    assert script[0] == "set -euo pipefail"
    assert "mkdir -p /opt/parity-home/runs /opt/airflow/logs /opt/airflow/auth" in script
    chown = (
        'chown -R "${AIRFLOW_UID:-50000}:0" /opt/parity-home /opt/airflow/logs /opt/airflow/auth'
    )
    # After the migration, which runs as root and may write to the log folder.
    assert script.index(chown) > script.index("/entrypoint airflow db migrate")
    assert "chmod -R g+rwX /opt/parity-home" in script
    # Every service that mounts the volume (and so may write there) starts after init is done.
    writers = [
        name
        for name, service in SERVICES.items()
        if name != "airflow-init" and "parity-home:/opt/parity-home" in service.get("volumes", [])
    ]
    assert sorted(writers) == sorted([*AIRFLOW, *SPARK, CAPTURES])
    for name in writers:
        assert SERVICES[name]["depends_on"]["airflow-init"] == {
            "condition": "service_completed_successfully"
        }, name
        assert SERVICES[name]["user"] != "0:0", name


def test_init_creates_the_pool_every_spark_task_takes_a_slot_of() -> None:
    """The DAGs' Spark tasks are in the pool ``parity_spark`` (``AirflowSpec.pool``): a
    scheduler never starts a task whose pool does not exist."""
    from matcher.spec_schema import AirflowSpec

    script = SERVICES["airflow-init"]["command"][-1].splitlines()
    create = '/entrypoint airflow pools set parity_spark 2 "Parity: Spark applications at once"'
    assert AirflowSpec().pool == "parity_spark"
    assert script.index(create) > script.index("/entrypoint airflow db migrate")


def test_spark_runs_as_the_spark_images_user_with_group_writable_jobs() -> None:
    for name in SPARK:
        assert SERVICES[name]["user"] == "spark:0", name
    dockerfile = (ROOT / "docker" / "spark.Dockerfile").read_text()
    assert re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)[-1] == "spark"
    for name in AIRFLOW:
        assert SERVICES[name]["user"] == "${AIRFLOW_UID:-50000}:0", name
        conf_dir = SERVICES[name]["environment"]["SPARK_CONF_DIR"]
        assert conf_dir == "/opt/parity/docker/spark-conf", name
    defaults = (ROOT / "docker" / "spark-conf" / "spark-defaults.conf").read_text()
    settings = [line.split() for line in defaults.splitlines() if line and line[0] != "#"]
    assert settings == [
        ["spark.hadoop.fs.permissions.umask-mode", "002"],
        ["spark.cores.max", "1"],
    ]


# starlette.testclient (imported with Airflow's API server) warns that it prefers httpx2.
@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
def test_airflows_simple_auth_manager_reads_that_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

    environment = SERVICES["airflow-apiserver"]["environment"]
    installed = tmp_path / "simple_auth_manager_passwords.json"
    installed.write_bytes((ROOT / "docker" / "simple_auth_manager_passwords.json").read_bytes())
    monkeypatch.setenv(
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS",
        environment["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"],
    )
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", str(installed))
    users = [(user.username, user.role) for user in SimpleAuthManager.get_users()]
    assert users == [("admin", "admin")]
    assert SimpleAuthManager.get_passwords() == {"admin": "admin"}


def _published() -> dict[str, list[str]]:
    return {name: s["ports"] for name, s in SERVICES.items() if s.get("ports")}


def test_only_loopback_is_published_and_never_the_spark_masters_port() -> None:
    """An unauthenticated standalone master runs anyone's application: 7077 is for the
    containers on the compose network alone; what is published is bound to 127.0.0.1."""
    assert _published() == {
        "airflow-apiserver": ["127.0.0.1:8080:8080"],
        "spark-master": ["127.0.0.1:8081:8080"],
    }


def test_spark_cores_max_follows_the_pools_sizing_rule() -> None:
    """slots = the cluster's cores / spark.cores.max (README, "Concurrency"): the pool's
    slots are that many applications side by side, none taking every core."""
    script = SERVICES["airflow-init"]["command"][-1]
    pool = re.search(r"airflow pools set parity_spark (\d+) ", script)
    worker = SERVICES["spark-worker"]["command"]
    cores = int(worker[worker.index("--cores") + 1])
    defaults = (ROOT / "docker" / "spark-conf" / "spark-defaults.conf").read_text()
    per_app = re.search(r"^spark\.cores\.max (\d+)$", defaults, re.MULTILINE)
    assert pool is not None and per_app is not None
    assert (int(pool.group(1)), cores, int(per_app.group(1))) == (2, 2, 1)
    assert cores // int(per_app.group(1)) == int(pool.group(1))
    assert "The pool `parity_spark` has 2 slots and the worker has 2 cores" in HOWTO
    assert "(`spark.cores.max 1` in `docker/spark-conf/spark-defaults.conf`)" in HOWTO


def test_the_captures_service_writes_every_capture_the_bundled_specs_read() -> None:
    """Inside the stack, with the Airflow image's Python, as tools/demo.py writes them: so
    that every bundled DAG's plan finds its input, the recovery validations' too."""
    from jobs.examples.generate import CAPTURES as GENERATED
    from matcher.spec import load_spec
    from tools.demo import SEQUENCE_WINDOW_INPUT

    service = SERVICES[CAPTURES]
    assert service["profiles"] == ["setup"]  # `up` never starts it
    assert service["image"] == SERVICES["airflow-scheduler"]["image"]
    assert ".:/opt/parity" in service["volumes"]
    script = service["command"][-1].splitlines()
    sequence = " ".join(f"--{key} {value}" for key, value in SEQUENCE_WINDOW_INPUT.items())
    assert script == [
        "set -euo pipefail",
        "cd /opt/parity",
        "python -m jobs.examples.generate --out data/captures",
        "python -m jobs.examples.sequence_input --out data/captures/sequence_window " + sequence,
    ]
    written = {f"data/captures/{name}" for name in (*GENERATED, "sequence_window")}
    specs = sorted((ROOT / "dags" / "validations").glob("*.yaml"))
    read = {load_spec(str(path)).input.path for path in specs}  # type: ignore[union-attr]
    assert len(specs) == 21
    assert read <= written, read - written


def test_the_howto_commands_match_the_compose_file() -> None:
    """docs/how-to/compose.md is followed word for word: every service it names exists, its
    ports and login are the ones published, its variables are the ones the file reads."""
    # the page's ``sh`` blocks (not ``console``: the docs' runner would run them here)
    blocks = re.findall(r"^```sh\n(.*?)^```", HOWTO, re.MULTILINE | re.DOTALL)
    commands = [line for block in blocks for line in block.splitlines() if line]
    assert commands == [
        'echo "AIRFLOW_UID=$(id -u)" > .env',
        "docker compose build",
        "docker compose run --rm parity-captures",
        "docker compose up -d",
        "docker compose ps",
        "docker compose exec -w /opt/parity airflow-scheduler python -m parity validate "
        "dags/validations/maxrow_wellformed.yaml",
        "docker compose exec -w /opt/parity airflow-scheduler python -m parity list",
        "docker compose down          # keeps the volumes: the databases and the run workspaces",
        "docker compose down -v       # removes them too",
    ]
    for command in commands:
        named = re.search(r"docker compose (?:run --rm|exec -w \S+) (\S+)", command)
        if named is not None:
            assert named.group(1) in SERVICES, command
    assert (ROOT / "dags" / "validations" / "maxrow_wellformed.yaml").is_file()
    assert SERVICES["airflow-scheduler"]["user"] == "${AIRFLOW_UID:-50000}:0"
    assert ".:/opt/parity" in SERVICES["airflow-scheduler"]["volumes"]
    assert SERVICES["airflow-scheduler"]["environment"]["PYTHONPATH"] == "/opt/parity"
    assert SERVICES[CAPTURES]["profiles"] == ["setup"] and "profile `setup`" in HOWTO
    # The addresses it opens are the published ones.
    published = _published()
    assert "<http://localhost:8080>" in HOWTO and published["airflow-apiserver"] == [
        "127.0.0.1:8080:8080"
    ]
    assert "<http://localhost:8081>" in HOWTO and published["spark-master"] == [
        "127.0.0.1:8081:8080"
    ]
    assert "the API server on `127.0.0.1:8080` and the Spark master's UI on\n`127.0.0.1:8081`" in (
        HOWTO
    )
    # The login: the user and the passwords file the stack configures.
    passwords = json.loads((ROOT / "docker" / "simple_auth_manager_passwords.json").read_text())
    assert passwords == {"admin": "admin"}
    assert (
        "log in as `admin`, password `admin` (set in\n`docker/simple_auth_manager_passwords.json`)"
        in (HOWTO)
    )
    # The opt-in override publishes the port the master listens on, on loopback, for the
    # service that runs it.
    override = yaml.safe_load(re.search(r"```yaml\n(.*?)```", HOWTO, re.DOTALL).group(1))  # type: ignore[union-attr]
    assert override == {"services": {"spark-master": {"ports": ["127.0.0.1:7077:7077"]}}}
    master = SERVICES["spark-master"]["command"]
    assert master[master.index("--port") + 1] == "7077"
    assert "`docker-compose.override.yaml` beside `docker-compose.yaml`" in HOWTO


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_images_install_step_installs_the_locks_pyspark(tmp_path: Path) -> None:
    """docker/install-locked.sh, as docker/airflow.Dockerfile runs it, in a clean virtual
    environment from the local uv cache (no network): the lock's versions exactly, and a
    pyspark whose Python files are its jars' version (pip install -r put pyspark-client's
    4.2 files over 4.3's). About 20 s: it installs the lock's 152 packages."""
    import shutil
    import subprocess

    # uv as make install provides it: the uv module of the interpreter the venv was made
    # from (its binary in the user site's bin), never skipped
    found = subprocess.run(
        [
            getattr(sys, "_base_executable", sys.executable),
            "-c",
            "import uv; print(uv.find_uv_bin())",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    home_uv = Path.home() / ".local" / "bin" / "uv"
    uv = shutil.which("uv") or found.stdout.strip() or str(home_uv)
    assert uv and Path(uv).is_file(), f"no uv binary (make install installs it): {found.stderr}"
    dockerfile = (ROOT / "docker" / "airflow.Dockerfile").read_text()
    assert (
        "COPY --chown=airflow:0 pyproject.toml uv.lock docker/install-locked.sh /tmp/parity/"
        in (dockerfile)
    )
    assert "UV_NO_CACHE=1 /tmp/parity/install-locked.sh /tmp/parity" in dockerfile
    instructions = [line for line in dockerfile.splitlines() if not line.startswith("#")]
    assert not any("pip install -r" in line for line in instructions)
    project = tmp_path / "parity"
    project.mkdir()
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy(ROOT / name, project / name)
    venv = tmp_path / "venv"
    env = {
        "PATH": f"{venv / 'bin'}:{Path(uv).parent}:/usr/bin:/bin",
        "HOME": str(Path.home()),
        "UV_OFFLINE": "1",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    subprocess.run([uv, "venv", "--quiet", "--python", "3.11", str(venv)], check=True, env=env)
    env["VIRTUAL_ENV"] = str(venv)
    done = subprocess.run(
        ["bash", str(ROOT / "docker" / "install-locked.sh"), str(project)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "pyspark 4.3.0, jars spark-core_2.13-4.3.0.jar\n"
    frozen = subprocess.run(
        [uv, "pip", "freeze", "--python", str(venv / "bin" / "python")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert "pyspark==4.3.0" in frozen
    assert not any(line.startswith("pyspark-client") for line in frozen)


def test_after_the_captures_service_every_bundled_dag_can_plan(tmp_path: Path) -> None:
    """The captures service's commands, run here as the container runs them (its working
    directory a root with the project's jobs), then ``parity validate`` with the existence
    checks on: all 21 bundled validations plan, the two recovery validations included."""
    import subprocess
    import sys

    (tmp_path / "jobs").symlink_to(ROOT / "jobs")
    script = SERVICES[CAPTURES]["command"][-1].splitlines()
    assert script[:2] == ["set -euo pipefail", "cd /opt/parity"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for line in script[2:]:
        argv = line.split()
        assert argv[0] == "python"
        subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, env=env, check=True)
    specs = sorted(str(p) for p in (ROOT / "dags" / "validations").glob("*.yaml"))
    done = subprocess.run(
        [sys.executable, "-m", "parity", "validate", "--root", str(tmp_path), *specs],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert len(lines) == 21 and all(": OK (validation " in line for line in lines), lines
