"""What one run of a validation does, decided before any Spark job starts: a ``RunPlan``.

    plan = plan_run(spec, RunContext(dag_id, dag_run_id, "manual", params={...}),
                    root=repo, home=parity_home)
    plan.jobs["candidate"].argv()   # [application, *args] as spark-submit gets them

The Airflow DAG (``parity.airflow.factory``) calls ``plan_run`` in its first task: the run's
parameters are checked here (an ad-hoc run's window, candidate, sample, overrides), the
slice window is fixed (the parameters', else the spec's fixed window, else the run's data
interval), every job's application and arguments are built, and the run gets its own
workspace, ``<workspace root>/<dag_id>/<run>/`` with ``slice/``, ``reference/``,
``candidate/``, ``rerun/`` and ``report/``. The root is ``$PARITY_WORKSPACE`` when the
deployment sets it, a path or any URI Spark writes to (``hdfs://``, ``s3a://``, ...: shared
storage, so that tasks on different workers see one workspace), else
``$PARITY_HOME/runs``. The plan travels to the Spark tasks as JSON (an
XCom), so every task of the run sees the same decisions.

Who may trigger a run may not thereby run code of their choosing on the workers: an ad-hoc
run's ``candidate_application``, and any ``module:function`` its ``dependence`` or
``equality`` names, must be the spec's own unless the deployment allows others
(``AdhocPolicy``: application roots in ``PARITY_ADHOC_APPLICATION_ROOTS``, module prefixes
in ``PARITY_ADHOC_MODULE_PREFIXES``, set where the workers run, never by a trigger). A root
may be a URL prefix (``s3a://artifacts/etl/``, ``https://builds.example.com/etl/``): a CI job
then names the build it just made by its artifact URL, which the Spark task stages to a
local file before ``spark-submit`` (``parity.runs.artifacts``); the spec's own applications
may be URLs too::

    PARITY_ADHOC_APPLICATION_ROOTS=/opt/builds:s3a://artifacts/etl/

A run whose parameters replace the spec's ``equality`` or ``dependence`` with a different
section is recorded with them (``RunPlan.overridden``, stored with the run): its verdict
answers under rules the trigger chose, and the gate stays closed on it unless the spec's
``gate.allow_overrides`` says otherwise (``matcher.gate``). An override equal to the spec's
own section changes nothing and is not counted.

Pure: no Airflow, no Spark, no storage access except ``prepare_workspace``, the
existence checks of ``check_files`` and the resolution of an ad-hoc application's path.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import ValidationError

from matcher import uris
from matcher.errors import ConfigurationError, SpecError
from matcher.files import locations
from matcher.gate import OVERRIDABLE
from matcher.spec import ApplicationSpec, Spec, function_refs, parse_spec, parse_yaml
from matcher.spec_problems import first_problem
from matcher.store.run_ids import pipeline_run_id
from parity.runs import artifacts
from parity.runs.submits import SparkJob, build_app_job, build_slice_job, is_local, resolve_path

#: The parameters an ad-hoc run may give (the DAG's ``Param``s); ``None`` keeps the spec's.
PARAMS = (
    "candidate_application",
    "candidate_args",
    "candidate_version",
    "window_start",
    "window_end",
    "sample",
    "dependence",
    "equality",
)
#: The workspace's directories, one per job output (``report`` is the match's).
DIRECTORIES = ("slice", "reference", "candidate", "rerun", "report")


#: the deployment's allowlists for ad-hoc code: application roots (local paths, relative ones
#: to the repository, and URL prefixes, separated by ``os.pathsep``) and module prefixes
#: (separated by ``,``)
ROOTS_VARIABLE = "PARITY_ADHOC_APPLICATION_ROOTS"
#: where run workspaces go: a path or a Hadoop-compatible URI (default ``$PARITY_HOME/runs``)
WORKSPACE_VARIABLE = "PARITY_WORKSPACE"
MODULES_VARIABLE = "PARITY_ADHOC_MODULE_PREFIXES"

#: the task whose XCom is the run's plan (``RunPlan.to_dict``)
PLAN_TASK = "plan"


@dataclass(frozen=True, slots=True)
class AdhocPolicy:
    """The code an ad-hoc run may use instead of the spec's: applications under
    ``application_roots`` (local roots, symbolic links resolved, and URL prefixes such as
    ``s3a://artifacts/etl/``), functions in modules under ``module_prefixes``; empty (the
    default): none, only the spec's own."""

    application_roots: tuple[str, ...] = ()
    module_prefixes: tuple[str, ...] = ()

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] = os.environ, separator: str = os.pathsep
    ) -> AdhocPolicy:
        """The policy the deployment set in the workers' environment (roots separated by
        ``separator``; a URL's ``scheme://`` and ``:port`` are not separators)."""
        prefixes = environ.get(MODULES_VARIABLE, "").split(",")
        return cls(
            artifacts.split_entries(environ.get(ROOTS_VARIABLE, ""), separator),
            tuple(p.strip().rstrip(".") for p in prefixes if p.strip().rstrip(".")),
        )

    def check_application(self, given: str, own: str, root: Path) -> None:
        """Refuse ``given`` (a run's ``candidate_application``) unless it is the spec's own
        application, a file under an allowed root or a URL under an allowed prefix."""
        where = "params.candidate_application"
        if _same_file(given, own, root):
            return
        if not self.application_roots:
            raise SpecError(
                f"{where}: ad-hoc applications are disabled in this deployment (only the "
                f"spec's {own!r} may run; {ROOTS_VARIABLE} allows others)"
            )
        if artifacts.is_url(given):
            self._check_url(where, given)
            return
        if not is_local(given):
            raise SpecError(f"{where}: {given!r} is neither a file nor an application URL")
        target = Path(resolve_path(given, root)).resolve()
        roots = [(root / r).resolve() for r in self.application_roots if is_local(r)]
        if not any(target.is_relative_to(r) for r in roots):
            raise SpecError(
                f"{where}: {given!r} is outside the application roots this deployment allows "
                f"ad-hoc runs ({', '.join(self.application_roots)})"
            )

    def _check_url(self, where: str, given: str) -> None:
        """Refuse an application URL that is malformed or not under an allowed prefix
        (``parity.runs.artifacts``: whole segments, no ``..``, no credentials)."""
        shown = artifacts.shown(given)
        try:
            url = artifacts.parse_url(given)
        except ValueError as exc:
            raise SpecError(f"{where}: {shown!r} {exc}") from None
        prefixes = [r for r in self.application_roots if artifacts.is_url(r)]
        if not prefixes:
            raise SpecError(
                f"{where}: {shown!r} is a URL, and this deployment allows ad-hoc applications "
                f"from local roots only ({', '.join(self.application_roots)})"
            )
        allowed = []
        for prefix in prefixes:
            try:
                allowed.append(artifacts.parse_prefix(prefix))
            except ValueError as exc:
                shown_prefix = artifacts.shown(prefix)
                raise ConfigurationError(f"{ROOTS_VARIABLE}: {shown_prefix!r} {exc}") from None
        if not any(url.is_under(prefix) for prefix in allowed):
            raise SpecError(
                f"{where}: {shown!r} is outside the URL prefixes this deployment allows "
                f"ad-hoc runs ({', '.join(str(p) for p in allowed)})"
            )

    def check_function(self, where: str, ref: str) -> None:
        """Refuse a ``module:function`` the spec does not name, unless its module is under
        an allowed prefix."""
        module = ref.partition(":")[0]
        if not self.module_prefixes:
            raise SpecError(
                f"{where}: ad-hoc functions are disabled in this deployment ({ref!r} is not "
                f"one of the spec's; {MODULES_VARIABLE} allows modules)"
            )
        if not any(module == p or module.startswith(f"{p}.") for p in self.module_prefixes):
            raise SpecError(
                f"{where}: module {module!r} is outside the module prefixes this deployment "
                f"allows ad-hoc runs ({', '.join(self.module_prefixes)})"
            )


@dataclass(frozen=True, slots=True)
class RunContext:
    """What the orchestrator knows about the run: its ids, its type, its data interval, and
    the parameters it was triggered with."""

    dag_id: str
    dag_run_id: str
    run_type: str = "manual"
    interval_start: dt.datetime | None = None
    interval_end: dt.datetime | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    #: when the DAG run started: the stored run's start, so that its duration is the
    #: pipeline's (slice, applications, match), not the match job's alone
    started_at: dt.datetime | None = None

    @property
    def trigger(self) -> str:
        """``scheduled`` for the scheduler's runs (and backfills), ``adhoc`` otherwise."""
        return trigger_of(self.run_type)


def run_type_name(run_type: Any) -> str:
    """A DAG run's type as its value (``scheduled``). The task SDK gives an enum, whose
    ``str()`` is ``DagRunType.SCHEDULED``: stored as such, every run would read as ad hoc."""
    return str(getattr(run_type, "value", run_type))


def trigger_of(run_type: Any) -> str:
    """``scheduled`` for the scheduler's runs (and backfills), ``adhoc`` otherwise."""
    return "scheduled" if run_type_name(run_type) in ("scheduled", "backfill") else "adhoc"


@dataclass(frozen=True, slots=True)
class Window:
    """The replayed time range ``[start, end)`` and what chose it."""

    start: dt.datetime
    end: dt.datetime
    source: str  # "params", "spec" or "data interval"


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Everything a run decided up front; ``to_dict``/``from_dict`` carry it between tasks."""

    validation: str
    run_id: str
    run_dir: str
    trigger: str
    spec_file: str
    overrides: Mapping[str, Any]
    slice: Mapping[str, Any]
    reference_version: str | None
    candidate_version: str | None
    jobs: Mapping[str, SparkJob]
    #: the sections of ``overrides`` that differ from the spec's own (``OVERRIDABLE``
    #: order): what the run is stored with, and what closes its gate
    overridden: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        document = {f.name: getattr(self, f.name) for f in fields(self)}
        document["overrides"] = dict(self.overrides)
        document["overridden"] = list(self.overridden)
        document["slice"] = dict(self.slice)
        document["jobs"] = {name: job.to_dict() for name, job in self.jobs.items()}
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunPlan:
        values = dict(data)
        values["overrides"] = MappingProxyType(dict(data["overrides"]))
        # A plan from before ``overridden`` existed: every override counts (the safe side).
        values["overridden"] = tuple(data.get("overridden", sorted(data["overrides"])))
        values["slice"] = MappingProxyType(dict(data["slice"]))
        values["jobs"] = MappingProxyType(
            {name: SparkJob.from_dict(job) for name, job in data["jobs"].items()}
        )
        return cls(**values)

    def path(self, directory: str) -> str:
        return uris.join(self.run_dir, directory)


def plan_run(
    spec: Spec,
    context: RunContext,
    *,
    root: Path,
    home: Path,
    adhoc: AdhocPolicy | None = None,
    workspace_root: str | None = None,
) -> RunPlan:
    """The run's plan; a bad parameter or an unusable spec is a one-line ``SpecError``
    (``params.window_end: ...``, ``FILE: candidate: ...``). ``adhoc``: the code the run's
    parameters may substitute (default: the deployment's, ``AdhocPolicy.from_environment``);
    ``workspace_root``: where run workspaces go (default: ``workspace_root_of(home)``)."""
    params = _check_params(context.params)
    policy = AdhocPolicy.from_environment() if adhoc is None else adhoc
    reference, candidate = _applications(spec, params, policy, root)
    root_dir = workspace_root or workspace_root_of(home)
    run_dir = workspace(root_dir, context.dag_id, context.dag_run_id)
    overrides, overridden = _overrides(spec, params, root, policy)
    dirs = {name: uris.join(run_dir, name) for name in DIRECTORIES}
    chosen = _slice(spec, context, params, root)
    jobs = {
        "slice": build_slice_job(
            spec.name, chosen, dirs["slice"], run_dir, root, spec.airflow.spark_conf
        ),
        "reference": build_app_job(spec.name, "reference", reference, dirs, run_dir, root),
        "candidate": build_app_job(spec.name, "candidate", candidate, dirs, run_dir, root),
    }
    if spec.noise.reference_runs > 1:
        rerun = reference.model_copy(
            update={
                "args": (*reference.args, *spec.noise.args),
                "conf": {**reference.conf, **spec.noise.conf},
            }
        )
        jobs["rerun"] = build_app_job(spec.name, "rerun", rerun, dirs, run_dir, root)
    plan = RunPlan(
        validation=spec.name,
        run_id=pipeline_run_id(context.dag_id, context.dag_run_id),
        run_dir=run_dir,
        trigger=context.trigger,
        spec_file=_spec_file(spec, root, run_dir, overrides),
        overrides=MappingProxyType(overrides),
        slice=MappingProxyType(chosen),
        reference_version=reference.version,
        candidate_version=params.get("candidate_version") or candidate.version,
        jobs=MappingProxyType(jobs),
        overridden=overridden,
    )
    match_conf = {**spec.airflow.spark_conf, **spec.airflow.match_conf}
    jobs["match"] = _build_match_job(plan, context, root, match_conf)
    return replace(plan, jobs=MappingProxyType(jobs))


def job_for(plan: RunPlan, name: str, task_try: int | None = None) -> SparkJob:
    """The job a task submits; the match job learns the task's try number (a retry replaces
    the run's results in the store)."""
    job = plan.jobs[name]
    if name != "match" or task_try is None:
        return job
    return replace(job, args=(*job.args, "--task-try", str(task_try)))


def workspace_root_of(home: Path, environ: Mapping[str, str] = os.environ) -> str:
    """``$PARITY_WORKSPACE`` (an absolute path, ``file:///...``, or a URI of shared storage
    Spark writes to: ``uris.check_root``) when set, else ``home/runs``. Any other value is a
    one-line ``ConfigurationError`` naming the variable: a relative or malformed root would
    have runs write below whatever directory the worker runs in."""
    named = environ.get(WORKSPACE_VARIABLE, "").strip()
    if not named:
        return str(home / "runs")
    try:
        return uris.check_root(named)
    except ValueError as exc:
        raise ConfigurationError(f"{WORKSPACE_VARIABLE}: {exc}") from None


def workspace(root: str, dag_id: str, dag_run_id: str) -> str:
    """``root/<dag_id>/<run>``: the run id made safe for a file name, plus a hash of the
    raw id, so that two runs never share a directory (``a:b`` and ``a+b`` differ)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", dag_run_id).strip("._") or "run"
    digest = hashlib.sha256(dag_run_id.encode()).hexdigest()[:8]
    return uris.join(root, dag_id, f"{safe[:80]}-{digest}")


def prepare_workspace(plan: RunPlan, spec_text: str | None) -> None:
    """Empty the run's workspace (a re-run of the same DAG run starts clean), write the plan
    and, when the run overrides sections, the effective spec."""
    locations.make_empty_dir(plan.run_dir)
    if spec_text is not None:
        locations.write_text(plan.spec_file, spec_text)
    document = json.dumps(plan.to_dict(), indent=2, sort_keys=True, default=str)
    locations.write_text(uris.join(plan.run_dir, "plan.json"), document + "\n")


def _spec_file(spec: Spec, root: Path, run_dir: str, overrides: Mapping[str, Any]) -> str:
    """The spec the run's jobs read: the validation's own, or the effective one (with the
    run's overrides) in the workspace."""
    return uris.join(run_dir, "spec.yaml") if overrides else str(_spec_path(spec, root))


def effective_spec_text(spec: Spec, overrides: Mapping[str, Any], root: Path) -> str | None:
    """The YAML of the spec with the run's overrides, or ``None`` when there are none."""
    if not overrides:
        return None
    data = parse_yaml(_spec_path(spec, root).read_text(encoding="utf-8"), spec.source)
    return yaml.safe_dump({**data, **overrides}, sort_keys=False)


def check_files(plan: RunPlan, spec: Spec, root: Path) -> None:
    """Fail before Spark starts when an application or the capture is not there (URLs, such
    as ``hdfs://`` or ``s3a://``, are left to the Spark tasks: an application URL is staged
    by its task, ``parity.runs.artifacts``)."""
    for name, job in plan.jobs.items():
        key = {"rerun": "reference", "slice": "input.path"}.get(name, name)
        for path, what in (
            (job.application, "application"),
            *((p, "py_files") for p in job.py_files),
        ):
            if is_local(path) and not Path(path).exists():
                where = f"{key}.{what}" if name not in ("slice", "match") else key
                raise SpecError(f"{spec.source}: {where}: no such file: {path}")
    capture = str(plan.slice["capture"])
    if is_local(capture) and not Path(capture).exists():
        hint = " (generate the captures first: python -m jobs.examples.generate)"
        raise SpecError(f"{spec.source}: input.path: no such capture: {capture}{hint}")


# --- building blocks ----------------------------------------------------------------------


def _check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters' shapes (the DAG's ``Param`` schemas check them too, but a run started
    another way, or a schema changed since, still gets a clear answer here)."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise SpecError(f"params.{unknown[0]}: unknown parameter (known: {', '.join(PARAMS)})")
    checks: dict[str, tuple[type | tuple[type, ...], str]] = {
        "candidate_application": (str, "a string"),
        "candidate_version": (str, "a string"),
        "window_start": (str, "a date-time"),
        "window_end": (str, "a date-time"),
        "candidate_args": (list, "a list of strings"),
        "sample": ((int, float), "a number"),
        "dependence": ((dict, str), "a mapping"),
        "equality": (dict, "a mapping"),
    }
    out: dict[str, Any] = {}
    for name, value in params.items():
        if value is None or value == "":
            continue
        kind, what = checks[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise SpecError(f"params.{name}: expected {what}, got {value!r}")
        out[name] = value
    if "candidate_args" in out:
        if not all(isinstance(a, str) for a in out["candidate_args"]):
            raise SpecError(
                f"params.candidate_args: expected strings, got {out['candidate_args']!r}"
            )
        out["candidate_args"] = tuple(out["candidate_args"])
    if "sample" in out and not 0 < out["sample"] <= 1:
        raise SpecError(f"params.sample: expected 0 < sample <= 1, got {out['sample']!r}")
    return out


def _applications(
    spec: Spec, params: Mapping[str, Any], policy: AdhocPolicy, root: Path
) -> tuple[ApplicationSpec, ApplicationSpec]:
    """The reference and the candidate, with the run's candidate application (if the policy
    allows it) and arguments."""
    for section in ("reference", "candidate", "input"):
        if getattr(spec, section) is None:
            raise SpecError(f"{spec.source}: {section}: required by the Airflow pipeline")
    assert spec.reference is not None and spec.candidate is not None
    if "candidate_application" in params:
        policy.check_application(params["candidate_application"], spec.candidate.application, root)
    update = {
        key: params[f"candidate_{key}"]
        for key in ("application", "args")
        if f"candidate_{key}" in params
    }
    if not update:
        return spec.reference, spec.candidate
    try:
        candidate = ApplicationSpec.model_validate({**spec.candidate.model_dump(), **update})
    except ValidationError as exc:
        raise SpecError(f"params.candidate_{first_problem(exc, ApplicationSpec)}") from exc
    return spec.reference, candidate


def _overrides(
    spec: Spec, params: Mapping[str, Any], root: Path, policy: AdhocPolicy
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The sections the run overrides, validated as the whole spec would be (an equality
    must still suit the dependence), so that a bad one fails before Spark starts, and those
    of them that differ from the spec's own once parsed (``OVERRIDABLE`` order). Their
    functions are checked against the policy before any is imported: importing runs code."""
    overrides = {k: params[k] for k in ("dependence", "equality") if k in params}
    if not overrides:
        return overrides, ()
    path = _spec_path(spec, root)
    data = {**parse_yaml(path.read_text(encoding="utf-8"), spec.source), **overrides}
    source = f"params ({' and '.join(overrides)} over {spec.source})"
    for key, ref in function_refs(data, source).items():
        if ref not in spec.functions:
            policy.check_function(f"params.{key}", ref)
    effective = parse_spec(data, source, base_dir=path.parent)
    changed = {k for k in overrides if getattr(effective, k) != getattr(spec, k)}
    return overrides, tuple(k for k in OVERRIDABLE if k in changed)


def _same_file(given: str, own: str, root: Path) -> bool:
    """``given`` names the spec's application ``own`` (the same text, the same file, or the
    same URL in its normal form)."""
    if given == own:
        return True
    if artifacts.is_url(given) and artifacts.is_url(own):
        try:
            return artifacts.parse_url(given) == artifacts.parse_url(own)
        except ValueError:
            return False
    if not (is_local(given) and is_local(own)):
        return False
    return Path(resolve_path(given, root)).resolve() == Path(resolve_path(own, root)).resolve()


def _spec_path(spec: Spec, root: Path) -> Path:
    path = Path(spec.source)
    return path if path.is_absolute() else root / path


def _slice(
    spec: Spec, context: RunContext, params: Mapping[str, Any], root: Path
) -> dict[str, Any]:
    assert spec.input is not None
    chosen = spec.input.slice
    window = _window(spec, context, params)
    sample = params.get("sample", chosen.sample if chosen is not None else None)
    key = chosen.key if chosen is not None and chosen.key is not None else spec.dependence.key
    if sample is not None and key is None:
        raise SpecError(
            "params.sample: a sample hashes key columns, and the spec names none "
            "(input.slice.key or a dependence key)"
        )
    return {
        "capture": resolve_path(spec.input.path, root),
        "format": spec.input.format,
        "column": chosen.column if chosen is not None else None,
        "start": None if window is None else window.start.isoformat(),
        "end": None if window is None else window.end.isoformat(),
        "window_source": "whole capture" if window is None else window.source,
        "sample": sample,
        "key": None if sample is None else list(key or ()),
        "files": chosen.files if chosen is not None else 4,
    }


def _window(spec: Spec, context: RunContext, params: Mapping[str, Any]) -> Window | None:
    assert spec.input is not None
    chosen = spec.input.slice
    column = chosen.column if chosen is not None else None
    given = [params.get("window_start"), params.get("window_end")]
    if any(given):
        if column is None:
            raise SpecError(
                "params.window_start: the spec's input.slice names no time column to apply a "
                "window to"
            )
        if not all(given):
            missing = "window_end" if given[0] else "window_start"
            raise SpecError(f"params.{missing}: give both window_start and window_end, or neither")
        start, end = (
            _instant(f"params.{n}", str(v))
            for n, v in zip(("window_start", "window_end"), given, strict=True)
        )
        if start >= end:
            raise SpecError(
                f"params.window_end: must be after window_start ({start.isoformat()}), "
                f"got {end.isoformat()}"
            )
        return Window(start, end, "params")
    if column is None or chosen is None:
        return None
    fixed = chosen.fixed_window()
    if fixed is not None:
        return Window(*fixed, "spec")
    low, high = context.interval_start, context.interval_end
    if low is None or high is None or low >= high:
        raise SpecError(
            f"{spec.source}: input.slice: this run has no data interval to choose the slice: "
            "trigger it with window_start and window_end (or give the spec start and end)"
        )
    return Window(low, high, "data interval")


def _instant(key: str, text: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SpecError(f"{key}: expected an ISO 8601 date-time, got {text!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _build_match_job(
    plan: RunPlan, context: RunContext, root: Path, conf: Mapping[str, str]
) -> SparkJob:
    """``jobs/match.py`` as the DAG runs it: record the verdict, let the gate decide. The
    store's URL is not an argument (it may hold a password): the job reads PARITY_DB_URL."""
    args = [
        *("--reference", plan.path("reference"), "--candidate", plan.path("candidate")),
        *("--spec", plan.spec_file, "--run-id", plan.run_id),
    ]
    if "rerun" in plan.jobs:
        args += ["--rerun-reference", plan.path("rerun")]
    args += ["--trigger", plan.trigger]
    if plan.reference_version is not None:
        args += ["--reference-version", plan.reference_version]
    if plan.candidate_version is not None:
        args += ["--candidate-version", plan.candidate_version]
    args += ["--dag-id", context.dag_id, "--dag-run-id", context.dag_run_id]
    if context.started_at is not None and context.started_at.tzinfo is not None:
        args += ["--started-at", context.started_at.isoformat()]
    args += ["--slice-json", json.dumps(dict(plan.slice), sort_keys=True, separators=(",", ":"))]
    args += ["--report-dir", plan.path("report")]
    args += ["--json-out", uris.join(plan.run_dir, "verdict.json"), "--record-only"]
    return SparkJob(
        application=str(root / "jobs" / "match.py"),
        args=tuple(args),
        conf=dict(conf),
        name=f"parity-{plan.validation}-match",
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def describe_window(chosen: Mapping[str, Any]) -> str:
    """``[2024-05-01T00:00:00+00:00, 2024-05-02T00:00:00+00:00) (params)``, for logs."""
    if chosen["start"] is None:
        return "the whole capture"
    return f"[{chosen['start']}, {chosen['end']}) ({chosen['window_source']})"
