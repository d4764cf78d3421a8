"""Applications by URL (``parity.runs.artifacts``): staged byte for byte from a real S3
protocol server on loopback (moto's, as ``tests/test_locations.py`` uses) and from an HTTP
server on loopback, refused with one line when empty, too big, not there or of an unknown
kind; and one bundled validation run end to end by ``dag.test()`` with its candidate given
as an ``s3a://`` URL under the deployment's allowed prefix.

The policy's allow/refuse table (prefixes, traversal, prefix confusion, credentials) is in
``tests/test_plan.py``.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import http.server
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import DAGS, ROOT, ParityEnv, dag_bag

from matcher.errors import ConfigurationError
from matcher.files import locations
from matcher.store import Store
from parity.airflow.operators import open_stored
from parity.airflow.plan import MODULES_VARIABLE, ROOTS_VARIABLE
from parity.runs import artifacts
from parity.runs.artifacts import ArtifactError, ArtifactFetchError, stage

pytest_plugins = ("airflow_fixtures",)

BUCKET = "parity-artifacts"
#: a bundled example's candidate application: real code, which the end-to-end run executes
APPLICATION = ROOT / "jobs" / "examples" / "reducers.py"


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A fresh bucket, the ``AWS_*`` settings pyarrow's client reads, and a boto3 client to
    put objects with."""
    import boto3

    for name, value in {
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ACCESS_KEY_ID": "parity",
        "AWS_SECRET_ACCESS_KEY": "parity-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_server)
    client.create_bucket(Bucket=BUCKET)
    locations.clear_clients()  # the endpoint is this module's server
    yield client
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for item in page.get("Contents", []):
            client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)
    locations.clear_clients()


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; ``/stream/NAME`` serves NAME without a ``Content-Length`` (a size
    the server does not announce), ``/moved/NAME`` redirects to NAME."""

    def do_GET(self) -> None:
        if self.path.startswith("/moved/"):
            self.send_response(302)
            self.send_header("Location", self.path.removeprefix("/moved"))
            self.end_headers()
            return
        if self.path.startswith("/stream/"):
            data = (Path(self.directory) / self.path.removeprefix("/stream/")).read_bytes()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True
            return
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test's output is the assertions'


@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on loopback serving a fresh folder: its base URL and the folder."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(_Files, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# --- staging ------------------------------------------------------------------------------


def test_an_s3a_application_is_staged_byte_for_byte(s3: Any, tmp_path: Path) -> None:
    data = APPLICATION.read_bytes()
    s3.put_object(Bucket=BUCKET, Key="etl/1.5.0/reducers.py", Body=data)
    url = f"s3a://{BUCKET}/etl/1.5.0/reducers.py"

    staged = stage(url, tmp_path / "stage", open_stored=open_stored)

    assert staged == artifacts.Staged(
        tmp_path / "stage" / "reducers.py", hashlib.sha256(data).hexdigest(), len(data), url
    )
    assert staged.path.read_bytes() == data
    assert sorted(p.name for p in (tmp_path / "stage").iterdir()) == ["reducers.py"]


def test_an_http_application_is_staged_byte_for_byte(web: tuple[str, Path], tmp_path: Path) -> None:
    base, folder = web
    data = bytes(range(256)) * 4096  # 1 MiB of every byte value: a JAR is binary
    (folder / "etl-1.5.0.jar").write_bytes(data)

    for path in ("etl-1.5.0.jar", "stream/etl-1.5.0.jar", "moved/etl-1.5.0.jar"):
        staged = stage(f"{base}/{path}", tmp_path / path.replace("/", "-"))
        assert (staged.path.name, staged.size) == ("etl-1.5.0.jar", len(data))
        assert staged.sha256 == hashlib.sha256(data).hexdigest()
        assert staged.path.read_bytes() == data


def test_unusable_artifacts_are_refused_with_one_line(
    s3: Any, web: tuple[str, Path], tmp_path: Path
) -> None:
    base, folder = web
    s3.put_object(Bucket=BUCKET, Key="etl/empty.py", Body=b"")
    s3.put_object(Bucket=BUCKET, Key="etl/big.py", Body=b"x" * 101)
    s3.put_object(Bucket=BUCKET, Key="etl/pkg.zip/inside.py", Body=b"x")  # a folder
    (folder / "empty.py").write_bytes(b"")
    (folder / "big.zip").write_bytes(b"x" * 101)
    s3a = f"s3a://{BUCKET}/etl"
    cases = [
        (f"{s3a}/empty.py", "the file is empty"),
        (f"{s3a}/big.py", "101 bytes, more than the limit of 100"),
        (f"{s3a}/missing.py", "no such file"),
        (f"{s3a}/pkg.zip", "not a file"),
        (f"{s3a}/run.sh", "is not a .py, .jar or .zip file"),
        (f"{base}/empty.py", "the file is empty"),
        (f"{base}/big.zip", "101 bytes, more than the limit of 100"),
        (f"{base}/stream/big.zip", "more than the limit of 100 bytes"),
        ("s3a://AKIA:secret@bucket/x.py", "holds credentials (give them to the workers' "
         "environment instead)"),
    ]  # fmt: skip
    for url, problem in cases:
        with pytest.raises(ArtifactError) as info:
            stage(url, tmp_path / "stage", open_stored=open_stored, limit=100)
        assert type(info.value) is ArtifactError, url
        assert str(info.value) == f"{artifacts.shown(url)}: {problem}"
    assert "secret" not in artifacts.shown("s3a://AKIA:secret@bucket/x.py")
    with pytest.raises(ArtifactError) as info:  # parity.runs reads no store by itself
        stage(f"{s3a}/app.py", tmp_path / "stage")
    assert str(info.value) == f"{s3a}/app.py: no reader for s3a:// was given"
    assert list((tmp_path / "stage").iterdir()) == []  # no half-written file is left


def test_a_failed_download_may_be_retried(web: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = web
    with pytest.raises(ArtifactFetchError) as info:
        stage(f"{base}/missing.py", tmp_path)
    assert str(info.value) == f"{base}/missing.py: HTTP 404 File not found"
    closed = f"http://127.0.0.1:{_free_port()}/x.py"
    with pytest.raises(ArtifactFetchError) as refused:
        stage(closed, tmp_path)
    assert str(refused.value) == f"{closed}: cannot be read: [Errno 111] Connection refused"


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_redirect_from_https_to_plain_http_is_refused() -> None:
    import io
    import urllib.request

    request = urllib.request.Request("https://builds.example.com/etl/x.py")
    body = io.BytesIO(b"moved")
    with pytest.raises(ArtifactError) as info:
        artifacts._NoDowngrade().redirect_request(
            request, body, 302, "Found", {}, "http://mirror.example.com/x.py"
        )
    assert str(info.value) == (
        "https://builds.example.com/etl/x.py: redirected to http://mirror.example.com/x.py, "
        "which is not https"
    )
    assert body.closed


def test_the_size_limit_is_the_deployments() -> None:
    assert artifacts.max_bytes({}) == artifacts.MAX_BYTES
    assert artifacts.max_bytes({"PARITY_ARTIFACT_MAX_BYTES": " 2048 "}) == 2048
    for bad in ("0", "-1", "1e6", "big"):
        with pytest.raises(ConfigurationError) as info:
            artifacts.max_bytes({"PARITY_ARTIFACT_MAX_BYTES": bad})
        assert str(info.value) == (
            f"PARITY_ARTIFACT_MAX_BYTES: expected a positive integer, got {bad!r}"
        )


def test_the_spark_task_stages_a_url_and_gives_spark_submit_the_file(
    web: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from airflow.providers.common.compat.sdk import AirflowException
    from airflow.sdk.exceptions import AirflowFailException

    from parity.airflow.operators import ParitySparkSubmitOperator

    base, folder = web
    (folder / "app.py").write_bytes(b"print('candidate')\n")
    (folder / "empty.py").write_bytes(b"")
    task = ParitySparkSubmitOperator(job="candidate", task_id="run_candidate")
    task.application = f"{base}/app.py"
    with task._staged_application():
        staged = Path(task.application)
        assert staged.read_bytes() == b"print('candidate')\n"
    assert task.application == f"{base}/app.py"  # as planned, for a retry
    assert not staged.parent.exists()
    digest = hashlib.sha256(b"print('candidate')\n").hexdigest()
    logged = capsys.readouterr().out  # the task's logger (structlog) writes to stdout
    assert f"parity: staged {base}/app.py (19 bytes, sha256 {digest}) as {staged}" in logged
    task.application = f"{base}/empty.py"
    with pytest.raises(AirflowFailException) as refused, task._staged_application():
        pass
    assert str(refused.value) == f"{base}/empty.py: the file is empty"
    task.application = f"{base}/missing.py"
    with pytest.raises(AirflowException) as failed, task._staged_application():
        pass
    assert type(failed.value) is AirflowException  # the network's: a retry may mend it
    assert str(failed.value) == f"{base}/missing.py: HTTP 404 File not found"


def test_parity_s_own_jobs_get_the_results_connection_in_their_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from parity.airflow.operators import results_db_environment

    database = tmp_path / "results.db"
    monkeypatch.setenv("PARITY_DB_URL", "sqlite:///elsewhere.db")
    monkeypatch.setenv(
        "AIRFLOW_CONN_PARITY_DB", json.dumps({"conn_type": "sqlite", "host": str(database)})
    )
    with results_db_environment():
        assert os.environ["PARITY_DB_URL"] == f"sqlite:///{database}"
    assert os.environ["PARITY_DB_URL"] == "sqlite:///elsewhere.db"  # restored
    monkeypatch.delenv("PARITY_DB_URL")
    with results_db_environment():
        assert os.environ["PARITY_DB_URL"] == f"sqlite:///{database}"
    assert "PARITY_DB_URL" not in os.environ
    monkeypatch.setenv("AIRFLOW_CONN_PARITY_DB", json.dumps({"conn_type": "mysql", "host": "h"}))
    with pytest.raises(AirflowFailException) as info, results_db_environment():
        pass
    assert str(info.value) == (
        "connection parity_db: conn_type 'mysql' is not a results database (postgres or sqlite)"
    )
    monkeypatch.delenv("AIRFLOW_CONN_PARITY_DB")
    with results_db_environment():  # no connection: the environment as it is
        assert "PARITY_DB_URL" not in os.environ


# --- end to end: a bundled validation whose candidate is an s3a:// URL ----------------------


@pytest.fixture
def collect_leaked_pipes() -> Iterator[None]:
    """Collect the Spark provider's spark-submit pipes (see tests/test_dags.py) while the
    test's filter still applies."""
    yield
    gc.collect()


SPEC = DAGS / "validations" / "maxrow_wellformed.yaml"


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(1800)
# Airflow's in-process execution API (dag.test) imports starlette.testclient, which warns
# that it uses httpx; the Spark provider's hook never closes spark-submit's stdout pipe.
@pytest.mark.filterwarnings(
    "ignore:Using `httpx` with `starlette.testclient` is deprecated:UserWarning"
)
@pytest.mark.filterwarnings("ignore:unclosed file <_io.TextIOWrapper name=:ResourceWarning")
@pytest.mark.usefixtures("collect_leaked_pipes")
def test_a_candidate_given_by_s3a_url_is_staged_and_reaches_its_verdict(
    s3: Any,
    parity_env: ParityEnv,
    tmp_path: Path,
    airflow_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from jobs.examples.generate import generate

    # The bundled spec as it is, reading a capture generated here rather than in data/.
    text = SPEC.read_text(encoding="utf-8")
    captures = generate("maxrow_wellformed", tmp_path / "captures").path.parent
    assert text.count("path: data/captures/maxrow_wellformed\n") == 1
    (parity_env.validations / SPEC.name).write_text(
        text.replace("data/captures/maxrow_wellformed", str(captures / "maxrow_wellformed"))
    )
    # The build a CI job just made, uploaded where the deployment allows ad-hoc candidates.
    data = APPLICATION.read_bytes()
    s3.put_object(Bucket=BUCKET, Key="etl/2.0.0/reducers.py", Body=data)
    url = f"s3a://{BUCKET}/etl/2.0.0/reducers.py"
    monkeypatch.setenv(ROOTS_VARIABLE, f"s3a://{BUCKET}/etl/")
    monkeypatch.delenv(MODULES_VARIABLE, raising=False)
    bag = dag_bag()
    assert bag.import_errors == {}
    dag: Any = bag.dags["parity_maxrow_wellformed"]

    run = dag.test(run_conf={"candidate_application": url, "candidate_version": "2.0.0"})

    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert (str(run.state), set(states.values())) == ("success", {"success"}), states
    with Store.open(parity_env.db_url) as store:
        record = store.get_run(f"parity_maxrow_wellformed/{run.run_id}")
    assert record is not None
    assert (record.status, record.verdict, record.gate_passed, record.candidate_version) == (
        "completed",
        "equivalent",
        True,
        "2.0.0",
    )
    out, err = capfd.readouterr()  # the tasks' logs, as dag.test() prints them
    digest = hashlib.sha256(data).hexdigest()
    shown = re.findall(
        rf"parity: staged {re.escape(url)} \({len(data)} bytes, sha256 {digest}\) as (\S+)",
        out + err,
    )
    assert len(shown) == 1, out + err  # the candidate only: the reference is a local file
    staged = Path(shown[0])
    assert staged.name == "reducers.py"
    assert not staged.parent.exists()  # the task's staging directory is gone
    assert _rendered(run.run_id, "run_candidate")["application"] == url


def _rendered(run_id: str, task_id: str) -> dict[str, Any]:
    """A task's fields as its *Rendered Template* page shows them."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rendered
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        fields = session.scalar(
            select(Rendered.rendered_fields).where(
                Rendered.dag_id == "parity_maxrow_wellformed",
                Rendered.run_id == run_id,
                Rendered.task_id == task_id,
            )
        )
    assert fields is not None, f"no rendered fields for {task_id} of {run_id}"
    return dict(fields)
