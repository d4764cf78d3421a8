"""Airflow DAGs from validation specs: one DAG per ``dags/validations/<name>.yaml``.

    # dags/parity_validations.py
    globals().update(validation_dags(Path(__file__).parent))

Each DAG runs one validation::

    plan ─► slice_input ─┬─► run_reference ──┐
                         ├─► run_candidate ──┼─► match ─► [expectations] ─► record ─► gate
                         └─► rerun_reference ┘   (rerun only with noise.reference_runs: 2)
      └─► properties   (only with a properties: section; off the critical path)

``plan`` checks the run's parameters and fixes the slice window, the jobs' command lines
and the run's workspace (``parity.airflow.plan``) before any Spark job starts; a run it
rejects is stored as failed with its reason (``parity.airflow.rejected``). The Spark jobs are
``SparkSubmitOperator`` tasks against the spec's ``airflow.conn_id``, else the connection
``PARITY_SPARK_CONN_ID`` (default ``spark_default``); ``match`` records the verdict;
``record`` computes the gate, stores it and publishes the verdict as an event of the Asset
``parity://<name>`` (``parity.airflow.assets``); ``gate`` fails the DAG run when it is closed,
with one line and no retry. ``properties`` re-tests the operators the spec lists under
``properties:`` and stores each as a properties run (``parity.airflow.properties``); it fails
the DAG run on an error only, never the gate. Every task first points the store at the
Airflow Connection ``PARITY_DB_CONN_ID`` when one exists (``parity.airflow.connections``).

The tasks are wired by ``parity.airflow.group.add_validation_tasks``, which
``validation_group`` shares to put a validation into any DAG.

A spec that does not load, or whose DAG cannot be built (any exception at all: a bug must
not take the other validations down either), is left out here and reported by
``raise_spec_errors``, which the second DAG file, ``dags/parity_spec_errors.py``, calls:
Airflow shows import errors per file, so one bad spec becomes one import error naming its
file and the reason while the other validations' DAGs still load. Only regular files inside
the validations folder are read as specs (a link to a file elsewhere is refused unread), so
an import error never quotes a file that is not a spec.

Nothing here reads anything at import time but the spec files.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matcher.errors import SpecError
from matcher.spec import Spec, parse_duration, parse_spec, parse_yaml
from matcher.store.config import DEFAULT_HOME, HOME_VARIABLE
from matcher.store.run_ids import dag_id_for
from parity.airflow.plan import RunPlan
from parity.airflow.spec_files import one_line, read_spec_text, shown_path

CONN_VARIABLE = "PARITY_SPARK_CONN_ID"
DEFAULT_CONN_ID = "spark_default"
VALIDATIONS_VARIABLE = "PARITY_VALIDATIONS_DIR"
START_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
TAGS = ["parity", "validation"]
#: A task that fails by accident (a lost executor, a busy SQLite store) gets one more try; a
#: user's error (bad parameters, a closed gate) fails at once (AirflowFailException). A
#: retried match replaces its run in the store (same run id, next --task-try).
DEFAULT_ARGS = {"owner": "parity", "retries": 1, "retry_delay": dt.timedelta(seconds=30)}


class InvalidValidationSpecs(SpecError):
    """One or more validation specs do not load; each line names the file and the key."""


def parity_home() -> Path:
    """``PARITY_HOME`` (default ``~/.parity``): run workspaces live in its ``runs/`` unless
    ``PARITY_WORKSPACE`` puts them elsewhere (``parity.airflow.plan.workspace_root_of``)."""
    return Path(os.environ.get(HOME_VARIABLE) or DEFAULT_HOME).expanduser()


def validations_dir(dags_folder: Path) -> Path:
    """Where the specs are: ``PARITY_VALIDATIONS_DIR``, else ``<dags folder>/validations``."""
    named = os.environ.get(VALIDATIONS_VARIABLE)
    return Path(named).expanduser() if named else dags_folder / "validations"


def load_validations(directory: Path, root: Path) -> tuple[list[Spec], list[str]]:
    """Every spec in ``directory`` (``*.yaml``, ``*.yml``, by name) that loads and can run
    as a pipeline, and one line per one that does not."""
    specs: list[Spec] = []
    errors: list[str] = []
    seen: dict[str, str] = {}
    paths = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    for path in paths:
        shown = shown_path(path, root)
        try:
            text = read_spec_text(path, directory, shown)
            spec = parse_spec(parse_yaml(text, shown), shown, base_dir=path.parent)
            check_pipeline(spec)
            if spec.name in seen:
                raise SpecError(
                    f"{shown}: name: {spec.name!r} is already used by {seen[spec.name]}"
                )
        except (SpecError, OSError, UnicodeDecodeError) as exc:
            errors.append(one_line(str(exc)))
            continue
        except Exception as exc:  # a bug of the loader's: this spec's error, not the others'
            errors.append(one_line(f"{shown}: cannot be loaded: {type(exc).__name__}: {exc}"))
            continue
        seen[spec.name] = shown
        specs.append(spec)
    return specs, errors


def check_pipeline(spec: Spec) -> None:
    """What a spec needs beyond ``parity compare``: both applications (or, for a recovery
    validation, its one application), the input, and a schedule Airflow accepts."""
    needed = ("input",) if spec.recovery is not None else ("reference", "candidate", "input")
    for section in needed:
        if getattr(spec, section) is None:
            raise SpecError(f"{spec.source}: {section}: required by the Airflow pipeline")
    timetable(spec)


def timetable(spec: Spec) -> Any:
    """The spec's schedule as a timetable whose data interval is the slice window: a cron
    trigger with ``interval = input.slice.window``, else the interval between cron ticks."""
    if spec.schedule is None:
        return None
    from airflow.sdk import CronDataIntervalTimetable, CronTriggerTimetable
    from airflow.sdk.exceptions import AirflowTimetableInvalid

    chosen = spec.input.slice if spec.input is not None else None
    table: Any
    if chosen is not None and chosen.window is not None:
        table = CronTriggerTimetable(
            spec.schedule, timezone="UTC", interval=parse_duration(chosen.window)
        )
    else:
        table = CronDataIntervalTimetable(spec.schedule, timezone="UTC")
    try:
        table.validate()
    except AirflowTimetableInvalid as exc:
        raise SpecError(f"{spec.source}: schedule: {exc}") from exc
    return table


def validation_dags(dags_folder: Path) -> dict[str, Any]:
    """``{dag_id: DAG}`` for every spec that loads and builds (``dags_folder``'s parent is
    the repository root that relative paths in specs start from)."""
    dags, _ = build_validations(dags_folder)
    return dags


def build_validations(dags_folder: Path) -> tuple[dict[str, Any], list[str]]:
    """``{dag_id: DAG}`` for every spec that loads and builds, and one line per spec that
    does not load or whose DAG raised anything while it was built.

    Both DAG files call this: ``parity_validations.py`` keeps the DAGs, and
    ``parity_spec_errors.py`` the errors (Airflow may parse the two files in two
    processes, so each builds for itself). The DAGs are not auto-registered with the file
    being parsed (``auto_register=False``): the errors file defines none, and a DAG that
    failed half-way through its ``with`` block must not be registered either."""
    root = dags_folder.resolve().parent
    specs, errors = load_validations(validations_dir(dags_folder), root)
    dags: dict[str, Any] = {}
    for spec in specs:
        try:
            dag = (
                build_dag(spec, root=root)
                if spec.recovery is None
                else recovery_dag(spec, root=root)
            )
        except SpecError as exc:  # names the file and the key already
            errors.append(one_line(str(exc)))
        except Exception as exc:  # anything else: this spec's error, never the others'
            reason = f"{type(exc).__name__}: {exc}"
            errors.append(one_line(f"{spec.source}: its DAG cannot be built: {reason}"))
        else:
            dags[dag_id_for(spec.name)] = dag
    return dags, sorted(errors)


def recovery_dag(spec: Spec, *, root: Path) -> Any:
    """A recovery validation's DAG (``parity.airflow.recovery``)."""
    from parity.airflow.recovery import build_recovery_dag

    assert spec.application is not None and spec.recovery is not None
    recovery = spec.recovery
    doc = "\n".join(
        [
            f"# Parity recovery validation `{spec.name}`",
            "",
            f"Spec: `{spec.source}`",
            "",
            "| | |",
            "|---|---|",
            f"| application | `{_app(spec.application)}` |",
            f"| input | `{spec.input.path if spec.input else '-'}` |",
            f"| crashes | {recovery.crashes} of the {recovery.kill}, seed {recovery.seed} |",
            f"| check | {recovery.check} |",
            f"| schedule | `{spec.schedule or 'none (ad hoc only)'}` |",
        ]
    )
    return build_recovery_dag(
        spec,
        root=root,
        home=parity_home,
        dag_id=dag_id_for(spec.name),
        description=f"Parity: does {spec.name} recover from crashes without loss?",
        schedule=timetable(spec),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=spec.airflow.max_active_runs,
        tags=[*TAGS, "recovery"],
        doc_md=doc,
        # A retried crash loop would be another run: a step that failed stays failed.
        default_args={**DEFAULT_ARGS, "retries": 0},
        auto_register=False,  # build_validations
    )


def raise_spec_errors(dags_folder: Path) -> None:
    """Raise one ``InvalidValidationSpecs`` listing every spec that does not load or whose
    DAG cannot be built."""
    _, errors = build_validations(dags_folder)
    if len(errors) == 1:
        raise InvalidValidationSpecs(errors[0])
    if errors:
        lines = "\n".join(errors)
        raise InvalidValidationSpecs(f"{len(errors)} validation specs do not load:\n{lines}")


def build_dag(spec: Spec, *, root: Path, conn_id: str | None = None) -> Any:
    """The validation's DAG (see the module docstring for its tasks); its Spark tasks
    submit to ``conn_id``, else the spec's connection (``parity.airflow.group.spark_conn_id``)."""
    from airflow.sdk import DAG

    from parity.airflow.group import add_validation_tasks, spark_conn_id, task_defaults
    from parity.airflow.tasks import params_for

    with DAG(
        dag_id=dag_id_for(spec.name),
        description=f"Parity: is {spec.name}'s candidate equivalent to its reference?",
        schedule=timetable(spec),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=spec.airflow.max_active_runs,
        tags=TAGS,
        doc_md=dag_doc(spec),
        params=params_for(spec),
        default_args=task_defaults(DEFAULT_ARGS),
        auto_register=False,  # build_validations
    ) as dag:
        add_validation_tasks(spec, root=root, conn_id=conn_id or spark_conn_id(spec))
    return dag


def show_running(made: RunPlan, spec: Spec, started_at: dt.datetime | None) -> None:
    """Store the run as running from its DAG run's start, so that the history shows it while
    its slice and applications run, not only once the match starts (the match job replaces
    this record with its own; the record task fails it if a job before the match fails). Its
    lease covers the tasks before the match: the slice and up to three applications, one
    after another when the pool allows one at a time, each within the task time limit."""
    from matcher.store import Store
    from parity.airflow.gate import plan_start

    lease = 4 * spec.airflow.execution_timeout().total_seconds() + 600
    with Store.open() as store:
        store.start_run(plan_start(made, started_at, spec=spec), lease=lease)


def dag_doc(spec: Spec) -> str:
    """The DAG's page text: what it compares, on what, and how to run it ad hoc."""
    assert spec.reference is not None and spec.candidate is not None and spec.input is not None
    chosen = spec.input.slice
    window = "the whole capture"
    if chosen is not None and chosen.column is not None:
        fixed = chosen.fixed_window()
        window = (
            f"`{chosen.column}` in [{fixed[0].isoformat()}, {fixed[1].isoformat()})"
            if fixed is not None
            else f"`{chosen.column}` in the run's data interval"
        )
    sample = (
        "" if chosen is None or chosen.sample is None else f", keys sampled at {chosen.sample:g}"
    )
    runs = spec.noise.reference_runs
    lines = [
        f"# Parity validation `{spec.name}`",
        "",
        f"Spec: `{spec.source}`",
        "",
        "| | |",
        "|---|---|",
        f"| reference | `{_app(spec.reference)}` |",
        f"| candidate | `{_app(spec.candidate)}` |",
        f"| input | `{spec.input.path}` ({spec.input.format or 'format from the files'}) |",
        f"| slice | {window}{sample} |",
        f"| dependence | `{spec.build_dependence().describe()}` |",
        f"| noise | reference run {runs} time{'s' if runs > 1 else ''} |",
        f"| schedule | `{spec.schedule or 'none (ad hoc only)'}` |",
        "",
        "Trigger with parameters to run ad hoc: another candidate application, arguments or "
        "version, a slice window, a sample fraction, or another dependence or equality. "
        "The `gate` task fails when the verdict does not pass the spec's gate policy.",
    ]
    return "\n".join(lines)


def _app(app: Any) -> str:
    version = f" (version {app.version})" if app.version else ""
    return " ".join([app.application, *app.args]) + version


TASK_DOCS: Mapping[str, str] = {
    "plan": "Checks the run's parameters; fixes the slice window, the jobs and the workspace.",
    "slice_input": "Materialises the input slice from the capture (jobs/slice.py).",
    "run_reference": "Runs the reference application on the slice.",
    "run_candidate": "Runs the candidate application on the slice.",
    "rerun_reference": "Runs the reference again with other partitioning, to measure noise.",
    "match": "Matches the outputs (jobs/match.py) and records the verdict in the store.",
    "record": "Computes the gate from the verdict and the spec's gate policy; stores it.",
    "gate": "Fails the DAG run when the gate is closed.",
}
