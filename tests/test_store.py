"""The results store's repository, on real SQLite files and a real PostgreSQL server.

Every test that takes ``store`` or ``db_url`` runs on both backends (``store_fixtures``).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, make_url, text

from matcher.dependence import by_key
from matcher.online import compare
from matcher.spec import load_spec
from matcher.spec_digest import verdict_digest
from matcher.store import (
    ColumnStat,
    RunOutcome,
    RunStart,
    Store,
    StoredDivergence,
    StoreError,
    UnknownRunError,
    database_url,
    upgrade,
)
from matcher.store import repository as repository_module
from matcher.store.migrate import current_revision
from matcher.verdict import Verdict

# store_fixtures is this module's pytest plugin and also its sample data: pytest must get to
# rewrite its asserts before the import below, or it warns (an error here) that it cannot.
pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

from store_fixtures import (  # noqa: E402
    EXPECTATIONS,
    FINISHED,
    PLUS_TWO,
    SAFE_REFERENCE,
    STARTED,
    UTC,
    expected_divergences,
    expected_record,
    outcome,
    start,
)

# -- writing and reading a run ---------------------------------------------------------------


def test_round_trip_keeps_every_value_exactly(store: Store) -> None:
    store.start_run(start())
    store.record_run("taxi/run-1", outcome())
    record = store.get_run("taxi/run-1")
    assert record == expected_record()
    assert record is not None
    assert record.started_at.tzinfo == UTC
    assert record.finished_at is not None
    assert record.finished_at.tzinfo == UTC
    assert record.duration == dt.timedelta(minutes=4, seconds=4, microseconds=876544)
    # Column order of an event survives (JSON, not JSONB).
    assert record.divergences[0].reference_event is not None
    assert list(record.divergences[0].reference_event) == list(SAFE_REFERENCE)


def test_a_started_run_is_running_with_no_results(store: Store) -> None:
    store.start_run(start())
    record = store.get_run("taxi/run-1")
    assert record is not None
    assert (record.status, record.verdict, record.gate_passed, record.finished_at) == (
        "running",
        None,
        None,
        None,
    )
    assert dict(record.counts) == {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0}
    assert (record.divergences, record.column_stats, record.expectations) == ((), (), ())
    assert (record.stats, record.noise, record.error) == (None, None, None)


def test_defaults_when_the_caller_gives_only_names(store: Store) -> None:
    before = dt.datetime.now(UTC)
    store.start_run(RunStart("cli-0001", "orders"))
    store.record_run("cli-0001", RunOutcome("equivalent"))
    after = dt.datetime.now(UTC)
    record = store.get_run("cli-0001")
    assert record is not None
    assert (record.kind, record.trigger, record.engine, record.status, record.verdict) == (
        "comparison",
        "manual",
        "core",
        "completed",
        "equivalent",
    )
    assert record.finished_at is not None
    assert before <= record.started_at <= record.finished_at <= after
    assert (record.slice, record.spec, record.reference_version) == (None, None, None)


def test_a_real_comparison_is_stored_as_its_verdict(store: Store) -> None:
    reference = [{"id": 1, "v": 1}, {"id": 2, "v": 2}]
    candidate = [{"id": 1, "v": 9}]
    verdict = compare(reference, candidate, by_key("id"))
    store.start_run(RunStart("r", "tiny"))
    store.record_run("r", RunOutcome.from_verdict(verdict, finished_at=FINISHED))
    record = store.get_run("r")
    assert record is not None
    assert record.verdict == "divergent"
    assert dict(record.counts) == dict(verdict.counts)
    assert record.total_divergences == verdict.total_divergences == 2
    assert [(d.kind, d.key, d.reference_event, d.candidate_event) for d in record.divergences] == [
        (d.kind, d.key, d.reference_event, d.candidate_event) for d in verdict.divergences
    ]


def test_unknown_run_reads_as_none(store: Store) -> None:
    assert store.get_run("nope") is None
    assert store.latest_run("nope") is None
    assert store.list_runs() == []
    assert store.validations() == []


def test_recording_a_run_that_was_never_started_is_refused(store: Store) -> None:
    with pytest.raises(UnknownRunError, match="cannot record run 'ghost': it was never started"):
        store.record_run("ghost", outcome())
    with pytest.raises(UnknownRunError, match="expectations of run 'ghost'"):
        store.record_expectations("ghost", EXPECTATIONS)
    assert store.get_run("ghost") is None


# -- retries replace, never duplicate ------------------------------------------------------


def _short_outcome() -> RunOutcome:
    return RunOutcome(
        "divergent",
        counts={"duplication": 1},
        divergences=(StoredDivergence(0, "duplication", 42, 0, 1, None, {"id": 42}),),
        column_stats=(ColumnStat("id", 0),),
        finished_at=FINISHED,
    )


def test_recording_again_replaces_the_evidence(store: Store) -> None:
    store.start_run(start())
    store.record_run("taxi/run-1", outcome())
    store.record_run("taxi/run-1", _short_outcome())
    record = store.get_run("taxi/run-1")
    assert record is not None
    assert record.divergences == (StoredDivergence(0, "duplication", 42, 0, 1, None, {"id": 42}),)
    assert record.column_stats == (ColumnStat("id", 0),)
    assert dict(record.counts) == {"loss": 0, "duplication": 1, "reordering": 0, "corruption": 0}
    assert record.total_divergences == 1
    assert record.stats is None
    # expectations=None leaves the stored ones alone.
    assert record.expectations == expected_record().expectations


def test_a_retried_task_replaces_its_previous_attempt(store: Store) -> None:
    store.start_run(start())
    store.record_run("taxi/run-1", outcome())
    retry = start(task_try=2, started_at=FINISHED + dt.timedelta(minutes=1), engine="core")
    store.start_run(retry)
    restarted = store.get_run("taxi/run-1")
    assert restarted is not None
    assert (restarted.status, restarted.task_try, restarted.engine, restarted.verdict) == (
        "running",
        2,
        "core",
        None,
    )
    assert (restarted.divergences, restarted.column_stats, restarted.expectations) == ((), (), ())
    store.record_run("taxi/run-1", _short_outcome())
    assert len(store.list_runs()) == 1
    record = store.get_run("taxi/run-1")
    assert record is not None
    assert record.total_divergences == 1
    assert len(record.divergences) == 1


def test_record_expectations_replaces_the_runs_results(store: Store) -> None:
    store.start_run(start())
    store.record_expectations("taxi/run-1", EXPECTATIONS)
    store.record_expectations("taxi/run-1", EXPECTATIONS[1:])
    record = store.get_run("taxi/run-1")
    assert record is not None
    assert record.expectations == (expected_record().expectations[1],)
    assert record.status == "running"
    store.record_expectations("taxi/run-1", [])
    record = store.get_run("taxi/run-1")
    assert record is not None
    assert record.expectations == ()


# -- failures: a run is complete or failed, never half-written -----------------------------


def test_mark_failed_deletes_the_evidence(store: Store) -> None:
    store.start_run(start())
    store.record_run("taxi/run-1", outcome())
    store.mark_failed("taxi/run-1", "InputError: candidate output missing")
    record = store.get_run("taxi/run-1")
    assert record is not None
    assert (record.status, record.verdict, record.gate_passed, record.error) == (
        "failed",
        "error",
        False,
        "InputError: candidate output missing",
    )
    assert record.finished_at is not None
    assert record.finished_at > FINISHED
    assert (record.divergences, record.column_stats, record.expectations) == ((), (), ())
    assert record.total_divergences == 0
    assert (record.stats, record.noise, record.report_path) == (None, None, None)
    assert record.spec == expected_record().spec  # what was run is kept


def test_mark_failed_creates_a_run_that_never_started(store: Store) -> None:
    store.mark_failed("dag/early", "slice_input failed", start=start("dag/early"))
    store.mark_failed("anonymous", "killed")
    early = store.get_run("dag/early")
    anonymous = store.get_run("anonymous")
    assert early is not None
    assert anonymous is not None
    assert (early.validation, early.status, early.verdict, early.error) == (
        "taxi_distance",
        "failed",
        "error",
        "slice_input failed",
    )
    assert early.started_at == STARTED
    assert (anonymous.validation, anonymous.trigger, anonymous.status) == (
        "(unknown)",
        "unknown",
        "failed",
    )


def test_running_marks_the_run_failed_on_any_exception(store: Store) -> None:
    with pytest.raises(ValueError, match="bad row 3"), store.running(start()):
        store.record_run("taxi/run-1", outcome())
        raise ValueError("bad row 3\n  in file part-0001.parquet")
    record = store.get_run("taxi/run-1")
    assert record is not None
    assert (record.status, record.verdict, record.error) == (
        "failed",
        "error",
        "ValueError: bad row 3",
    )
    assert record.divergences == ()

    with pytest.raises(ValueError, match="NUL"), store.running(start("taxi/run-3")):
        raise ValueError("NUL in row: 'a\x00b'")
    nul = store.get_run("taxi/run-3")
    assert nul is not None
    assert (nul.status, nul.error) == ("failed", "ValueError: NUL in row: 'a\\x00b'")

    with pytest.raises(KeyboardInterrupt), store.running(start("taxi/run-2")):
        raise KeyboardInterrupt
    interrupted = store.get_run("taxi/run-2")
    assert interrupted is not None
    assert (interrupted.status, interrupted.error) == ("failed", "KeyboardInterrupt")


def test_running_reraises_the_jobs_error_when_the_store_is_gone(
    store: Store, engine: Engine
) -> None:
    with pytest.raises(ValueError, match="bad row 3") as raised, store.running(start()):
        with engine.begin() as connection:
            for table in ("divergences", "column_stats", "expectation_results", "runs"):
                connection.execute(text(f"DROP TABLE {table}"))
        raise ValueError("bad row 3")
    (note,) = raised.value.__notes__
    assert note.startswith(
        "and the run could not be marked failed: cannot mark run 'taxi/run-1' failed: "
    )


def test_running_leaves_a_recorded_run_completed(store: Store) -> None:
    with store.running(start()):
        store.record_run("taxi/run-1", outcome())
    assert store.get_run("taxi/run-1") == expected_record()


def test_a_failing_insert_leaves_the_previous_state_intact(store: Store) -> None:
    # A real fault: two divergences with the same ordinal violate the primary key after the
    # run row was updated and the old evidence deleted; all of it must roll back.
    store.start_run(start())
    clash = RunOutcome(
        "divergent",
        counts={"loss": 2},
        divergences=(
            StoredDivergence(0, "loss", 1, 0, 0, {"id": 1}, None),
            StoredDivergence(0, "loss", 2, 1, 0, {"id": 2}, None),
        ),
    )
    running_state = store.get_run("taxi/run-1")
    with pytest.raises(StoreError, match=r"^cannot record run 'taxi/run-1': \w+: .*\(.*\)$"):
        store.record_run("taxi/run-1", clash)
    assert store.get_run("taxi/run-1") == running_state

    store.record_run("taxi/run-1", outcome())
    with pytest.raises(StoreError):
        store.record_run("taxi/run-1", clash)
    assert store.get_run("taxi/run-1") == expected_record()


def test_a_crash_midway_through_recording_rolls_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fault we cannot cause for real (the process dying between two inserts) is simulated:
    # the third insert (expectation results) raises after divergences and column stats went in.
    store.start_run(start())
    store.record_run("taxi/run-1", outcome())
    real_insert = repository_module._insert
    calls: list[str] = []

    def crash_on_third(connection: Any, table: Any, values: list[dict[str, Any]]) -> None:
        calls.append(table.__tablename__)
        if len(calls) == 3:
            raise RuntimeError("worker lost")
        real_insert(connection, table, values)

    monkeypatch.setattr(repository_module, "_insert", crash_on_third)
    with pytest.raises(RuntimeError, match="worker lost"):
        store.record_run("taxi/run-1", _short_outcome_with_expectations())
    assert calls == ["divergences", "column_stats", "expectation_results"]
    assert store.get_run("taxi/run-1") == expected_record()


def _short_outcome_with_expectations() -> RunOutcome:
    short = _short_outcome()
    return RunOutcome(
        short.verdict,
        counts=short.counts,
        divergences=short.divergences,
        column_stats=short.column_stats,
        expectations=EXPECTATIONS[:1],
    )


# -- history ---------------------------------------------------------------------------------


def _at(hour: int) -> dt.datetime:
    return dt.datetime(2026, 3, 1, hour, tzinfo=UTC)


@pytest.fixture
def history(store: Store) -> Store:
    """Six runs of two validations, started an hour apart (r1 first)."""
    plan = [
        ("r1", "taxi", "scheduled", "v1", "equivalent"),
        ("r2", "taxi", "adhoc", "v2", "divergent"),
        ("r3", "orders", "scheduled", "v7", "equivalent"),
        ("r4", "taxi", "scheduled", "v2", "equivalent"),
        ("r5", "taxi", "cli", "v2", None),  # failed
        ("r6", "taxi", "scheduled", "v3", "running"),
    ]
    for hour, (run_id, validation, trigger, version, verdict) in enumerate(plan, start=1):
        store.start_run(
            RunStart(
                run_id, validation, trigger=trigger, candidate_version=version, started_at=_at(hour)
            )
        )
        if verdict is None:
            store.mark_failed(run_id, "boom")
        elif verdict != "running":
            store.record_run(
                run_id, RunOutcome(verdict, finished_at=_at(hour) + dt.timedelta(minutes=30))
            )
    # r1 finishes last of all: latest by finish time differs from latest by start time.
    store.record_run("r1", RunOutcome("equivalent", finished_at=_at(9)))
    return store


def _ids(runs: list[Any]) -> list[str]:
    return [r.run_id for r in runs]


def test_list_runs_newest_first_with_filters(history: Store) -> None:
    assert _ids(history.list_runs()) == ["r6", "r5", "r4", "r3", "r2", "r1"]
    assert _ids(history.list_runs(validation="orders")) == ["r3"]
    assert _ids(history.list_runs(verdict="equivalent")) == ["r4", "r3", "r1"]
    assert _ids(history.list_runs(verdict="error")) == ["r5"]
    assert _ids(history.list_runs(trigger="scheduled", validation="taxi")) == ["r6", "r4", "r1"]
    assert _ids(history.list_runs(status="running")) == ["r6"]
    assert _ids(history.list_runs(since=_at(2), until=_at(4))) == ["r3", "r2"]
    assert _ids(history.list_runs(since=_at(2).astimezone(PLUS_TWO))) == [
        "r6",
        "r5",
        "r4",
        "r3",
        "r2",
    ]
    assert _ids(history.list_runs(limit=2)) == ["r6", "r5"]
    assert _ids(history.list_runs(limit=2, offset=3)) == ["r3", "r2"]
    assert history.list_runs(limit=0) == []


def test_list_runs_summaries_carry_the_results(history: Store) -> None:
    (failed,) = history.list_runs(status="failed")
    assert (failed.run_id, failed.verdict, failed.error, failed.gate_passed) == (
        "r5",
        "error",
        "boom",
        False,
    )
    assert failed.started_at == _at(5)


def test_latest_run(history: Store) -> None:
    def latest(*args: Any, **kwargs: Any) -> str | None:
        run = history.latest_run(*args, **kwargs)
        return None if run is None else run.run_id

    assert latest("taxi") == "r1"  # completed last
    assert latest("taxi", completed_only=False) == "r6"  # started last
    assert latest("taxi", "v2") == "r4"
    assert latest("taxi", "v2", completed_only=False) == "r5"
    assert latest("taxi", "v3") is None
    assert latest("taxi", "v3", completed_only=False) == "r6"
    assert latest("orders") == "r3"
    assert latest("nothing") is None


def test_validations_are_sorted_and_distinct(history: Store) -> None:
    assert history.validations() == ["orders", "taxi"]


# -- values and errors ---------------------------------------------------------------------


def test_from_verdict_maps_a_verdict_exactly() -> None:
    result = outcome()
    assert result.verdict == "divergent"
    assert dict(result.counts) == {"loss": 4, "duplication": 0, "reordering": 1, "corruption": 1}
    assert result.total_divergences == 6
    assert result.divergences == expected_divergences()
    assert result.column_stats == (ColumnStat("fare", 1), ColumnStat("tip", 0))
    assert result.stats == expected_record().stats
    noisy = RunOutcome.from_verdict(Verdict(equivalent=True), verdict_name="noisy")
    assert (noisy.verdict, noisy.divergences, noisy.expectations) == ("noisy", (), None)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: RunOutcome("maybe"), "verdict: expected one of"),
        (lambda: RunOutcome("divergent", counts={"extra": 1}), "unknown divergence kinds extra"),
        (lambda: RunStart("", "taxi"), "run_id: expected a non-empty string"),
        (lambda: RunStart("r", ""), "validation: expected a non-empty name"),
        (
            lambda: RunStart("r", "taxi", started_at=dt.datetime(2026, 1, 1)),
            "started_at: expected a timezone-aware datetime, got 2026-01-01T00:00:00",
        ),
    ],
)
def test_records_refuse_bad_values(make: Any, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        make()


def test_naive_bounds_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="since: expected a timezone-aware"):
        store.list_runs(since=dt.datetime(2026, 1, 1))
    with pytest.raises(StoreError, match="limit and offset must be >= 0"):
        store.list_runs(limit=-1)


@pytest.mark.postgres
def test_passwords_never_appear_in_errors() -> None:
    url = "postgresql+psycopg://u:secret@127.0.0.1:1/x"
    with pytest.raises(StoreError) as opened:
        Store.open(url)
    message = str(opened.value)
    assert "secret" not in message
    assert message.startswith("cannot migrate postgresql+psycopg://u:***@127.0.0.1:1/x: ")
    unmigrated = Store(url)
    assert repr(unmigrated) == "Store('postgresql+psycopg://u:***@127.0.0.1:1/x')"
    with pytest.raises(StoreError) as listed:
        unmigrated.list_runs()
    assert "secret" not in str(listed.value)
    assert str(listed.value).startswith("cannot list runs: OperationalError: ")
    assert str(listed.value).endswith("(postgresql+psycopg://u:***@127.0.0.1:1/x)")


@pytest.mark.postgres
def test_a_wrong_password_is_masked_in_the_message(pg_url: str) -> None:
    from sqlalchemy import make_url

    url = make_url(pg_url).set(username="nobody", password="p%40ss w0rd!")
    with pytest.raises(StoreError) as raised:
        Store.open(url.render_as_string(hide_password=False))
    assert "w0rd" not in str(raised.value)
    assert "nobody:***@" in str(raised.value)


def test_an_unusable_sqlite_path_is_a_store_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing' / 'dir' / 'parity.db'}"
    with pytest.raises(StoreError, match=r"^cannot migrate sqlite:///.*: OperationalError: "):
        Store.open(url)
    # An unparseable URL is not echoed: it may hold a password we cannot find to mask.
    with pytest.raises(StoreError) as raised:
        Store("postgresql+psycopg://u:secret@host:notaport/x")
    assert str(raised.value) == (
        "cannot use database <unparseable database URL>: "
        "ValueError: invalid literal for int() with base 10: 'notaport'"
    )


# -- where the database is -----------------------------------------------------------------


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for variable in ("PARITY_DB_URL", "PARITY_CONFIG", "PARITY_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_database_url_precedence(clean_environment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = clean_environment / "home"
    assert database_url() == f"sqlite:///{home / '.parity' / 'parity.db'}"
    assert (home / ".parity").is_dir()

    monkeypatch.setenv("PARITY_HOME", str(clean_environment / "ph"))
    assert database_url() == f"sqlite:///{clean_environment / 'ph' / 'parity.db'}"

    (clean_environment / "parity.toml").write_text('[store]\nurl = "sqlite:///cwd.db"\n')
    assert database_url() == "sqlite:///cwd.db"

    named = clean_environment / "elsewhere.toml"
    named.write_text('[store]\nurl = "postgresql+psycopg://db/parity"\n')
    monkeypatch.setenv("PARITY_CONFIG", str(named))
    assert database_url() == "postgresql+psycopg://db/parity"

    monkeypatch.setenv("PARITY_DB_URL", "sqlite:///env.db")
    assert database_url() == "sqlite:///env.db"

    assert database_url("sqlite:///explicit.db") == "sqlite:///explicit.db"


def test_config_file_without_a_store_url_falls_through(
    clean_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean_environment / "parity.toml").write_text('[spark]\nmaster = "local[*]"\n')
    monkeypatch.setenv("PARITY_HOME", str(clean_environment))
    monkeypatch.setenv("PARITY_DB_URL", "")
    assert database_url() == f"sqlite:///{clean_environment / 'parity.db'}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[store\nurl=", r"parity.toml: cannot read the config file: "),
        ("store = 3\n", r"parity.toml: store: expected a table, got int"),
        ("[store]\nurl = 5\n", r"parity.toml: store.url: expected a non-empty string, got 5"),
    ],
)
def test_a_malformed_config_file_is_a_store_error(
    clean_environment: Path, content: str, message: str
) -> None:
    (clean_environment / "parity.toml").write_text(content)
    with pytest.raises(StoreError, match=message):
        database_url()


def test_a_missing_named_config_file_is_an_error(
    clean_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARITY_CONFIG", str(clean_environment / "nope.toml"))
    with pytest.raises(StoreError, match=r"PARITY_CONFIG=.*nope.toml: no such config file"):
        database_url()


def test_open_uses_database_url(clean_environment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARITY_DB_URL", f"sqlite:///{clean_environment / 'from-env.db'}")
    with Store.open() as store:
        store.start_run(RunStart("r", "taxi"))
    assert (clean_environment / "from-env.db").is_file()


# -- readers on a store they cannot write --------------------------------------------------

# Runs argv[2:] with the folder argv[1] read-only: as root (whom chmod does not stop), in a
# private mount namespace where the folder is a read-only bind mount of itself (gone with the
# process); otherwise the folder is made 0555 by the test.
_READ_ONLY_AS_ROOT = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


def _run_in_read_only_folder(folder: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        command = ["unshare", "-m", "sh", "-c", _READ_ONLY_AS_ROOT, "-", str(folder), *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=folder.parent)


@pytest.mark.slow
def test_report_and_gate_read_a_store_in_a_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    url = f"sqlite:///{folder / 'parity.db'}"
    spec = tmp_path / "taxi_distance.yaml"  # today's spec, which the run was made under
    spec.write_text(
        "name: taxi_distance\nreference: {application: ref.py, version: v1.4.0}\n"
        "dependence: {key: [id]}\n",
        encoding="utf-8",
    )
    with Store.open(url) as store:
        store.start_run(start(spec_hash=verdict_digest(load_spec(spec))))
        store.record_run("taxi/run-1", outcome())
    files = sorted(p.name for p in folder.iterdir())
    parity = str(Path(sys.executable).parent / "parity")
    if os.geteuid() != 0:
        folder.chmod(0o555)
    try:
        report = _run_in_read_only_folder(folder, [parity, "report", "taxi/run-1", "--db", url])
        gate = _run_in_read_only_folder(
            folder, [parity, "gate", "taxi_distance", "--spec", str(spec), "--db", url]
        )
        # The test really is read-only: a writer fails there.
        write = _run_in_read_only_folder(folder, ["touch", str(folder / "probe")])
    finally:
        folder.chmod(0o755)
    assert write.returncode != 0
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("run taxi/run-1: taxi_distance, divergent"), report.stdout
    assert gate.returncode == 1, gate.stderr  # the sample run's gate did not pass
    assert gate.stdout.startswith("taxi_distance: gate closed: "), gate.stdout
    assert sorted(p.name for p in folder.iterdir()) == files


def test_readers_refuse_a_schema_behind_this_parity(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from parity.cli import main

    upgrade(db_url, revision="0003")
    shown = Store(db_url).url
    for command in (["report", "taxi/run-1"], ["gate", "taxi_distance"]):
        assert main([*command, "--db", db_url]) == 2
        assert capsys.readouterr().err == (
            f"parity: error: the results database at {shown} is at revision 0003, this "
            "Parity needs 0007: run `parity db upgrade`\n"
        )
    with Store(db_url) as store, store._engine.connect() as connection:
        assert current_revision(connection) == "0003"  # the readers did not migrate it
    assert main(["db", "upgrade", "--db", db_url]) == 0
    assert capsys.readouterr().out == f"{shown}: at revision 0007\n"
    assert main(["report", "taxi/run-1", "--db", db_url]) == 2
    assert capsys.readouterr().err == f"parity: error: no run 'taxi/run-1' in {shown}\n"


def test_readers_refuse_a_missing_database(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from parity.cli import main

    shown = Store(db_url).url
    why = "no such file" if db_url.startswith("sqlite") else "no schema"
    assert main(["gate", "taxi_distance", "--db", db_url]) == 2
    assert capsys.readouterr().err == (
        f"parity: error: there is no Parity results database at {shown} ({why}): run "
        "`parity db upgrade` to create one\n"
    )
    with pytest.raises(StoreError):
        Store.open_readonly(db_url)
    if db_url.startswith("sqlite"):
        assert not Path(make_url(db_url).database or "").exists()  # nothing was created
