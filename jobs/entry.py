"""What every Parity Spark job shares: its session and how it ends.

    def main(argv=None) -> int:
        args = build_parser().parse_args(argv)
        return run_job("match", lambda: run(args))

``run_job`` turns every failure into exit 2 and one line on stderr, never exit 1 (which
means *divergent*) and never a traceback: Parity's own errors and the foreign ones a user
can act on (``matcher.spark.failures.known_failure``: Spark's analysis errors, a spec's
function that raised, text that is not UTF-8) as ``JOB: error: ...``; anything else as
``JOB: internal error: ...`` naming the file its traceback was saved to.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from matcher import uris
from matcher.errors import ParityError, SpecError
from matcher.failures import internal_error_line
from matcher.files import locations
from matcher.printable import error_line, printable
from matcher.spark.failures import known_failure
from matcher.spec import Spec, load_spec, parse_spec, parse_yaml

EXIT_ERROR = 2


def session(job: str, *, conf: Mapping[str, str] | None = None) -> Any:
    """The job's SparkSession (master and the rest come from spark-submit), quiet below WARN."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(f"parity-{job}")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


class StartingSession:
    """The job's SparkSession (``session``), started on a thread of its own while the
    driver goes on with its own start (reading the spec, opening the store, importing the
    matcher): the JVM's start of Spark and Python's imports overlap instead of taking
    turns. ``get()`` waits for it and raises what starting it raised.

    The thread is a daemon: a job that fails before it needs Spark exits at once. PySpark
    cancels the running jobs on Ctrl-C only when the session starts on the main thread, so
    ``get()`` puts the same handler in place there."""

    def __init__(self, job: str, *, conf: Mapping[str, str] | None = None) -> None:
        self._done = threading.Event()
        self._spark: Any = None
        self._error: BaseException | None = None
        name = f"parity-{job}-session"
        threading.Thread(target=self._start, args=(job, conf), name=name, daemon=True).start()

    def _start(self, job: str, conf: Mapping[str, str] | None) -> None:
        try:
            self._spark = session(job, conf=conf)
        except BaseException as exc:  # raised again by get(), on the driver's thread
            self._error = exc
        finally:
            self._done.set()

    def get(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        if threading.current_thread() is threading.main_thread():
            context = self._spark.sparkContext

            def cancel(signum: int, frame: Any) -> None:
                try:
                    context.cancelAllJobs()
                finally:
                    raise KeyboardInterrupt

            signal.signal(signal.SIGINT, cancel)
        return self._spark


def load_spec_at(location: str) -> Spec:
    """The spec at ``location``: a local file, or the effective spec a run with overrides
    keeps in its workspace on shared storage (``hdfs://``, ``s3a://``, ...), whose
    ``module:function`` references import from ``sys.path``."""
    local = uris.local_path(location)
    if local is not None:
        return load_spec(local)
    try:
        text = locations.read_text(location)
    except UnicodeDecodeError as exc:
        raise SpecError(f"{location}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise SpecError(f"{location}: cannot read the spec: {exc}") from exc
    return parse_spec(parse_yaml(text, location), location)


def fail(job: str, exc: BaseException) -> int:
    """Print ``JOB: error: MESSAGE`` (whitespace folded to one line, control characters
    escaped: ``matcher.printable``); the exit code, 2."""
    print(error_line(job, str(exc).strip() or type(exc).__name__), file=sys.stderr)
    return EXIT_ERROR


def run_job(
    job: str,
    body: Callable[[], int],
    *,
    functions: Mapping[str, Callable[..., Any]] | None = None,
) -> int:
    """``body()``'s exit code, or 2 with one line on stderr when it raises.

    ``functions``: the spec's ``module:function`` references, so that an exception raised
    inside one of them is reported as the spec's (``known_failure``)."""
    try:
        return body()
    except (ParityError, OSError) as exc:
        return fail(job, exc)
    except Exception as exc:
        known = known_failure(exc, functions)
        if known is not None:
            return fail(job, known)
        print(printable(internal_error_line(exc, job)), file=sys.stderr)
        return EXIT_ERROR
