"""The DAG of a recovery validation (a spec with ``application`` and ``recovery``)::

    plan ─► run_uninterrupted ─► run_crashed ─► check ─► gate
            (check: differential only)

``plan`` makes the run's workspace; ``run_uninterrupted`` runs the streaming application once
without crashes; ``run_crashed`` runs it under the spec's seeded SIGKILLs, restarting it from
its checkpoint until it finishes (``parity.recovery.crashes``); ``check`` judges the crashed
output (the sequence-window validator, or the match job against the uninterrupted output)
and stores the run as kind ``recovery``; ``gate`` decides the spec's gate policy on it and
fails the DAG run when it is closed. A step that cannot finish stores the run failed, with
its reason, and fails at once (no retry: a retry would crash a different run).

The jobs are ``spark-submit`` processes this task starts and kills itself (the crash loop
needs their process groups), on the spec's ``recovery.master`` (default ``local[2]``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from matcher.errors import ParityError
from matcher.spec import Spec
from matcher.store import Store
from matcher.store.run_ids import pipeline_run_id
from parity.airflow.gate import record_run_gate
from parity.airflow.plan import trigger_of
from parity.airflow.tasks import enforce_gate, spark_task_args
from parity.recovery.runner import (
    RecoveryPlan,
    check,
    failures_stored,
    find_spark_submit,
    make_input,
    plan_recovery,
    prepare_workspace,
    run_crashed,
    run_uninterrupted,
    spark_env,
)

TASK_DOCS = {
    "plan": "Makes the run's workspace (outputs, checkpoints, crash log, logs) and, when the "
    "spec gives input.slice, writes the input slice the application reads.",
    "run_uninterrupted": "Runs the streaming application once, without crashes.",
    "run_crashed": "Runs it under seeded SIGKILLs, restarting from its checkpoint each time.",
    "check": "Checks the crashed output and stores the run (kind recovery) with its crash log.",
    "gate": "Decides the gate on the stored run; fails the DAG run when it is closed.",
}


def recovery_plan(spec: Spec, context: Any, *, root: Path, home: Path) -> RecoveryPlan:
    """The run's plan, the same in every task: its run id is the DAG run's."""
    run = context["dag_run"]
    trigger = trigger_of(run.run_type)
    plan = plan_recovery(
        spec,
        root=root,
        home=home,
        run_id=pipeline_run_id(run.dag_id, run.run_id),
        trigger=trigger,
    )
    return replace(plan, dag_id=run.dag_id, dag_run_id=run.run_id)


def build_recovery_dag(spec: Spec, *, root: Path, home: Callable[[], Path], **dag_args: Any) -> Any:
    """The recovery validation's DAG; ``dag_args`` go to ``DAG`` (id, schedule, tags...)."""
    from airflow.sdk import DAG, task
    from airflow.sdk.exceptions import AirflowFailException

    def step(context: Any, body: Callable[[RecoveryPlan], None]) -> None:
        plan = recovery_plan(spec, context, root=root, home=home())
        try:
            with failures_stored(plan, None):
                body(plan)
        except ParityError as exc:  # the run is stored failed: fail now, no retry
            raise AirflowFailException(str(exc)) from None

    assert spec.recovery is not None
    spark = spark_task_args(spec)
    # Each of these runs a job bounded by recovery.timeout (the crashed one with its
    # restarts), then reaps it: Airflow's limit must not cut the crash loop's own.
    crash_loop = spark_task_args(spec, at_least=dt.timedelta(seconds=spec.recovery.timeout + 300))
    with DAG(**dag_args) as dag:

        @task(task_id="plan", doc_md=TASK_DOCS["plan"], **spark)
        def plan(**context: Any) -> str:
            made = recovery_plan(spec, context, root=root, home=home())
            prepare_workspace(made)
            print(f"parity: {made.run_id}: workspace {made.run_dir}")

            def body(made: RecoveryPlan) -> None:
                make_input(made, spark_env(), spark_submit=find_spark_submit())
                if made.slice is not None:
                    print(f"parity: the input slice is in {made.input}")

            step(context, body)
            return str(made.run_dir)

        @task(task_id="run_uninterrupted", doc_md=TASK_DOCS["run_uninterrupted"], **crash_loop)
        def uninterrupted(**context: Any) -> None:
            def body(made: RecoveryPlan) -> None:
                seconds = run_uninterrupted(made, spark_env(), spark_submit=find_spark_submit())
                print(f"parity: the uninterrupted run took {seconds:.1f}s")

            step(context, body)

        @task(task_id="run_crashed", doc_md=TASK_DOCS["run_crashed"], **crash_loop)
        def crashed(**context: Any) -> None:
            def body(made: RecoveryPlan) -> None:
                log = run_crashed(made, spark_env(), spark_submit=find_spark_submit())
                for crash in log.crashes:
                    print(f"parity: crash {crash.number}: {crash.to_dict()}")
                print(f"parity: {log.attempts} starts, {log.recovered} recoveries")

            step(context, body)

        @task(task_id="check", doc_md=TASK_DOCS["check"], **crash_loop)
        def checked(**context: Any) -> None:
            def body(made: RecoveryPlan) -> None:
                check(made, spark_env(), spark_submit=find_spark_submit(), db=None)

            step(context, body)

        # A closed gate is a verdict, not an accident: one line, never retried.
        @task(task_id="gate", doc_md=TASK_DOCS["gate"], retries=0)
        def gate(**context: Any) -> None:
            made = recovery_plan(spec, context, root=root, home=home())
            with Store.open() as store:
                decision = record_run_gate(store, made.run_id, spec)
                run = store.get_run(made.run_id)
            shown = {
                "passed": decision.passed,
                "reason": decision.reason,
                "verdict": None if run is None else run.verdict,
                "counts": {} if run is None else dict(run.counts),
                "run_id": made.run_id,
            }
            enforce_gate(shown, spec.gate.on_closed)

        if spec.recovery.check == "differential":
            plan() >> uninterrupted() >> crashed() >> checked() >> gate()
        else:
            plan() >> crashed() >> checked() >> gate()
    return dag
