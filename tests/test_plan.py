"""parity.airflow.plan: a run's jobs, window and workspace, decided before Spark starts.

Every command line is asserted whole; every rejected parameter is one exact line.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from matcher.errors import ConfigurationError, SpecError
from matcher.spec import Spec, parse_spec, parse_yaml
from parity.airflow.plan import (
    WORKSPACE_VARIABLE,
    AdhocPolicy,
    RunContext,
    RunPlan,
    effective_spec_text,
    job_for,
    plan_run,
    prepare_workspace,
    workspace,
    workspace_root_of,
)

UTC = dt.UTC
SPEC = """\
name: nightly
reference:
  application: jobs/app.py
  args: [--variant, sequential]
  conf: {spark.sql.shuffle.partitions: 8}
  version: "1.0"
candidate:
  application: jobs/app.py
  args: [--in, "{input}", --out, "{output}", --tmp, "{run_dir}/tmp", --literal, "{{x}}"]
  py_files: [lib/helpers.zip]
  version: "1.1"
input:
  path: data/captures/taxi
  format: jsonl
  slice: {column: event_time, window: 1d, sample: 0.25, files: 3}
output: {format: parquet}
dependence: {key: [taxi_id]}
noise: {reference_runs: 2}
schedule: "0 2 * * *"
"""
SCHEDULED = RunContext(
    dag_id="parity_nightly",
    dag_run_id="scheduled__2024-05-02T02:00:00+00:00",
    run_type="scheduled",
    interval_start=dt.datetime(2024, 5, 1, 2, tzinfo=UTC),
    interval_end=dt.datetime(2024, 5, 2, 2, tzinfo=UTC),
    started_at=dt.datetime(2024, 5, 2, 2, 0, 7, tzinfo=UTC),
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "dags" / "validations").mkdir(parents=True)
    return tmp_path


def spec_at(root: Path, text: str = SPEC) -> Spec:
    path = root / "dags" / "validations" / "nightly.yaml"
    path.write_text(text)
    source = "dags/validations/nightly.yaml"
    return parse_spec(parse_yaml(text, source), source, base_dir=path.parent)


def plan(root: Path, context: RunContext = SCHEDULED, text: str = SPEC) -> RunPlan:
    return plan_run(spec_at(root, text), context, root=root, home=root / "home")


def test_a_scheduled_run_builds_every_job(root: Path) -> None:
    made = plan(root)
    run = (
        root / "home" / "runs" / "parity_nightly" / "scheduled__2024-05-02T02_00_00_00_00-46800d48"
    )
    assert made.run_dir == str(run)
    assert (made.run_id, made.trigger) == (
        "parity_nightly/scheduled__2024-05-02T02:00:00+00:00",
        "scheduled",
    )
    assert (made.reference_version, made.candidate_version) == ("1.0", "1.1")
    assert made.spec_file == str(root / "dags/validations/nightly.yaml")
    assert dict(made.slice) == {
        "capture": str(root / "data/captures/taxi"),
        "format": "jsonl",
        "column": "event_time",
        "start": "2024-05-01T02:00:00+00:00",
        "end": "2024-05-02T02:00:00+00:00",
        "window_source": "data interval",
        "sample": 0.25,
        "key": ["taxi_id"],
        "files": 3,
    }
    jobs = made.jobs
    assert sorted(jobs) == ["candidate", "match", "reference", "rerun", "slice"]
    assert jobs["slice"].argv() == [
        str(root / "jobs/slice.py"),
        *("--capture", str(root / "data/captures/taxi"), "--out", f"{run}/slice"),
        *("--format", "jsonl", "--column", "event_time"),
        *("--start", "2024-05-01T02:00:00+00:00", "--end", "2024-05-02T02:00:00+00:00"),
        *("--sample", "0.25", "--key", "taxi_id"),
        *("--files", "3", "--summary-json", f"{run}/slice.json"),
    ]
    assert dict(jobs["slice"].conf) == {"spark.sql.session.timeZone": "UTC"}
    # No placeholder: --input and --output are appended.
    assert jobs["reference"].argv() == [
        str(root / "jobs/app.py"),
        *("--variant", "sequential", "--input", f"{run}/slice", "--output", f"{run}/reference"),
    ]
    assert dict(jobs["reference"].conf) == {"spark.sql.shuffle.partitions": "8"}
    assert jobs["candidate"].argv() == [
        str(root / "jobs/app.py"),
        *("--in", f"{run}/slice", "--out", f"{run}/candidate", "--tmp", f"{run}/tmp"),
        *("--literal", "{x}"),
    ]
    assert jobs["candidate"].py_files == (str(root / "lib/helpers.zip"),)
    assert (jobs["candidate"].name, jobs["reference"].name) == (
        "parity-nightly-candidate",
        "parity-nightly-reference",
    )
    # The rerun: the reference's arguments, other partitioning, its own output.
    assert jobs["rerun"].argv() == [
        str(root / "jobs/app.py"),
        *("--variant", "sequential", "--input", f"{run}/slice", "--output", f"{run}/rerun"),
    ]
    assert dict(jobs["rerun"].conf) == {
        "spark.sql.shuffle.partitions": "7",
        "spark.default.parallelism": "7",
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
    }
    assert job_for(made, "match", task_try=2).argv() == [
        str(root / "jobs/match.py"),
        *("--reference", f"{run}/reference", "--candidate", f"{run}/candidate"),
        *("--spec", str(root / "dags/validations/nightly.yaml")),
        *("--run-id", "parity_nightly/scheduled__2024-05-02T02:00:00+00:00"),
        *("--rerun-reference", f"{run}/rerun", "--trigger", "scheduled"),
        *("--reference-version", "1.0", "--candidate-version", "1.1"),
        *("--dag-id", "parity_nightly", "--dag-run-id", "scheduled__2024-05-02T02:00:00+00:00"),
        *("--started-at", "2024-05-02T02:00:07+00:00"),  # the DAG run's: the pipeline's time
        "--slice-json",
        json.dumps(dict(made.slice), sort_keys=True, separators=(",", ":")),
        *("--report-dir", f"{run}/report", "--json-out", f"{run}/verdict.json"),
        *("--record-only", "--task-try", "2"),
    ]


def test_the_plan_round_trips_as_json(root: Path) -> None:
    made = plan(root)
    again = RunPlan.from_dict(json.loads(json.dumps(made.to_dict())))
    assert again.to_dict() == made.to_dict()
    assert job_for(again, "candidate") == made.jobs["candidate"]


def test_adhoc_params_choose_candidate_window_and_sample(root: Path) -> None:
    context = RunContext(
        dag_id="parity_nightly",
        dag_run_id="manual__x",
        params={
            "candidate_application": "/opt/builds/app-2.py",
            "candidate_args": ["--variant", "fixed"],
            "candidate_version": "2.0-rc1",
            "window_start": "2024-05-01T06:00:00",  # no zone: UTC
            "window_end": "2024-05-01T12:00:00+02:00",
            "sample": 1,
            "dependence": None,
            "equality": "",
        },
    )
    builds = AdhocPolicy(application_roots=("/opt/builds",))
    made = plan_run(spec_at(root), context, root=root, home=root / "home", adhoc=builds)
    run = made.run_dir
    assert made.trigger == "adhoc"
    assert made.candidate_version == "2.0-rc1"
    assert made.jobs["candidate"].argv() == [
        "/opt/builds/app-2.py",
        *("--variant", "fixed", "--input", f"{run}/slice", "--output", f"{run}/candidate"),
    ]
    assert (made.slice["start"], made.slice["end"], made.slice["window_source"]) == (
        "2024-05-01T06:00:00+00:00",
        "2024-05-01T12:00:00+02:00",
        "params",
    )
    assert made.slice["sample"] == 1


BARRIERS = {"key": ["taxi_id"], "barrier": {"column": "kind", "equals": "EOD"}}


def test_dependence_override_writes_the_effective_spec(root: Path) -> None:
    context = RunContext(
        dag_id="parity_nightly",
        dag_run_id="manual__y",
        params={"dependence": BARRIERS, "equality": {"ignore": ["meta"]}},
        interval_start=dt.datetime(2024, 5, 1, tzinfo=UTC),
        interval_end=dt.datetime(2024, 5, 2, tzinfo=UTC),
    )
    spec = spec_at(root)
    made = plan_run(spec, context, root=root, home=root / "home")
    assert made.spec_file == f"{made.run_dir}/spec.yaml"
    assert dict(made.overrides) == {"dependence": BARRIERS, "equality": {"ignore": ["meta"]}}
    prepare_workspace(made, effective_spec_text(spec, made.overrides, root))
    written = parse_yaml(Path(made.spec_file).read_text(), "spec.yaml")
    assert (written["dependence"], written["equality"], written["name"]) == (
        BARRIERS,
        {"ignore": ["meta"]},
        "nightly",
    )
    assert json.loads((Path(made.run_dir) / "plan.json").read_text())["run_id"] == made.run_id


def test_a_fixed_window_in_the_spec_beats_the_data_interval(root: Path) -> None:
    text = SPEC.replace(
        "slice: {column: event_time, window: 1d, sample: 0.25, files: 3}",
        "slice: {column: event_time, start: 2024-05-01T06:00:00Z, window: 6h}",
    )
    made = plan(root, text=text)
    assert (made.slice["start"], made.slice["end"], made.slice["window_source"]) == (
        "2024-05-01T06:00:00+00:00",
        "2024-05-01T12:00:00+00:00",
        "spec",
    )
    assert (made.slice["sample"], made.slice["key"], made.slice["files"]) == (None, None, 4)


def test_no_time_column_replays_the_whole_capture(root: Path) -> None:
    text = SPEC.replace("  slice: {column: event_time, window: 1d, sample: 0.25, files: 3}\n", "")
    made = plan(root, text=text.replace("noise: {reference_runs: 2}\n", ""))
    assert made.slice["window_source"] == "whole capture"
    assert sorted(made.jobs) == ["candidate", "match", "reference", "slice"]
    assert "--column" not in made.jobs["slice"].args
    assert "--rerun-reference" not in made.jobs["match"].args


def test_workspaces_never_collide() -> None:
    assert workspace("/h/runs", "d", "a:b") == "/h/runs/d/a_b-6783a31e"
    assert workspace("/h/runs", "d", "a+b") == "/h/runs/d/a_b-300273da"
    assert workspace("s3a://b/p/", "d", "a:b") == "s3a://b/p/d/a_b-6783a31e"


def test_the_workspace_root_is_the_deployments_or_the_homes() -> None:
    home = Path("/h")
    assert workspace_root_of(home, {}) == "/h/runs"
    assert workspace_root_of(home, {WORKSPACE_VARIABLE: " "}) == "/h/runs"
    named = {WORKSPACE_VARIABLE: "hdfs://nn:8020/parity"}
    assert workspace_root_of(home, named) == "hdfs://nn:8020/parity"


def test_a_workspace_on_a_uri_names_every_job_path_there(root: Path) -> None:
    context = RunContext(
        dag_id="parity_nightly",
        dag_run_id="manual__u",
        params={"dependence": BARRIERS},
        interval_start=dt.datetime(2024, 5, 1, tzinfo=UTC),
        interval_end=dt.datetime(2024, 5, 2, tzinfo=UTC),
    )
    made = plan_run(
        spec_at(root), context, root=root, home=root / "home", workspace_root="s3a://b/runs"
    )
    assert made.run_dir.startswith("s3a://b/runs/parity_nightly/")
    assert made.spec_file == f"{made.run_dir}/spec.yaml"
    argv = " ".join(" ".join(job.argv()) for job in made.jobs.values())
    for name in ("slice", "reference", "candidate", "report", "slice.json", "verdict.json"):
        assert f"{made.run_dir}/{name}" in argv
    assert "s3a:/b" not in argv.replace("s3a://b", "")  # no path mangled by pathlib


def manual(**params: Any) -> RunContext:
    return RunContext(dag_id="parity_nightly", dag_run_id="manual__z", params=params)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            manual(window_start="2024-05-02T00:00:00Z", window_end="2024-05-01T00:00:00Z"),
            "params.window_end: must be after window_start (2024-05-02T00:00:00+00:00), got "
            "2024-05-01T00:00:00+00:00",
        ),
        (
            manual(window_start="2024-05-01T00:00:00Z"),
            "params.window_end: give both window_start and window_end, or neither",
        ),
        (
            manual(window_start="yesterday", window_end="today"),
            "params.window_start: expected an ISO 8601 date-time, got 'yesterday'",
        ),
        (manual(sample=0), "params.sample: expected 0 < sample <= 1, got 0"),
        (manual(sample="half"), "params.sample: expected a number, got 'half'"),
        (
            manual(candidate_args="--fast"),
            "params.candidate_args: expected a list of strings, got '--fast'",
        ),
        (
            manual(candidate_args=["--in", "{inptu}"]),
            "params.candidate_args: '{inptu}': unknown placeholder {inptu} (known: {input}, "
            "{output}, {run_dir}, {checkpoint}; write {{ and }} for literal braces)",
        ),
        (
            manual(colour="blue"),
            "params.colour: unknown parameter (known: candidate_application, candidate_args, "
            "candidate_version, window_start, window_end, sample, dependence, equality)",
        ),
        (
            manual(dependence={"key": ["taxi_id"]}, equality={"ignore": ["taxi_id"]}),
            "params (dependence and equality over dags/validations/nightly.yaml): equality.ignore: "
            "equality ignores column 'taxi_id', which the dependence reads: events it calls equal "
            "could differ in their dependences",
        ),
        (
            manual(dependence={"sorted": True}),
            "params (dependence over dags/validations/nightly.yaml): dependence.sorted: unknown "
            "key (expected one of: unordered, ordered, key, barrier, typed, punctuation, "
            "predicate, columns)",
        ),
        (
            manual(),  # a manual run with no data interval and no window
            "dags/validations/nightly.yaml: input.slice: this run has no data interval to "
            "choose the slice: trigger it with window_start and window_end (or give the spec "
            "start and end)",
        ),
    ],
)
def test_bad_params_are_one_line(root: Path, context: RunContext, message: str) -> None:
    with pytest.raises(SpecError) as info:
        plan(root, context)
    assert str(info.value) == message


def test_a_spec_without_applications_cannot_run_as_a_pipeline(root: Path) -> None:
    with pytest.raises(SpecError) as info:
        plan(root, text="name: nightly\ndependence: ordered\n")
    assert str(info.value) == (
        "dags/validations/nightly.yaml: reference: required by the Airflow pipeline"
    )


# --- ad-hoc code: off unless the deployment allows it -------------------------------------

NO_ADHOC = AdhocPolicy()


def adhoc_plan(root: Path, policy: AdhocPolicy, text: str = SPEC, **params: Any) -> RunPlan:
    context = RunContext(
        dag_id="parity_nightly",
        dag_run_id="manual__adhoc",
        params=params,
        interval_start=dt.datetime(2024, 5, 1, tzinfo=UTC),
        interval_end=dt.datetime(2024, 5, 2, tzinfo=UTC),
    )
    return plan_run(spec_at(root, text), context, root=root, home=root / "home", adhoc=policy)


def refusal(root: Path, policy: AdhocPolicy, text: str = SPEC, **params: Any) -> str:
    with pytest.raises(SpecError) as info:
        adhoc_plan(root, policy, text, **params)
    return str(info.value)


def test_the_policy_is_the_deployments_environment() -> None:
    environ = {
        "PARITY_ADHOC_APPLICATION_ROOTS": f"builds{os.pathsep} /opt/releases ",
        "PARITY_ADHOC_MODULE_PREFIXES": "team.checks, shared.,",
    }
    assert AdhocPolicy.from_environment(environ) == AdhocPolicy(
        ("builds", "/opt/releases"), ("team.checks", "shared")
    )
    assert AdhocPolicy.from_environment({}) == NO_ADHOC


def test_the_specs_own_application_needs_no_permission(root: Path) -> None:
    # The trigger form's default is the spec's application; the same file spelt otherwise.
    for same in ("jobs/app.py", "./jobs/app.py", str(root / "jobs" / "app.py")):
        made = adhoc_plan(root, NO_ADHOC, candidate_application=same)
        assert made.jobs["candidate"].application == str(root / same)


def test_another_application_is_refused_when_the_deployment_allows_none(root: Path) -> None:
    assert refusal(root, NO_ADHOC, candidate_application="/tmp/anything.py") == (
        "params.candidate_application: ad-hoc applications are disabled in this deployment "
        "(only the spec's 'jobs/app.py' may run; PARITY_ADHOC_APPLICATION_ROOTS allows others)"
    )


def test_applications_under_an_allowed_root_only(root: Path, tmp_path_factory: Any) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "evil.py").write_text("")
    builds = root / "builds"
    builds.mkdir()
    (builds / "app-2.py").write_text("")
    (builds / "link.py").symlink_to(outside / "evil.py")  # inside by name, outside in fact
    policy = AdhocPolicy(application_roots=("builds",))  # relative to the repository

    made = adhoc_plan(root, policy, candidate_application="builds/app-2.py")
    assert made.jobs["candidate"].application == str(builds / "app-2.py")
    shown = "is outside the application roots this deployment allows ad-hoc runs (builds)"
    for path in ("builds/link.py", "builds/../jobs/other.py", str(outside / "evil.py")):
        assert refusal(root, policy, candidate_application=path) == (
            f"params.candidate_application: {path!r} {shown}"
        )
    assert refusal(root, policy, candidate_application="hdfs://nn/apps/app.py") == (
        "params.candidate_application: 'hdfs://nn/apps/app.py' is a URL, and this deployment "
        "allows ad-hoc applications from local roots only (builds)"
    )
    assert refusal(root, policy, candidate_application="local:/opt/app.py") == (
        "params.candidate_application: 'local:/opt/app.py' is neither a file nor an application URL"
    )


# --- ad-hoc applications by URL: under an allowed prefix, compared whole segment by segment

URL_POLICY = AdhocPolicy(
    application_roots=(
        "builds",
        "s3a://artifacts/etl/",
        "https://builds.example.com/etl",  # no trailing slash: still whole segments
        "http://plain.example.com/etl/",
        "abfss://apps@acct.dfs.core.windows.net/etl/",
    )
)
ALLOWED_URLS = [
    "s3a://artifacts/etl/etl-1.5.0.py",
    "s3a://artifacts/etl/nested/deeper/job.jar",
    "S3A://artifacts/etl/etl-1.5.0.py",  # the scheme is case-insensitive
    "https://builds.example.com/etl/etl-1.5.0.zip",
    "http://plain.example.com/etl/etl.py",  # http under an http prefix
    "abfss://apps@acct.dfs.core.windows.net/etl/etl.py",  # a container, not a credential
]


@pytest.mark.parametrize("url", ALLOWED_URLS)
def test_an_application_url_under_an_allowed_prefix_runs_as_given(root: Path, url: str) -> None:
    made = adhoc_plan(root, URL_POLICY, candidate_application=url)
    assert made.jobs["candidate"].application == url  # the Spark task stages it
    assert made.jobs["reference"].application == str(root / "jobs" / "app.py")


OUTSIDE = (
    "is outside the URL prefixes this deployment allows ad-hoc runs (s3a://artifacts/etl/, "
    "https://builds.example.com/etl/, http://plain.example.com/etl/, "
    "abfss://apps@acct.dfs.core.windows.net/etl/)"
)
DOTS = "has a '.' or '..' segment or an encoded separator"
REFUSED_URLS = [
    ("s3a://artifacts/etl-evil/x.py", OUTSIDE),  # a prefix of the name, not of the segments
    ("s3a://artifacts/etl", "is not a .py, .jar or .zip file"),
    ("s3a://artifacts/etl/../x.py", DOTS),
    ("s3a://artifacts/etl/./x.py", DOTS),
    ("s3a://artifacts/etl/%2e%2E/x.py", DOTS),
    ("s3a://artifacts/etl/..%2fx.py", DOTS),
    ("s3a://artifacts.evil.com/etl/x.py", OUTSIDE),
    ("s3a://artifacts:9000/etl/x.py", OUTSIDE),
    ("s3://artifacts/etl/x.py", OUTSIDE),  # another scheme is another place
    ("http://builds.example.com/etl/x.py", OUTSIDE),  # http is not under an https prefix
    ("https://builds.example.com/etl-old/x.py", OUTSIDE),
    ("https://builds.example.com.evil.com/etl/x.py", OUTSIDE),
    ("https://builds.example.com@evil.com/etl/x.py",
     "holds credentials (give them to the workers' environment instead)"),
    ("s3a://AKIA:secret@artifacts/etl/x.py",
     "holds credentials (give them to the workers' environment instead)"),
    ("s3a://artifacts/etl/x.py?versionId=3", "has a query or a fragment"),
    ("https://builds.example.com/etl/x.py#frag", "has a query or a fragment"),
    ("s3a://artifacts/etl/x.sh", "is not a .py, .jar or .zip file"),
    ("s3a://artifacts/etl/", "names a folder, not a file"),
    ("ftp://artifacts/etl/x.py",
     "has an unknown scheme (expected one of: s3a, s3, gs, hdfs, abfs, abfss, https, http)"),
    ("file:///opt/builds/x.py",
     "has an unknown scheme (expected one of: s3a, s3, gs, hdfs, abfs, abfss, https, http)"),
    ("s3a:///etl/x.py", "names no bucket or host"),
    ("s3a://artifacts/etl/x y.py", "holds a space, a control character or a backslash"),
]  # fmt: skip


@pytest.mark.parametrize(("url", "problem"), REFUSED_URLS)
def test_application_urls_outside_the_prefixes_or_malformed_are_refused(
    root: Path, url: str, problem: str
) -> None:
    shown = url.replace("AKIA:secret@", "***@").replace("builds.example.com@", "***@")
    assert refusal(root, URL_POLICY, candidate_application=url) == (
        f"params.candidate_application: {shown!r} {problem}"
    )


def test_a_malformed_url_prefix_is_the_deployments_error(root: Path) -> None:
    policy = AdhocPolicy(application_roots=("s3a://u:pw@artifacts/etl/",))
    with pytest.raises(ConfigurationError) as info:
        adhoc_plan(root, policy, candidate_application="s3a://artifacts/etl/x.py")
    assert str(info.value) == (
        "PARITY_ADHOC_APPLICATION_ROOTS: 's3a://***@artifacts/etl/' holds credentials (give "
        "them to the workers' environment instead)"
    )


def test_url_prefixes_and_local_roots_share_the_variable() -> None:
    environ = {
        "PARITY_ADHOC_APPLICATION_ROOTS": (
            "builds:s3a://artifacts/etl/: https://builds.example.com:8443/etl/:/opt/releases:"
            "hdfs://nn:8020/apps"
        )
    }
    policy = AdhocPolicy.from_environment(environ, separator=":")
    assert policy.application_roots == (
        "builds",
        "s3a://artifacts/etl/",
        "https://builds.example.com:8443/etl/",
        "/opt/releases",
        "hdfs://nn:8020/apps",
    )


def test_the_specs_own_application_may_be_a_url(root: Path) -> None:
    text = SPEC.replace(
        "candidate:\n  application: jobs/app.py",
        "candidate:\n  application: s3a://artifacts/etl/app-1.1.py",
    ).replace(
        "reference:\n  application: jobs/app.py",
        "reference:\n  application: https://builds.example.com/etl/app-1.0.py",
    )
    made = adhoc_plan(root, NO_ADHOC, text)
    assert made.jobs["candidate"].application == "s3a://artifacts/etl/app-1.1.py"
    assert made.jobs["reference"].application == "https://builds.example.com/etl/app-1.0.py"
    assert made.jobs["rerun"].application == "https://builds.example.com/etl/app-1.0.py"
    # The trigger form's default, the spec's own URL, needs no permission, in any spelling.
    for same in ("s3a://artifacts/etl/app-1.1.py", "S3A://artifacts/etl/app-1.1.py"):
        again = adhoc_plan(root, NO_ADHOC, text, candidate_application=same)
        assert again.jobs["candidate"].application == same
    assert refusal(root, NO_ADHOC, text, candidate_application="s3a://artifacts/etl/x.py") == (
        "params.candidate_application: ad-hoc applications are disabled in this deployment "
        "(only the spec's 's3a://artifacts/etl/app-1.1.py' may run; "
        "PARITY_ADHOC_APPLICATION_ROOTS allows others)"
    )


#: a module that leaves a file beside itself when it is imported
TRAP = """\
import pathlib
pathlib.Path(__file__).with_suffix(".ran").touch()
def f(a, b):
    return a == b
"""


def test_a_function_override_is_refused_before_its_module_is_imported(root: Path) -> None:
    validations = root / "dags" / "validations"
    (validations / "adhoc_trap_module.py").write_text(TRAP)
    equality = {"function": "adhoc_trap_module:f"}

    assert refusal(root, NO_ADHOC, equality=equality) == (
        "params.equality.function: ad-hoc functions are disabled in this deployment "
        "('adhoc_trap_module:f' is not one of the spec's; PARITY_ADHOC_MODULE_PREFIXES "
        "allows modules)"
    )
    assert refusal(root, AdhocPolicy(module_prefixes=("adhoc",)), equality=equality) == (
        "params.equality.function: module 'adhoc_trap_module' is outside the module prefixes "
        "this deployment allows ad-hoc runs (adhoc)"
    )
    predicate = {"predicate": "adhoc_trap_module:f", "columns": ["taxi_id"]}
    unsampled = SPEC.replace(" sample: 0.25,", "")  # a sample needs a key; this has none
    assert refusal(root, NO_ADHOC, unsampled, dependence=predicate).startswith(
        "params.dependence.predicate: ad-hoc functions are disabled in this deployment"
    )
    assert not (validations / "adhoc_trap_module.ran").exists()
    assert "adhoc_trap_module" not in sys.modules


def test_functions_under_an_allowed_prefix_and_the_specs_own_are_used(root: Path) -> None:
    validations = root / "dags" / "validations"
    (validations / "adhoc_allowed_eq.py").write_text("def f(a, b):\n    return a == b\n")
    allowed = AdhocPolicy(module_prefixes=("adhoc_allowed_eq",))
    made = adhoc_plan(root, allowed, equality={"function": "adhoc_allowed_eq:f"})
    assert dict(made.overrides) == {"equality": {"function": "adhoc_allowed_eq:f"}}
    # The spec's own function stays in the effective spec when another section changes.
    own = SPEC.replace("dependence: {key: [taxi_id]}", "dependence: {key: [taxi_id]}\n"
                       "equality: {function: 'adhoc_allowed_eq:f'}")  # fmt: skip
    made = adhoc_plan(root, NO_ADHOC, own, dependence={"key": ["taxi_id", "kind"]})
    assert dict(made.overrides) == {"dependence": {"key": ["taxi_id", "kind"]}}


def test_the_run_type_is_read_from_the_task_sdks_enum() -> None:
    """The task SDK gives ``dag_run.run_type`` as an enum whose ``str()`` is
    ``DagRunType.SCHEDULED``: read as such, a scheduler's run was stored as ad hoc."""
    from airflow.sdk.api.datamodels._generated import DagRunType

    from parity.airflow.plan import run_type_name, trigger_of

    assert str(DagRunType.SCHEDULED) == "DagRunType.SCHEDULED"  # what was stored before
    assert run_type_name(DagRunType.SCHEDULED) == "scheduled"
    assert [trigger_of(t) for t in DagRunType] == [
        "scheduled" if t.value in ("scheduled", "backfill") else "adhoc" for t in DagRunType
    ]
    assert (trigger_of(DagRunType.SCHEDULED), trigger_of(DagRunType.MANUAL)) == (
        "scheduled",
        "adhoc",
    )
    assert (trigger_of("scheduled"), trigger_of("backfill"), trigger_of("manual")) == (
        "scheduled",
        "scheduled",
        "adhoc",
    )


def test_parity_s_own_jobs_take_the_specs_spark_settings(root: Path) -> None:
    """Issue 16: the slice, match and expectations jobs get ``airflow.spark_conf``; the match
    ``airflow.match_conf`` over it; the slice keeps its UTC zone; keys Spark ignores are
    refused in one line."""
    from parity.airflow.operators import expectations_job

    text = SPEC.replace(
        'schedule: "0 2 * * *"',
        'schedule: "0 2 * * *"\n'
        "airflow:\n"
        "  spark_conf: {spark.executor.memory: 4g, spark.sql.session.timeZone: Europe/Paris}\n"
        '  match_conf: {spark.executor.memory: 8g, spark.sql.shuffle.partitions: "400"}\n',
    )
    made = plan(root, text=text)
    assert made.jobs["slice"].conf == {
        "spark.executor.memory": "4g",
        "spark.sql.session.timeZone": "UTC",
    }
    assert made.jobs["match"].conf == {
        "spark.executor.memory": "8g",
        "spark.sql.session.timeZone": "Europe/Paris",
        "spark.sql.shuffle.partitions": "400",
    }
    conf = spec_at(root, text).airflow.spark_conf
    assert expectations_job(made, root, conf).conf == conf
    assert made.jobs["reference"].conf == {"spark.sql.shuffle.partitions": "8"}  # its own
    bad = text.replace("spark.executor.memory: 4g", "executor.memory: 4g")
    with pytest.raises(SpecError, match=r"airflow\.spark_conf.*executor\.memory.*spark"):
        spec_at(root, bad)


# --- on a cluster: the project's code for the executors (issue 16) -------------------------


def test_the_master_is_the_spark_providers(root: Path) -> None:
    from parity.airflow.operators import master_url

    assert [
        master_url("spark", "local[2]", None),
        master_url("spark", "spark://10.0.0.5:7077", None),
        master_url("spark", "spark://10.0.0.5", 7077),
        master_url("spark", "yarn", None),
        master_url("spark", "k8s://https://api.example:6443", None),
        master_url("spark", "10.0.0.5", 7077),
        master_url("k8s", "https://api.example", 6443),
    ] == [
        "local[2]",
        "spark://10.0.0.5:7077",
        "spark://10.0.0.5:7077",
        "yarn",
        "k8s://https://api.example:6443",
        "spark://10.0.0.5:7077",
        "k8s://https://api.example:6443",
    ]


def test_on_a_cluster_parity_s_own_jobs_and_the_bundled_apps_ship_the_project(
    root: Path, tmp_path_factory: Any
) -> None:
    """Parity's own jobs (and applications inside the project's packages) are submitted with
    the project's zip for their executors; a user's application keeps its own ``py_files``;
    on ``local[...]`` nothing changes and nothing is built."""
    from parity.airflow.operators import expectations_job, submitted_job
    from parity.runs.package import ProjectCode
    from parity.runs.submits import spark_submit_argv

    made = plan(root)
    run = made.run_dir
    project = tmp_path_factory.mktemp("project")
    (project / "jobs").mkdir()
    (project / "jobs" / "__init__.py").write_text("")
    code = ProjectCode((("jobs", str(project / "jobs")),))
    cache = root / "home" / "packages"
    bundle = f"{cache}/parity-8bd959f3071b440f.zip"
    master = "spark://10.0.0.5:7077"

    def submit(job: Any, own: bool, on: str = master) -> list[str]:
        shipped = submitted_job(job, own=own, master=on, code=code, cache_dir=cache)
        return spark_submit_argv(shipped, spark_submit="spark-submit", master=on)

    match = job_for(made, "match", task_try=1)  # its arguments: asserted whole above
    assert submit(match, own=True) == [
        *("spark-submit", "--master", master, "--name", "parity-nightly-match"),
        *("--conf", f"spark.archives={bundle}#parity-code"),
        *("--conf", "spark.executorEnv.PYTHONPATH=parity-code"),
        *match.argv(),
    ]
    assert submit(made.jobs["slice"], own=True) == [
        *("spark-submit", "--master", master, "--name", "parity-nightly-slice"),
        *("--conf", "spark.sql.session.timeZone=UTC"),
        *("--conf", f"spark.archives={bundle}#parity-code"),
        *("--conf", "spark.executorEnv.PYTHONPATH=parity-code"),
        *made.jobs["slice"].argv(),
    ]
    assert submit(expectations_job(made, root), own=True) == [
        *("spark-submit", "--master", master, "--name", "parity-nightly-expectations"),
        *("--conf", f"spark.archives={bundle}#parity-code"),
        *("--conf", "spark.executorEnv.PYTHONPATH=parity-code"),
        str(root / "jobs/check_expectations.py"),
        *("--run-id", made.run_id, "--spec", made.spec_file),
        *("--candidate", f"{run}/candidate", "--reference", f"{run}/reference"),
        *("--report-dir", f"{run}/report", "--root", str(root)),
    ]
    assert [p.name for p in cache.iterdir()] == ["parity-8bd959f3071b440f.zip"]
    # The user's application (not in the project's packages): its own py_files only.
    assert submit(made.jobs["candidate"], own=False) == [
        *("spark-submit", "--master", master, "--name", "parity-nightly-candidate"),
        *("--py-files", str(root / "lib/helpers.zip")),
        *made.jobs["candidate"].argv(),
    ]
    # An application inside the project's packages (a bundled example) imports it.
    example = replace(made.jobs["reference"], application=str(project / "jobs" / "app.py"))
    assert submit(example, own=False) == [
        *("spark-submit", "--master", master, "--name", "parity-nightly-reference"),
        *("--conf", "spark.sql.shuffle.partitions=8"),
        *("--conf", f"spark.archives={bundle}#parity-code"),
        *("--conf", "spark.executorEnv.PYTHONPATH=parity-code"),
        str(project / "jobs" / "app.py"),
        *made.jobs["reference"].args,
    ]
    # local[...]: the executors are the driver's threads; nothing to ship, nothing built.
    local_cache = root / "local-packages"
    for on in ("local[2]", "local[*]", "local"):
        job = job_for(made, "match", task_try=1)
        assert submitted_job(job, own=True, master=on, code=code, cache_dir=local_cache) == job
    assert not local_cache.exists()
