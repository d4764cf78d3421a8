"""The gate bound to the build (issue 30): a verdict counts only under today's spec (its
verdict digest, ``matcher.spec_digest``) and reference version; ``--wait`` waits out a
running attempt; an approval of exactly the newest run's divergences opens a gate its
verdict closed, in ``parity gate`` and in the pipeline's record step, and nothing else is
approved away. Exit codes 0/1/3/2 through ``parity gate``; on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import types
from pathlib import Path
from typing import Any

import pytest

from matcher.errors import SpecError
from matcher.gate import GateDecision
from matcher.spec import Spec, load_spec
from matcher.spec_digest import short, verdict_digest, verdict_document
from matcher.store import ColumnStat, ExpectationRecord, RunOutcome, RunStart, Store
from parity.airflow.gate import record_run_gate
from parity.cli import gate as gate_cli
from parity.cli import main
from parity.views.gate import CurrentSpec, current_spec, gate_status, stored_decision

pytest_plugins = ["store_fixtures"]

UTC = dt.UTC
SPEC = """\
name: taxi
reference: {application: jobs/v1.py, version: v1, args: ["{input}", "{output}"]}
candidate: {application: jobs/v2.py, version: v2}
schedule: "0 2 * * *"
dependence: {key: [taxi_id]}
equality: {tolerance: {fare: {abs: 0.01}}}
"""
DIVERGED = "verdict divergent (the gate requires equivalent); no expectation results"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The validations folder (``PARITY_VALIDATIONS_DIR``) with today's ``taxi`` spec."""
    path = tmp_path / "validations"
    path.mkdir()
    (path / "taxi.yaml").write_text(SPEC, encoding="utf-8")
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(path))
    return path


@pytest.fixture
def spec(folder: Path) -> Spec:
    return load_spec(folder / "taxi.yaml")


def start(run_id: str, spec: Spec | None, **more: Any) -> RunStart:
    fields: dict[str, Any] = {
        "trigger": "adhoc",
        "reference_version": "v1",
        "candidate_version": "1.5.0",
        "spec": {"gate": spec.gate.to_dict() if spec else {}, "expectations": []},
        "spec_hash": None if spec is None else verdict_digest(spec),
    }
    fields.update(more)
    return RunStart(run_id, "taxi", **fields)


def run(
    store: Store,
    run_id: str,
    spec: Spec | None,
    verdict: str = "divergent",
    *,
    counts: dict[str, int] | None = None,
    columns: tuple[str, ...] = ("fare",),
    expectations: tuple[ExpectationRecord, ...] | None = None,
    **more: Any,
) -> None:
    """A completed run of ``taxi`` (divergent: two lost events, the fare differs)."""
    store.start_run(start(run_id, spec, **more))
    counts = ({"loss": 2} if verdict != "equivalent" else {}) if counts is None else counts
    stats = tuple(ColumnStat(c, 1) for c in columns) if verdict != "equivalent" else ()
    outcome = RunOutcome(verdict, counts=counts, column_stats=stats, expectations=expectations)
    store.record_run(run_id, outcome)


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["gate", "taxi", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def gate_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, lines, err = gate(capsys, *args, "--json")
    assert err == ""
    (line,) = lines
    return code, json.loads(line)


# -- the verdict digest ----------------------------------------------------------------------


def test_the_digest_covers_what_decides_the_verdict_and_nothing_else(spec: Spec) -> None:
    digest = verdict_digest(spec)
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert set(verdict_document(spec)) == {
        "digest",
        "dependence",
        "equality",
        "schema",
        "output",
        "expectations",
        "noise",
        "gate",
    }

    def variant(text: str) -> str:
        return verdict_digest(load_spec(_write(spec, text)))

    # Where the applications run, their versions, the schedule and the name: not the verdict.
    same = SPEC.replace("jobs/v1.py", "s3a://artifacts/v1.py").replace("0 2 * * *", "@daily")
    assert variant(same.replace("version: v2", "version: v3")) == digest
    assert variant(SPEC + "airflow: {pool: other}\n") == digest
    # A default spelled out is the default.
    assert variant(SPEC + "schema: {mode: compatible}\ngate: {allow_noisy: false}\n") == digest
    # What decides the verdict or the gate.
    for changed in (
        SPEC.replace("abs: 0.01", "abs: 0.02"),
        SPEC.replace("key: [taxi_id]", "key: [taxi_id, day]"),
        SPEC + "schema: {mode: strict}\n",
        SPEC + "gate: {allow_noisy: true}\n",
        SPEC + "expectations: [suites/taxi.json]\n",
        SPEC + "output: {order_by: [at]}\n",
        SPEC + "noise: {reference_runs: 2}\n",
    ):
        assert variant(changed) != digest, changed


def _write(spec: Spec, text: str) -> Path:
    path = Path(spec.source).parent.parent / "variant" / "taxi.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_current_spec_is_found_as_the_dags_find_it(
    spec: Spec, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    today = CurrentSpec(verdict_digest(spec), "v1", str(folder / "taxi.yaml"))
    assert current_spec("taxi") == today
    assert current_spec("nope") is None
    renamed = folder / "rides.yml"  # found by its name: key when the file is named otherwise
    (folder / "taxi.yaml").rename(renamed)
    assert current_spec("taxi") == CurrentSpec(today.spec_hash, "v1", str(renamed))
    given = current_spec("taxi", str(renamed))
    assert given is not None and given.spec_hash == today.spec_hash
    with pytest.raises(SpecError, match=r"rides\.yml: the spec of validation 'taxi', not 'x'$"):
        current_spec("x", str(renamed))
    monkeypatch.delenv("PARITY_VALIDATIONS_DIR")
    dags = tmp_path / "dags"
    (dags / "validations").mkdir(parents=True)
    renamed.rename(dags / "validations" / "taxi.yaml")
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(dags))
    found = current_spec("taxi")
    assert found is not None and found.source == str(dags / "validations" / "taxi.yaml")


# -- the gate bound to today's spec and reference ---------------------------------------------


def test_a_run_under_today_s_spec_answers(
    store: Store, db_url: str, spec: Spec, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", spec, "equivalent")
    code, document = gate_json(capsys, "--candidate", "1.5.0", "--db", db_url)
    assert (code, document["state"], document["approval"]) == (0, "open", None)
    digest = verdict_digest(spec)
    assert document["spec"] == {"hash": digest, "current": digest, "matches": True}
    assert document["run"]["spec_hash"] == digest


def test_a_run_under_another_spec_is_no_usable_verdict(
    store: Store, db_url: str, spec: Spec, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", spec, "equivalent")
    (folder / "taxi.yaml").write_text(SPEC.replace("abs: 0.01", "abs: 5"), encoding="utf-8")
    today = verdict_digest(load_spec(folder / "taxi.yaml"))
    then = verdict_digest(spec)
    code, lines, err = gate(capsys, "--candidate", "1.5.0", "--db", db_url)
    assert (code, err) == (3, "")
    assert lines[0] == (
        f"taxi (candidate 1.5.0): gate no usable verdict: made under another spec (hash "
        f"{then[:12]}…, today's {today[:12]}… in {folder / 'taxi.yaml'}); run it again"
    )
    assert f"  spec: {short(then)} (today's is {short(today)})" in lines
    code, document = gate_json(capsys, "--db", db_url)
    assert (code, document["spec"]) == (3, {"hash": then, "current": today, "matches": False})


def test_a_run_against_another_reference_version_is_no_usable_verdict(
    store: Store, db_url: str, spec: Spec, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", spec, "equivalent", reference_version="v0")
    code, lines, _ = gate(capsys, "--db", db_url)
    assert (code, lines[0]) == (
        3,
        "taxi: gate no usable verdict: made against another reference version (v0, today's "
        "v1); run it again",
    )


def test_a_run_recorded_before_spec_binding_is_no_usable_verdict(
    store: Store, db_url: str, spec: Spec, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", None, "equivalent")
    code, document = gate_json(capsys, "--db", db_url)
    assert (code, document["state"]) == (3, "no_verdict")
    assert document["reason"].startswith(
        "recorded before spec binding: run taxi/1 has no spec hash (today's spec "
    )
    # The library's callers without a spec: not checked.
    assert gate_status(store, "taxi").state == "open"


def test_no_spec_found_is_an_error_naming_where_it_looked(
    store: Store, db_url: str, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", None, "equivalent")
    (folder / "taxi.yaml").unlink()
    why = (
        f"no spec for validation 'taxi' in {folder} (PARITY_VALIDATIONS_DIR): give its file "
        "with --spec FILE (or set PARITY_VALIDATIONS_DIR)"
    )
    assert gate(capsys, "--db", db_url) == (2, [], f"parity: error: {why}\n")
    code, document = gate_json(capsys, "--db", db_url)
    assert (code, document["state"], document["reason"]) == (2, "error", why)
    other = tmp_path / "other.yaml"
    other.write_text(SPEC.replace("name: taxi", "name: other"), encoding="utf-8")
    assert gate(capsys, "--spec", str(other), "--db", db_url) == (
        2,
        [],
        f"parity: error: {other}: the spec of validation 'other', not 'taxi'\n",
    )


# -- --wait ----------------------------------------------------------------------------------


class Clock:
    """``time`` for ``parity gate --wait``: sleeping moves the clock, and runs ``then`` once
    (the job finishing while the gate waits)."""

    def __init__(self, then: Any = None) -> None:
        self.now, self.slept, self.then = 0.0, [], then

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        if self.then is not None:
            self.then, then = None, self.then
            then()


def test_wait_answers_when_the_running_attempt_finishes(
    store: Store,
    db_url: str,
    spec: Spec,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store.start_run(start("taxi/1", spec))

    def finish() -> None:
        store.record_run("taxi/1", RunOutcome("equivalent"))

    clock = Clock(then=finish)
    monkeypatch.setattr(gate_cli, "time", types.SimpleNamespace(**_methods(clock)))
    assert gate(capsys, "--db", db_url)[0] == 3  # without --wait: in progress
    code, lines, _ = gate(capsys, "--wait", "--db", db_url)
    assert (code, lines[0]) == (0, "taxi: gate open: verdict equivalent; no expectation results")
    assert clock.slept == [1.0]


def _methods(clock: Clock) -> dict[str, Any]:
    return {"monotonic": clock.monotonic, "sleep": clock.sleep}


def test_wait_gives_up_after_the_timeout_with_no_usable_verdict(
    store: Store,
    db_url: str,
    spec: Spec,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store.start_run(start("taxi/1", spec))
    clock = Clock()
    monkeypatch.setattr(gate_cli, "time", types.SimpleNamespace(**_methods(clock)))
    code, document = gate_json(capsys, "--wait", "--timeout", "1m", "--db", db_url)
    assert (code, document["state"]) == (3, "no_verdict")
    assert document["reason"].startswith("still running after --timeout 1m: in progress: run ")
    assert clock.slept == [1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]  # backing off, to 60s
    assert gate(capsys, "--timeout", "1m", "--db", db_url) == (
        2,
        [],
        "parity: error: --timeout: it bounds --wait; give --wait too\n",
    )


# -- approvals at the gate -------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> int:
    code = main(list(args))
    capsys.readouterr()
    return code


def test_an_approval_opens_the_gate_for_the_same_divergences_only(
    store: Store, db_url: str, spec: Spec, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", spec)
    record_run_gate(store, "taxi/1", spec)
    assert gate(capsys, "--candidate", "1.5.0", "--db", db_url)[0] == 1
    approve = ["approve", "taxi/1", "--reason", "fare fix (JIRA-12)", "--by", "alice"]
    assert cli(capsys, *approve, "--db", db_url) == 0
    (made,) = store.approvals()
    day = f"{made.at:%Y-%m-%d}"
    code, lines, _ = gate(capsys, "--candidate", "1.5.0", "--db", db_url)
    assert (code, lines[0]) == (
        0,
        f"taxi (candidate 1.5.0): gate open: approved by alice on {day}: fare fix (JIRA-12) "
        f"(approval {made.approval_id} of run taxi/1; {DIVERGED})",
    )
    code, document = gate_json(capsys, "--candidate", "1.5.0", "--db", db_url)
    assert (code, document["approval"]) == (0, made.to_dict())
    # Another version, or a new run of this one that diverges otherwise: closed again.
    run(store, "taxi/2", spec, candidate_version="1.6.0")
    assert gate(capsys, "--candidate", "1.6.0", "--db", db_url)[0] == 1
    run(store, "taxi/3", spec, counts={"loss": 3})
    record_run_gate(store, "taxi/3", spec)
    code, lines, _ = gate(capsys, "--candidate", "1.5.0", "--db", db_url)
    assert (code, lines[0]) == (1, f"taxi (candidate 1.5.0): gate closed: {DIVERGED}")
    assert lines[-1] == (
        "  approval of run taxi/1 covers other divergences (divergent: loss 2; columns fare; "
        "this run: divergent: loss 3; columns fare)"
    )
    # The same divergences again: the approval covers the newest run too.
    run(store, "taxi/4", spec)
    decision = record_run_gate(store, "taxi/4", spec)
    assert decision.passed and decision.reason.startswith("approved by alice on ")
    assert stored_decision(store, "taxi/4") == decision  # the DAG's gate task passes
    assert gate(capsys, "--candidate", "1.5.0", "--db", db_url)[0] == 0
    # Revoked: closed at once, though the pipeline had recorded it open.
    assert cli(capsys, "revoke", "taxi/1", "--reason", "no", "--by", "bob", "--db", db_url) == 0
    code, lines, _ = gate(capsys, "--candidate", "1.5.0", "--db", db_url)
    assert (code, lines[0]) == (1, f"taxi (candidate 1.5.0): gate closed: {DIVERGED}")


def test_noisy_is_approved_only_where_the_spec_does_not_allow_it(
    store: Store, db_url: str, spec: Spec, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", spec, "noisy")
    assert gate(capsys, "--db", db_url)[0] == 1
    store.approve("taxi/1", actor="alice", reason="known noise")
    code, lines, _ = gate(capsys, "--db", db_url)
    assert code == 0
    assert lines[0].endswith("verdict noisy (gate.allow_noisy is false); no expectation results)")


@pytest.mark.parametrize("why", ["expectations", "overrides", "failed task"])
def test_an_approval_never_opens_what_the_verdict_did_not_close_alone(
    store: Store, db_url: str, spec: Spec, capsys: pytest.CaptureFixture[str], why: str
) -> None:
    failed = ExpectationRecord("taxi", "candidate", "expect_column_values_to_not_be_null", False)
    more: dict[str, Any] = {
        "expectations": (failed,) if why == "expectations" else None,
        "overrides": ("equality",) if why == "overrides" else None,
    }
    run(store, "taxi/1", spec, **more)
    store.approve("taxi/1", actor="alice", reason="intended")
    tasks = ["expectations"] if why == "failed task" else []
    decision = record_run_gate(store, "taxi/1", spec, failed_tasks=tasks)
    reason = {
        "expectations": "verdict divergent (the gate requires equivalent); expectations failed",
        "overrides": f"{DIVERGED}; overrides equality (gate.allow_overrides is false)",
        "failed task": f"expectations failed; {DIVERGED}",
    }[why]
    assert decision == GateDecision(False, reason)
    code, lines, _ = gate(capsys, "--db", db_url)
    assert (code, lines[0]) == (1, f"taxi: gate closed: {reason}")


def test_a_failed_newest_attempt_is_not_approved_away(
    store: Store, db_url: str, spec: Spec, capsys: pytest.CaptureFixture[str]
) -> None:
    run(store, "taxi/1", spec)
    store.approve("taxi/1", actor="alice", reason="intended")
    store.mark_failed("taxi/2", "spark-submit exited 1", start=start("taxi/2", spec))
    code, lines, _ = gate(capsys, "--db", db_url)
    assert (code, lines[0]) == (
        3,
        "taxi: gate no usable verdict: newest attempt failed: spark-submit exited 1",
    )
