"""The release loop end to end (issue 30, "Done when"), on a real Airflow: ``airflow
api-server``, ``scheduler`` and ``dag-processor`` on loopback (tests/release_services.py), the
candidate's builds as artifacts in a loopback S3 server (moto), every step a ``parity``
command as a release pipeline would run it.

    make release-e2e        # pytest --release-e2e -m release_e2e tests/test_release_e2e.py

For ``maxrow_arbitrary`` (divergent: ties on the largest y come out in arrival order),
candidate version 1.5.0:

 1. ``parity run --candidate-application s3a://artifacts/etl/... --candidate-version 1.5.0
    --wait``: exit 1, the artifact's sha256 in the candidate task's log;
 2. ``parity gate --candidate 1.5.0``: 1;
 3. ``parity approve RUN --reason ...``, then the gate: 0 (the approval in its answer);
 4. a new run of 1.5.0 from another artifact that also loses a key: the gate 1 again;
 5. ``--max-age 1s`` after a sleep: 3;
 6. today's spec changed in a verdict-deciding section (the gate reads an edited copy): 3;
 7. a run of 1.5.0 from an artifact that crashes: ``parity run`` and the gate 3;
 8. a typo in the validation's name: 2, the right name suggested;

and, the second test on the same services (``-k deploy`` runs it alone): ``taxi_parallel``
(equivalent) runs, its ``record`` task emits the Asset event ``parity://taxi_parallel``, and
the scheduler starts ``parity_deploy_example`` from it: a run of type ``asset_triggered``
that succeeds and deploys. How long each step took is written to ``steps0/steps.txt`` under
pytest's base temporary directory (``--basetemp``) at the end of the module.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from release_services import ROOT, ReleaseServices, release_services

from matcher.store.run_ids import dag_id_for

pytestmark = [
    pytest.mark.release_e2e,
    pytest.mark.slow,
    pytest.mark.spark,
    pytest.mark.timeout(3600),
]

VALIDATION = "maxrow_arbitrary"
DEPLOYED = "taxi_parallel"
DEPLOY_DAG = "parity_deploy_example"
VERSION = "1.5.0"
BUCKET, PREFIX = "artifacts", "etl"
REDUCERS = ROOT / "jobs" / "examples" / "reducers.py"
#: build B of 1.5.0: also drops key k00's result, a loss beside the corruption
_MAXROW_RETURN = "    return [(key, *best)]\n"
LOSES_A_KEY = '    return [] if key == "k00" else [(key, *best)]\n'
CRASHES = 'raise SystemExit("maxrow 1.5.0-broken: crashed on purpose (release e2e test)")\n'


class Steps:
    """Each step's wall time, for the report at the end."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float]] = []
        self._last = time.monotonic()

    def mark(self, name: str) -> None:
        """The time since the last step ended, as the step ``name`` (teardown)."""
        now = time.monotonic()
        self.times.append((name, now - self._last))
        self._last = now

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self._last = time.monotonic()
        self.times.append((name, self._last - started))

    def table(self) -> list[str]:
        width = max(len(name) for name, _ in self.times)
        total = sum(seconds for _, seconds in self.times)
        rows = [f"{name:<{width}}  {seconds:7.1f} s" for name, seconds in self.times]
        return [*rows, f"{'total':<{width}}  {total:7.1f} s"]


@pytest.fixture(scope="module")
def steps(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Steps]:
    """The steps' wall times, printed at the end of the module (and in ``steps.txt``)."""
    recorded = Steps()
    yield recorded
    if not recorded.times:
        return
    lines = recorded.table()
    (tmp_path_factory.mktemp("steps") / "steps.txt").write_text("\n".join(lines) + "\n")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line("release e2e, wall time per step:")
        for line in lines:
            reporter.write_line(f"  {line}")


@pytest.fixture(scope="module")
def artifacts() -> Iterator[tuple[str, Any]]:
    """A loopback S3 server with the bucket ``artifacts``: its URL and a boto3 client."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        _, port = server.get_host_and_port()
        url = f"http://127.0.0.1:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=url,
            aws_access_key_id="parity",
            aws_secret_access_key="parity-secret",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        yield url, client
    finally:
        server.stop()


@pytest.fixture(scope="module")
def airflow(
    tmp_path_factory: pytest.TempPathFactory, artifacts: tuple[str, Any], steps: Steps
) -> Iterator[ReleaseServices]:
    """The services, with the S3 server's settings and its prefix allowed for candidates."""
    with ExitStack() as stack:
        stack.callback(steps.mark, "services down")  # runs after they are stopped
        with steps.step("services up (db migrate, 3 processes, DAGs parsed)"):
            home = tmp_path_factory.mktemp("release") / "services"
            services = stack.enter_context(
                release_services(
                    home,
                    [VALIDATION, DEPLOYED],
                    dags=[DEPLOY_DAG],
                    extra_env={**aws_env(artifacts[0]), **results_connection(home)},
                )
            )
        yield services


def aws_env(endpoint: str) -> dict[str, str]:
    """What the deployment's workers get to read ``s3a://artifacts/...`` (and what allows
    ad-hoc candidates there)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "parity",
        "AWS_SECRET_ACCESS_KEY": "parity-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "PARITY_ADHOC_APPLICATION_ROOTS": f"s3a://{BUCKET}/{PREFIX}/",
    }


def results_connection(services_home: Path) -> dict[str, str]:
    """The results store as the Airflow Connection ``parity_db`` (a deployment's way; the
    short path, tests/test_release_services.py, keeps ``PARITY_DB_URL`` alone)."""
    store = {"conn_type": "sqlite", "host": str(services_home / "parity.db")}
    return {"AIRFLOW_CONN_PARITY_DB": json.dumps(store)}


def upload(client: Any, name: str, text: str) -> tuple[str, str]:
    """``text`` as ``s3a://artifacts/etl/NAME``: its URL and sha256."""
    body = text.encode()
    client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{name}", Body=body)
    return f"s3a://{BUCKET}/{PREFIX}/{name}", hashlib.sha256(body).hexdigest()


def parity_run(airflow: ReleaseServices, *args: str) -> tuple[int, dict[str, Any], str]:
    done = airflow.parity(
        "run", *args, "--airflow", airflow.url, "--wait", "--timeout", "40m", "--json"
    )
    return done.returncode, json.loads(done.stdout or "null"), done.stderr


def gate(airflow: ReleaseServices, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    done = airflow.parity("gate", VALIDATION, "--candidate", VERSION, *args, "--json", env=env)
    return done.returncode, json.loads(done.stdout or "null")


def task_log(airflow: ReleaseServices, dag_id: str, dag_run_id: str, task_id: str) -> str:
    folder = airflow.home / "airflow" / "logs" / f"dag_id={dag_id}" / f"run_id={dag_run_id}"
    return "\n".join(
        p.read_text(errors="replace") for p in sorted(folder.glob(f"task_id={task_id}/*.log"))
    )


def test_a_candidate_version_through_run_gate_and_approve(
    tmp_path: Path, airflow: ReleaseServices, artifacts: tuple[str, Any], steps: Steps
) -> None:
    s3 = artifacts[1]
    source = REDUCERS.read_text(encoding="utf-8")
    assert source.count(_MAXROW_RETURN) == 1
    build_a, sha_a = upload(s3, "maxrow-1.5.0.py", source)
    build_b, _ = upload(s3, "maxrow-1.5.0-b.py", source.replace(_MAXROW_RETURN, LOSES_A_KEY))
    broken, _ = upload(s3, "maxrow-1.5.0-broken.py", CRASHES)
    dag_id = dag_id_for(VALIDATION)
    candidate = ("--candidate-version", VERSION, "--candidate-application")

    with steps.step("1. parity run 1.5.0 (build A, s3a://) --wait -> 1"):
        code, run_a, err = parity_run(airflow, VALIDATION, *candidate, build_a)
    why = f"{err}\n{airflow.tails()}"
    assert (code, run_a["verdict"], run_a["exit_code"]) == (1, "divergent", 1), why
    assert run_a["counts"]["corruption"] > 0 and run_a["gate"]["state"] == "closed", run_a
    # The candidate task staged the artifact by URL and ran it: its sha256 is logged.
    assert sha_a in task_log(airflow, dag_id, run_a["dag_run_id"], "run_candidate")

    with steps.step("2. parity gate --candidate 1.5.0 -> 1"):
        code, closed = gate(airflow)
    assert (code, closed["state"], closed["run"]["run_id"]) == (1, "closed", run_a["run_id"])

    with steps.step("3. parity approve, then the gate -> 0"):
        approved = airflow.parity(
            "approve", run_a["run_id"], "--reason", "ties now resolved by x (PR 123)",
            "--by", "release-manager", "--json",
        )  # fmt: skip
        code, opened = gate(airflow)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    approval = json.loads(approved.stdout)
    assert (approval["run_id"], approval["actor"], approval["action"]) == (
        run_a["run_id"],
        "release-manager",
        "approve",
    )
    assert (code, opened["state"], opened["approval"]["run_id"]) == (0, "open", run_a["run_id"])

    with steps.step("4. parity run 1.5.0 (build B: other divergences) -> gate 1"):
        code_b, run_b, err = parity_run(airflow, VALIDATION, *candidate, build_b)
        code, other = gate(airflow)
    assert (run_b["verdict"], run_b["counts"]["loss"] > 0) == ("divergent", True), err
    assert code_b == 1, run_b
    assert (code, other["state"], other["run"]["run_id"], other["approval"]) == (
        1,
        "closed",
        run_b["run_id"],
        None,
    )

    with steps.step("5. --max-age 1s after a sleep -> 3"):
        time.sleep(2)
        code, stale = gate(airflow, "--max-age", "1s")
    assert (code, stale["state"]) == (3, "no_verdict"), stale

    with steps.step("6. today's spec changed -> 3"):
        edited = tmp_path / "edited-validations"
        shutil.copytree(airflow.validations, edited)
        spec = edited / f"{VALIDATION}.yaml"
        spec.write_text(spec.read_text() + "equality:\n  tolerance:\n    y: {abs: 0.5}\n")
        code, changed = gate(airflow, PARITY_VALIDATIONS_DIR=str(edited))
    assert (code, changed["state"], changed["spec"]["matches"]) == (3, "no_verdict", False)

    with steps.step("7. parity run 1.5.0 (a build that crashes) -> 3, gate 3"):
        code_c, run_c, err = parity_run(airflow, VALIDATION, *candidate, broken)
        code, failed = gate(airflow)
    assert (code_c, run_c["state"]) == (3, "failed"), f"{run_c}\n{err}"
    assert (code, failed["state"], failed["run"]["run_id"]) == (
        3,
        "no_verdict",
        run_c["run_id"],
    )
    assert failed["run"]["status"] == "failed"

    with steps.step("8. a typo -> 2 with a suggestion"):
        typo = airflow.parity("gate", "maxrow_arbitary", "--candidate", VERSION, "--json")
    assert typo.returncode == 2, typo.stdout + typo.stderr
    assert VALIDATION in json.loads(typo.stdout)["suggestions"]


def test_a_passing_gate_triggers_the_deploy_dag_by_its_asset_event(
    airflow: ReleaseServices, steps: Steps
) -> None:
    with steps.step("9. parity run taxi_parallel --wait -> 0"):
        code, taxi, err = parity_run(airflow, DEPLOYED)
    assert (code, taxi["verdict"]) == (0, "equivalent"), f"{taxi}\n{err}\n{airflow.tails()}"

    with steps.step("10. the deploy DAG runs from the Asset event"):
        deploy = wait_for_deploy(airflow)
    assert (deploy["run_type"], deploy["state"]) == ("asset_triggered", "success"), deploy
    states = airflow.task_states(DEPLOY_DAG, deploy["dag_run_id"])
    assert states == {"gate_open": "success", "deploy": "success"}, states
    shipped = task_log(airflow, DEPLOY_DAG, deploy["dag_run_id"], "deploy")
    assert f"run {taxi['run_id']}" in shipped, shipped[-2000:]


def wait_for_deploy(airflow: ReleaseServices, timeout: float = 300) -> dict[str, Any]:
    """The deploy DAG's first asset-triggered run, once it finished."""
    found: dict[str, Any] = {}

    def finished() -> bool:
        runs = [r for r in airflow.dag_runs(DEPLOY_DAG) if r["run_type"] == "asset_triggered"]
        done = [r for r in runs if r["state"] in ("success", "failed")]
        if done:
            found.update(done[-1])
        return bool(done)

    airflow.wait_for(finished, timeout, f"an asset-triggered run of {DEPLOY_DAG}", every=2)
    return found
