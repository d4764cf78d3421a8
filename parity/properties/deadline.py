"""The time budget of a ``parity properties`` run: a deadline every step looks at.

Testing stops once its time budget (``--budget-seconds``) is spent: the runner gives each
property a share of what is left (``runner``), the driver of the checks looks at the
deadline before each step (``steps``), an operator run in this process between runs, and a
DataFrame operator's Spark job still running at the deadline is cancelled (``frames``).
Whatever was in progress then is abandoned, never counted as a test.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


class OutOfTime(Exception):
    """The time budget ran out while checks were in progress (caught by the runner)."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """The moment (``time.monotonic()``) testing must stop; ``None``: no time budget."""

    at: float | None = None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        return cls(None if seconds is None else time.monotonic() + seconds)

    def remaining(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    def passed(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def check(self) -> None:
        if self.passed():
            raise OutOfTime

    def sooner(self, seconds: float | None) -> Deadline:
        """This deadline, or ``seconds`` from now if that comes first."""
        if seconds is None:
            return self
        other = time.monotonic() + seconds
        return Deadline(other if self.at is None else min(self.at, other))


NO_DEADLINE = Deadline()
