"""The verdict in Airflow: the gate task's two ways to close (``gate.on_closed``) and the DAG
run's note the plugin's listener writes (``plugins/parity_ui/notes.py``), on a real store.

The listener inside a real DAG run is tested end to end in ``test_dags.py``."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from matcher.store import RunOutcome, RunStart, Store

# Airflow's configuration before Airflow is imported (so no Airflow import up here)
pytest_plugins = ("airflow_fixtures", "store_fixtures")

PLUGINS = Path(__file__).resolve().parent.parent / "plugins"


def test_an_open_gate_ends_the_task_quietly(capsys: pytest.CaptureFixture[str]) -> None:
    from parity.airflow.tasks import enforce_gate

    decision = {
        "passed": True,
        "reason": "verdict equivalent",
        "verdict": "equivalent",
        "counts": {"loss": 0},
        "run_id": "parity_taxi/1",
    }
    enforce_gate(decision, "fail")
    assert capsys.readouterr().out == (
        "parity: gate open: equivalent; verdict equivalent; /parity/runs/parity_taxi%2F1\n"
    )


def test_a_closed_gate_fails_the_task_in_one_line_or_skips_it() -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    from parity.airflow.tasks import GateClosed, enforce_gate

    decision = {
        "passed": False,
        "reason": "verdict divergent",
        "verdict": "divergent",
        "counts": {"loss": 1, "corruption": 0},
        "run_id": "parity_taxi/1",
    }
    line = (
        "parity: gate closed: divergent (loss 1); verdict divergent; /parity/runs/parity_taxi%2F1"
    )
    with pytest.raises(GateClosed) as closed:
        enforce_gate(decision, "fail")
    assert closed.value.code == line
    with pytest.raises(
        AirflowSkipException, match=rf"^{re.escape(line)} \(gate.on_closed: warn\)$"
    ):
        enforce_gate(decision, "warn")


@dataclass
class DagRunRow:
    """What the listener reads of a DAG run and writes back (``note``)."""

    dag_id: str
    run_id: str
    note: str | None = None


@pytest.fixture
def notes(monkeypatch: pytest.MonkeyPatch, db_url: str) -> object:
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.setenv("PARITY_DB_URL", db_url)
    from parity_ui import notes as module

    return module


def _store(url: str, run_id: str, verdict: str, reason: str, *, loss: int = 0) -> None:
    with Store.open(url) as store:
        store.start_run(RunStart(run_id, "taxi", trigger="scheduled"))
        counts = {"loss": loss, "duplication": 0, "reordering": 0, "corruption": 0}
        store.record_run(run_id, RunOutcome(verdict=verdict, counts=counts))
        store.set_gate(run_id, verdict == "equivalent", reason)


def test_a_finished_parity_dag_run_gets_the_verdict_as_its_note(notes: object, db_url: str) -> None:
    _store(db_url, "parity_taxi/scheduled__2026-01-02", "divergent", "verdict divergent", loss=2)
    run = DagRunRow("parity_taxi", "scheduled__2026-01-02")
    notes.on_dag_run_failed(dag_run=run, msg="task failure")  # type: ignore[attr-defined]
    assert run.note == (
        "**Parity: divergent** (loss 2, duplication 0, reordering 0, corruption 0); "
        "gate closed: verdict divergent. "
        "[Parity run](/plugin/parity/parity/runs/parity_taxi%2Fscheduled__2026-01-02)"
    )


def test_the_note_escapes_what_markdown_would_read(notes: object, db_url: str) -> None:
    hostile = "see [here](javascript:alert(1)) <img src=x> `code` *bold*"
    _store(db_url, "parity_taxi/manual__1", "divergent", hostile)
    run = DagRunRow("parity_taxi", "manual__1")
    notes.on_dag_run_success(dag_run=run, msg="")  # type: ignore[attr-defined]
    assert run.note is not None
    assert "gate closed: see \\[here\\]\\(javascript:alert\\(1\\)\\) \\<img src=x\\> " in run.note
    assert "\\`code\\` \\*bold\\*. [Parity run](" in run.note


def test_other_dags_a_persons_note_and_unknown_runs_are_left_alone(
    notes: object, db_url: str
) -> None:
    _store(db_url, "parity_taxi/manual__2", "equivalent", "verdict equivalent")
    other = DagRunRow("etl_daily", "manual__2")
    kept = DagRunRow("parity_taxi", "manual__2", note="rerun after the outage")
    unknown = DagRunRow("parity_taxi", "manual__3")
    for run in (other, kept, unknown):
        notes.on_dag_run_success(dag_run=run, msg="")  # type: ignore[attr-defined]
    assert (other.note, kept.note, unknown.note) == (None, "rerun after the outage", None)


def test_a_store_that_cannot_be_read_is_logged_not_raised(
    notes: object, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PARITY_DB_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    run = DagRunRow("parity_taxi", "manual__4")
    notes.on_dag_run_failed(dag_run=run, msg="")  # type: ignore[attr-defined]
    assert run.note is None
    assert "cannot read the run parity_taxi/manual__4" in caplog.text
    assert "parity_ui" in sys.modules
