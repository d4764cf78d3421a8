"""Progress lines on stderr for the commands that can be silent for minutes (``compare``,
``recovery``, ``properties``), and only for a person watching.

    progress = Progress.start("compare", args.progress)      # --progress / --no-progress
    with progress.heartbeat():
        progress.step("matching on a local Spark")   # compare: 0.4s matching on a local Spark
        ...                                          # compare: 15.4s still matching on ...

A line is ``COMMAND: ELAPSED step``, the seconds since the command started; while a step
runs, ``heartbeat()`` repeats it (``still ...``) after every ``HEARTBEAT`` seconds without a
line. Lines go to stderr and only when it is a terminal, unless ``--progress`` asks for them
(``--no-progress``: never): stdout carries the verdict or JSON that scripts read, and a CI
job's or an Airflow task's log needs no ticker. Every step is shown through ``printable``:
a path or name from the user cannot send the terminal an escape.

Import-light on purpose (the standard library and ``printable``): ``parity --help`` builds no
command's parser, but ``parity compare --help`` imports this module.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from parity.views.printable import printable

#: seconds without a line after which a running step is repeated
HEARTBEAT = 15.0


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress`` on a command's parser (default: auto, a terminal)."""
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress lines (step, seconds elapsed) on stderr; default: only when stderr "
        "is a terminal",
    )


def wanted(choice: bool | None, stream: TextIO) -> bool:
    """Whether to show progress: ``choice`` when the user made one, else whether ``stream``
    is a terminal."""
    if choice is not None:
        return choice
    try:
        return stream.isatty()
    except (AttributeError, OSError, ValueError):  # replaced, closed or detached streams
        return False


class Progress:
    """The progress of one command run: ``step`` names what it does now, ``heartbeat``
    repeats it while nothing else is said. Disabled, it writes nothing and starts no thread."""

    def __init__(
        self,
        command: str,
        *,
        enabled: bool,
        stream: TextIO,
        heartbeat: float = HEARTBEAT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.command = command
        self.enabled = enabled
        self._stream = stream
        self._heartbeat = heartbeat
        self._clock = clock
        self._started = clock()
        self._last = self._started  # when the last line was written
        self._current: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def start(cls, command: str, choice: bool | None, stream: TextIO | None = None) -> Progress:
        """The progress of ``command``, shown as ``choice`` says (``None``: on a terminal)."""
        stream = sys.stderr if stream is None else stream
        return cls(command, enabled=wanted(choice, stream), stream=stream)

    def step(self, text: str) -> None:
        """Say that the command now does ``text``."""
        self._current = text
        self._write(text)

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        """Repeat the current step (``still ...``) while the block runs and says nothing."""
        if not self.enabled or self._heartbeat <= 0:
            yield
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self._heartbeat / 5):
                current = self._current
                if current is not None and self._clock() - self._last >= self._heartbeat:
                    self._write(f"still {current}")

        thread = threading.Thread(target=beat, name=f"parity {self.command} progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _write(self, text: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            now = self._clock()
            line = f"{self.command}: {now - self._started:.1f}s {printable(text)}\n"
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):  # a closed terminal must not fail the command
                self.enabled = False
            self._last = now
