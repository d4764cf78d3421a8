"""Issue 29 on ``parity properties``: nothing the operator does is read as a property (item 2,
``SystemExit`` item 5), a check that tested nothing never passes (item 2), a run id names one
kind of run (item 6), the run is stored from its start (item 11), every numeric option is
range-checked (item 12), lengths are checked before any test (item 14), a corrupt evidence
file is said (item 17). The hostile operators are ``tests/hostile_operators.py``; everything
here but one Spark test runs the per-item path, without Spark."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from matcher.spec import load_spec
from matcher.spec_digest import verdict_digest
from matcher.store import Store
from matcher.store.records import COMPARISON, PROPERTIES
from parity.cli import main
from parity.properties.generation import ALL, load_evidence
from parity.properties.loading import load_subject
from parity.properties.operators import OperatorError
from parity.properties.properties import Context
from parity.properties.runner import Plan, check_operator
from parity.properties.suggest import suggest_spec

# store_fixtures is this module's pytest plugin and its sample run: its asserts are rewritten
# before the import below (pytest warns, an error here, otherwise).
pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures", "tests.spark_fixtures"]

from store_fixtures import outcome, start  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ITEMS = str(ROOT / "jobs/examples/operators/items.jsonl")
GOOD = "jobs.examples.operators.streams:Identity"
H = "hostile_operators"
A_TEST = "at element 1 of a generated test of 2"

#: issue 29 item 2's corpus (and item 5's ``sys.exit``): each reported so, never as a property
HOSTILE = [
    ("Raises", "stream", "raised ValueError: boom on ccxgb (process() " + A_TEST + ")"),
    ("ReturnsNone", "stream", "returned NoneType, not an iterable of outputs (process() "),
    ("Returns42", "stream", "returned int, not an iterable of outputs (process() "),
    (
        "ReadsMissing",
        "stream",
        "raised PySparkAttributeError: [ATTRIBUTE_NOT_SUPPORTED] Attribute `price` is not "
        "supported. (process() " + A_TEST + ")",
    ),
    ("Exits", "stream", "called sys.exit() (process() "),
    ("ExitsOne", "stream", "called sys.exit(1) (process() "),
    ("Interrupts", "stream", "raised KeyboardInterrupt (process() "),
    ("FlushRaises", "stream", "raised RuntimeError: flush failed (flush() at element 3 of a "),
    ("BadFactory", "stream", "called sys.exit(3) (making a fresh instance)"),
    (
        "partitions_raise",
        "stream",
        "raised ZeroDivisionError: row 42 (a partition of 2 rows of a generated test of 3)",
    ),
    (
        "partitions_none",
        "stream",
        "returned NoneType, not an iterator of outputs (a partition of 2 rows of a generated "
        "test of 3)",
    ),
    ("PairExits", "pair", "called sys.exit(0) (process() " + A_TEST + ")"),
]


def _message(name: str, problem: str) -> str:
    if problem.endswith("(process() "):
        problem += A_TEST + ")"
    elif problem.endswith("at element 3 of a "):
        problem += "generated test of 3)"
    return f"{H}:{name}: the operator {problem}"


def _check(ref: str, shape: str, budget: int = 2) -> Any:
    subject = load_subject(ref, [ITEMS], ("key",), shape, 0.05)
    plan = Plan(ALL, budget, 0, subject.domains)
    context = Context(subject.operator, ("key",), random.Random(0), max_delay=0.01)
    return check_operator(context, plan, "hybrid")


@pytest.mark.parametrize(("name", "shape", "problem"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_an_operator_that_fails_a_test_is_an_error_never_a_property(
    name: str, shape: str, problem: str
) -> None:
    with pytest.raises(OperatorError) as raised:
        _check(f"{H}:{name}", shape)
    assert str(raised.value) == _message(name, problem)


def _db_run(url: str, run_id: str) -> Any:
    with Store.open_readonly(url) as store:
        return store.get_run(run_id)


@pytest.mark.parametrize("name", ["Exits", "ExitsOne", "Returns42", "Raises"])
def test_the_command_exits_2_stores_the_run_failed_and_suggests_nothing(
    name: str, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = {h[0]: h[2] for h in HOSTILE}[name]
    evidence = tmp_path / "evidence"
    argv = ["properties", f"{H}:{name}", "--sample", ITEMS, "--key", "key", "--budget", "2"]
    argv += ["--db", db_url, "--run-id", "p/1", "--suggest-spec", "--no-progress"]
    assert main([*argv, "--evidence-dir", str(evidence)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no report, no suggested spec
    assert captured.err.splitlines() == [
        "properties: storing run p/1 (parity report p/1)",
        f"parity: error: {_message(name, problem)}",
    ]
    record = _db_run(db_url, "p/1")
    assert (record.kind, record.status, record.verdict) == (PROPERTIES, "failed", "error")
    assert record.error == f"OperatorError: {_message(name, problem)}"
    assert not record.stats  # no property stored as holding
    assert not evidence.exists()


def test_a_property_no_test_could_check_is_undetermined_and_suggests_nothing_loose() -> None:
    # every firing outlasts the 0.05 s limit: blocking is found, nothing else was compared
    report = _check(f"{H}:PairStalls", "pair", budget=1)
    props = report.properties
    untested = (
        "none of its 12 tests could be checked (a firing stalled, or a test held one key only): "
        "neither found nor absent"
    )
    assert dict(props["nondeterminism"].extra) == {"undetermined": untested}
    assert (props["nondeterminism"].found, props["nondeterminism"].tests) == (False, 0)
    assert dict(props["selectivity"].extra) == {"undetermined": untested}
    assert props["blocking"].found is True
    skipped = (
        "non-determinism undetermined: differences between runs could not be told from order, "
        "state or keys: not tested"
    )
    for name in ("statefulness", "non_commutativity", "partition_interference"):
        assert dict(props[name].extra) == {"undetermined": skipped}
    suggested = suggest_spec(report)
    assert "dependence: ordered\n" in suggested and "unordered" not in suggested
    assert "  reference_runs: 2\n" in suggested


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("frame_none", "returned NoneType, not a DataFrame (on a generated test of 2 rows)"),
        ("frame_missing_column", "raised AnalysisException: [UNRESOLVED_COLUMN"),
    ],
)
def test_a_dataframe_operator_that_fails_is_an_error(spark: Any, name: str, problem: str) -> None:
    subject = load_subject(f"{H}:{name}", [ITEMS], ("key",), "dataframe", session=lambda: spark)
    plan = Plan(ALL, 1, 0, subject.domains)
    context = Context(subject.operator, ("key",), random.Random(0))
    with pytest.raises(OperatorError) as raised:
        check_operator(context, plan, "hybrid")
    assert str(raised.value).startswith(f"{H}:{name}: the operator {problem}")


# --- item 6: a run id names one kind of run --------------------------------------------------


def test_a_properties_run_never_replaces_a_comparison_run(
    db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "taxi_distance.yaml"  # today's spec, which the gate binds to
    spec.write_text(
        "name: taxi_distance\nreference: {application: ref.py, version: v1.4.0}\n"
        "dependence: {key: [id]}\n",
        encoding="utf-8",
    )
    with Store.open(db_url) as store:
        store.start_run(start("taxi/run-1", spec_hash=verdict_digest(load_spec(spec))))
        store.record_run("taxi/run-1", outcome())
    gate = ["gate", "taxi_distance", "--spec", str(spec), "--db", db_url]
    assert main(gate) == 1
    capsys.readouterr()
    argv = ["properties", f"{H}:Raises", "--sample", ITEMS, "--db", db_url, "--no-progress"]
    assert main([*argv, "--run-id", "taxi/run-1", "--validation", "taxi_distance"]) == 2
    # refused before the operator ran (its error would name it)
    assert capsys.readouterr().err == (
        "parity: error: run taxi/run-1 is a comparison run; a properties run cannot replace it\n"
    )
    record = _db_run(db_url, "taxi/run-1")
    assert (record.kind, record.status, record.verdict) == (COMPARISON, "completed", "divergent")
    assert main(gate) == 1


# --- item 11: stored from its start ----------------------------------------------------------


def test_the_run_is_stored_running_under_a_lease_before_its_first_test(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import parity.cli.properties as command

    seen: list[tuple[str, str, bool]] = []
    real = command.check_operator

    def spy(*args: Any, **kwargs: Any) -> Any:
        record = _db_run(db_url, "p/running")
        seen.append((record.kind, record.status, record.lease_expires_at is not None))
        return real(*args, **kwargs)

    monkeypatch.setattr(command, "check_operator", spy)
    argv = ["properties", GOOD, "--sample", ITEMS, "--budget", "1", "--no-progress"]
    argv += ["--db", db_url, "--run-id", "p/running", "--evidence-dir", str(tmp_path)]
    assert main(argv) == 0
    assert seen == [(PROPERTIES, "running", True)]
    assert capsys.readouterr().err.splitlines() == [
        "properties: storing run p/running (parity report p/running)",
        "properties: stored run p/running (parity report p/running)",
    ]
    record = _db_run(db_url, "p/running")
    assert (record.status, record.lease_expires_at) == ("completed", None)


@pytest.mark.parametrize(
    ("db", "problem"),
    [
        ("sqlite:////nonexistent/dir/parity.db", "unable to open database file"),
        ("postgresql+psycopg://nobody@127.0.0.1:1/none", "Connection refused"),
    ],
    ids=["sqlite", "postgres"],
)
def test_a_bad_db_is_found_before_any_test(
    db: str, problem: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import parity.cli.properties as command

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("tested before the store was checked")

    monkeypatch.setattr(command, "load_subject", never)
    argv = ["properties", GOOD, "--sample", ITEMS, "--db", db, "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("parity: error: ") and problem in err and len(err.splitlines()) == 1


# --- item 12: every numeric option range-checked ---------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--budget", "99999999999999999999", "expected a whole number from 1 to 1000"),
        ("--budget", "1001", "expected a whole number from 1 to 1000"),
        ("--budget", "0", "expected a whole number from 1 to 1000"),
        ("--budget", "-5", "expected a whole number from 1 to 1000"),
        ("--blocking-limit", "nan", "expected a number of seconds more than 0 and at most 3600"),
        ("--blocking-limit", "inf", "expected a number of seconds more than 0 and at most 3600"),
        ("--blocking-limit", "-inf", "expected a number of seconds more than 0 and at most 3600"),
        ("--blocking-limit", "0", "expected a number of seconds more than 0 and at most 3600"),
        ("--blocking-limit", "3601", "expected a number of seconds more than 0 and at most 3600"),
        (
            "--seed",
            "99999999999999999999",
            "expected a whole number from -9223372036854775807 to 9223372036854775807",
        ),
        (
            "--seed",
            "1e3",
            "expected a whole number from -9223372036854775807 to 9223372036854775807",
        ),
    ],
)
def test_a_numeric_option_out_of_range_is_refused_in_one_line(
    option: str, value: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["properties", GOOD, "--sample", ITEMS, "--no-store", f"{option}={value}"]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (f"parity properties: error: argument {option}: {expected}, got {value!r}")


@pytest.mark.parametrize(("option", "value"), [("--seed", "-3"), ("--blocking-limit", "0.5")])
def test_an_option_in_range_is_taken(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["properties", GOOD, "--sample", ITEMS, "--no-store", "--budget", "1", "--json"]
    assert main([*argv, "--evidence-dir", str(tmp_path), option, value]) == 0
    document = json.loads(capsys.readouterr().out)
    if option == "--seed":
        assert document["seed"] == -3


# --- item 14: lengths checked before any test ------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--run-id", "r" * 513, "run_id: 513 characters, more than the store keeps (512)"),
        ("--validation", "v" * 251, "validation: 251 characters, more than the store keeps (250)"),
    ],
)
def test_a_name_too_long_for_the_store_is_refused_before_any_test(
    option: str,
    value: str,
    expected: str,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import parity.cli.properties as command

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("loaded before the names were checked")

    monkeypatch.setattr(command, "load_subject", never)
    argv = ["properties", GOOD, "--sample", ITEMS, "--db", db_url, "--no-progress", option, value]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"parity: error: cannot store the run: {expected}\n"
    with Store.open(db_url) as store:  # refused before the store was even opened
        assert store.list_runs() == []


# --- item 17: a corrupt evidence file is said --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "JSONDecodeError: Expecting property name enclosed in double quotes"),
        ('{"tests": [1, 2]}', "AttributeError: 'list' object has no attribute 'values'"),
        ('{"tests": {"statefulness": [{"port": "x"}]}}', "ValueError: invalid literal for int()"),
    ],
)
def test_a_corrupt_evidence_file_is_warned_of(text: str, reason: str, tmp_path: Path) -> None:
    path = tmp_path / "op.json"
    path.write_text(text, encoding="utf-8")
    subject = load_subject(GOOD, [ITEMS], ("key",), "stream")
    warned: list[str] = []
    assert load_evidence(path, subject.domains, warned.append) == []
    (line,) = warned
    assert line.startswith(f"{path}: not a readable evidence file ({reason}")
    assert line.endswith("): its tests are not reused; this run's evidence replaces it")
    assert load_evidence(tmp_path / "missing.json", subject.domains, warned.append) == []
    assert len(warned) == 1  # a missing file is no news


def test_the_command_warns_of_a_corrupt_evidence_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobs.examples.operators.streams_Identity.json"
    path.write_text("{not json", encoding="utf-8")
    argv = ["properties", GOOD, "--sample", ITEMS, "--no-store", "--budget", "1"]
    assert main([*argv, "--technique", "reuse", "--evidence-dir", str(tmp_path)]) == 0
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"parity: warning: {path}: not a readable evidence file (JSONDecodeError"
    )


def test_a_module_that_exits_as_it_is_imported_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["properties", "exits_on_import:f", "--sample", ITEMS, "--no-store", "--no-progress"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "parity: error: exits_on_import:f: cannot import module 'exits_on_import': "
        "called sys.exit(0)\n"
    )


def test_a_killed_run_reads_failed_once_its_lease_expires(db_url: str, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PARITY_RUN_LEASE_SECONDS": "1", "PYTHONPATH": str(ROOT / "tests")}
    argv = [sys.executable, "-m", "parity", "properties", f"{H}:Slow", "--sample", ITEMS]
    argv += ["--db", db_url, "--run-id", "p/killed", "--evidence-dir", str(tmp_path)]
    job = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert job.stderr is not None
        assert (
            job.stderr.readline() == "properties: storing run p/killed (parity report p/killed)\n"
        )
        deadline = time.monotonic() + 20  # the line is printed just before the run starts
        while (record := _db_run(db_url, "p/killed")) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert record is not None and record.status == "running"
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()
        if job.stderr is not None:
            job.stderr.close()
    time.sleep(1.5)
    record = _db_run(db_url, "p/killed")
    assert (record.status, record.verdict) == ("failed", "error")
    assert record.error.startswith("the job stopped reporting: its lease expired at ")


def test_a_real_ctrl_c_while_the_operator_runs_stays_an_interrupt(
    sqlite_url: str, tmp_path: Path
) -> None:
    """A KeyboardInterrupt the operator raises is its error (exit 2); one that a real SIGINT
    raised while it ran is the user's: the command stops as interrupted (exit 130)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    argv = [sys.executable, "-m", "parity", "properties", f"{H}:Slow", "--sample", ITEMS]
    argv += ["--db", sqlite_url, "--run-id", "p/ctrl-c", "--evidence-dir", str(tmp_path)]
    job = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert job.stderr is not None
        assert job.stderr.readline().startswith("properties: storing run p/ctrl-c ")
        time.sleep(1)  # into the first generated test
        job.send_signal(signal.SIGINT)
        assert job.wait(timeout=60) == 130
        assert "the operator raised KeyboardInterrupt" not in job.stderr.read()
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
        if job.stderr is not None:
            job.stderr.close()
