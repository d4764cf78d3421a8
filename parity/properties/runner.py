"""Algorithm 1 for each property, in the testing order of Fig. 4, and the report.

Fig. 4: non-determinism first; selectivity on its own; for a two-input operator blocking
next (a blocking operator is stateful, so statefulness is not tested); otherwise
statefulness; a stateless operator is commutative and partition-isolated, so those two are
tested only on a stateful one. Algorithm 1 per property: generate a test, check it, until
evidence or the budget (``budget`` tests per technique; hybrid has 12 techniques, a test
of each in turn). Tests start at two items (§V-C) and grow by one per test (Table I's
"tests of increasing length"), up to ``MAX_ITEMS``. Evidence is shrunk, then kept in the
evidence file for ``reuse`` runs.

A caller that shows progress passes ``on_property(name, index, total)``: called as each
property's tests start, with its place among ``PROPERTIES`` (1-based) and their number. A
property Fig. 4 decides without testing (inferred, not applicable, undetermined) is never
announced, so the places a one-input operator shows skip blocking's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from parity.properties.elements import Test
from parity.properties.generation import Domain, Generator, Technique
from parity.properties.properties import (
    CHECK,
    GENERATE,
    PROPERTIES,
    Check,
    Context,
    punctuate,
    selective_replay,
)
from parity.properties.shrinking import shrink

#: the longest test (items) Algorithm 1 grows to: it starts at 2 (§V-C), one more per test
MAX_ITEMS = 10
#: replays a shrink may spend: streams are cheap, DataFrames pay a Spark job each
SHRINK_BUDGET = {True: 300, False: 40}

#: told ``(name, index, total)`` as a property's tests start (``check_operator``)
PropertyHook = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One property's answer."""

    name: str
    applicable: bool = True
    found: bool = False
    evidence: Mapping[str, Any] | None = None
    tests: int = 0
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)
    test: Test | None = None

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"applicable": self.applicable}
        if self.applicable:
            shown.update(found=self.found, evidence=self.evidence)
        else:
            shown.update(found=None, evidence=None)
        shown.update(tests=self.tests, seconds=round(self.seconds, 3), **self.extra)
        return shown


@dataclass(frozen=True, slots=True)
class Report:
    """What ``parity properties`` prints."""

    operator: str
    shape: str
    technique: str
    budget: int
    seed: int
    keys: tuple[str, ...]
    properties: Mapping[str, Outcome]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "shape": self.shape,
            "technique": self.technique,
            "budget": self.budget,
            "seed": self.seed,
            "key": list(self.keys),
            "seconds": round(self.seconds, 3),
            "properties": {name: self.properties[name].to_dict() for name in PROPERTIES},
        }

    def evidence_tests(self) -> dict[str, Test]:
        return {n: o.test for n, o in self.properties.items() if o.found and o.test}


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


def check_operator(
    context: Context,
    plan: Plan,
    technique_name: str,
    on_property: PropertyHook | None = None,
) -> Report:
    """Every property, in Fig. 4's order; ``on_property`` hears of each one tested as it
    starts."""
    started = time.monotonic()
    productive: list[Test] = list(plan.reused)
    done: dict[str, Outcome] = {}
    op = context.operator

    def run(name: str) -> Outcome:
        if on_property is not None:
            on_property(name, PROPERTIES.index(name) + 1, len(PROPERTIES))
        outcome = _algorithm_1(name, context, plan, productive)
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
            done[name] = Outcome(name, found=False, extra={"undetermined": skip})
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
            done[name] = Outcome(name, extra={"undetermined": skip})
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
    )


def undetermined(outcome: Outcome) -> bool:
    """Nothing was learnt of the property: neither found nor, for want of a test, absent."""
    return "undetermined" in outcome.extra


_UNTESTED = (
    "none of its {tried} tests could be checked (a firing stalled, or a test held one key "
    "only): neither found nor absent"
)


def _not_applicable(name: str, why: str) -> Outcome:
    return Outcome(name, applicable=False, extra={"reason": why})


def _algorithm_1(name: str, context: Context, plan: Plan, productive: list[Test]) -> Outcome:
    started = time.monotonic()
    rng = random.Random(f"{plan.seed}:{name}")
    generators = [
        Generator(t, plan.domains, random.Random(f"{plan.seed}:{name}:{t.name}"), productive)
        for t in plan.techniques
    ]
    check_context = Context(context.operator, context.keys, rng, context.max_delay)
    selective: tuple[Test, Mapping[str, Any]] | None = None
    tests = 0  # the tests that tested something (``Check.tested``)
    tried = 0
    for round_number in range(plan.budget):
        for generator in generators:
            size = min(plan.max_items, 2 + round_number)
            reused = generator.next_reused()
            test = (
                _adapt(name, check_context, reused)
                if reused is not None
                else GENERATE[name](check_context, generator, size)
            )
            check: Check = CHECK[name](check_context, test)
            tried += 1
            tests += check.tested
            generator.feedback(test, check.productive)
            if check.productive and name != "blocking":
                productive.append(test)
            if check.hint is not None and selective is None:
                selective = (test, check.hint)
            if check.evidence is not None:
                return _found(name, check_context, plan, test, check, tests, started)
    if tests == 0:  # a check that tested nothing never passes
        return Outcome(
            name,
            tests=0,
            seconds=time.monotonic() - started,
            extra={"undetermined": _UNTESTED.format(tried=tried)},
        )
    extra: dict[str, Any] = {}
    if name == "selectivity":
        extra["class"] = "one_to_one"
        if selective is not None:
            test, hint = selective
            replay = selective_replay(check_context, prolific=False)
            shrunk = _shrunk(check_context, plan, test, hint, replay)
            return Outcome(
                name,
                found=True,
                evidence=shrunk[1],
                tests=tests,
                seconds=time.monotonic() - started,
                extra={"class": "selective"},
                test=shrunk[0],
            )
    return Outcome(name, tests=tests, seconds=time.monotonic() - started, extra=extra)


def _found(
    name: str,
    context: Context,
    plan: Plan,
    test: Test,
    check: Check,
    tests: int,
    started: float,
) -> Outcome:
    assert check.evidence is not None
    seconds = time.monotonic() - started  # time to first evidence, before shrinking
    smallest, evidence = _shrunk(context, plan, test, check.evidence, check.replay)
    extra: dict[str, Any] = {"class": "prolific"} if name == "selectivity" else {}
    if name == "blocking":
        extra["port"] = evidence.get("port")
    return Outcome(name, True, True, evidence, tests, seconds, extra, smallest)


def _shrunk(
    context: Context,
    plan: Plan,
    test: Test,
    evidence: Mapping[str, Any],
    replay: Any,
) -> tuple[Test, Mapping[str, Any]]:
    if not plan.shrink or replay is None:
        return test, evidence
    budget = SHRINK_BUDGET[context.operator.fires]
    result = shrink(test, evidence, replay, budget)
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
