"""``parity history``: the table and JSON exactly, its filters, and the store's expectation
counts in run summaries (on SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from matcher.schema import SchemaDiff, SchemaFinding
from matcher.store import ExpectationRecord, RunOutcome, RunStart, Store, repository
from matcher.store.records import RUN_VERDICTS
from parity.cli import main
from parity.views.history import VERDICTS

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

UTC = dt.UTC


def _at(day: int, hour: int = 2) -> dt.datetime:
    return dt.datetime(2026, 3, day, hour, tzinfo=UTC)


def _expectations(*successes: bool) -> tuple[ExpectationRecord, ...]:
    return tuple(
        ExpectationRecord("s", "candidate", "expect_column_values_to_not_be_null", ok)
        for ok in successes
    )


def fill(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four runs: taxi on days 1, 2 and 4 (the last still running), topics on day 3 (failed
    seven seconds after it started: the store's clock is set for it)."""
    store.start_run(
        RunStart(
            "parity__taxi/scheduled__1",
            "taxi",
            trigger="scheduled",
            reference_version="v1",
            candidate_version="v2",
            started_at=_at(1),
            slice={
                "column": "event_time",
                "start": "2026-02-28T00:00:00+00:00",
                "end": "2026-03-01T00:00:00+00:00",
                "window_source": "data interval",
                "sample": None,
            },
        )
    )
    store.record_run(
        "parity__taxi/scheduled__1",
        RunOutcome(
            "equivalent",
            finished_at=_at(1) + dt.timedelta(minutes=3, seconds=5),
            expectations=_expectations(True, True, True),
        ),
    )
    store.start_run(
        RunStart(
            "parity__taxi/manual__2",
            "taxi",
            trigger="adhoc",
            reference_version="v1",
            candidate_version="v3-bug",
            started_at=_at(2),
            slice={
                "column": "event_time",
                "start": "2026-03-01T06:00:00+02:00",
                "end": "2026-03-01T10:00:00+02:00",
                "sample": 0.25,
            },
        )
    )
    store.record_run(
        "parity__taxi/manual__2",
        RunOutcome(
            "divergent",
            counts={"loss": 4, "reordering": 1},
            finished_at=_at(2) + dt.timedelta(hours=1, minutes=2, seconds=3),
            expectations=_expectations(True, False, False),
        ),
    )
    store.start_run(RunStart("topics-1", "topics", trigger="cli", started_at=_at(3)))
    monkeypatch.setattr(repository, "utc_now", lambda: _at(3) + dt.timedelta(seconds=7))
    store.mark_failed("topics-1", "boom")
    monkeypatch.undo()
    store.start_run(
        RunStart(
            "parity__taxi/scheduled__4",
            "taxi",
            trigger="scheduled",
            candidate_version="v4\x1b[31m",
            started_at=_at(4),
            slice={"window": "6h", "files": 3},
        )
    )


def test_summaries_count_expectation_results(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(store, monkeypatch)
    runs = {r.run_id: r for r in store.list_runs()}
    counted = {
        run_id: (r.expectations_total, r.expectations_failed, r.expectations_passed)
        for run_id, r in runs.items()
    }
    assert counted == {
        "parity__taxi/scheduled__1": (3, 0, True),
        "parity__taxi/manual__2": (3, 2, False),
        "topics-1": (0, 0, None),
        "parity__taxi/scheduled__4": (0, 0, None),
    }
    assert runs["parity__taxi/scheduled__4"].slice == {"window": "6h", "files": 3}
    latest = store.latest_run("taxi")
    assert latest is not None
    assert (latest.run_id, latest.expectations_passed) == ("parity__taxi/manual__2", False)
    record = store.get_run("parity__taxi/manual__2")
    assert record is not None
    assert (record.expectations_total, record.expectations_failed) == (3, 2)


def test_history_table(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(sqlite_url) as store:
        fill(store, monkeypatch)

    assert main(["history", "--db", sqlite_url]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "STARTED           VALIDATION  TRIGGER    VERSIONS         SLICE"
        "                                                      VERDICT     DIVERGENCES"
        "      EXPECTATIONS  GATE    DURATION  RUN ID",
        "2026-03-04 02:00  taxi        scheduled  - -> v4\\x1b[31m  window=6h files=3"
        "                                          running     0"
        "                -             -       -         parity__taxi/scheduled__4",
        "2026-03-03 02:00  topics      cli        - -> -           -"
        "                                                          error       0"
        "                -             closed  7s        topics-1",
        "2026-03-02 02:00  taxi        adhoc      v1 -> v3-bug     event_time 2026-03-01 04:00"
        "..2026-03-01 08:00 sample=0.25  divergent   loss 4, reord 1"
        "  FAILED 2/3    -       1h02m03s  parity__taxi/manual__2",
        "2026-03-01 02:00  taxi        scheduled  v1 -> v2         event_time 2026-02-28 00:00"
        "..2026-03-01 00:00              equivalent  0"
        "                met 3/3       -       3m05s     parity__taxi/scheduled__1",
    ]


def test_history_filters(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(sqlite_url) as store:
        fill(store, monkeypatch)

    def ids(*args: str) -> list[str]:
        assert main(["history", "--json", "--db", sqlite_url, *args]) == 0
        return [run["run_id"] for run in json.loads(capsys.readouterr().out)]

    assert ids("--validation", "taxi") == [
        "parity__taxi/scheduled__4",
        "parity__taxi/manual__2",
        "parity__taxi/scheduled__1",
    ]
    assert ids("--verdict", "divergent") == ["parity__taxi/manual__2"]
    assert ids("--trigger", "scheduled") == [
        "parity__taxi/scheduled__4",
        "parity__taxi/scheduled__1",
    ]
    assert ids("--since", "2026-03-02") == [
        "parity__taxi/scheduled__4",
        "topics-1",
        "parity__taxi/manual__2",
    ]
    assert ids("--until", "2026-03-02") == [  # inclusive, as the HTTP API's
        "parity__taxi/manual__2",
        "parity__taxi/scheduled__1",
    ]
    assert ids("--since", "2026-03-02", "--until", "2026-03-02") == ["parity__taxi/manual__2"]
    assert ids("--limit", "1") == ["parity__taxi/scheduled__4"]
    assert ids("--validation", "orders") == []

    assert main(["history", "--validation", "orders", "--db", sqlite_url]) == 0
    assert capsys.readouterr().out == "no runs\n"


def test_history_json(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(sqlite_url) as store:
        fill(store, monkeypatch)

    assert main(["history", "--json", "--verdict", "divergent", "--db", sqlite_url]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {
            "run_id": "parity__taxi/manual__2",
            "validation": "taxi",
            "kind": "comparison",
            "trigger": "adhoc",
            "status": "completed",
            "verdict": "divergent",
            "gate_passed": None,
            "gate_now": None,
            "approval": None,
            "versions": {"reference": "v1", "candidate": "v3-bug"},
            "slice": {
                "column": "event_time",
                "start": "2026-03-01T06:00:00+02:00",
                "end": "2026-03-01T10:00:00+02:00",
                "sample": 0.25,
            },
            "started_at": "2026-03-02T02:00:00+00:00",
            "finished_at": "2026-03-02T03:02:03+00:00",
            "duration_seconds": 3723.0,
            "counts": {"loss": 4, "duplication": 0, "reordering": 1, "corruption": 0},
            "total_divergences": 5,
            "expectations": {"passed": False, "total": 3, "failed": 2},
            "dag_id": None,
            "dag_run_id": None,
            "error": None,
            "schema": None,
        }
    ]


SCHEMA = SchemaDiff(
    mode="strict",
    findings=(
        SchemaFinding(
            "retyped", "fare", "int", "bigint", True, widening=True, compared_as="bigint"
        ),
        SchemaFinding("added", 'tip<script>"', None, "double", True),
    ),
)
SCHEMA_JSON = {
    "mode": "strict",
    "divergent": True,
    "findings": [
        {
            "kind": "retyped",
            "column": "fare",
            "reference": "int",
            "candidate": "bigint",
            "divergent": True,
            "widening": True,
            "inferred": False,
            "compared_as": "bigint",
            "explanation": "column 'fare' changed type int -> bigint (widening; values "
            "compared as bigint)",
        },
        {
            "kind": "added",
            "column": 'tip<script>"',
            "reference": None,
            "candidate": "double",
            "divergent": True,
            "widening": False,
            "inferred": False,
            "compared_as": None,
            "explanation": "column 'tip<script>\"' (double) is new in the candidate",
        },
    ],
}


def test_history_json_gives_the_schema_findings_as_the_report_does(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(db_url) as store:
        store.start_run(RunStart("schema-run", "taxi", started_at=_at(5)))
        store.record_run("schema-run", RunOutcome("divergent", finished_at=_at(6), schema=SCHEMA))

    assert main(["history", "--json", "--db", db_url]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["schema"] == SCHEMA_JSON
    assert main(["report", "schema-run", "--json", "--db", db_url]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == SCHEMA_JSON


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "March"], "argument --since: expected a date YYYY-MM-DD, got 'March'"),
        (["--until", "31/01"], "argument --until: expected a date YYYY-MM-DD, got '31/01'"),
        (
            ["--since", "2026-03-02", "--until", "2026-03-01"],
            "--until 2026-03-01 is before --since 2026-03-02",
        ),
        (["--limit", "0"], "argument --limit: expected a whole number >= 1, got '0'"),
        (["--verdict", "green"], "argument --verdict: invalid choice: 'green'"),
    ],
)
def test_history_rejects_bad_options(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", *args]) == 2
    assert message in capsys.readouterr().err


def test_the_verdict_choices_are_the_stores() -> None:
    assert VERDICTS == RUN_VERDICTS


def test_history_marks_approved_runs_and_their_gate_now(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An approved run's gate opens (``open (approved #1)``); a later run of the same version
    with the same divergences is covered by it; another version is not; a revoked approval
    is marked and closes the gate again; the JSON says the same."""
    with Store.open(db_url) as store:
        for run_id, day, candidate in (("t/1", 1, "v2"), ("t/2", 2, "v2"), ("t/3", 3, "v3")):
            store.start_run(
                RunStart(run_id, "taxi", candidate_version=candidate, started_at=_at(day))
            )
            store.record_run(
                run_id,
                RunOutcome("divergent", counts={"loss": 4}, finished_at=_at(day, 3)),
            )
            store.set_gate(run_id, False, "verdict divergent")
        store.approve("t/1", actor="alice", reason="intended\x1b[2J")

    def gates() -> list[str]:
        assert main(["history", "--db", db_url]) == 0
        lines = capsys.readouterr().out.splitlines()
        start = lines[0].index("GATE")
        end = lines[0].index("DURATION")
        return [line[start:end].rstrip() for line in lines[1:]]

    assert gates() == ["closed", "open (covered by #1)", "open (approved #1)"]
    assert main(["history", "--json", "--db", db_url]) == 0
    entries = {e["run_id"]: e for e in json.loads(capsys.readouterr().out)}
    assert {run_id: e["gate_now"] for run_id, e in entries.items()} == {
        "t/3": "closed",
        "t/2": "open",
        "t/1": "open",
    }
    assert entries["t/3"]["approval"] is None
    assert entries["t/2"]["approval"]["state"] == "covered"
    assert entries["t/2"]["approval"]["approval"]["run_id"] == "t/1"
    assert entries["t/2"]["approval"]["trail"] == []
    approved = entries["t/1"]["approval"]
    assert (approved["state"], approved["approval"]["actor"]) == ("approved", "alice")
    assert approved["approval"]["reason"] == "intended\x1b[2J"  # JSON keeps the value

    with Store.open(db_url) as store:
        store.revoke("t/1", actor="bob", reason="no")
    assert gates() == ["closed", "closed", "closed (revoked #1)"]
