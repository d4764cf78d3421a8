"""What every property's check shares: its context, its result, and the steps it runs with.

A check (``properties``, ``state_checks``) is a coroutine (``steps``): ``one_run`` asks for
one run, ``evidence_of`` turns a check into the steps of its evidence (a shrinking
replay), ``on_its_own`` runs a check by itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from parity.properties.elements import Element, Run, Test, punctuation, thaw
from parity.properties.operators import CANONICAL, Operator, Physical
from parity.properties.steps import Steps, drive

#: the longest inter-arrival delay a non-determinism test sleeps
MAX_DELAY = 0.05


@dataclass(frozen=True, slots=True)
class Context:
    """What every check needs besides the test: the operator, the key, randomness."""

    operator: Operator
    keys: tuple[str, ...]
    rng: random.Random
    max_delay: float = MAX_DELAY


@dataclass(frozen=True, slots=True)
class Check:
    """A check's result: evidence (a JSON-ready mapping) or None; whether the test produced
    output (mutation and reuse feed on that); a selectivity hint (``selective``); whether it
    tested anything (``tested``: not when a firing stalled before there was anything to
    compare, or a partition-interference test had one key): a property whose checks tested
    nothing is undetermined, never absent. ``replay`` checks a smaller test the same way
    (shrinking): the steps that give its evidence, or None."""

    evidence: Mapping[str, Any] | None
    productive: bool
    hint: Mapping[str, Any] | None = None
    replay: Replay | None = field(default=None, compare=False)
    tested: bool = True


#: a check of a smaller test, as steps giving its evidence (or None)
Replay = Callable[[Test], Steps[Mapping[str, Any] | None]]


def evidence_of(steps: Steps[Check]) -> Steps[Mapping[str, Any] | None]:
    """The check's steps, giving its evidence (or None)."""
    check = yield from steps
    return check.evidence


def one_run(test: Test, physical: Physical = CANONICAL) -> Steps[Run]:
    """One run, as a step."""
    (run,) = yield ((test, physical),)
    return run


def runs_ok(*runs: Run) -> bool:
    """No firing stalled (an operator's error is not a run: ``OperatorError`` ends the
    command)."""
    return all(r.stalled_at is None for r in runs)


def outputs_shown(run: Run) -> list[Any]:
    """A run's outputs, as evidence shows them."""
    return [thaw(o) for o in run.output]


def punctuate(context: Context, test: Test, every: bool = False) -> Test:
    """End a stream test with a punctuation (the window's or partition's end); with
    ``every``, put one after each item with probability 1/2 too."""
    if not context.operator.punctuates:
        return tuple(e for e in test if not e.is_punctuation)
    out: list[Element] = []
    for element in test:
        out.append(element)
        if every and not element.is_punctuation and context.rng.random() < 0.5:
            out.append(punctuation(element.port))
    if not out or not out[-1].is_punctuation:
        out.append(punctuation(out[-1].port if out else 0))
    return tuple(out)


def on_its_own(
    steps: Callable[[Context, Test], Steps[Check]],
) -> Callable[[Context, Test], Check]:
    """The check, run by itself (its runs one step at a time)."""

    def check(context: Context, test: Test) -> Check:
        return drive(context.operator, steps(context, test))

    check.__name__ = steps.__name__.replace("_steps", "_check")
    return check
