"""The deploy gate: the policy (``matcher.gate``), its record in the store (``set_gate``, the
``gate_reason`` migration, on SQLite and PostgreSQL), ``parity.views.gate`` and ``parity gate``."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, inspect, text

from matcher.gate import GateDecision, GateSpec, empty_outputs, evaluate
from matcher.spec import Spec, load_spec, parse_spec, parse_yaml
from matcher.spec_digest import verdict_digest
from matcher.store import (
    ExpectationRecord,
    RunOutcome,
    RunStart,
    Store,
    StoreError,
    UnknownRunError,
)
from matcher.store.migrate import alembic_config
from parity.airflow.gate import record_run_gate
from parity.cli import main
from parity.views.gate import gate_status, stored_decision, stored_policy

pytest_plugins = ["store_fixtures"]

ROOT = Path(__file__).resolve().parents[1]
UTC = dt.UTC
STRICT, NOISY_OK, LAX = GateSpec(), GateSpec(allow_noisy=True), GateSpec(expectations=False)
#: today's spec of ``taxi`` and ``other`` (its name aside): the runs here are made under it
TODAY_SPEC = "reference: {application: ref.py, version: v1}\ndependence: {key: [taxi_id]}\n"
TODAY = verdict_digest(parse_spec(parse_yaml(TODAY_SPEC, "<spec>")))


def hour(n: int) -> dt.datetime:
    return dt.datetime(2026, 1, 2, n, tzinfo=UTC)


# -- the policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "verdict", "expectations", "suites", "passed", "reason"),
    [
        (STRICT, "equivalent", None, 0, True, "verdict equivalent; no expectation results"),
        (STRICT, "equivalent", True, 0, True, "verdict equivalent; expectations passed"),
        (STRICT, "equivalent", False, 0, False, "verdict equivalent; expectations failed"),
        (
            LAX,
            "equivalent",
            False,
            0,
            True,
            "verdict equivalent; expectations failed, ignored (gate.expectations is false)",
        ),
        (
            STRICT,
            "equivalent",
            None,
            2,
            False,
            "verdict equivalent; no expectation results, though the spec names 2 suites",
        ),
        (LAX, "equivalent", None, 1, True, "verdict equivalent; no expectation results"),
        (
            STRICT,
            "noisy",
            True,
            0,
            False,
            "verdict noisy (gate.allow_noisy is false); expectations passed",
        ),
        (
            NOISY_OK,
            "noisy",
            None,
            0,
            True,
            "verdict noisy, allowed by gate.allow_noisy; no expectation results",
        ),
        (
            NOISY_OK,
            "noisy",
            False,
            0,
            False,
            "verdict noisy, allowed by gate.allow_noisy; expectations failed",
        ),
        (
            NOISY_OK,
            "divergent",
            True,
            0,
            False,
            "verdict divergent (the gate requires equivalent); expectations passed",
        ),
        (
            NOISY_OK,
            "error",
            None,
            0,
            False,
            "the run failed (verdict error); no expectation results",
        ),
        (STRICT, None, None, 0, False, "the run has no verdict; no expectation results"),
    ],
)
def test_the_policy_decides_with_a_reason_for_both_halves(
    policy: GateSpec,
    verdict: str | None,
    expectations: bool | None,
    suites: int,
    passed: bool,
    reason: str,
) -> None:
    decision = evaluate(policy, verdict, expectations, expected_suites=suites)
    assert decision == GateDecision(passed, reason)


@pytest.mark.parametrize(
    ("policy", "verdict", "expectations", "passed", "reason"),
    [
        (
            STRICT,
            "equivalent",
            None,
            False,
            "verdict equivalent, but both outputs are empty (gate.empty is fail); "
            "no expectation results",
        ),
        (
            GateSpec(empty="pass"),
            "equivalent",
            True,
            True,
            "verdict equivalent on two empty outputs, allowed by gate.empty; expectations passed",
        ),
        (
            GateSpec(empty="pass"),
            "equivalent",
            False,
            False,
            "verdict equivalent on two empty outputs, allowed by gate.empty; expectations failed",
        ),
        (STRICT, "error", None, False, "the run failed (verdict error); no expectation results"),
    ],
)
def test_two_empty_outputs_pass_only_when_gate_empty_says_so(
    policy: GateSpec, verdict: str, expectations: bool | None, passed: bool, reason: str
) -> None:
    assert evaluate(policy, verdict, expectations, empty=True) == GateDecision(passed, reason)


def test_empty_outputs_are_read_from_a_stored_runs_statistics() -> None:
    assert empty_outputs({"reference_count": 0, "candidate_count": 0, "seconds": 1.0})
    assert not empty_outputs({"reference_count": 0, "candidate_count": 3})
    assert not empty_outputs({"reference_count": 2, "candidate_count": 0})
    assert not empty_outputs({})  # a run that recorded no counts is not known to be empty
    assert not empty_outputs(None)


def test_the_policy_stored_with_a_run_is_read_back() -> None:
    stored = {"gate": {"require": "equivalent", "allow_noisy": True, "expectations": False}}
    assert stored_policy({**stored, "expectations": ["a.json", "b.json"]}) == (
        GateSpec(allow_noisy=True, expectations=False),
        2,
    )
    assert stored_policy({"file": "spec.yaml"}) == (GateSpec(), 0)
    assert stored_policy(None) == (GateSpec(), 0)
    with pytest.raises(StoreError, match="the run's stored gate policy is invalid"):
        stored_policy({"gate": {"allow_noisy": "perhaps"}})


@pytest.mark.parametrize(
    "policy",
    [GateSpec(), GateSpec(allow_noisy=True, expectations=False, empty="pass", on_closed="warn")],
)
def test_a_policy_reads_back_what_it_wrote_as_the_spec_loader_reads_it(policy: GateSpec) -> None:
    from matcher.spec import parse_spec

    document = policy.to_dict()
    assert GateSpec.from_document(document) == policy
    loaded = parse_spec({"dependence": "ordered", "gate": document}, "spec.yaml")
    assert loaded.gate == policy


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"require": "divergent"}, "require: 'divergent' is not a valid value"),
        ({"allow_noisy": 1}, "allow_noisy: 1 is not a valid value"),
        ({"empty": True}, "empty: True is not a valid value"),
        ({"on_closed": "warn", "retries": 2}, "retries: unknown key"),
    ],
)
def test_a_stored_policy_the_spec_would_refuse_is_refused_by_key(
    document: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValueError) as raised:
        GateSpec.from_document(document)
    assert str(raised.value) == problem


# -- the store: set_gate and the migration, on both backends ----------------------------------


def complete(
    store: Store,
    run_id: str,
    verdict: str = "equivalent",
    *,
    validation: str = "taxi",
    candidate: str | None = "v2",
    started: int = 1,
    finished: int = 2,
    spec: object = None,
    expectations: tuple[ExpectationRecord, ...] | None = None,
) -> None:
    store.start_run(
        RunStart(
            run_id,
            validation,
            trigger="scheduled",
            reference_version="v1",
            candidate_version=candidate,
            started_at=hour(started),
            spec=spec,
            spec_hash=TODAY,
        )
    )
    counts = {} if verdict == "equivalent" else {"loss": 1, "reordering": 2}
    outcome = RunOutcome(
        verdict, counts=counts, finished_at=hour(finished), expectations=expectations
    )
    store.record_run(run_id, outcome)


def test_set_gate_stores_and_replaces_the_decision(store: Store) -> None:
    complete(store, "taxi/1")
    store.set_gate("taxi/1", False, "verdict divergent; NUL \x00 <b>kept</b>")
    store.set_gate("taxi/1", True, "verdict equivalent; no expectation results")
    run = store.get_run("taxi/1")
    assert run is not None
    assert (run.gate_passed, run.gate_reason) == (
        True,
        "verdict equivalent; no expectation results",
    )
    store.set_gate("taxi/1", False, "NUL \x00 <b>kept</b>")
    (summary,) = store.list_runs(validation="taxi")
    assert (summary.gate_passed, summary.gate_reason) == (False, "NUL \\x00 <b>kept</b>")


def test_set_gate_refuses_runs_without_a_verdict(store: Store) -> None:
    with pytest.raises(UnknownRunError, match=r"cannot set the gate of run 'nope': there is no"):
        store.set_gate("nope", True, "x")
    store.start_run(RunStart("taxi/running", "taxi"))
    with pytest.raises(StoreError, match=r"'taxi/running': it is running, not completed$"):
        store.set_gate("taxi/running", True, "x")
    store.mark_failed("taxi/running", "boom")
    with pytest.raises(StoreError, match=r"it is failed, not completed$"):
        store.set_gate("taxi/running", True, "x")
    run = store.get_run("taxi/running")
    assert run is not None
    assert (run.gate_passed, run.gate_reason) == (False, "the run failed (verdict error)")


def test_a_restarted_run_forgets_its_gate(store: Store) -> None:
    complete(store, "taxi/1")
    store.set_gate("taxi/1", True, "verdict equivalent; no expectation results")
    store.start_run(RunStart("taxi/1", "taxi"))
    run = store.get_run("taxi/1")
    assert run is not None
    assert (run.status, run.gate_passed, run.gate_reason) == ("running", None, None)


def test_record_run_gate_decides_under_the_spec_and_stores(store: Store, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "gate: {allow_noisy: true}\nexpectations: [suites/taxi.json]\n")
    failed = ExpectationRecord("taxi", "candidate", "expect_column_values_to_not_be_null", False)
    complete(store, "taxi/noisy", "noisy")
    complete(store, "taxi/bad", "noisy", expectations=(failed,))
    assert record_run_gate(store, "taxi/noisy", spec) == GateDecision(
        False,
        "verdict noisy, allowed by gate.allow_noisy; no expectation results, though the spec "
        "names 1 suite",
    )
    assert record_run_gate(store, "taxi/bad", spec) == GateDecision(
        False, "verdict noisy, allowed by gate.allow_noisy; expectations failed"
    )
    passed = ExpectationRecord("taxi", "candidate", "expect_column_values_to_not_be_null", True)
    store.record_expectations("taxi/noisy", [passed])
    assert record_run_gate(store, "taxi/noisy", spec).passed is True
    run = store.get_run("taxi/noisy")
    assert run is not None
    assert (run.gate_passed, run.gate_reason) == (
        True,
        "verdict noisy, allowed by gate.allow_noisy; expectations passed",
    )
    with pytest.raises(UnknownRunError, match="cannot gate run 'nope': there is no such run"):
        record_run_gate(store, "nope", spec)
    assert stored_decision(store, "taxi/noisy") == GateDecision(
        True, "verdict noisy, allowed by gate.allow_noisy; expectations passed"
    )
    store.start_run(RunStart("taxi/later", "taxi"))
    with pytest.raises(StoreError, match="run 'taxi/later' has no gate decision"):
        stored_decision(store, "taxi/later")


def test_the_gate_reason_migration_keeps_runs_both_ways(db_url: str, engine: Engine) -> None:
    with Store.open(db_url) as store:
        complete(store, "taxi/1", "divergent")
        store.set_gate("taxi/1", False, "verdict divergent")
    command.downgrade(alembic_config(db_url), "0001")
    with engine.connect() as connection:
        columns = {c["name"] for c in inspect(connection).get_columns("runs")}
        row = connection.execute(text("SELECT run_id, gate_passed FROM runs")).one()
    assert ("gate_passed" in columns, "gate_reason" in columns) == (True, False)
    assert tuple(row) == ("taxi/1", False)
    with Store.open(db_url) as store:
        run = store.get_run("taxi/1")
    assert run is not None
    assert (run.verdict, run.gate_passed, run.gate_reason, run.counts["reordering"]) == (
        "divergent",
        False,
        None,
        2,
    )


# -- gate_status and `parity gate` ------------------------------------------------------------


def write_spec(tmp_path: Path, extra: str = "") -> Spec:
    path = tmp_path / "taxi.yaml"
    path.write_text("name: taxi\ndependence: {key: [taxi_id]}\n" + extra, encoding="utf-8")
    return load_spec(path)


@pytest.fixture
def history(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs of ``taxi``: v2 passed, v3 failed (both gated by the pipeline), v4 noisy and not
    gated (its stored policy allows noise), and a v5 run still running (the newest);
    ``other`` only has a running run. Today's specs of both are in the validations folder
    (``PARITY_VALIDATIONS_DIR``, which the real commands inherit)."""
    spec = write_spec(tmp_path)
    folder = tmp_path / "validations"
    folder.mkdir()
    for name in ("taxi", "other"):
        (folder / f"{name}.yaml").write_text(f"name: {name}\n{TODAY_SPEC}", encoding="utf-8")
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(folder))
    with Store.open(sqlite_url) as store:
        complete(store, "taxi/1", candidate="v2", started=1, finished=2)
        record_run_gate(store, "taxi/1", spec)
        complete(store, "taxi/2", "divergent", candidate="v3", started=3, finished=4)
        record_run_gate(store, "taxi/2", spec)
        allow = {"gate": {"require": "equivalent", "allow_noisy": True, "expectations": True}}
        complete(store, "taxi/3", "noisy", candidate="v4", started=5, finished=6, spec=allow)
        store.start_run(RunStart("taxi/4", "taxi", candidate_version="v5", started_at=hour(7)))
        store.start_run(RunStart("other/1", "other", started_at=hour(8)))
    return sqlite_url


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["gate", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_gate_exits_0_when_the_candidates_newest_run_opened_it(
    history: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(capsys, "taxi", "--candidate", "v2", "--db", history) == (
        0,
        [
            "taxi (candidate v2): gate open: verdict equivalent; no expectation results",
            "  run: taxi/1 (scheduled, finished 2026-01-02T02:00:00+00:00)",
            "  versions: candidate v2, reference v1",
            "  verdict: equivalent",
            "  expectations: 0 passed, 0 failed",
            f"  spec: {TODAY[:12]}… (today's)",
            "  decision: recorded by the pipeline",
        ],
        "",
    )


def test_gate_exits_1_when_the_verdict_closed_it(
    history: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = gate(capsys, "taxi", "--candidate", "v3", "--db", history)
    assert code == 1
    assert lines[0] == (
        "taxi (candidate v3): gate closed: verdict divergent (the gate requires equivalent); "
        "no expectation results"
    )
    assert lines[3] == "  verdict: divergent (loss 1, reordering 2)"


def test_gate_exits_3_while_the_newest_attempt_runs_or_without_a_run(
    history: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(capsys, "other", "--db", history) == (
        3,
        [
            "other: gate no usable verdict: in progress: run other/1 started "
            "2026-01-02T08:00:00+00:00",
            "  run: other/1 (manual, started 2026-01-02T08:00:00+00:00)",
            "  versions: candidate -, reference -",
            "  status: running",
        ],
        "",
    )
    code, lines, _ = gate(capsys, "taxi", "--candidate", "v9", "--db", history)
    assert (code, lines) == (
        3,
        ["taxi (candidate v9): gate no usable verdict: no run for version v9"],
    )


def test_an_ungated_run_is_evaluated_with_its_stored_policy(
    history: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = gate(capsys, "taxi", "--candidate", "v4", "--db", history)  # taxi/3
    assert code == 0
    assert lines[0] == (
        "taxi (candidate v4): gate open: verdict noisy, allowed by gate.allow_noisy; "
        "no expectation results"
    )
    assert lines[-1] == "  decision: evaluated now (none recorded)"


def test_gate_json_is_one_strict_object(history: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = gate(capsys, "taxi", "--candidate", "v3", "--db", history, "--json")
    assert code == 1
    (line,) = lines
    document = json.loads(line)
    assert document == {
        "validation": "taxi",
        "candidate_version": "v3",
        "state": "closed",
        "passed": False,
        "exit_code": 1,
        "reason": "verdict divergent (the gate requires equivalent); no expectation results",
        "recorded": True,
        "run": {
            "run_id": "taxi/2",
            "status": "completed",
            "verdict": "divergent",
            "trigger": "scheduled",
            "reference_version": "v1",
            "candidate_version": "v3",
            "started_at": "2026-01-02T03:00:00+00:00",
            "finished_at": "2026-01-02T04:00:00+00:00",
            "gate_passed": False,
            "gate_reason": (
                "verdict divergent (the gate requires equivalent); no expectation results"
            ),
            "overrides": [],
            "spec_hash": TODAY,
            "error": None,
            "counts": {"loss": 1, "duplication": 0, "reordering": 2, "corruption": 0},
            "total_divergences": 3,
            "expectations": {"total": 0, "failed": 0},
            "noise": None,
        },
        "newer_run": None,
        "max_age": None,
        "suggestions": [],
        "approval": None,
        "spec": {"hash": TODAY, "current": TODAY, "matches": True},
    }


def test_names_from_the_database_print_without_control_characters(sqlite_url: str) -> None:
    with Store.open(sqlite_url) as store:
        complete(store, "r\x1b[2J", validation="evil\x1b[31m")
        status = gate_status(store, "evil\x1b[31m")
    assert status.headline() == (
        "evil\\x1b[31m: gate open: verdict equivalent; no expectation results"
    )
    assert status.details()[0] == "run: r\\x1b[2J (scheduled, finished 2026-01-02T02:00:00+00:00)"


def test_the_real_command_exits_with_the_gate(history: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "parity", "gate", "taxi", "--candidate", "v3", "--db", history],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout.splitlines()[0].startswith("taxi (candidate v3): gate closed: ")
    bad = subprocess.run(
        [sys.executable, "-m", "parity", "gate", "taxi", "--db", "nosuchdriver://x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("parity: error: cannot use database ")
    assert "Traceback" not in bad.stderr
