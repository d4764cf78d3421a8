"""URLs between the Parity page, the Airflow UI and the match task's extra link.

The plugin's FastAPI app is mounted at ``/parity`` (``MOUNT``) and its navigation entry at
the Airflow UI route ``/plugin/parity`` (``URL_ROUTE``), which shows ``/parity/`` in an
iframe. A run id holds a ``/`` (``dag_id/dag_run_id``), so it travels percent-encoded as one
path segment: ``/parity/runs/parity__taxi%2Fscheduled__2026-01-02``.

``ParityRunLink`` is the "Parity run" button on the tasks of Parity's own DAGs (``parity_*``)
that produce or judge the run: ``match``, ``record`` and ``gate`` of a comparison, ``check``
and ``gate`` of a recovery validation. It is a global operator extra link, computed by the
API server when the task instance is shown (Airflow 3 stores links in XCom only for links
the operator itself declares), so the DAG declares nothing; another DAG's task named
``match`` gets none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

from matcher.store.run_ids import DAG_PREFIX, pipeline_run_id

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

#: where the plugin mounts its FastAPI app in the Airflow API server
MOUNT = "/parity"
#: the Airflow UI route of the navigation entry: ``/plugin/parity``
URL_ROUTE = "parity"
#: the tasks whose instances get the "Parity run" link (also inside a task group)
LINKED_TASKS = ("match", "record", "check", "gate")


def segment(value: str) -> str:
    """``value`` as one URL path segment: every reserved character encoded, ``/`` too."""
    return quote(value, safe="")


def run_path(run_id: str) -> str:
    """The run page, relative to the plugin's root: ``runs/dag%2Frun``."""
    return f"runs/{segment(run_id)}"


def dag_run_path(dag_id: str, dag_run_id: str) -> str:
    """The Airflow UI's page of a DAG run, relative to Airflow's root."""
    return f"dags/{segment(dag_id)}/runs/{segment(dag_run_id)}"


def parity_run_id(dag_id: str, dag_run_id: str) -> str:
    """The Parity run id of a DAG run's match task (the DAG passes ``--run-id`` so)."""
    return pipeline_run_id(dag_id, dag_run_id)


def is_linked_task(dag_id: str, task_id: str) -> bool:
    """A task of a Parity DAG that produces or judges its run."""
    name = task_id.rsplit(".", 1)[-1]
    return dag_id.startswith(DAG_PREFIX) and name in LINKED_TASKS


def match_task_link(airflow_root: str, dag_id: str, task_id: str, dag_run_id: str) -> str:
    """The extra link of a task instance: its run page inside the Airflow UI (the
    navigation entry's iframe follows the path after ``/plugin/parity``), or ``""`` (no
    link) for any other task and for other DAGs' tasks."""
    if not is_linked_task(dag_id, task_id):
        return ""
    run_id = parity_run_id(dag_id, dag_run_id)
    return f"{airflow_root.rstrip('/')}/plugin/{URL_ROUTE}{MOUNT}/{run_path(run_id)}"


class ParityRunLink(BaseOperatorLink):
    """The "Parity run" button on the linked tasks of Parity's DAGs."""

    name = "Parity run"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.api_fastapi.app import API_ROOT_PATH

        return match_task_link(API_ROOT_PATH, ti_key.dag_id, ti_key.task_id, ti_key.run_id)
