"""The ``spark-submit`` jobs of a validation run, as values: ``SparkJob`` and the pure
functions that build the slice job's and the applications' command lines.

    build_app_job("taxi", "candidate", spec.candidate, dirs, run_dir, root).argv()
    # ['/repo/jobs/examples/taxi.py', '--variant', 'parallel', '--input', RUN/slice, ...]

``parity.airflow.plan`` assembles a comparison's jobs from these and the DAG's Spark tasks
submit them; ``parity.recovery`` starts (and kills) a streaming job's ``spark-submit`` itself
(``spark_submit_argv``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from matcher import uris
from matcher.spec import ApplicationSpec, placeholders

SLICE_CONF = {"spark.sql.session.timeZone": "UTC"}


@dataclass(frozen=True, slots=True)
class SparkJob:
    """One ``spark-submit``: the application, its arguments and Spark configuration."""

    application: str
    args: tuple[str, ...]
    conf: Mapping[str, str] = field(default_factory=dict)
    name: str = "parity"
    py_files: tuple[str, ...] = ()
    jars: tuple[str, ...] = ()
    main_class: str | None = None

    def argv(self) -> list[str]:
        return [self.application, *self.args]

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "args": list(self.args),
            "conf": dict(self.conf),
            "py_files": list(self.py_files),
            "jars": list(self.jars),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SparkJob:
        return cls(
            application=data["application"],
            args=tuple(data["args"]),
            conf=dict(data["conf"]),
            name=data["name"],
            py_files=tuple(data["py_files"]),
            jars=tuple(data["jars"]),
            main_class=data["main_class"],
        )


def build_slice_job(
    validation: str,
    chosen: Mapping[str, Any],
    out: str,
    run_dir: str,
    root: Path,
    conf: Mapping[str, str] | None = None,
) -> SparkJob:
    """``jobs/slice.py`` for the slice ``chosen`` (``RunPlan.slice``): the capture, the
    window, the sample, the number of files; its summary goes to ``run_dir/slice.json``."""
    args = ["--capture", str(chosen["capture"]), "--out", out]
    if chosen["format"] is not None:
        args += ["--format", str(chosen["format"])]
    if chosen["start"] is not None:
        args += ["--column", str(chosen["column"])]
        args += ["--start", chosen["start"], "--end", chosen["end"]]
    if chosen["sample"] is not None:
        args += ["--sample", repr(float(chosen["sample"])), "--key", ",".join(chosen["key"])]
    args += ["--files", str(chosen["files"]), "--summary-json", uris.join(run_dir, "slice.json")]
    return SparkJob(
        application=str(root / "jobs" / "slice.py"),
        args=tuple(args),
        conf={**(conf or {}), **SLICE_CONF},  # the slice's zone is not the user's to change
        name=f"parity-{validation}-slice",
    )


def build_app_job(
    validation: str,
    role: str,
    app: ApplicationSpec,
    dirs: Mapping[str, str],
    run_dir: str,
    root: Path,
) -> SparkJob:
    """The reference, candidate or rerun application on the slice: placeholders filled in,
    or ``--input SLICE --output OUT`` appended when the arguments name neither.
    ``{checkpoint}`` is ``dirs["checkpoint"]``, else ``RUN_DIR/checkpoint``."""
    values = {
        "input": dirs["slice"],
        "output": dirs[role],
        "run_dir": run_dir,
        "checkpoint": dirs.get("checkpoint", uris.join(run_dir, "checkpoint")),
    }
    used: set[str] = set()
    for arg in app.args:
        used |= placeholders(arg)
    args = [arg.format(**values) for arg in app.args]
    if not used & {"input", "output"}:
        args += ["--input", values["input"], "--output", values["output"]]
    return SparkJob(
        application=resolve_path(app.application, root),
        args=tuple(args),
        conf=dict(app.conf),
        name=f"parity-{validation}-{role}",
        py_files=tuple(resolve_path(p, root) for p in app.py_files),
        jars=tuple(resolve_path(p, root) for p in app.jars),
        main_class=app.main_class,
    )


def spark_submit_argv(job: SparkJob, *, spark_submit: str, master: str) -> list[str]:
    """The ``spark-submit`` command line that runs ``job`` on ``master`` (what Airflow's
    Spark hook builds from the same fields, for callers that start the process themselves)."""
    argv = [spark_submit, "--master", master, "--name", job.name]
    for key, value in job.conf.items():
        argv += ["--conf", f"{key}={value}"]
    if job.py_files:
        argv += ["--py-files", ",".join(job.py_files)]
    if job.jars:
        argv += ["--jars", ",".join(job.jars)]
    if job.main_class is not None:
        argv += ["--class", job.main_class]
    return [*argv, *job.argv()]


def resolve_path(path: str, root: Path) -> str:
    """A spec's path: absolute, or relative to the repository root; URLs stay as they are."""
    if not is_local(path):
        return path
    return str(Path(path) if Path(path).is_absolute() else root / path)


def is_local(path: str) -> bool:
    return "://" not in path and not path.startswith("local:")
