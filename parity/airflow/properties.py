"""The ``properties`` task of a validation DAG whose spec lists operators under
``properties:``: each is re-tested (``parity properties``) on every run and stored as a run
of kind ``properties``, then the spec is held against what was found.

    plan ─┬─► slice_input ─► ... ─► match ─► expectations ─► record ─► gate
          └─► properties                     (off the critical path)

Each operator is tested by the ``parity`` command in a process of its own, with the spec's
``technique`` (default ``reuse``: the evidence inputs kept in
``$PARITY_HOME/properties/<operator>.json`` by earlier runs are replayed first, then the
sample's pools), ``budget`` and ``seed``. The command is the seam: ``parity.properties``
imports PySpark, which this package may not, and its exit code says what happened — 0 it
ran, whatever it found (finding a property never fails the task), 2 bad input or an
operator that fails a test (the task fails at once, without a retry: the run is stored
failed), anything else a crash (retried). The task is a leaf that
``record`` ignores: its failure fails the DAG run, never closes the gate.

Each run's id is the DAG run's and the operator, ``DAG_ID/DAG_RUN_ID/properties/OPERATOR``;
its name the spec's validation. After the tests, one warning line per operator whose
findings the spec contradicts (``parity.views.properties.spec_warnings``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matcher.spec import PropertyTestSpec, Spec
from matcher.store.run_ids import pipeline_run_id
from parity.runs.submits import resolve_path

TASK_ID = "properties"
TASK_DOC = (
    "Re-tests the operators of the spec's properties: section (parity properties, reuse "
    "first) and stores each as a properties run; warns when the spec contradicts them."
)
#: ``parity properties``' exit code for bad input (an operator that does not import, a
#: missing sample): the user's to fix, not worth a retry
EXIT_BAD_INPUT = 2


def properties_run_id(dag_id: str, dag_run_id: str, operator: str) -> str:
    """The stored run of one operator re-tested in a DAG run."""
    return f"{pipeline_run_id(dag_id, dag_run_id)}/{TASK_ID}/{operator}"


def properties_command(
    spec: Spec,
    entry: PropertyTestSpec,
    *,
    root: Path,
    home: Path,
    dag_id: str,
    dag_run_id: str,
    trigger: str,
    python: str = sys.executable,
) -> list[str]:
    """The ``parity properties`` line that re-tests ``entry`` and stores it."""
    command = [
        *(python, "-m", "parity", "properties", entry.operator),
        *("--sample", resolve_path(entry.sample, root)),
    ]
    if entry.sample_right is not None:
        command += ["--sample-right", resolve_path(entry.sample_right, root)]
    for column in entry.key:
        command += ["--key", column]
    if entry.shape is not None:
        command += ["--shape", entry.shape]
    command += [
        *("--technique", entry.technique, "--budget", str(entry.budget)),
        *("--seed", str(entry.seed), "--evidence-dir", str(home / TASK_ID)),
        *("--run-id", properties_run_id(dag_id, dag_run_id, entry.operator)),
        *("--validation", spec.name, "--trigger", trigger, "--spec-file", spec.source),
        *("--dag-id", dag_id, "--dag-run-id", dag_run_id),
    ]
    return command


def retest(commands: Sequence[Sequence[str]], *, root: Path) -> None:
    """Run each command in ``root`` (where the operators import from), its output in the
    task's log; a failure raises: bad input as ``AirflowFailException`` (no retry)."""
    from airflow.sdk.exceptions import AirflowFailException

    for command in commands:
        print(f"parity: re-testing {command[4]}", flush=True)
        done = subprocess.run(
            list(command),
            cwd=root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        sys.stdout.write(done.stdout)
        sys.stdout.write(done.stderr)
        if done.returncode == 0:
            continue
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        message = f"parity properties {command[4]} failed (exit {done.returncode}): {last}"
        if done.returncode == EXIT_BAD_INPUT:
            raise AirflowFailException(message)
        raise RuntimeError(message)


def properties_task(spec: Spec, *, root: Path, home: Any, **options: Any) -> Any:
    """The DAG's ``properties`` task (``home`` is called at run time: ``PARITY_HOME``)."""
    from airflow.sdk import task

    from matcher.store import Store
    from parity.airflow.plan import trigger_of
    from parity.views.properties import spec_warnings

    @task(task_id=TASK_ID, doc_md=TASK_DOC, **options)
    def properties(**context: Any) -> list[str]:
        run = context["dag_run"]
        commands = [
            properties_command(
                spec,
                entry,
                root=root,
                home=home(),
                dag_id=run.dag_id,
                dag_run_id=run.run_id,
                trigger=trigger_of(run.run_type),
            )
            for entry in spec.properties
        ]
        retest(commands, root=root)
        with Store.open() as store:
            warnings = spec_warnings(spec, store)
        for line in warnings:
            print(line, flush=True)
        return warnings

    return properties()
