"""Workspaces on shared storage: ``matcher.files.locations`` reads and writes a run's
documents through ``pyarrow.fs``, on local paths, ``file://`` URIs and an S3 store named
the way Spark names it (``s3a://``), served here by a real S3 protocol server on loopback
(moto's). The plan task, the match job and the expectations job write the workspace's
documents there, and read back what another task wrote.

Spark itself writing ``s3a://`` needs the ``hadoop-aws`` jar, which pyspark does not ship
(``docs/how-to/cluster.md``); the end-to-end DAG run on a ``file://`` workspace is in
``tests/test_dags.py``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.check_expectations import _docs_folder
from jobs.entry import load_spec_at
from matcher import uris
from matcher.errors import InputError, SpecError
from matcher.files import locations
from matcher.spark.session import output_bytes
from parity.airflow.plan import RunContext, plan_run, prepare_workspace

BUCKET = "parity-test"


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
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh bucket on the S3 server, and the ``AWS_*`` settings a deployment gives both
    Spark's and pyarrow's clients; the root of a workspace there."""
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
    yield f"s3a://{BUCKET}/parity"
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for item in page.get("Contents", []):
            client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)
    locations.clear_clients()


@pytest.fixture(params=["path", "file-uri", "s3a"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "path":
        return str(tmp_path / "ws")
    if request.param == "file-uri":
        return f"file://{tmp_path}/ws"
    return str(request.getfixturevalue("s3"))


def test_documents_round_trip(root: str) -> None:
    run = uris.join(root, "runs", "r1")
    locations.make_empty_dir(run)
    locations.write_text(uris.join(run, "plan.json"), '{"π": 1}\n')
    locations.write_text(uris.join(run, "slice", "part-00000.json"), "x" * 100)
    locations.write_text(uris.join(run, "slice", "part-00001.json"), "y" * 20)
    locations.write_text(uris.join(run, "slice", "_SUCCESS"), "")
    locations.write_text(uris.join(run, "slice", ".part-00000.json.crc"), "c")
    assert locations.read_text(uris.join(run, "plan.json")) == '{"π": 1}\n'
    assert locations.data_files(uris.join(run, "slice")) == ["part-00000.json", "part-00001.json"]
    assert locations.total_bytes([run], 1 << 20) == 131
    assert locations.total_bytes([run], 100) is None  # past the limit: not listed to the end
    assert locations.total_bytes([uris.join(root, "missing")], 1 << 20) is None
    assert output_bytes([uris.join(run, "slice")]) == 121


def test_a_rerun_starts_from_an_empty_workspace(root: str) -> None:
    run = uris.join(root, "runs", "r2")
    locations.write_text(uris.join(run, "old", "part-0.json"), "stale")
    locations.make_empty_dir(run)
    assert locations.exists(run)
    assert not locations.exists(uris.join(run, "old", "part-0.json"))
    locations.remove_tree(run)
    assert not locations.exists(uris.join(run, "plan.json"))
    locations.remove_tree(run)  # not there: nothing to do


def test_a_tree_is_uploaded_whole(root: str, tmp_path: Path) -> None:
    local = tmp_path / "docs"
    (local / "validations" / "x").mkdir(parents=True)
    (local / "index.html").write_text("<html>index</html>")
    (local / "validations" / "x" / "run.html").write_text("<html>run</html>")
    target = uris.join(root, "report", "data_docs")
    locations.write_text(uris.join(target, "stale.html"), "old")
    locations.upload_tree(local, target)
    assert locations.read_text(uris.join(target, "index.html")) == "<html>index</html>"
    assert locations.read_text(uris.join(target, "validations", "x", "run.html")) == (
        "<html>run</html>"
    )
    assert not locations.exists(uris.join(target, "stale.html"))


def test_the_plan_task_writes_the_workspace_the_jobs_read(root: str, tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parent.parent
    spec_file = repo / "dags" / "validations" / "topics_parallel.yaml"
    spec = load_spec_at(str(spec_file))
    context = RunContext(
        dag_id="parity_topics_parallel",
        dag_run_id="manual__2024-05-01",
        params={"equality": {"ignore": ["seq"]}},
        interval_start=dt.datetime(2024, 5, 1, tzinfo=dt.UTC),
        interval_end=dt.datetime(2024, 5, 2, tzinfo=dt.UTC),
    )
    made = plan_run(spec, context, root=repo, home=tmp_path / "home", workspace_root=root)
    from parity.airflow.plan import effective_spec_text

    prepare_workspace(made, effective_spec_text(spec, made.overrides, repo))
    plan = json.loads(locations.read_text(uris.join(made.run_dir, "plan.json")))
    assert plan["run_dir"] == made.run_dir
    effective = load_spec_at(made.spec_file)  # as the match job on another worker reads it
    assert (effective.name, effective.equality.ignore) == (spec.name, ("seq",))


def test_data_docs_written_locally_reach_the_workspace(root: str) -> None:
    docs = uris.join(root, "report", "data_docs")
    with _docs_folder(docs) as folder:
        assert folder is not None
        folder.mkdir(parents=True, exist_ok=True)  # as Great Expectations does
        (folder / "index.html").write_text("<html>docs</html>")
    assert locations.read_text(uris.join(docs, "index.html")) == "<html>docs</html>"


def test_unreachable_locations_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^nosuch://b: no filesystem for this scheme"):
        locations.read_text("nosuch://b/plan.json")
    with pytest.raises(SpecError, match=r"cannot read the spec"):
        load_spec_at(f"file://{tmp_path}/missing.yaml")


def test_local_paths_and_uris_are_told_apart() -> None:
    assert uris.local_path("/a/b") == Path("/a/b")
    assert uris.local_path("file:///a/b") == Path("/a/b")
    assert uris.local_path("file://localhost/a/b") == Path("/a/b")
    assert uris.local_path("s3a://bucket/a") is None
    assert uris.local_path("hdfs://nn:8020/a") is None
    assert uris.join("hdfs://nn:8020/p/", "d", "r") == "hdfs://nn:8020/p/d/r"
    assert uris.join("/p", "d", "r") == "/p/d/r"


@pytest.mark.parametrize("candidate", ["candidate_ok", "candidate_bug.csv"])
def test_the_core_compares_outputs_on_a_store(
    s3: str, candidate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from parity.cli import main

    topics = Path(__file__).resolve().parent.parent / "examples" / "topics"
    remote = {}
    for name in ("reference.csv", candidate):
        local = topics / name
        files = sorted(local.iterdir()) if local.is_dir() else [local]
        for file in files:
            relative = file.relative_to(topics).as_posix()
            locations.write_text(uris.join(s3, "outputs", relative), file.read_text())
        remote[name] = uris.join(s3, "outputs", name)
    args = ["--spec", str(topics / "spec.yaml"), "--no-progress"]
    code = main(["compare", remote["reference.csv"], remote[candidate], "--engine", "core", *args])
    remote_out = capsys.readouterr().out
    local = [str(topics / "reference.csv"), str(topics / candidate)]
    on_disk = main(["compare", *local, "--engine", "core", *args])
    local_out = capsys.readouterr().out
    assert (code, on_disk) == ((0, 0) if candidate == "candidate_ok" else (1, 1))
    # The same verdict, counts and witnesses; only the outputs' names differ.
    assert remote_out.partition("verdict:")[2] == local_out.partition("verdict:")[2]
