"""The sequence-window detector (``jobs/examples/sequence_window.py``) and its input writer.

Its pure parts (the rings, the sinks, the readers, the command line) are tested without
Spark; the main paths through real ``spark-submit`` on ``local[2]``:

* without a crash every variant gives exactly the canonical windows, and a restart after
  the end processes nothing and exits 0;
* killed with SIGKILL (the whole ``spark-submit`` process group) once the checkpoint holds
  two commits, and restarted: ``correct`` gives the canonical windows, ``at_least_once_sink``
  possibly duplicates and nothing else (the kill rarely lands between its write and the
  commit), ``driver_state`` and ``state_timeout`` exactly one loss per key;
* killed as soon as the db sink holds a batch: the replayed batch is in the table once with
  the idempotent sink, twice with the appending one;
* one run on a standalone cluster (a master and a worker, ``tests/standalone_cluster.py``).

The windows are checked by this file's own checker (Wallaroo's rule: each window of a key
is the one before it pushed with the next natural number), not by the project's validator.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from jobs.examples import sequence_input, sequence_window
from jobs.examples.sequence_input import Record, interleave, write_input
from jobs.examples.sequence_window import (
    EMPTY,
    AppendingTable,
    IdempotentTable,
    WindowRecord,
    cascade,
    export_windows,
    open_table,
    push,
    read_windows,
)
from tests.standalone_cluster import (
    SPARK_CLASS,
    cluster_env,
    executor_pids,
    master_command,
    standalone_cluster,
    worker_command,
)

pytest_plugins = ("tests.store_fixtures",)  # db_url: a SQLite file, then a PostgreSQL schema

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "jobs" / "examples" / "sequence_window.py"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
KEYS, COUNT, FILES = 4, 20, 8  # seed 1: every key in the first file, some missing from others
STATE_TIMEOUT_S = sequence_window.STATE_TIMEOUT_S


# --- the checker ------------------------------------------------------------------------


def canonical(keys: int = KEYS, count: int = COUNT) -> dict[str, list[tuple[int, ...]]]:
    """Key k's i-th window is [max(0, i-3), max(0, i-2), max(0, i-1), i]."""
    return {f"k{k}": [window_of(i) for i in range(1, count + 1)] for k in range(keys)}


def by_key(records: Sequence[WindowRecord]) -> dict[str, list[tuple[int, ...]]]:
    grouped: dict[str, list[tuple[int, ...]]] = {}
    for record in records:
        grouped.setdefault(record.key, []).append(record.window)
    return grouped


def window_of(i: int) -> tuple[int, ...]:
    return tuple(max(0, i - lag) for lag in (3, 2, 1, 0))


def violations(
    records: Sequence[WindowRecord], keys: int = KEYS, count: int = COUNT
) -> Counter[str]:
    """Each key's windows, one at a time (Wallaroo's rule): the next must be the previous one
    pushed with its tail + 1, or (after a bad window) the right window for that tail. A window
    seen before is a duplication; a later tail, or zeros where values should be, a loss (so
    is a key that does not reach ``count``); anything else corruption. One incident counts
    once: after a lost state, the windows that continue from it are not counted again."""
    found: Counter[str] = Counter()
    grouped = by_key(records)
    for key in [f"k{k}" for k in range(keys)]:
        previous, seen = window_of(0), set()
        for window in grouped.pop(key, []):
            tail = window[-1]
            if window in seen:
                found["duplication"] += 1
            elif window != (*previous[1:], previous[-1] + 1) and not (
                tail == previous[-1] + 1 and window == window_of(tail)
            ):
                values = [v for v in window if v]
                consecutive = values == list(range(tail - len(values) + 1, tail + 1))
                found["loss" if tail > previous[-1] and consecutive else "corruption"] += 1
            seen.add(window)
            previous = window
        if previous[-1] != count:
            found["loss"] += 1
    found["corruption"] += sum(len(windows) for windows in grouped.values())  # unknown keys
    return +found


def test_the_checker_names_each_violation() -> None:
    good = [WindowRecord("k0", w) for w in canonical(1, 6)["k0"]]
    assert violations(good, 1, 6) == Counter()
    assert violations(good[:3] + good[2:], 1, 6) == {"duplication": 1}
    assert violations(good[:2] + good[3:], 1, 6) == {"loss": 1}  # [0,0,1,2] then [1,2,3,4]
    assert violations([*good[:2], WindowRecord("k0", (0, 7, 2, 3)), *good[3:]], 1, 6) == {
        "corruption": 1
    }
    restarted = [*good[:3], WindowRecord("k0", (0, 0, 0, 4)), WindowRecord("k0", (0, 0, 4, 5))]
    assert violations([*restarted, WindowRecord("k0", (0, 4, 5, 6))], 1, 6) == {"loss": 1}
    assert violations(good[:5], 1, 6) == {"loss": 1}
    assert violations([*good, WindowRecord("k9", (0, 0, 0, 1))], 1, 6) == {"corruption": 1}


# --- the input ----------------------------------------------------------------------------


def test_interleave_keeps_each_keys_sequence_in_order() -> None:
    assert interleave(2, 3, seed=1) == [
        Record("k0", 1, 0), Record("k1", 1, 1), Record("k1", 2, 2),
        Record("k0", 2, 3), Record("k1", 3, 4), Record("k0", 3, 5),
    ]  # fmt: skip


def test_write_input_is_deterministic_and_in_stream_order(tmp_path: Path) -> None:
    first = write_input(tmp_path / "a", keys=3, count=5, files=4, seed=9)
    second = write_input(tmp_path / "b", keys=3, count=5, files=4, seed=9)
    assert [p.name for p in first] == [f"part-0000{n}.jsonl" for n in range(4)]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    rows = [json.loads(line) for p in first for line in p.read_text().splitlines()]
    assert [len(p.read_text().splitlines()) for p in first] == [4, 4, 4, 3]
    assert [row["offset"] for row in rows] == list(range(15))
    for key in ("k0", "k1", "k2"):
        assert [row["value"] for row in rows if row["key"] == key] == [1, 2, 3, 4, 5]
    stamps = [p.stat().st_mtime for p in first]
    assert [b - a for a, b in itertools.pairwise(stamps)] == [1.0, 1.0, 1.0]
    assert abs(stamps[-1] - time.time()) < 5


def test_write_input_replaces_only_its_own_files(tmp_path: Path) -> None:
    write_input(tmp_path, keys=2, count=4, files=4)
    (tmp_path / "notes.txt").write_text("kept")
    write_input(tmp_path, keys=2, count=4, files=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt", "part-00000.jsonl", "part-00001.jsonl"
    ]  # fmt: skip


def test_sequence_input_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--out", str(tmp_path), "--keys", "2", "--count", "3", "--files", "2"]
    assert sequence_input.main(argv) == 0
    assert capsys.readouterr().out == f"sequence_input: 6 records in 2 files -> {tmp_path}\n"
    assert sequence_input.main([*argv[:-1], "7"]) == 2
    assert capsys.readouterr().err == (
        "sequence_input: error: files must be between 1 and keys*count (6), got 7\n"
    )
    assert sequence_input.main(["--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "sequence_input: error: the following arguments are required: --keys, --count\n"
    )


# --- the rings, the sinks, the readers ----------------------------------------------------


def test_a_ring_keeps_the_last_four_values_oldest_first() -> None:
    ring = EMPTY
    for value in (1, 2, 3, 4, 5):
        ring = push(ring, value)
    assert ring == (2, 3, 4, 5)


def test_each_stage_pushes_the_tail_of_the_window_before_it() -> None:
    assert cascade([EMPTY, EMPTY], 1) == ((0, 0, 0, 1), (0, 0, 0, 1))
    # a second stage that lost its ring shows it in the output although the first did not
    assert cascade([(1, 2, 3, 4), EMPTY], 5) == ((2, 3, 4, 5), (0, 0, 0, 5))


def records(*windows: tuple[str, tuple[int, ...]]) -> list[WindowRecord]:
    return [WindowRecord(key, window) for key, window in windows]


A, B, C = records(("k0", (0, 0, 0, 1)), ("k1", (0, 0, 0, 1)), ("k0", (0, 0, 1, 2)))


def test_the_idempotent_table_replaces_a_replayed_batch(db_url: str, tmp_path: Path) -> None:
    engine = open_table(db_url)
    sink = IdempotentTable(engine)
    sink.write(1, [C])
    sink.write(0, [A, B])
    sink.write(1, [C])  # replayed after a crash
    sink.write(2, [])
    engine.dispose()
    (tmp_path / "out").mkdir()
    assert export_windows(db_url, tmp_path / "out" / "windows.jsonl") == 3
    assert read_windows(tmp_path / "out") == [A, B, C]
    assert (tmp_path / "out" / "windows.jsonl").read_text().splitlines()[0] == (
        '{"key": "k0", "window": [0, 0, 0, 1]}'
    )


def test_the_appending_table_writes_a_replayed_batch_twice(db_url: str, tmp_path: Path) -> None:
    engine = open_table(db_url)
    sink = AppendingTable(engine)
    sink.write(0, [A, B])
    sink.write(1, [C])
    sink.write(1, [C])  # replayed after a crash
    engine.dispose()
    (tmp_path / "out").mkdir()
    assert export_windows(db_url, tmp_path / "out" / "windows.jsonl") == 4
    assert read_windows(tmp_path / "out") == [A, B, C, C]


def test_read_windows_takes_batch_files_in_batch_order(tmp_path: Path) -> None:
    sink = sequence_window.BatchFiles(tmp_path)
    sink.write(10, [C])
    sink.write(2, [A, B])
    sink.write(2, [A, B])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "batch-000002.jsonl",
        "batch-000010.jsonl",
    ]
    assert read_windows(tmp_path) == [A, B, C]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: --checkpoint"),
        (["--checkpoint", "C", "--depth", "0"],
         "argument --depth: expected a whole number >= 1, got '0'"),
        (["--checkpoint", "C", "--sink", "db"], "--sink db needs --sink-url"),
        (["--checkpoint", "C", "--variant", "at_least_once_sink", "--sink", "file"],
         "--variant at_least_once_sink writes to a database: use --sink db"),
        (["--checkpoint", "C", "--sink-url", "sqlite://"], "--sink-url is for --sink db"),
        (["--checkpoint", "C", "--variant", "at_least_once_sink", "--sink-url", "nosuch://x"],
         "Can't load plugin: sqlalchemy.dialects:nosuch"),
        (["--checkpoint", "C", "--state-timeout", "0"],
         "argument --state-timeout: expected a positive number of seconds, got '0'"),
    ],
)  # fmt: skip
def test_a_user_error_is_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--input", str(tmp_path), "--output", str(tmp_path / "out"), *args]
    assert sequence_window.main(argv) == 2
    assert capsys.readouterr() == ("", f"sequence_window: error: {message}\n")


def test_a_missing_input_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--input", str(tmp_path / "nope"), "--output", "O", "--checkpoint", "C"]
    assert sequence_window.main(argv) == 2
    assert capsys.readouterr().err == (
        f"sequence_window: error: input {tmp_path / 'nope'} is not a directory\n"
    )


# --- spark-submit -------------------------------------------------------------------------


def submit_command(master: str, *args: str) -> list[str]:
    return [
        str(SPARK_SUBMIT), "--master", master,
        "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.ui.enabled=false",
        "--conf", "spark.ui.showConsoleProgress=false", str(APP), *args,
    ]  # fmt: skip


def detector_args(data: Path, run: Path, *extra: str) -> list[str]:
    return [
        "--input", str(data), "--output", str(run / "out"), "--checkpoint", str(run / "ckpt"),
        *extra,
    ]  # fmt: skip


def submit(*args: str, master: str = "local[2]") -> subprocess.CompletedProcess[str]:
    return finish_job(start_job(submit_command(master, *args)))


@dataclass(frozen=True)
class Job:
    """A running ``spark-submit`` in a process group of its own (a kill takes its Python
    processes too), its output going to files (a pipe nobody reads would block it)."""

    process: subprocess.Popen[bytes]
    stdout: IO[bytes]
    stderr: IO[bytes]


def start_job(command: list[str]) -> Job:
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (closed by finish_job)
    process = subprocess.Popen(
        command, cwd=ROOT, env=cluster_env(), stdout=out, stderr=err, start_new_session=True
    )
    return Job(process, out, err)


def finish_job(job: Job, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Wait for the job (bounded): on a timeout (or any error) kill its process group."""
    try:
        job.process.wait(timeout=timeout)
    finally:
        if job.process.poll() is None:
            kill_job(job)
    texts = []
    for file in (job.stdout, job.stderr):
        file.seek(0)
        texts.append(file.read().decode(errors="replace"))
        file.close()
    return subprocess.CompletedProcess(job.process.args, job.process.returncode, *texts)


def kill_job(job: Job) -> None:
    """SIGKILL the job's process group (what is left of it) and wait for the job."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.process.pid, signal.SIGKILL)
    job.process.wait(timeout=30)


def submit_and_kill(*args: str, commits: int = 2, timeout: float = 120) -> float:
    """Run the job until its checkpoint holds ``commits`` commits, then SIGKILL its whole
    process group; return the time of the kill (``time.monotonic``)."""
    checkpoint = Path(args[args.index("--checkpoint") + 1])
    job = start_job(submit_command("local[2]", *args))
    deadline = time.monotonic() + timeout
    try:
        while len(list((checkpoint / "commits").glob("[0-9]*"))) < commits:
            assert job.process.poll() is None, "the job ended before the kill"
            assert time.monotonic() < deadline, f"no {commits} commits in {timeout} s"
            time.sleep(0.05)
    finally:
        kill_job(job)
        killed = time.monotonic()
        job.stdout.close()
        job.stderr.close()
    assert len(list((checkpoint / "commits").glob("[0-9]*"))) < FILES  # it was cut short
    return killed


def finished(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a run that exited 0 printed."""
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("Traceback") == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sequence-input")
    write_input(path, keys=KEYS, count=COUNT, files=FILES, seed=1)
    return path


RUNS = {
    "correct-file": ("correct", []),
    "correct-file-depth2": ("correct", ["--depth", "2"]),
    "correct-db": ("correct", ["--sink", "db"]),
    "at_least_once_sink": ("at_least_once_sink", []),
    "driver_state-file": ("driver_state", []),
    "state_timeout-file": ("state_timeout", []),
}
#: the runs the default test run keeps; the others are marked ``crashes`` (``make crashes``):
#: a minute each on two cores, and ``make recovery-figures`` runs every variant ten times
IN_CI = {"correct-db/crash"}


def variants(names: dict[str, Any], suffix: str = "") -> list[Any]:
    """``names`` as parameters, those not ``IN_CI`` marked ``crashes``."""
    return [
        pytest.param(n, marks=() if n + suffix in IN_CI else pytest.mark.crashes) for n in names
    ]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", variants(RUNS))
def test_without_a_crash_every_variant_gives_the_canonical_windows(
    name: str, data: Path, tmp_path: Path
) -> None:
    variant, extra = RUNS[name]
    url = f"sqlite:///{tmp_path / 'sink.db'}"
    sink = ["--sink-url", url] if variant == "at_least_once_sink" or "db" in extra else []
    args = detector_args(data, tmp_path, "--variant", variant, *extra, *sink)
    out = tmp_path / "out"
    where = f"the db sink, 80 records exported to {out / 'windows.jsonl'}" if sink else str(out)
    line = finished(submit(*args))
    assert line == f"sequence_window: {variant}: 8 batches, 80 records -> {where}"
    assert by_key(read_windows(out)) == canonical()
    # A restart after the end: nothing left, nothing written, exit 0.
    line = finished(submit(*args))
    assert line == f"sequence_window: {variant}: 0 batches, 0 records -> {where}"
    assert by_key(read_windows(out)) == canonical()


CRASHES = {
    "correct-file-depth2": ("correct", ["--depth", "2"]),
    "correct-db": ("correct", ["--sink", "db"]),
    "at_least_once_sink": ("at_least_once_sink", []),
    "driver_state-db": ("driver_state", ["--sink", "db"]),
    "state_timeout-file-depth2": ("state_timeout", ["--depth", "2"]),
}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", variants(CRASHES, "/crash"))
def test_a_run_killed_and_restarted(name: str, data: Path, tmp_path: Path) -> None:
    variant, extra = CRASHES[name]
    url = f"sqlite:///{tmp_path / 'sink.db'}"
    sink = ["--sink-url", url] if variant == "at_least_once_sink" or "db" in extra else []
    args = detector_args(data, tmp_path, "--variant", variant, *extra, *sink)
    killed = submit_and_kill(*args)
    if variant == "state_timeout":  # a restart that takes longer than the timeout
        time.sleep(max(0.0, killed + STATE_TIMEOUT_S - time.monotonic()))
    finished(submit(*args))
    output = read_windows(tmp_path / "out")
    found = violations(output)
    if variant == "correct":
        assert by_key(output) == canonical()
    elif variant == "at_least_once_sink":  # duplicates only if the kill fell between write
        assert set(found) <= {"duplication"}  # and commit: not asserted, the timing varies
        assert len(output) == 80 + found["duplication"]
        assert {key: list(dict.fromkeys(ws)) for key, ws in by_key(output).items()} == canonical()
    else:  # every key's state is gone after the restart: one loss each, nothing else
        assert found == {"loss": KEYS}
        assert len(output) == 80
        assert {k: [w[-1] for w in ws] for k, ws in by_key(output).items()} == {
            k: list(range(1, COUNT + 1)) for k in canonical()
        }


def sink_batches(db: Path) -> int:
    """How many batch ids the db sink's SQLite table holds (0 while it is not readable)."""
    try:
        with contextlib.closing(sqlite3.connect(db, timeout=0.1)) as connection:
            query = "SELECT COUNT(DISTINCT batch_id) FROM sequence_windows"
            count: int = connection.execute(query).fetchone()[0]
            return count
    except sqlite3.Error:  # no table yet, or locked by the writer
        return 0


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize(
    "variant", [pytest.param("correct", marks=pytest.mark.crashes), "at_least_once_sink"]
)
def test_a_kill_after_the_sink_wrote_a_batch(variant: str, data: Path, tmp_path: Path) -> None:
    """Killed as soon as the table holds batch 2: usually before Spark committed it, so the
    restart replays batch 2 into the sink. The idempotent sink replaces it; the appending
    one writes its 10 records again: exactly 10 duplications."""
    db = tmp_path / "sink.db"
    args = detector_args(data, tmp_path, "--variant", variant, "--sink", "db")
    job = start_job(submit_command("local[2]", *args, "--sink-url", f"sqlite:///{db}"))
    deadline = time.monotonic() + 120
    try:
        while sink_batches(db) < 3:
            assert job.process.poll() is None, "the job ended before the kill"
            assert time.monotonic() < deadline, "batch 2 not in the sink after 120 s"
            time.sleep(0.01)
    finally:
        kill_job(job)
        job.stdout.close()
        job.stderr.close()
    replayed = not (tmp_path / "ckpt" / "commits" / "2").exists()
    finished(submit(*args, "--sink-url", f"sqlite:///{db}"))
    output = read_windows(tmp_path / "out")
    if variant == "correct":
        assert by_key(output) == canonical()
    else:  # without the replay (the commit won the race) there is nothing to duplicate
        assert violations(output) == ({"duplication": 10} if replayed else {})
        assert {key: list(dict.fromkeys(ws)) for key, ws in by_key(output).items()} == canonical()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.crashes  # CI runs the detector on a cluster in test_recovery (executor kills)
def test_the_detector_on_a_standalone_cluster(data: Path, tmp_path: Path) -> None:
    with standalone_cluster(tmp_path / "cluster", workers=1) as cluster:
        args = detector_args(data, tmp_path, "--files-per-batch", "1")
        command = submit_command(cluster.master_url, *args)
        command[1:1] = ["--conf", "spark.executor.memory=512m"]
        job = start_job(command)
        executors: list[int] = []
        deadline = time.monotonic() + 120
        while job.process.poll() is None and not executors and time.monotonic() < deadline:
            executors = executor_pids(cluster)
            time.sleep(0.2)
        done = finish_job(job)
        assert len(executors) == 1  # one worker with one core: one executor, its child
        line = finished(done)
    assert line == f"sequence_window: correct: 8 batches, 80 records -> {tmp_path / 'out'}"
    assert by_key(read_windows(tmp_path / "out")) == canonical()


def test_the_standalone_cluster_commands(tmp_path: Path) -> None:
    assert master_command(7077, 8080) == [
        str(SPARK_CLASS), "org.apache.spark.deploy.master.Master",
        "--host", "127.0.0.1", "--port", "7077", "--webui-port", "8080",
    ]  # fmt: skip
    assert worker_command("spark://127.0.0.1:7077", 8081, tmp_path) == [
        str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", "spark://127.0.0.1:7077",
        "--host", "127.0.0.1", "--webui-port", "8081",
        "--cores", "1", "--memory", "1g", "--work-dir", str(tmp_path),
    ]  # fmt: skip
