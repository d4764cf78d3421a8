"""A validation inside any DAG: ``validation_group``, and the task wiring it shares with each
validation's own DAG (``parity.airflow.factory.build_dag`` calls ``add_validation_tasks``).

    from parity.airflow.group import validation_group

    with DAG("release", schedule=None, start_date=..., catchup=False):
        built = build()   # a @task returning {"application": "...", "version": "1.5.0"}
        checked = validation_group(
            "maxrow_wellformed",
            candidate_application=built["application"],
            candidate_version=built["version"],
        )
        checked >> deploy()   # runs only when the gate is open

The arguments may be values or ``XComArg``s of upstream tasks, rendered when the ``plan``
task runs; they take the place of the validation DAG's trigger parameters (``None``: the
spec's own), and are checked as those are (an application not the spec's runs only under
``PARITY_ADHOC_APPLICATION_ROOTS``). The spec is ``<validation>.yaml`` of the validations
folder (``PARITY_VALIDATIONS_DIR``, else ``<dags folder>/validations``).

The group holds the validation's tasks (module docstring of ``parity.airflow.factory``); its
run is stored under the DAG run's id (``DAG_ID/DAG_RUN_ID``), so a DAG holds one validation
group. The group keeps its tasks' ids unprefixed (``plan``, ``match``, ``gate``): the Spark
operators find the run's plan by the ``plan`` task's id. Its leaves are ``gate`` (and
``properties`` when the spec has them), so ``group >> deploy`` runs ``deploy`` only when the
gate is open (``gate.on_closed: warn`` skips it, which skips ``deploy`` too).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matcher.errors import ParityError, SpecError
from matcher.spec import Spec
from parity.airflow.plan import PARAMS, PLAN_TASK, RunContext, RunPlan, run_type_name

#: the group's tasks keep their ids (see the module docstring)
PREFIX_GROUP_ID = False
#: the values a group's caller may give in place of the trigger parameters
GIVEN = ("candidate_application", "candidate_version", "candidate_args")


def validation_group(
    validation: str,
    *,
    candidate_application: Any = None,
    candidate_version: Any = None,
    candidate_args: Any = None,
    group_id: str | None = None,
    dags_folder: Path | str | None = None,
) -> Any:
    """A ``TaskGroup`` running the validation ``validation`` in the DAG being defined, on
    the candidate given (values or ``XComArg``s; ``None``: the spec's)."""
    from airflow.sdk import TaskGroup

    from parity.airflow.factory import DEFAULT_ARGS

    folder = Path(dags_folder) if dags_folder is not None else default_dags_folder()
    spec, root = find_validation(validation, folder)
    given = {
        "candidate_application": candidate_application,
        "candidate_version": candidate_version,
        "candidate_args": candidate_args,
    }
    defaults: Any = task_defaults(DEFAULT_ARGS)
    with TaskGroup(
        group_id=group_id or f"parity_{validation}",
        prefix_group_id=PREFIX_GROUP_ID,
        tooltip=f"Parity: is {validation}'s candidate equivalent to its reference?",
        default_args=defaults,
    ) as group:
        add_validation_tasks(spec, root=root, conn_id=spark_conn_id(spec), given=given)
    return group


def default_dags_folder() -> Path:
    """Airflow's ``[core] dags_folder``."""
    from airflow.sdk.configuration import conf

    return Path(conf.get("core", "dags_folder")).expanduser()


def has_validation(validation: str, dags_folder: Path) -> bool:
    """Whether the validations folder has a spec named ``validation`` that loads (the
    bundled example DAGs are defined only where theirs is)."""
    try:
        find_validation(validation, dags_folder)
    except SpecError:
        return False
    return True


def find_validation(validation: str, dags_folder: Path) -> tuple[Spec, Path]:
    """The spec named ``validation`` and the repository root its paths start from; a
    one-line ``SpecError`` when there is none, naming the folder (or the spec's error)."""
    from parity.airflow.factory import load_validations, validations_dir

    root = dags_folder.resolve().parent
    folder = validations_dir(dags_folder)
    specs, errors = load_validations(folder, root)
    for spec in specs:
        if spec.name == validation:
            return spec, root
    mine = [e for e in errors if Path(e.partition(":")[0]).stem == validation]
    if mine:
        raise SpecError(mine[0])
    raise SpecError(f"no validation {validation!r} in {folder}")


def task_defaults(defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` with the hook every Parity task runs first (``configure_store``)."""
    from parity.airflow.tasks import configure_store

    return {**defaults, "pre_execute": configure_store}


def add_validation_tasks(
    spec: Spec, *, root: Path, conn_id: str, given: Mapping[str, Any] | None = None
) -> tuple[Any, Any]:
    """The validation's tasks in the DAG (or group) being defined: ``(plan, gate)``.
    ``given``: values replacing the trigger parameters (a group's); ``None``: the DAG run's
    parameters (the validation's own DAG)."""
    from airflow.sdk import task

    from parity.airflow.assets import validation_asset
    from parity.airflow.factory import TASK_DOCS
    from parity.airflow.operators import ExpectationsOperator, ParitySparkSubmitOperator
    from parity.airflow.properties import properties_task
    from parity.airflow.tasks import enforce_gate, fail_running_match, spark_task_args

    spark = spark_task_args(spec)

    def submit(task_id: str, job: str, **options: Any) -> Any:
        return ParitySparkSubmitOperator(
            task_id=task_id, job=job, conn_id=conn_id, doc_md=TASK_DOCS[task_id], **spark, **options
        )

    @task(task_id=PLAN_TASK, doc_md=TASK_DOCS[PLAN_TASK])
    def plan(values: dict[str, Any] | None = None, **context: Any) -> dict[str, Any]:
        return plan_task(spec, root, context, values)

    planned: Any = plan(None if given is None else dict(given))
    runs = [submit("run_reference", "reference"), submit("run_candidate", "candidate")]
    if spec.noise.reference_runs > 1:
        runs.append(submit("rerun_reference", "rerun"))
    # A match job killed outright cannot mark its run failed: this callback does.
    match = submit("match", "match", on_failure_callback=fail_running_match)
    sliced = submit("slice_input", "slice")
    # The expectations step: suites and reference-derived expectations.
    expectations = ExpectationsOperator(
        root=root, spark_conf=spec.airflow.spark_conf, conn_id=conn_id, **spark
    )
    # A failure of one of these closes the gate (``properties`` never does).
    critical = [t.task_id for t in (sliced, *runs, match, expectations)]
    plan_id = planned.operator.task_id

    @task(
        task_id="record",
        trigger_rule="all_done",
        doc_md=TASK_DOCS["record"],
        outlets=[validation_asset(spec.name)],
    )
    def record(**context: Any) -> dict[str, Any]:
        return record_task(spec, context, plan_id, critical)

    recorded: Any = record()
    record_id = recorded.operator.task_id

    # No retries: a closed gate is a verdict (``GateClosed``), trying again changes nothing.
    @task(task_id="gate", doc_md=TASK_DOCS["gate"], retries=0)
    def gate(**context: Any) -> None:
        enforce_gate(context["ti"].xcom_pull(task_ids=record_id), spec.gate.on_closed)

    ended = gate()
    planned >> sliced >> runs >> match >> expectations >> recorded >> ended
    if spec.properties:  # beside the comparison: after the plan, before nothing
        from parity.airflow.factory import parity_home

        planned >> properties_task(spec, root=root, home=parity_home, **spark)
    return planned, ended


def plan_task(
    spec: Spec, root: Path, context: Mapping[str, Any], given: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``plan`` task: the run's plan from the DAG run's parameters (or the group's
    ``given`` values), its workspace, the run stored as running. A run it rejects is stored
    failed with the reason (``parity.airflow.rejected``) and fails the task, without a
    retry and before any Spark job."""
    from airflow.sdk.exceptions import AirflowFailException

    from parity.airflow.factory import parity_home, show_running
    from parity.airflow.plan import (
        check_files,
        describe_window,
        effective_spec_text,
        plan_run,
        prepare_workspace,
    )
    from parity.airflow.rejected import store_rejection

    run = context["dag_run"]
    params = (
        {k: context["params"].get(k) for k in PARAMS}
        if given is None
        else {k: given.get(k) for k in GIVEN}
    )
    run_context = RunContext(
        dag_id=run.dag_id,
        dag_run_id=run.run_id,
        run_type=run_type_name(run.run_type),
        interval_start=context.get("data_interval_start"),
        interval_end=context.get("data_interval_end"),
        params=params,
        started_at=getattr(run, "start_date", None),
    )
    try:
        made = plan_run(spec, run_context, root=root, home=parity_home())
        check_files(made, spec, root)
    except ParityError as exc:  # a user's error: fail now, no retry, no Spark job
        store_rejection(spec, run_context, str(exc))
        raise AirflowFailException(str(exc)) from None
    prepare_workspace(made, effective_spec_text(spec, made.overrides, root))
    show_running(made, spec, run_context.started_at)
    print(f"parity: {made.run_id}: slice {describe_window(made.slice)}")
    print(f"parity: workspace {made.run_dir}")
    return made.to_dict()


def record_task(
    spec: Spec, context: Mapping[str, Any], plan_id: str, critical: list[str]
) -> dict[str, Any]:
    """The ``record`` task: the gate decided and stored (``parity.airflow.gate``), the
    verdict published on the validation's Asset, and the decision for the ``gate`` task
    (``passed``, ``reason``, ``verdict``, ``counts``, ``run_id``). A run the plan rejected
    is published too (verdict ``error``); a plan that left no run at all fails the task."""
    from airflow.sdk.exceptions import AirflowFailException

    from matcher.store import Store
    from matcher.store.run_ids import pipeline_run_id
    from parity.airflow.assets import event_extra, publish
    from parity.airflow.gate import record_gate

    ti, run = context["ti"], context["dag_run"]
    run_id = pipeline_run_id(run.dag_id, run.run_id)
    document = ti.xcom_pull(task_ids=plan_id)
    if document is not None:
        made = RunPlan.from_dict(document)
        states = ti.get_task_states(dag_id=run.dag_id, run_ids=[run.run_id])
        ran = states.get(run.run_id, {})
        failed = sorted(t for t in critical if ran.get(t) == "failed")
        decision = record_gate(made, spec, failed)
        run_id = made.run_id
    with Store.open() as store:
        stored = store.get_run(run_id)
    if document is None:
        if stored is None or stored.status != "failed":  # the store did not take it either
            raise AirflowFailException("no run to record: the plan task rejected the run")
        decision = {"passed": False, "reason": f"the run failed: {stored.error}"}
    passed, reason = bool(decision["passed"]), str(decision["reason"])
    extra = event_extra(
        stored,
        validation=spec.name,
        run_id=run_id,
        dag_run_id=run.run_id,
        passed=passed,
        reason=reason,
    )
    publish(context, spec.name, extra)
    keys = ("passed", "reason", "verdict", "counts", "run_id")
    return {key: extra[key] for key in keys}


def spark_conn_id(spec: Spec) -> str:
    """The Spark connection of the spec's tasks: ``airflow.conn_id``, else the deployment's
    ``PARITY_SPARK_CONN_ID``, else ``spark_default``."""
    from parity.airflow.factory import CONN_VARIABLE, DEFAULT_CONN_ID

    return spec.airflow.conn_id or os.environ.get(CONN_VARIABLE) or DEFAULT_CONN_ID
