"""The verdict on the DAG run itself: a listener that writes the note of a Parity DAG run
when it ends.

Airflow shows a DAG run's note on the run's page and in the grid; a task cannot write it
(tasks reach Airflow's database only through the execution API, which has no call for it),
but a listener can: the scheduler calls ``on_dag_run_success``/``on_dag_run_failed`` with the
DAG run inside its own session, so a note set here is committed with the run's state. The
note of a run of a Parity DAG (``parity_*``) says the verdict, the counts, the gate and
links to the run's page:

    **Parity: divergent** (loss 1, duplication 0, reordering 0, corruption 2); gate closed:
    verdict divergent. [Parity run](/plugin/parity/parity/runs/parity_taxi%2Fscheduled__...)

When an approval covers the run's divergences (``parity approve``, or the run's page), the
note says who accepted them and why, and that the gate opened; a revoked approval is said
too. Approving or revoking on the run's page writes the note again (``rewrite_note``), as
long as it is still the one Parity wrote.

A note someone already wrote is kept. A run the store does not have (the plan failed before
anything ran) gets no note; a store that cannot be read is logged, never raised: the
scheduler must not stop over a note.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit

from airflow.listeners import hookimpl

from matcher.printable import printable
from matcher.store import RunRecord, Store
from matcher.store.run_ids import DAG_PREFIX, pipeline_run_id
from parity.views.approvals import APPROVED, COVERED, REVOKED, RunApprovals, run_approvals
from parity_ui.links import match_task_link

log = logging.getLogger(__name__)

#: what Markdown would read as markup in a note, escaped in values the note quotes
_MARKUP = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")
#: how every note Parity writes begins (a note that does not is someone else's)
HEAD = "**Parity: "


def note_text(record: RunRecord, link: str, approvals: RunApprovals | None = None) -> str:
    """The note of a DAG run whose Parity run is ``record``; ``link`` is its run page;
    ``approvals`` its approvals (``parity.views.approvals``), if any."""
    if record.status != "completed":
        head = f"**Parity: {record.status}**"
        if record.error:
            head += f": {_escape(record.error)[:300]}"
    else:
        counts = ", ".join(f"{kind} {n}" for kind, n in record.counts.items())
        head = f"**Parity: {record.verdict}** ({counts})"
    if record.gate_passed is not None:
        gate = "open" if record.gate_passed else "closed"
        head += f"; gate {gate}: {_escape(record.gate_reason or '')}"
    head += _approval_text(approvals)
    return f"{head}. [Parity run]({link})"


def _approval_text(approvals: RunApprovals | None) -> str:
    """``; approved by alice: why (gate open)``, or nothing."""
    if approvals is None or approvals.approval is None:
        return ""
    approval = approvals.approval
    reason = _escape(approval.reason)[:300]
    if approvals.state == APPROVED:
        return f"; approved by {_escape(approval.actor)}: {reason} (gate open)"
    if approvals.state == COVERED:
        return (
            f"; covered by approval #{approval.approval_id} of {_escape(approval.actor)}: "
            f"{reason} (gate open)"
        )
    if approvals.state == REVOKED and approvals.revoke is not None:
        revoke = approvals.revoke
        return (
            f"; approval #{approval.approval_id} revoked by {_escape(revoke.actor)}: "
            f"{_escape(revoke.reason)[:300]}"
        )
    return ""


def _escape(text: str) -> str:
    return _MARKUP.sub(r"\\\1", printable(" ".join(text.split())))


def write_note(dag_run: Any) -> None:
    """Set the note of a finished Parity DAG run (see the module docstring)."""
    if not str(dag_run.dag_id).startswith(DAG_PREFIX):
        return
    run_id = pipeline_run_id(dag_run.dag_id, dag_run.run_id)
    try:
        with Store.open_readonly(_connection_url()) as store:
            record = store.get_run(run_id)
            approvals = None if record is None else run_approvals(store, record)
    except Exception:  # a listener must never break the scheduler
        log.exception("Parity: cannot read the run %s for its DAG run's note", run_id)
        return
    if record is None:
        return
    link = match_task_link(_root_path(), dag_run.dag_id, "gate", dag_run.run_id)
    text = note_text(record, link, approvals)
    if _session_of(dag_run) is not None or not hasattr(dag_run, "id"):
        if not dag_run.note:  # the scheduler's own run, in its session: committed with it
            dag_run.note = text
        return
    try:  # a run handed over detached (``dag.test()``): in a session of our own
        _note_detached(dag_run, text)
    except Exception:
        log.exception("Parity: cannot write the note of DAG run %s", run_id)


def _connection_url() -> str | None:
    """The Airflow Connection's database, if there is one (as the Parity page reads it).

    Looked up in a thread of its own: Airflow reads a connection from its metadata database
    through the thread's scoped session and closes that session afterwards. In the
    scheduler's thread that is the session holding the DAG run being finished: it would be
    detached, and the scheduler's loop would die on its next attribute read."""
    from concurrent.futures import ThreadPoolExecutor

    from parity.airflow.connections import results_db_url

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parity-connection") as pool:
        return pool.submit(results_db_url).result()


def _session_of(dag_run: Any) -> Any:
    from sqlalchemy.orm import object_session
    from sqlalchemy.orm.exc import UnmappedInstanceError

    try:
        return object_session(dag_run)
    except UnmappedInstanceError:  # not an ORM object
        return None


def _note_detached(dag_run: Any, text: str) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session(scoped=False) as session:
        row = session.get(DagRun, dag_run.id)
        if row is not None and not row.note:
            row.note = text


def rewrite_note(record: RunRecord, approvals: RunApprovals) -> None:
    """After an approval or a revoke on the run's page (in the API server): the DAG run's
    note again, unless someone replaced Parity's note by their own. Logged, never raised:
    the approval is recorded whatever happens to the note."""
    if record.dag_id is None or record.dag_run_id is None:
        return
    link = match_task_link(_root_path(), record.dag_id, "gate", record.dag_run_id)
    text = note_text(record, link, approvals)
    try:
        from airflow.models.dagrun import DagRun
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session(scoped=False) as session:
            query = select(DagRun).where(
                DagRun.dag_id == record.dag_id, DagRun.run_id == record.dag_run_id
            )
            row = session.scalar(query)
            if row is not None and (not row.note or str(row.note).startswith(HEAD)):
                row.note = text
    except Exception:
        log.exception("Parity: cannot write the note of DAG run %s", record.run_id)


def _root_path() -> str:
    """Airflow's root path, as its API server derives it (``[api] base_url``), without
    importing the API server into the scheduler."""
    from airflow.configuration import conf

    return urlsplit(conf.get("api", "base_url", fallback="")).path


@hookimpl
def on_dag_run_success(dag_run: Any, msg: str) -> None:
    write_note(dag_run)


@hookimpl
def on_dag_run_failed(dag_run: Any, msg: str) -> None:
    write_note(dag_run)
