"""``parity list``, ``parity report --latest`` and ``--trigger``'s choices, on a real store
(SQLite and PostgreSQL) through ``main``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from matcher.spec import load_spec
from matcher.spec_digest import verdict_digest
from matcher.store import RunOutcome, RunStart, Store
from parity.cli import main
from parity.views.history import TRIGGERS

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "dags" / "validations"


def _at(day: int) -> dt.datetime:
    return dt.datetime(2026, 3, day, 2, tzinfo=dt.UTC)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A validations folder: a scheduled spec, an ad-hoc one, one that does not load."""
    specs = tmp_path / "validations"
    specs.mkdir()
    for name in ("taxi_parallel", "maxrow_wellformed"):
        text = (BUNDLED / f"{name}.yaml").read_text(encoding="utf-8")
        (specs / f"{name}.yaml").write_text(text, encoding="utf-8")
    broken = (BUNDLED / "maxrow_wellformed.yaml").read_text(encoding="utf-8")
    broken = broken.replace("name: maxrow_wellformed", "name: broken") + "schedul: daily\n"
    (specs / "broken.yaml").write_text(broken, encoding="utf-8")
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(specs))
    return specs


def fill(store: Store, folder: Path) -> None:
    """taxi_parallel: an equivalent run under today's spec, then a divergent one (newest);
    maxrow_wellformed: none."""
    spec = load_spec(str(folder / "taxi_parallel.yaml"))
    for day, verdict in ((1, "equivalent"), (2, "divergent")):
        run_id = f"parity_taxi_parallel/scheduled__{day}"
        store.start_run(
            RunStart(
                run_id,
                "taxi_parallel",
                trigger="scheduled",
                reference_version="sequential",
                candidate_version="parallel",
                started_at=_at(day),
                spec_hash=verdict_digest(spec),
            )
        )
        counts = {"loss": 2} if verdict == "divergent" else {}
        store.record_run(
            run_id,
            RunOutcome(verdict, counts=counts, finished_at=_at(day) + dt.timedelta(minutes=1)),
        )
        store.set_gate(run_id, verdict == "equivalent", f"verdict {verdict}")


def test_list_table(db_url: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store.open(db_url) as store:
        fill(store, folder)
    assert main(["list", "--db", db_url]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "VALIDATION         SCHEDULE               LAST RUN          VERDICT    GATE    RUN ID",
        "broken             does not load (below)  -                 -          -       -",
        "maxrow_wellformed  none (ad hoc)          -                 -          -       -",
        "taxi_parallel      0 2 * * *              2026-03-02 02:00  divergent  closed  "
        "parity_taxi_parallel/scheduled__2",
        "",
        f"{folder / 'broken.yaml'}: schedul: unknown key (expected one of: name, reference, "
        "candidate, application, recovery, input, output, dependence, equality, expectations, "
        "noise, schedule, gate, airflow, properties, schema)",
    ]


def test_list_json(db_url: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store.open(db_url) as store:
        fill(store, folder)
    assert main(["list", "--json", "--db", db_url]) == 0
    listed = {entry["validation"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert sorted(listed) == ["broken", "maxrow_wellformed", "taxi_parallel"]
    taxi = listed["taxi_parallel"]
    assert {k: taxi[k] for k in ("file", "kind", "schedule", "error", "last_run")} == {
        "file": str(folder / "taxi_parallel.yaml"),
        "kind": "comparison",
        "schedule": "0 2 * * *",
        "error": None,
        "last_run": {
            "run_id": "parity_taxi_parallel/scheduled__2",
            "status": "completed",
            "verdict": "divergent",
            "started_at": "2026-03-02T02:00:00+00:00",
        },
    }
    assert (taxi["gate"]["state"], taxi["gate"]["exit_code"]) == ("closed", 1)
    assert (listed["maxrow_wellformed"]["last_run"], listed["maxrow_wellformed"]["gate"]) == (
        None,
        None,
    )
    assert listed["broken"]["error"].startswith(f"{folder / 'broken.yaml'}: ")


def test_list_without_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(tmp_path / "none"))
    assert main(["list", "--db", f"sqlite:///{tmp_path / 'p.db'}"]) == 2
    assert capsys.readouterr().err == (
        f"parity: error: no validations folder {tmp_path / 'none'} (PARITY_VALIDATIONS_DIR): "
        "set PARITY_VALIDATIONS_DIR\n"
    )


def test_report_latest(db_url: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store.open(db_url) as store:
        fill(store, folder)
    assert main(["report", "--latest", "taxi_parallel", "--json", "--db", db_url]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["run_id"], document["verdict"]) == (
        "parity_taxi_parallel/scheduled__2",
        "divergent",
    )
    assert main(["report", "--latest", "maxrow_wellformed", "--db", db_url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("parity: error: no run of validation 'maxrow_wellformed' in ")
    assert err.count("\n") == 1


def test_report_needs_one_of_run_id_and_latest(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = "parity: error: report: give RUN_ID or --latest VALIDATION (one of them)\n"
    assert main(["report", "--db", sqlite_url]) == 2
    assert capsys.readouterr().err == expected
    assert main(["report", "x", "--latest", "y", "--db", sqlite_url]) == 2
    assert capsys.readouterr().err == expected


def test_trigger_choices_are_the_stored_values(capsys: pytest.CaptureFixture[str]) -> None:
    from jobs.match import TRIGGERS as MATCH_TRIGGERS
    from parity.airflow.plan import trigger_of
    from parity.cli.property_runs import Storage
    from parity.recovery.plan import RecoveryPlan

    stored = {
        *MATCH_TRIGGERS,
        trigger_of("scheduled"),
        trigger_of("manual"),
        Storage.__dataclass_fields__["trigger"].default,
        RecoveryPlan.__dataclass_fields__["trigger"].default,
    }
    assert set(TRIGGERS) == stored
    assert main(["history", "--trigger", "ad-hoc"]) == 2
    choices = "'scheduled', 'adhoc', 'cli', 'manual'"
    refused = f"argument --trigger: invalid choice: 'ad-hoc' (choose from {choices})"
    assert refused in capsys.readouterr().err
