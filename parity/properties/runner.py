"""Algorithm 1 for each property, in the testing order of Fig. 4, and the report.

Fig. 4: non-determinism first; selectivity on its own; for a two-input operator blocking
next (a blocking operator is stateful, so statefulness is not tested); otherwise
statefulness; a stateless operator is commutative and partition-isolated, so those two are
tested only on a stateful one. Algorithm 1 per property: generate a test, check it, until
evidence or the budget (``budget`` tests per technique; hybrid has 12 techniques, a test
of each in turn). Tests start at two items (§V-C) and grow by one per test (Table I's
"tests of increasing length"), up to ``MAX_ITEMS``. Evidence is shrunk, then kept in the
evidence file for ``reuse`` runs.

Hybrid runs its techniques "simultaneously in parallel" (§IV-D): a DataFrame operator's
round (a test of each technique) is checked at once, the runs of all twelve checks in one
Spark job per step (``steps``, ``frame_jobs``), and the first evidence in the techniques'
order is kept, as if they had run one after the other. A stream operator, run in this
process, checks one test at a time.

The paper's Algorithm 1 stops at a *time* limit; ``Plan.seconds`` is that budget for the
whole command. Each property, as it starts, may use what is left but ``RESERVE`` of the
budget for each property Fig. 4 will test after it (non-commutativity and
partition-interference only once statefulness is found: on a stateless operator they are
inferred, and hold no time back), and at least an equal share of what is left; one that
needs little leaves its time to the next. One whose
first round is not done when its share ends goes on until it is, or the budget ends.
When a property's share runs out its tests stop: evidence found before stands; without
evidence it is *partial* (``partial`` says after how many of its tests), which Fig. 4 reads
as it reads a property tested in full ("potentially", on fewer tests). A property reached
after the whole budget is spent, or whose share ran out before any test was checked, is
*undetermined*, as is whatever Fig. 4 would infer from it. ``Report.time_budget`` says
which properties were tested in full, which partially and which not.

A caller that shows progress passes ``on_property(name, index, total)``: called as each
property's tests start, with its place among ``PROPERTIES`` (1-based) and their number. A
property Fig. 4 decides without testing (inferred, not applicable, undetermined) is never
announced, so the places a one-input operator shows skip blocking's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from parity.properties.deadline import Deadline, OutOfTime
from parity.properties.elements import Test
from parity.properties.generation import Domain, Generator, Technique
from parity.properties.outcomes import Outcome, Report, undetermined
from parity.properties.properties import (
    GENERATE,
    PROPERTIES,
    STEPS,
    Check,
    Context,
    Replay,
    punctuate,
    selective_replay,
)
from parity.properties.shrinking import shrink
from parity.properties.steps import drive_all

#: the longest test (items) Algorithm 1 grows to: it starts at 2 (§V-C), one more per test
MAX_ITEMS = 10
#: replays a shrink may spend: streams are cheap, DataFrames pay a Spark job per batch
SHRINK_BUDGET = {True: 300, False: 60}
#: of the time budget, what a property leaves for each one Fig. 4 may test after it
RESERVE = 0.1
#: what an outcome's ``undetermined`` says when the time budget ran out before its tests
NO_TIME = "the time budget ran out before it was tested: not tested"

#: told ``(name, index, total)`` as a property's tests start (``check_operator``)
PropertyHook = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Plan:
    """How to test: the techniques, the budget, the seed, what is reused."""

    techniques: tuple[Technique, ...]
    budget: int
    seed: int
    domains: tuple[Domain, ...]
    reused: tuple[Test, ...] = ()
    shrink: bool = True
    max_items: int = MAX_ITEMS
    #: the time budget of the whole testing, in seconds (None: the test budget alone)
    seconds: float | None = None
    #: a DataFrame operator's round of tests at once, its runs in one Spark job per step;
    #: False: a test at a time, a job per run (how it ran before; ``bench/properties.py``)
    together: bool = True


def check_operator(
    context: Context,
    plan: Plan,
    technique_name: str,
    on_property: PropertyHook | None = None,
) -> Report:
    """Every property, in Fig. 4's order; ``on_property`` hears of each one tested as it
    starts."""
    started = time.monotonic()
    clock = Deadline.after(plan.seconds)
    productive: list[Test] = list(plan.reused)
    done: dict[str, Outcome] = {}
    op = context.operator

    def run(name: str) -> Outcome:
        if clock.passed():
            outcome = Outcome(name, extra={"undetermined": NO_TIME, "not_tested": "time budget"})
        else:
            if on_property is not None:
                on_property(name, PROPERTIES.index(name) + 1, len(PROPERTIES))
            share = _share(clock, _left(name, op.ports, context.keys), plan.seconds)
            outcome = _algorithm_1(name, context, plan, productive, _Times(share, clock))
        done[name] = outcome
        return outcome

    run("nondeterminism")
    run("selectivity")
    blocking = (
        run("blocking")
        if op.ports >= 2
        else _not_applicable("blocking", "a one-input operator cannot block on another port")
    )
    done["blocking"] = blocking
    if done["nondeterminism"].found or undetermined(done["nondeterminism"]):
        skip = (
            "non-deterministic: differences between runs cannot be told from order, state "
            "or keys (Fig. 4 tests it first): not tested"
            if done["nondeterminism"].found
            else "non-determinism undetermined: differences between runs could not be told "
            "from order, state or keys: not tested"
        )
        for name in ("statefulness", "non_commutativity", "partition_interference"):
            done[name] = Outcome(name, found=False, extra=_skipped(skip, done["nondeterminism"]))
        return _report(context, plan, technique_name, done, started)
    if blocking.found:
        done["statefulness"] = Outcome(
            "statefulness",
            found=True,
            evidence=blocking.evidence,
            extra={"inferred": "a blocking operator is stateful (Fig. 4): not tested"},
        )
    else:
        run("statefulness")
    if undetermined(done["statefulness"]):  # neither stateful nor, by Fig. 4, stateless
        skip = "statefulness undetermined: nothing to infer it from: not tested"
        for name in ("non_commutativity", "partition_interference"):
            done[name] = Outcome(name, extra=_skipped(skip, done["statefulness"]))
        return _report(context, plan, technique_name, done, started)
    stateful = done["statefulness"].found
    reason = "stateless, hence commutative and partition-isolated (Fig. 4): not tested"
    if stateful:
        run("non_commutativity")
    else:
        done["non_commutativity"] = Outcome("non_commutativity", extra={"inferred": reason})
    if not context.keys:
        done["partition_interference"] = _not_applicable(
            "partition_interference", "no --key given: partition-interference is by a key"
        )
        return _report(context, plan, technique_name, done, started)
    elif stateful:
        run("partition_interference")
    else:
        done["partition_interference"] = Outcome(
            "partition_interference", extra={"inferred": reason, "key": list(context.keys)}
        )
    if "key" not in done["partition_interference"].extra:
        outcome = done["partition_interference"]
        done["partition_interference"] = Outcome(
            outcome.name,
            outcome.applicable,
            outcome.found,
            outcome.evidence,
            outcome.tests,
            outcome.seconds,
            {"key": list(context.keys), **outcome.extra},
            outcome.test,
        )
    return _report(context, plan, technique_name, done, started)


#: what Fig. 4 tests only on a stateful operator: no time is kept for them before
_IF_STATEFUL = ("non_commutativity", "partition_interference")


def _left(name: str, ports: int, keys: Sequence[str]) -> int:
    """How many properties Fig. 4 will test from here, this one included, unless evidence
    ends it sooner (that leaves its time to the next): those it tests only on a stateful
    operator count once statefulness is found, when testing reaches them."""
    later = PROPERTIES[PROPERTIES.index(name) :]
    return sum(
        1
        for n in later
        if (n != "blocking" or ports >= 2)
        and (n != "partition_interference" or keys)
        and (n not in _IF_STATEFUL or name in _IF_STATEFUL)
    )


def _share(clock: Deadline, left: int, seconds: float | None) -> Deadline:
    """A property's deadline: what is left but a reserve for each property after it, and
    at least an equal share of what is left."""
    remaining = clock.remaining()
    if remaining is None or seconds is None:
        return clock
    kept = RESERVE * seconds * (left - 1)
    return clock.sooner(max(remaining - kept, remaining / max(1, left)))


def _skipped(why: str, cause: Outcome) -> dict[str, Any]:
    """A property Fig. 4 leaves undetermined because of ``cause``; untested for want of
    time when that was."""
    extra: dict[str, Any] = {"undetermined": why}
    if "not_tested" in cause.extra:
        extra["not_tested"] = cause.extra["not_tested"]
    return extra


def _report(
    context: Context, plan: Plan, technique: str, done: dict[str, Outcome], started: float
) -> Report:
    op = context.operator
    return Report(
        op.ref,
        op.shape,
        technique,
        plan.budget,
        plan.seed,
        context.keys,
        done,
        time.monotonic() - started,
        plan.seconds,
    )


_UNTESTED = (
    "none of its {tried} tests could be checked (a firing stalled, or a test held one key "
    "only): neither found nor absent"
)


def _not_applicable(name: str, why: str) -> Outcome:
    return Outcome(name, applicable=False, extra={"reason": why})


@dataclass(frozen=True, slots=True)
class _Times:
    """A property's deadlines: its share, and the whole budget's end. Until its first round
    is done a property may run on into the time of the next ones (to the whole budget's
    end): a share too short for one round would leave it, and all Fig. 4 infers from it
    (non-determinism gates three), undetermined with time to spare."""

    share: Deadline
    clock: Deadline

    def now(self, tried: int) -> Deadline:
        return self.share if tried else self.clock


def _algorithm_1(
    name: str, context: Context, plan: Plan, productive: list[Test], times: _Times
) -> Outcome:
    started = time.monotonic()
    rng = random.Random(f"{plan.seed}:{name}")
    generators = [
        Generator(t, plan.domains, random.Random(f"{plan.seed}:{name}:{t.name}"), productive)
        for t in plan.techniques
    ]
    op = context.operator
    check_context = Context(op, context.keys, rng, context.max_delay)
    # a DataFrame operator's round at once (a Spark job per step); a stream's test by test
    window = len(generators) if plan.together and not op.fires else 1
    selective: tuple[Test, Mapping[str, Any]] | None = None
    tests = 0  # the tests that tested something (``Check.tested``)
    tried = 0
    planned = plan.budget * len(generators)
    try:
        for round_number in range(plan.budget):
            size = min(plan.max_items, 2 + round_number)
            for first in range(0, len(generators), window):
                deadline = times.now(tried)
                deadline.check()
                group = generators[first : first + window]
                made = [(g, _next_test(name, check_context, g, size)) for g in group]
                steps = [STEPS[name](check_context, test) for _, test in made]
                checks: list[Check] = drive_all(op, steps, deadline, plan.together)
                for (generator, test), check in zip(made, checks, strict=True):
                    tried += 1
                    tests += check.tested
                    generator.feedback(test, check.productive)
                    if check.productive and name != "blocking":
                        productive.append(test)
                    if check.hint is not None and selective is None:
                        selective = (test, check.hint)
                    if check.evidence is not None:
                        return _found(
                            name, check_context, plan, test, check, tests, started, times.share
                        )
        out_of_time = False
    except OutOfTime:  # the checks in progress are abandoned: ``tried`` counts those done
        out_of_time = True
    partial = (
        {"partial": f"the time budget ran out after {tried} of its {planned} tests"}
        if out_of_time
        else {}
    )
    if tests == 0:  # a check that tested nothing never passes
        why = (
            f"the time budget ran out before any of its {planned} tests was checked: not tested"
            if partial
            else _UNTESTED.format(tried=tried)
        )
        extra: dict[str, Any] = {"undetermined": why}
        if partial:
            extra["not_tested"] = "time budget"
        return Outcome(name, tests=0, seconds=time.monotonic() - started, extra=extra)
    extra = dict(partial)
    if name == "selectivity":
        extra["class"] = "one_to_one"
        if selective is not None:
            test, hint = selective
            replay = selective_replay(check_context, prolific=False)
            shrunk = _shrunk(check_context, plan, test, hint, replay, times.share)
            return Outcome(
                name,
                found=True,
                evidence=shrunk[1],
                tests=tests,
                seconds=time.monotonic() - started,
                extra={"class": "selective", **partial},
                test=shrunk[0],
            )
    return Outcome(name, tests=tests, seconds=time.monotonic() - started, extra=extra)


def _next_test(name: str, context: Context, generator: Generator, size: int) -> Test:
    reused = generator.next_reused()
    if reused is not None:
        return _adapt(name, context, reused)
    return GENERATE[name](context, generator, size)


def _found(
    name: str,
    context: Context,
    plan: Plan,
    test: Test,
    check: Check,
    tests: int,
    started: float,
    deadline: Deadline,
) -> Outcome:
    assert check.evidence is not None
    seconds = time.monotonic() - started  # time to first evidence, before shrinking
    smallest, evidence = _shrunk(context, plan, test, check.evidence, check.replay, deadline)
    extra: dict[str, Any] = {"class": "prolific"} if name == "selectivity" else {}
    if name == "blocking":
        extra["port"] = evidence.get("port")
    return Outcome(name, True, True, evidence, tests, seconds, extra, smallest)


def _shrunk(
    context: Context,
    plan: Plan,
    test: Test,
    evidence: Mapping[str, Any],
    replay: Replay | None,
    deadline: Deadline,
) -> tuple[Test, Mapping[str, Any]]:
    if not plan.shrink or replay is None:
        return test, evidence
    op = context.operator
    budget = SHRINK_BUDGET[op.fires]

    def evaluate(tests: Sequence[Test]) -> list[Mapping[str, Any] | None]:
        return drive_all(op, [replay(t) for t in tests], deadline, plan.together)

    # a DataFrame operator's candidates of one ddmin step in one job; a stream's one by one
    batch = budget if plan.together and not op.fires else 1
    result = shrink(test, evidence, evaluate, budget, batch=batch)
    return result.test, {**result.evidence, "shrunk_from": len(test), "minimal": result.minimal}


def _adapt(name: str, context: Context, test: Test) -> Test:
    """A reused test, made fit for this property's check (Table I's shapes)."""
    items = tuple(e for e in test if not e.is_punctuation)
    if name == "blocking":  # one port's items (the port under test), as Table I's tests
        port = context.rng.choice(sorted({e.port for e in items}) or [0])
        return tuple(e for e in items if e.port == port) + tuple(e for e in items if e.port != port)
    if name == "statefulness":  # every input twice: state shows as two firings that differ
        return punctuate(context, items + items, every=True)
    if name == "nondeterminism":
        return punctuate(context, items, every=True)
    return punctuate(context, items)


def technique_label(techniques: Sequence[Technique]) -> str:
    return "hybrid" if len(techniques) > 1 else techniques[0].name
