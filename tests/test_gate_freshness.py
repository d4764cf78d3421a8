"""``parity gate`` answers "no usable verdict" honestly (issue 30, first slice): the newest
attempt decides (running or failed: exit 3, never an older verdict), ``--max-age`` makes an
old verdict stale (3), a version that never ran is 3, an unknown validation is an error (2)
with the nearest names, and under ``--json`` every outcome is one object on stdout. On
SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from matcher.spec import parse_spec, parse_yaml
from matcher.spec_digest import verdict_digest
from matcher.store import RunOutcome, RunStart, Store
from matcher.store.records import PROPERTIES, utc_now
from parity.cli import main
from parity.views.gate import MaxAge, gate_status

pytest_plugins = ["store_fixtures"]

ROOT = Path(__file__).resolve().parents[1]
UTC = dt.UTC
FAILED = "spark-submit exited 1: candidate raised ValueError"
#: today's spec of every validation here (its name aside): the runs are made under it
SPEC = "reference: {application: ref.py, version: v1}\ndependence: {key: [taxi_id]}\n"
TODAY = verdict_digest(parse_spec(parse_yaml(SPEC, "<spec>")))


@pytest.fixture(autouse=True)
def specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Today's specs of ``taxi`` and ``tax_report`` in a validations folder the gate finds
    (``PARITY_VALIDATIONS_DIR``, inherited by the real commands too)."""
    folder = tmp_path / "validations"
    folder.mkdir()
    for name in ("taxi", "tax_report"):
        (folder / f"{name}.yaml").write_text(f"name: {name}\n{SPEC}", encoding="utf-8")
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(folder))
    return folder


def hour(n: int) -> dt.datetime:
    return dt.datetime(2026, 1, 2, n, tzinfo=UTC)


def start(run_id: str, candidate: str | None, started: dt.datetime, **more: Any) -> RunStart:
    return RunStart(
        run_id,
        more.pop("validation", "taxi"),
        trigger="scheduled",
        reference_version="v1",
        candidate_version=candidate,
        started_at=started,
        spec_hash=more.pop("spec_hash", TODAY),
        **more,
    )


def complete(
    store: Store, run_id: str, candidate: str, started: dt.datetime, finished: dt.datetime
) -> None:
    store.start_run(start(run_id, candidate, started))
    store.record_run(run_id, RunOutcome("equivalent", finished_at=finished))
    store.set_gate(run_id, True, "verdict equivalent; no expectation results")


@pytest.fixture
def runs(db_url: str) -> str:
    """``taxi``: v2 completed and open (taxi/1), then its newer attempt failed (taxi/2); v3
    completed and open (taxi/3), then a newer attempt is running (taxi/4); v4 completed and
    open, long ago (taxi/5). ``tax_report`` has only a properties run."""
    with Store.open(db_url) as store:
        complete(store, "taxi/1", "v2", hour(1), hour(2))
        store.mark_failed("taxi/2", FAILED, start=start("taxi/2", "v2", hour(3)))
        complete(store, "taxi/3", "v3", hour(4), hour(5))
        store.start_run(start("taxi/4", "v3", hour(6)))
        complete(store, "taxi/5", "v4", hour(0), hour(0) + dt.timedelta(minutes=30))
        store.start_run(start("props/1", None, hour(1), validation="tax_report", kind=PROPERTIES))
    return db_url


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["gate", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def gate_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code, lines, err = gate(capsys, *args, "--json")
    (line,) = lines  # exactly one object, nothing else
    return code, json.loads(line), err


def picked(document: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: document[key] for key in keys}


KEYS = ("validation", "candidate_version", "state", "passed", "exit_code", "reason")


# -- the newest attempt decides -------------------------------------------------------------


def test_a_failed_newest_attempt_is_no_usable_verdict_never_the_older_run(
    runs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(capsys, "taxi", "--candidate", "v2", "--db", runs) == (
        3,
        [
            f"taxi (candidate v2): gate no usable verdict: newest attempt failed: {FAILED}",
            "  run: taxi/2 (scheduled, finished " + _finished(runs, "taxi/2") + ")",
            "  versions: candidate v2, reference v1",
            "  status: failed",
        ],
        "",
    )
    code, document, err = gate_json(capsys, "taxi", "--candidate", "v2", "--db", runs)
    assert (code, err) == (3, "")
    assert picked(document, *KEYS, "recorded", "newer_run", "suggestions") == {
        "validation": "taxi",
        "candidate_version": "v2",
        "state": "no_verdict",
        "passed": None,
        "exit_code": 3,
        "reason": f"newest attempt failed: {FAILED}",
        "recorded": False,
        "newer_run": None,
        "suggestions": [],
    }
    assert picked(document["run"], "run_id", "status", "verdict", "error") == {
        "run_id": "taxi/2",
        "status": "failed",
        "verdict": "error",
        "error": FAILED,
    }


def test_an_attempt_whose_job_died_is_a_failed_attempt(
    runs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A running run whose lease lapsed (its job was killed outright) reads as failed: not
    "in progress" forever, and not the older verdict either."""
    with Store.open(runs) as store:
        store.start_run(start("taxi/6", "v4", utc_now()), lease=0.001)
    time.sleep(0.05)
    code, document, _ = gate_json(capsys, "taxi", "--candidate", "v4", "--db", runs)
    assert (code, document["state"], document["run"]["run_id"]) == (3, "no_verdict", "taxi/6")
    assert document["reason"].startswith(
        "newest attempt failed: the job stopped reporting: its lease expired at "
    )


def test_a_running_newest_attempt_is_in_progress(
    runs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    in_progress = "in progress: run taxi/4 started 2026-01-02T06:00:00+00:00"
    code, lines, err = gate(capsys, "taxi", "--candidate", "v3", "--db", runs)
    assert (code, lines[0], err) == (
        3,
        f"taxi (candidate v3): gate no usable verdict: {in_progress}",
        "",
    )
    code, document, _ = gate_json(capsys, "taxi", "--db", runs)  # any version: taxi/4 too
    assert (code, document["state"], document["reason"]) == (3, "no_verdict", in_progress)


def test_a_completed_newest_attempt_decides(runs: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = gate(capsys, "taxi", "--candidate", "v4", "--db", runs)
    assert (code, lines[0]) == (
        0,
        "taxi (candidate v4): gate open: verdict equivalent; no expectation results",
    )


def test_a_version_or_validation_that_never_ran_is_no_usable_verdict(
    runs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(capsys, "taxi", "--candidate", "v9", "--db", runs) == (
        3,
        ["taxi (candidate v9): gate no usable verdict: no run for version v9"],
        "",
    )
    assert gate(capsys, "tax_report", "--db", runs) == (  # known by a properties run only
        3,
        ["tax_report: gate no usable verdict: no run for any version"],
        "",
    )


# -- --max-age -------------------------------------------------------------------------------


def test_a_verdict_older_than_max_age_is_stale(runs: str) -> None:
    now = hour(0) + dt.timedelta(days=3, hours=4, minutes=40)  # taxi/5 finished 00:30
    with Store.open_readonly(runs) as store:
        stale = gate_status(store, "taxi", "v4", max_age=MaxAge.parse("3d"), now=now)
        fresh = gate_status(store, "taxi", "v4", max_age=MaxAge.parse("4d"), now=now)
    assert (stale.exit_code, stale.headline()) == (
        3,
        "taxi (candidate v4): gate no usable verdict: stale: finished 3d 4h ago, older than "
        "--max-age 3d",
    )
    assert (stale.to_dict()["max_age"], stale.run is not None and stale.run.run_id) == (
        "3d",
        "taxi/5",
    )
    assert (fresh.exit_code, fresh.state) == (0, "open")


def test_max_age_on_the_command_line(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    finished = utc_now() - dt.timedelta(days=2, hours=3, minutes=30)
    with Store.open(db_url) as store:
        complete(store, "taxi/1", "v2", finished - dt.timedelta(hours=1), finished)
    code, lines, _ = gate(capsys, "taxi", "--candidate", "v2", "--max-age", "2d", "--db", db_url)
    assert (code, lines[0]) == (
        3,
        "taxi (candidate v2): gate no usable verdict: stale: finished 2d 3h ago, older than "
        "--max-age 2d",
    )
    code, document, _ = gate_json(capsys, "taxi", "--max-age", "1w", "--db", db_url)
    assert picked(document, "state", "exit_code", "max_age") == {
        "state": "open",
        "exit_code": 0,
        "max_age": "1w",
    }


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("1y", "expected a duration such as 30m, 6h, 1d or 2w, got '1y'"),
        ("0d", "expected a duration such as 30m, 6h, 1d or 2w, got '0d'"),
        ("-1d", "expected a duration such as 30m, 6h, 1d or 2w, got '-1d'"),
        ("3651d", "at most 3650d (ten years), got '3651d'"),
        ("9" * 40 + "w", "at most 3650d (ten years), got '" + "9" * 40 + "w'"),
    ],
)
def test_a_bad_max_age_is_an_error(
    runs: str, capsys: pytest.CaptureFixture[str], value: str, why: str
) -> None:
    assert gate(capsys, "taxi", f"--max-age={value}", "--db", runs) == (
        2,
        [],
        f"parity: error: --max-age: {why}\n",
    )
    code, document, err = gate_json(capsys, "taxi", f"--max-age={value}", "--db", runs)
    assert (code, err) == (2, "")
    assert picked(document, *KEYS, "run", "max_age") == {
        "validation": "taxi",
        "candidate_version": None,
        "state": "error",
        "passed": None,
        "exit_code": 2,
        "reason": f"--max-age: {why}",
        "run": None,
        "max_age": value,
    }


# -- errors: exit 2, and one JSON object under --json -----------------------------------------


@pytest.mark.parametrize(
    ("name", "suggestions"),
    [("taxx", ["taxi"]), ("tax_reprot", ["tax_report"]), ("zzz", [])],
)
def test_an_unknown_validation_is_an_error_with_the_nearest_names(
    runs: str, capsys: pytest.CaptureFixture[str], name: str, suggestions: list[str]
) -> None:
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
    reason = f"unknown validation {name!r}: no run has that name{hint}"
    assert gate(capsys, name, "--candidate", "v2", "--db", runs) == (
        2,
        [],
        f"parity: error: {reason}\n",
    )
    code, document, err = gate_json(capsys, name, "--candidate", "v2", "--db", runs)
    assert (code, err) == (2, "")
    assert picked(document, *KEYS, "suggestions") == {
        "validation": name,
        "candidate_version": "v2",
        "state": "error",
        "passed": None,
        "exit_code": 2,
        "reason": reason,
        "suggestions": suggestions,
    }


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ([], "the following arguments are required: VALIDATION"),
        (["taxi", "--bogus"], "unrecognized arguments: --bogus"),
        (["taxi", "--max-age"], "argument --max-age: expected one argument"),
        (["taxi", "--candidate"], "argument --candidate: expected one argument"),
    ],
)
def test_a_usage_error_under_json_is_one_object_too(
    capsys: pytest.CaptureFixture[str], args: list[str], why: str
) -> None:
    code, document, err = gate_json(capsys, *args)
    assert (code, err) == (2, "")
    assert picked(document, *KEYS, "run") == {
        "validation": None,
        "candidate_version": None,
        "state": "error",
        "passed": None,
        "exit_code": 2,
        "reason": f"parity gate: {why}",
        "run": None,
    }
    code, lines, err = gate(capsys, *args)  # without --json: argparse's usage, exit 2
    assert (code, lines) == (2, [])
    assert err.splitlines()[-1].endswith(f"error: {why}")


def test_an_unreachable_store_is_an_error_even_under_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "postgresql+psycopg://parity@127.0.0.1:1/nowhere"
    code, lines, err = gate(capsys, "taxi", "--db", url)
    assert (code, lines) == (2, [])
    assert err.startswith("parity: error: ") and err.count("\n") == 1
    code, document, err = gate_json(capsys, "taxi", "--db", url)
    assert (code, err) == (2, "")
    assert picked(document, "state", "exit_code", "passed", "run") == {
        "state": "error",
        "exit_code": 2,
        "passed": None,
        "run": None,
    }
    assert document["reason"] == lines_of_error(capsys, url)


def lines_of_error(capsys: pytest.CaptureFixture[str], url: str) -> str:
    """The text mode's error line, without its ``parity: error: `` prefix."""
    main(["gate", "taxi", "--db", url])
    return capsys.readouterr().err.removeprefix("parity: error: ").rstrip("\n")


def _finished(url: str, run_id: str) -> str:
    with Store.open_readonly(url) as store:
        run = store.get_run(run_id)
    assert run is not None and run.finished_at is not None
    return run.finished_at.isoformat(timespec="seconds")


def test_the_real_command_exits_3_and_2_with_one_json_object(sqlite_url: str) -> None:
    with Store.open(sqlite_url) as store:
        complete(store, "taxi/1", "v2", hour(1), hour(2))
        store.mark_failed("taxi/2", FAILED, start=start("taxi/2", "v2", hour(3)))
    outcomes = []
    for db in (sqlite_url, "nosuchdriver://x"):
        result = subprocess.run(
            [sys.executable, "-m", "parity", "gate", "taxi", "--json", "--db", db],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        (line,) = result.stdout.splitlines()
        document = json.loads(line)
        outcomes.append((result.returncode, result.stderr, document["state"], document["reason"]))
    assert outcomes[0] == (3, "", "no_verdict", f"newest attempt failed: {FAILED}")
    assert outcomes[1][:3] == (2, "", "error")
    assert outcomes[1][3].startswith("cannot use database ")
