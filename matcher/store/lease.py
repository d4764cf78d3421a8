"""Leases on running runs: how a run whose job died stops being "running".

A job that starts a run holds a lease on it (``Store.start_run``) and renews it from a
``Heartbeat`` thread while it works. A job killed outright (``kill -9``, an OOM kill, a lost
node) renews nothing: once its lease has expired, readers show the run as failed, with the
reason ``lease_expired_reason`` gives, and ``Store.expire_runs`` (``parity runs expire``)
records it so.

The lease lasts ``RUN_LEASE_SECONDS`` (120 s), or ``PARITY_RUN_LEASE_SECONDS`` when set; the
heartbeat beats every sixth of it (20 s by default), so that a few missed beats (a busy
database, a long garbage collection) never expire a live run. Lease times are the writer's
clock, compared with the reader's: machines whose clocks disagree by more than a lease's
margin see live runs as failed.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
from types import TracebackType
from typing import TYPE_CHECKING

from matcher.store.errors import StoreError

if TYPE_CHECKING:
    from matcher.store.repository import Store

LEASE_VARIABLE = "PARITY_RUN_LEASE_SECONDS"
RUN_LEASE_SECONDS = 120.0
#: beats per lease: the heartbeat's period is the lease divided by this
BEATS_PER_LEASE = 6


def lease_seconds() -> float:
    """The lease's length: ``PARITY_RUN_LEASE_SECONDS`` when set, else ``RUN_LEASE_SECONDS``."""
    text = os.environ.get(LEASE_VARIABLE)
    if not text:
        return RUN_LEASE_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise StoreError(f"{LEASE_VARIABLE}={text!r}: expected a number of seconds > 0")
    return value


def lease_expired_reason(expired_at: dt.datetime) -> str:
    """What a run whose lease expired failed of (its ``error``)."""
    return (
        "the job stopped reporting: its lease expired at "
        f"{expired_at.astimezone(dt.UTC).isoformat(timespec='seconds')}"
    )


class Heartbeat:
    """Renews the lease of ``run_id`` every ``period`` seconds from a daemon thread, while
    the ``with`` block runs. A failed renewal is reported on stderr and retried at the next
    beat: the job goes on, and the lease covers a few missed beats."""

    def __init__(self, store: Store, run_id: str, period: float | None = None) -> None:
        self._store = store
        self._run_id = run_id
        self._period = lease_seconds() / BEATS_PER_LEASE if period is None else period
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {run_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stopped.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stopped.wait(self._period):
            try:
                self._store.heartbeat(self._run_id)
            except StoreError as error:
                print(f"parity: warning: heartbeat: {error}", file=sys.stderr)
