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
import re
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


def test_valid_against_the_compose_specification() -> None:
    schema = json.loads((ROOT / "tests" / "data" / "compose-spec.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    problems = sorted(f"{list(e.path)}: {e.message}" for e in validator.iter_errors(COMPOSE))
    assert problems == []


def test_the_stack_has_airflow_postgres_and_a_spark_cluster() -> None:
    assert sorted(SERVICES) == sorted(["postgres", "airflow-init", *AIRFLOW, *SPARK])
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
    assert "7077:7077" in master["ports"]
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


def test_the_readmes_login_is_the_one_the_stack_configures() -> None:
    """`admin:admin` in SIMPLE_AUTH_MANAGER_USERS is user admin with the *role* admin; the
    password is the passwords file's, which airflow-init installs where the API server reads
    it. The compose how-to's login and the HTTP API's curl example must be that user and that
    password."""
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

    compose = _doc_page("how-to/compose.md")
    assert "open http://localhost:8080                # admin / admin;" in compose
    # Where the password comes from, and what it is, in the how-to's words.
    assert (
        " ".join(compose.split()).count(
            '`docker/simple_auth_manager_passwords.json` (`{"admin": "admin"}`)'
        )
        == 1
    )
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
    assert sorted(writers) == sorted([*AIRFLOW, *SPARK])
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
    assert settings == [["spark.hadoop.fs.permissions.umask-mode", "002"]]


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
