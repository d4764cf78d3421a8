"""Checks as coroutines that ask for runs, and the driver that answers many at once.

A property's check (``properties``) needs a few runs of the operator, some of them chosen
after seeing others (a confirmation re-run, a permutation after the first). Written as a
generator, a check *yields* the runs it needs next, as a tuple of ``(test, physical)``
requests, and is *sent* their ``Run``\\ s in the same order; it returns its result. Nothing in
a check runs the operator itself, so a driver may answer the requests of many checks in one
go: ``drive_all`` steps every check in lockstep and hands each step's requests to the
operator's ``run_batch`` together. A stream operator runs them one after the other, in this
process; a DataFrame operator runs each test on its own DataFrame, within one Spark job
(``frames``). Every run still sees its own test's input and nothing else: batching shares the
job, never the input.

The driver looks at the time budget (``deadline``) before each step and raises ``OutOfTime``
once it has passed: the checks in progress are abandoned, never counted.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, TypeVar

from parity.properties.deadline import NO_DEADLINE, Deadline
from parity.properties.elements import Run, Test
from parity.properties.operators import Operator, Physical, run_each

#: one run a check needs: the test, and how to run it
Request = tuple[Test, Physical]
T = TypeVar("T")
#: a check (or a replay) as a coroutine: yields requests, is sent their runs, returns T
Steps = Generator[tuple[Request, ...], tuple[Run, ...], T]


def drive(operator: Operator, steps: Steps[T], deadline: Deadline = NO_DEADLINE) -> T:
    """Run one check to its end."""
    result: T = drive_all(operator, [steps], deadline)[0]
    return result


def drive_all(
    operator: Operator,
    checks: Sequence[Steps[Any]],
    deadline: Deadline = NO_DEADLINE,
    together: bool = True,
) -> list[Any]:
    """Run every check to its end in lockstep: each step's requests, of all the checks still
    running, in one ``run_batch`` (``together`` false: one ``run`` each, as before batching;
    ``bench/properties.py`` compares the two); the results in the checks' order."""
    results: list[Any] = [None] * len(checks)
    pending: dict[int, tuple[Request, ...]] = {}

    def advance(index: int, runs: tuple[Run, ...] | None) -> None:
        try:
            wanted = next(checks[index]) if runs is None else checks[index].send(runs)
        except StopIteration as stop:
            results[index] = stop.value
            pending.pop(index, None)
            return
        pending[index] = tuple(wanted)

    try:
        for index in range(len(checks)):
            advance(index, None)
        while pending:
            deadline.check()
            order = sorted(pending)
            flat = [request for index in order for request in pending[index]]
            if not flat:
                runs: list[Run] = []
            elif together:
                runs = operator.run_batch(flat, deadline)
            else:
                runs = run_each(operator, flat, deadline)
            at = 0
            for index in order:
                count = len(pending[index])
                advance(index, tuple(runs[at : at + count]))
                at += count
    finally:
        for check in checks:
            check.close()
    return results
