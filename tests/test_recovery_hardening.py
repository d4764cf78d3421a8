"""Issue 29, the recovery part: a recovery run that tested nothing never passes (item 3), a
stored crash log with wrongly typed values is shown, not a crash (item 10), and ``parity
recovery`` starts its run before the crash loop and takes its jobs with it when it is
killed (item 11).

The streaming job is a stand-in ``spark-submit`` (``FAKE_SUBMIT``): it keeps a checkpoint's
layout (``offsets/N``, ``commits/N``), resumes from its last commit, optionally writes the
detector's windows, and forks a child into a session of its own, as PySpark's worker daemon
does. Real Spark jobs under the crash loop: ``test_recovery.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from matcher.store import RunStart, Store
from matcher.store.records import RECOVERY
from parity.cli import main
from parity.cli import recovery as recovery_cli
from parity.recovery.crashes import CrashedRun
from parity.recovery.runner import check_windows_output, plan_recovery, require_crashes

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

ROOT = Path(__file__).resolve().parent.parent

FAKE_SUBMIT = textwrap.dedent(
    """\
    import json, os, subprocess, sys, time
    from pathlib import Path

    args = sys.argv[1:]
    def value(flag):
        return args[args.index(flag) + 1]
    checkpoint, output = Path(value("--checkpoint")), Path(value("--output"))
    batches, pause = int(os.environ["FAKE_BATCHES"]), float(os.environ["FAKE_PAUSE"])
    writes = os.environ.get("FAKE_WRITES") == "1"
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    output.mkdir(parents=True, exist_ok=True)  # as a Spark file sink does, rows or not
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             start_new_session=True)
    pids = os.environ.get("FAKE_PIDS")
    if pids:
        Path(pids).write_text(json.dumps([os.getpid(), child.pid]))
    done = len(os.listdir(checkpoint / "commits"))
    for batch in range(done, batches):
        (checkpoint / "offsets" / str(batch)).write_text("v1")
        time.sleep(pause)
        if writes:
            tail = batch + 1
            window = [max(0, tail - back) for back in (3, 2, 1, 0)]
            (output / f"part-{batch:05d}.jsonl").write_text(
                json.dumps({"key": "k", "window": window}) + "\\n")
        (checkpoint / "commits" / str(batch)).write_text("v1")
        time.sleep(pause / 2)
    child.kill()
    """
)

SPEC = """\
name: hardening
application:
  application: jobs/examples/sequence_window.py
  args: [--checkpoint, "{{checkpoint}}", --output, "{{output}}", --input, "{{input}}"]
  version: v1
recovery: {{crashes: {crashes}, seed: 1, check: windows{extra}}}
input: {{path: {input}, format: jsonl}}
output: {{format: jsonl}}
dependence: {{key: [key]}}
"""


@pytest.fixture
def fake_submit(tmp_path: Path) -> Path:
    path = tmp_path / "spark-submit"
    path.write_text(f"#!{sys.executable}\n{FAKE_SUBMIT}", encoding="utf-8")
    path.chmod(0o755)
    return path


def _spec(tmp_path: Path, *, crashes: int = 1, extra: str = "") -> Path:
    inputs = tmp_path / "input"
    inputs.mkdir(exist_ok=True)
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(crashes=crashes, extra=extra, input=inputs), encoding="utf-8")
    return path


def _args(tmp_path: Path, spec: Path, db: str) -> list[str]:
    return [
        *("recovery", str(spec), "--root", str(ROOT), "--home", str(tmp_path / "home")),
        *("--db", db, "--no-progress"),
    ]


def _job(monkeypatch: pytest.MonkeyPatch, batches: int, pause: float, *, writes: bool) -> None:
    monkeypatch.setenv("FAKE_BATCHES", str(batches))
    monkeypatch.setenv("FAKE_PAUSE", str(pause))
    monkeypatch.setenv("FAKE_WRITES", "1" if writes else "0")


def _only_run(db: str) -> tuple[str, str | None, str | None, str | None]:
    with Store.open_readonly(db) as store:
        (summary,) = store.list_runs()
        record = store.get_run(summary.run_id)
    assert record is not None
    return record.kind, record.status, record.verdict, record.error


def _gate(db: str, capsys: pytest.CaptureFixture[str], spec: Path) -> int:
    code = main(["gate", "hardening", "--spec", str(spec), "--db", db])
    capsys.readouterr()
    return code


# --- item 3: a check that tested nothing never passes ---------------------------------------


def test_a_run_whose_crashes_never_landed_is_an_error(
    tmp_path: Path,
    sqlite_url: str,
    fake_submit: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The job finishes (no batch at all) before the one planned kill: exit 2, failed."""
    _job(monkeypatch, batches=0, pause=0.05, writes=False)
    monkeypatch.setattr(recovery_cli, "find_spark_submit", lambda: str(fake_submit))
    code = main(_args(tmp_path, _spec(tmp_path), sqlite_url))
    out, err = capsys.readouterr()
    reason = "only 0 of 1 crashes landed; lengthen the input or lower recovery.crashes"
    assert (code, out, err.splitlines()[-1]) == (2, "", f"parity: error: {reason}")
    assert _only_run(sqlite_url) == (RECOVERY, "failed", "error", reason)
    assert _gate(sqlite_url, capsys, _spec(tmp_path)) == 3  # newest attempt failed


def test_a_run_that_wrote_nothing_is_an_error(
    tmp_path: Path,
    sqlite_url: str,
    fake_submit: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The crash lands, the job recovers and finishes, and its output holds no record."""
    _job(monkeypatch, batches=8, pause=0.15, writes=False)
    monkeypatch.setattr(recovery_cli, "find_spark_submit", lambda: str(fake_submit))
    code = main(_args(tmp_path, _spec(tmp_path), sqlite_url))
    out, err = capsys.readouterr()
    reason = (
        "the crashed run wrote no records: a windows check of an empty output tests nothing "
        "(does the application write to its output folder?)"
    )
    assert (code, out, err.splitlines()[-1]) == (2, "", f"parity: error: {reason}")
    assert _only_run(sqlite_url) == (RECOVERY, "failed", "error", reason)
    assert _gate(sqlite_url, capsys, _spec(tmp_path)) == 3  # newest attempt failed


def test_a_run_that_crashed_and_wrote_its_windows_passes(
    tmp_path: Path,
    sqlite_url: str,
    fake_submit: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The control: the same loop, with records, passes (the detector's at-least-once
    replays of the batch in flight are accepted)."""
    _job(monkeypatch, batches=8, pause=0.15, writes=True)
    monkeypatch.setattr(recovery_cli, "find_spark_submit", lambda: str(fake_submit))
    spec = _spec(tmp_path, extra=", expected: 8, at_least_once: true")
    code = main(_args(tmp_path, spec, sqlite_url))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("recovery: hardening: pass (loss 0, duplication 0, reordering 0, ")
    assert "; 1 of 1 crashes injected, 1 recovered" in out
    assert _only_run(sqlite_url)[:3] == (RECOVERY, "completed", "equivalent")


@pytest.mark.parametrize(
    ("log", "message"),
    [
        ({"planned": 3, "injected": 2}, "only 2 of 3 crashes landed"),
        ({"planned": 1, "injected": 0}, "only 0 of 1 crashes landed"),
        ({"planned": "1", "injected": 1}, "the crash log (crashes.json) does not say"),
        ({"error": "boom"}, "the crash log (crashes.json) does not say"),
    ],
)
def test_fewer_crashes_than_planned_is_refused(log: dict[str, object], message: str) -> None:
    from parity.recovery.crashes import RecoveryError

    with pytest.raises(RecoveryError) as caught:
        require_crashes(log)
    assert str(caught.value).startswith(message)


def test_every_planned_crash_landed_is_accepted() -> None:
    log = CrashedRun(crashes=(), attempts=1, planned=0, seconds=1.0, batches=3).to_dict()
    require_crashes(log)
    require_crashes({"planned": 2, "injected": 2})


def test_an_empty_output_with_expected_is_a_loss(tmp_path: Path) -> None:
    """With ``expected``, nothing written is the loss of every update: divergent."""
    from matcher.spec import load_spec

    spec = load_spec(_spec(tmp_path, extra=", expected: 3"))
    plan = plan_recovery(spec, root=ROOT, home=tmp_path / "home", run_id="r1")
    plan.path("crashed").mkdir(parents=True)
    outcome = check_windows_output(plan, {"planned": 1, "injected": 1})
    assert (outcome.verdict, outcome.counts["loss"]) == ("divergent", 1)


# --- item 11: the run is stored first, its jobs die with it --------------------------------


def test_a_bad_store_is_refused_before_any_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(recovery_cli, "find_spark_submit", lambda: str(tmp_path / "never"))
    db = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'parity.db'}"
    code = main(_args(tmp_path, _spec(tmp_path), db))
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"parity: error: cannot migrate {db}: OperationalError: unable to open database file"
    )
    assert not (tmp_path / "home").exists()  # no workspace, no job


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            state = file.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


def test_kill_9_of_parity_recovery_takes_its_job_and_the_run_fails(
    tmp_path: Path, sqlite_url: str, fake_submit: Path
) -> None:
    pids_file = tmp_path / "pids.json"
    env = {
        **os.environ,
        "FAKE_BATCHES": "1000",
        "FAKE_PAUSE": "0.5",
        "FAKE_PIDS": str(pids_file),
        "PARITY_RUN_LEASE_SECONDS": "3",
    }
    script = (
        "import sys\n"
        "from parity.cli import main, recovery\n"
        f"recovery.find_spark_submit = lambda: {str(fake_submit)!r}\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    args = _args(tmp_path, _spec(tmp_path, crashes=5), sqlite_url)
    parity = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not pids_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        job, child = json.loads(pids_file.read_text())
        assert _alive(job) and _alive(child)
        with Store.open_readonly(sqlite_url) as store:
            (summary,) = store.list_runs()
            assert (summary.kind, summary.status) == (RECOVERY, "running")
        os.kill(parity.pid, signal.SIGKILL)
        parity.wait(timeout=10)
        gone_by = time.monotonic() + 5
        while (_alive(job) or _alive(child)) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert not _alive(job) and not _alive(child)
        expired_by = time.monotonic() + 15
        status = "running"
        while status == "running" and time.monotonic() < expired_by:
            time.sleep(0.25)
            with Store.open_readonly(sqlite_url) as store:
                record = store.get_run(summary.run_id)
            assert record is not None
            status = record.status
        assert (record.status, record.verdict) == ("failed", "error")
        assert record.error is not None
        assert record.error.startswith("the job stopped reporting: its lease expired at ")
    finally:
        if parity.poll() is None:
            parity.kill()
            parity.wait()
        if pids_file.exists():
            for pid in json.loads(pids_file.read_text()):
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_run_that_ends_normally_leaves_its_watchdog_nothing_to_kill(
    tmp_path: Path,
) -> None:
    from parity.recovery.watchdog import track, untrack, watched

    sleeper = subprocess.Popen(  # in this process's group: the watchdog spares the group
        [sys.executable, "-c", "import time; time.sleep(60)"]
    )
    try:
        with watched() as watchdog:
            track(sleeper.pid)
            untrack(sleeper.pid)
        assert watchdog.process.returncode == 0
        assert _alive(sleeper.pid)
        with watched() as watchdog:
            track(sleeper.pid)  # still tracked at the end: killed (the run died)
        sleeper.wait(timeout=5)
        assert sleeper.returncode == -signal.SIGKILL
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def _unused(start: RunStart) -> None:  # keeps RunStart imported for item 10's fixtures
    del start


# --- item 3 on the Airflow path: the DAG's check task ----------------------------------------


@pytest.mark.parametrize(
    ("log", "records", "reason"),
    [
        (
            {"planned": 2, "injected": 1, "crashes": []},
            '{"key": "k", "window": [0, 0, 0, 1]}\n',
            "only 1 of 2 crashes landed; lengthen the input or lower recovery.crashes",
        ),
        (
            {"planned": 1, "injected": 1, "crashes": []},
            "",
            "the crashed run wrote no records: a windows check of an empty output tests "
            "nothing (does the application write to its output folder?)",
        ),
    ],
)
def test_the_dags_check_task_stores_a_run_that_tested_nothing_failed(
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log: dict[str, object],
    records: str,
    reason: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What the DAG's ``check`` task runs (``parity.airflow.recovery``: ``check`` inside
    ``failures_stored``, the store from ``PARITY_DB_URL``): the run is failed, the gate
    closed (the DAG's gate task does not run after a failed check)."""
    from matcher.spec import load_spec
    from parity.recovery.crashes import RecoveryError
    from parity.recovery.runner import check, failures_stored, prepare_workspace

    monkeypatch.setenv("PARITY_DB_URL", db_url)
    spec = load_spec(_spec(tmp_path))
    plan = plan_recovery(
        spec, root=ROOT, home=tmp_path / "home", run_id="parity__hardening/manual__1"
    )
    prepare_workspace(plan)
    plan.path("crashed").mkdir()
    (plan.path("crashed") / "part-0.jsonl").write_text(records, encoding="utf-8")
    plan.path("crashes.json").write_text(json.dumps(log), encoding="utf-8")
    with pytest.raises(RecoveryError) as caught, failures_stored(plan, None):
        check(plan, {}, spark_submit="spark-submit", db=None)
    assert str(caught.value) == reason
    with Store.open(db_url) as store:
        record = store.get_run(plan.run_id)
        assert record is not None
        assert (record.kind, record.status, record.verdict, record.error) == (
            RECOVERY, "failed", "error", reason
        )  # fmt: skip
    assert _gate(db_url, capsys, _spec(tmp_path)) == 3  # the newest attempt failed
