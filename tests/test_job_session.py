"""A job's SparkSession started on its own thread while the driver goes on
(``jobs.entry.StartingSession``); the match job under ``spark-submit`` takes this path in
``tests/test_match_job.py``."""

from __future__ import annotations

import signal
import threading

import pytest
from pyspark.sql import SparkSession

from jobs import entry
from matcher.errors import InputError

pytest_plugins = ("tests.spark_fixtures",)


@pytest.mark.spark
def test_the_session_started_on_a_thread_is_the_jobs_session(spark: SparkSession) -> None:
    before = signal.getsignal(signal.SIGINT)
    try:
        starting = entry.StartingSession("test")
        got = starting.get()
        assert got is starting.get()  # waits once; the same session after
        assert got.sparkContext is spark.sparkContext
        assert got.range(3).count() == 3
        # PySpark puts its Ctrl-C handler in place only for a session started on the main
        # thread: get() does, and it cancels the running jobs, then interrupts
        handler = signal.getsignal(signal.SIGINT)
        assert handler is not before and callable(handler)
        with pytest.raises(KeyboardInterrupt):
            handler(signal.SIGINT, None)
    finally:
        signal.signal(signal.SIGINT, before)
        spark.sparkContext.setLogLevel("ERROR")  # session() set WARN on the shared session


def test_what_starting_raised_is_raised_by_get(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(job: str, *, conf: object = None) -> SparkSession:
        raise InputError(f"{job}: no Java runtime")

    monkeypatch.setattr(entry, "session", refused)
    starting = entry.StartingSession("match")
    with pytest.raises(InputError, match="match: no Java runtime"):
        starting.get()


def test_get_on_another_thread_leaves_the_signal_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    marker = object()
    monkeypatch.setattr(entry, "session", lambda job, *, conf=None: marker)
    before = signal.getsignal(signal.SIGINT)
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(entry.StartingSession("x").get()))
    worker.start()
    worker.join()
    assert got == [marker]
    assert signal.getsignal(signal.SIGINT) is before
