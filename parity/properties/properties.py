"""The six properties: how each one's tests are made and checked (Table I of the paper).

Each property has ``generate(context, generator, size) -> Test`` (the paper's
*generateTest*) and ``check(context, test) -> Check`` (*checkProperty*): evidence, or
None. Evidence is a result, not an error: the input that shows the property and the
outputs that differ. A check that finds a difference between two runs confirms it by
running both again, so that evidence for order, state or keys is never an accident of
non-determinism.

A check is a coroutine (``STEPS``; ``steps`` has the protocol): it yields the runs it
needs and is sent them, so that the runner answers the runs of many checks at once (a
DataFrame operator's in one Spark job). A DataFrame check asks for all the runs it may need
in one step (the test and each item alone; the test and every permutation); a stream check,
run in this process, one at a time, stopping where the sequential check stops. ``CHECK``
runs a check on its own.

Per shape (``docs/reference/properties.md`` has the full translation):

non-determinism
    the same test, run twice: streams with other delays between items (the paper's
    inter-arrival times), DataFrames in other partition counts (the rows scattered over
    ``n`` partitions in a random order, ``frames``) and another
    ``spark.sql.shuffle.partitions``. Different outputs (per firing
    for streams, as multisets for DataFrames) are evidence.
selectivity
    an item's firing with more than one output is evidence of *prolific*, with none of
    *selective* (kept while prolific is looked for). A DataFrame shows no firings, but
    pigeonholes: more output rows than input rows means some firing had more than one,
    fewer means some had none.
blocking
    items on one port only; a firing that does not return within the blocking time limit
    is evidence. A DataFrame pair cannot stall: its port blocks when its items alone give no
    output but do once the other port has rows (a stream-stream join holding rows in state).
statefulness
    the same item repeated (with punctuations between, for windowed operators): two firings
    of the same input with different outputs are evidence. DataFrames: the output of the
    whole input differs from the union of the outputs of each item alone.
non-commutativity
    a window of items in other orders: different outputs (as multisets: permuting a
    stateless operator's input permutes its outputs) are evidence.
partition-interference by key K
    items of one key interspersed with items of other keys: an output that differs from
    the union of the outputs of each key's items alone is evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from parity.properties.checking import (
    MAX_DELAY,
    Check,
    Context,
    Replay,
    evidence_of,
    on_its_own,
    one_run,
    outputs_shown,
    punctuate,
    runs_ok,
)
from parity.properties.elements import Test, bag_difference, items_of, show_test
from parity.properties.generation import Generator
from parity.properties.operators import CANONICAL, Physical
from parity.properties.state_checks import (
    commutativity_generate,
    commutativity_steps,
    interference_generate,
    interference_steps,
    key_of,
    statefulness_generate,
    statefulness_steps,
)
from parity.properties.steps import Steps

__all__ = [
    "CHECK",
    "GENERATE",
    "MAX_DELAY",
    "PROPERTIES",
    "STEPS",
    "Check",
    "Context",
    "Replay",
    "key_of",
    "punctuate",
    "selective_replay",
]

PROPERTIES = (
    "nondeterminism",
    "selectivity",
    "blocking",
    "statefulness",
    "non_commutativity",
    "partition_interference",
)
#: how many inter-arrival delays a non-determinism test sleeps (each up to ``MAX_DELAY``)
DELAY_POINTS = 3


# --- non-determinism --------------------------------------------------------------------


def nondeterminism_generate(context: Context, generator: Generator, size: int) -> Test:
    return punctuate(context, generator.base(size), every=True)


def other_physical(context: Context, test: Test) -> Physical:
    rng = context.rng
    if context.operator.fires:
        delays = [0.0] * len(test)
        for at in rng.sample(range(len(test)), min(DELAY_POINTS, len(test))):
            delays[at] = rng.uniform(0, context.max_delay)
        return Physical(delays=tuple(delays))
    return Physical(partitions=rng.choice((2, 3, 5)), shuffle_partitions=rng.choice((1, 3, 5)))


def nondeterminism_steps(
    context: Context, test: Test, physical: Physical | None = None
) -> Steps[Check]:
    op = context.operator
    other = physical or other_physical(context, test)
    if op.fires:  # in this process: the second run only when the first did not stall
        first = yield from one_run(test)
        if not runs_ok(first):  # a stalled run has no output to compare
            return Check(None, bool(first.output), tested=False)
        second = yield from one_run(test, other)
    else:
        first, second = yield ((test, CANONICAL), (test, other))
    productive = bool(first.output)
    if not runs_ok(first, second):
        return Check(None, productive, tested=False)
    differ = first.firings != second.firings if op.fires else first.output != second.output
    if not differ:
        return Check(None, productive)
    evidence = {
        "input": show_test(test),
        "runs": [
            {"physical": CANONICAL.describe(), "output": outputs_shown(first)},
            {"physical": other.describe(), "output": outputs_shown(second)},
        ],
        "difference": bag_difference(first.output, second.output),
    }
    return Check(evidence, productive, replay=lambda t: _nd_again(context, t, other))


def _nd_again(context: Context, test: Test, physical: Physical) -> Steps[Mapping[str, Any] | None]:
    delays = physical.delays[: len(test)]
    trials = (
        Physical(physical.partitions, physical.shuffle_partitions, delays),
        other_physical(context, test),
    )
    for trial in trials:
        evidence = yield from evidence_of(nondeterminism_steps(context, test, trial))
        if evidence is not None:
            return evidence
    return None


# --- selectivity ------------------------------------------------------------------------


def selectivity_generate(context: Context, generator: Generator, size: int) -> Test:
    return punctuate(context, generator.base(size))


def selectivity_steps(context: Context, test: Test) -> Steps[Check]:
    op = context.operator
    run = yield from one_run(test)
    if not runs_ok(run):
        return Check(None, False, tested=False)
    items = items_of(test)
    if op.fires and run.firings is not None:
        counts = [len(o) for e, o in zip(test, run.firings, strict=False) if not e.is_punctuation]
        prolific, selective = max(counts, default=0) > 1, min(counts, default=1) == 0
    else:
        prolific, selective = len(run.output) > len(items), len(run.output) < len(items)
    shown = {"input": show_test(test), "output": outputs_shown(run)}
    if op.fires and run.firings is not None:
        shown["outputs_per_firing"] = [len(o) for o in run.firings]
    productive = bool(run.output)
    if prolific:
        return Check(
            {**shown, "class": "prolific"}, productive, replay=selective_replay(context, True)
        )
    hint = {**shown, "class": "selective"} if selective else None
    return Check(None, productive, hint=hint)


def selective_replay(context: Context, prolific: bool) -> Replay:
    def replay(test: Test) -> Steps[Mapping[str, Any] | None]:
        check = yield from selectivity_steps(context, test)
        return check.evidence if prolific else check.hint

    return replay


# --- blocking ---------------------------------------------------------------------------


def blocking_generate(context: Context, generator: Generator, size: int) -> Test:
    """Items on the port under test (alternating), then a few on the other port (which only
    a DataFrame pair's check uses: it asks whether they release the output)."""
    port = context.rng.randrange(2)
    own = generator.base(size, port=port)
    return own + tuple(generator.item(1 - port) for _ in range(max(1, size // 2)))


def blocking_steps(context: Context, test: Test) -> Steps[Check]:
    op = context.operator
    port = test[0].port
    own = tuple(e for e in test if e.port == port)
    if op.fires:
        alone = yield from one_run(own)
        if alone.stalled_at is None:
            return Check(None, bool(alone.output))
        evidence = {
            "port": port,
            "input": show_test(own),
            "stalled_at": alone.stalled_at,
            "outputs_before": outputs_shown(alone),
        }
        return Check(evidence, True, replay=lambda t: evidence_of(blocking_steps(context, t)))
    alone, both = yield ((own, CANONICAL), (test, CANONICAL))
    if not runs_ok(alone, both) or alone.output or not both.output:
        return Check(None, bool(alone.output or both.output))
    evidence = {
        "port": port,
        "input": show_test(own),
        "output_alone": [],
        "other_port": show_test([e for e in test if e.port != port]),
        "output_with_other_port": outputs_shown(both),
    }
    return Check(evidence, True, replay=lambda t: _blocks_again(context, t, port))


def _blocks_again(context: Context, test: Test, port: int) -> Steps[Mapping[str, Any] | None]:
    if not test or test[0].port != port:
        return None
    return (yield from evidence_of(blocking_steps(context, test)))


GENERATE: dict[str, Callable[[Context, Generator, int], Test]] = {
    "nondeterminism": nondeterminism_generate,
    "selectivity": selectivity_generate,
    "blocking": blocking_generate,
    "statefulness": statefulness_generate,
    "non_commutativity": commutativity_generate,
    "partition_interference": interference_generate,
}
STEPS: dict[str, Callable[[Context, Test], Steps[Check]]] = {
    "nondeterminism": nondeterminism_steps,
    "selectivity": selectivity_steps,
    "blocking": blocking_steps,
    "statefulness": statefulness_steps,
    "non_commutativity": commutativity_steps,
    "partition_interference": interference_steps,
}


#: each property's check, run on its own (its runs one step at a time)
CHECK: dict[str, Callable[[Context, Test], Check]] = {
    name: on_its_own(steps) for name, steps in STEPS.items()
}
nondeterminism_check = CHECK["nondeterminism"]
selectivity_check = CHECK["selectivity"]
blocking_check = CHECK["blocking"]
statefulness_check = CHECK["statefulness"]
commutativity_check = CHECK["non_commutativity"]
interference_check = CHECK["partition_interference"]
