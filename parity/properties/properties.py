"""The six properties: how each one's tests are made and checked (Table I of the paper).

Each property has ``generate(context, generator, size) -> Test`` (the paper's
*generateTest*) and ``check(context, test) -> Check`` (*checkProperty*): evidence, or
None. Evidence is a result, not an error: the input that shows the property and the outputs
that differ. A check that finds a difference between two runs confirms it by running both
again, so that evidence for order, state or keys is never an accident of non-determinism.

Per shape (``docs/properties.md`` has the full translation):

non-determinism
    the same test, run twice: streams with other delays between items (the paper's
    inter-arrival times), DataFrames in other partition counts (``repartition(n)`` scatters
    the rows) and another ``spark.sql.shuffle.partitions``. Different outputs (per firing
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

import itertools
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from parity.properties.elements import (
    Element,
    Run,
    Test,
    bag_difference,
    items_of,
    punctuation,
    show_test,
    thaw,
)
from parity.properties.generation import Generator
from parity.properties.operators import CANONICAL, Operator, Physical

PROPERTIES = (
    "nondeterminism",
    "selectivity",
    "blocking",
    "statefulness",
    "non_commutativity",
    "partition_interference",
)
#: the longest inter-arrival delay a non-determinism test sleeps, and how many it sleeps
MAX_DELAY = 0.05
DELAY_POINTS = 3
#: permutations tried per window: all of them up to 4 items, else this many at random
PERMUTATIONS = 12


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
    nothing is undetermined, never absent."""

    evidence: Mapping[str, Any] | None
    productive: bool
    hint: Mapping[str, Any] | None = None
    replay: Callable[[Test], Mapping[str, Any] | None] | None = field(default=None, compare=False)
    tested: bool = True


def _runs_ok(*runs: Run) -> bool:
    """No firing stalled (an operator's error is not a run: ``OperatorError`` ends the
    command)."""
    return all(r.stalled_at is None for r in runs)


def _outputs(run: Run) -> list[Any]:
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


def nondeterminism_check(context: Context, test: Test, physical: Physical | None = None) -> Check:
    op = context.operator
    other = physical or other_physical(context, test)
    first = op.run(test, CANONICAL)
    productive = bool(first.output)
    if not _runs_ok(first):  # a stalled run has no output to compare
        return Check(None, productive, tested=False)
    second = op.run(test, other)
    if not _runs_ok(second):
        return Check(None, productive, tested=False)
    differ = first.firings != second.firings if op.fires else first.output != second.output
    if not differ:
        return Check(None, productive)
    evidence = {
        "input": show_test(test),
        "runs": [
            {"physical": CANONICAL.describe(), "output": _outputs(first)},
            {"physical": other.describe(), "output": _outputs(second)},
        ],
        "difference": bag_difference(first.output, second.output),
    }
    return Check(evidence, productive, replay=lambda t: _nd_again(context, t, other))


def _nd_again(context: Context, test: Test, physical: Physical) -> Mapping[str, Any] | None:
    delays = physical.delays[: len(test)]
    trials = (
        Physical(physical.partitions, physical.shuffle_partitions, delays),
        other_physical(context, test),
    )
    for trial in trials:
        evidence = nondeterminism_check(context, test, trial).evidence
        if evidence is not None:
            return evidence
    return None


# --- selectivity ------------------------------------------------------------------------


def selectivity_generate(context: Context, generator: Generator, size: int) -> Test:
    return punctuate(context, generator.base(size))


def selectivity_check(context: Context, test: Test) -> Check:
    op = context.operator
    run = op.run(test)
    if not _runs_ok(run):
        return Check(None, False, tested=False)
    items = items_of(test)
    if op.fires and run.firings is not None:
        counts = [len(o) for e, o in zip(test, run.firings, strict=False) if not e.is_punctuation]
        prolific, selective = max(counts, default=0) > 1, min(counts, default=1) == 0
    else:
        prolific, selective = len(run.output) > len(items), len(run.output) < len(items)
    shown = {"input": show_test(test), "output": _outputs(run)}
    if op.fires and run.firings is not None:
        shown["outputs_per_firing"] = [len(o) for o in run.firings]
    productive = bool(run.output)
    if prolific:
        return Check(
            {**shown, "class": "prolific"}, productive, replay=selective_replay(context, True)
        )
    hint = {**shown, "class": "selective"} if selective else None
    return Check(None, productive, hint=hint)


def selective_replay(
    context: Context, prolific: bool
) -> Callable[[Test], Mapping[str, Any] | None]:
    def replay(test: Test) -> Mapping[str, Any] | None:
        check = selectivity_check(context, test)
        return check.evidence if prolific else check.hint

    return replay


# --- blocking ---------------------------------------------------------------------------


def blocking_generate(context: Context, generator: Generator, size: int) -> Test:
    """Items on the port under test (alternating), then a few on the other port (which only
    a DataFrame pair's check uses: it asks whether they release the output)."""
    port = context.rng.randrange(2)
    own = generator.base(size, port=port)
    return own + tuple(generator.item(1 - port) for _ in range(max(1, size // 2)))


def blocking_check(context: Context, test: Test) -> Check:
    op = context.operator
    port = test[0].port
    own = tuple(e for e in test if e.port == port)
    alone = op.run(own)
    if op.fires:
        if alone.stalled_at is None:
            return Check(None, bool(alone.output))
        evidence = {
            "port": port,
            "input": show_test(own),
            "stalled_at": alone.stalled_at,
            "outputs_before": _outputs(alone),
        }
        return Check(evidence, True, replay=lambda t: blocking_check(context, t).evidence)
    both = op.run(test)
    if not _runs_ok(alone, both) or alone.output or not both.output:
        return Check(None, bool(alone.output or both.output))
    evidence = {
        "port": port,
        "input": show_test(own),
        "output_alone": [],
        "other_port": show_test([e for e in test if e.port != port]),
        "output_with_other_port": _outputs(both),
    }
    return Check(evidence, True, replay=lambda t: _blocks_again(context, t, port))


def _blocks_again(context: Context, test: Test, port: int) -> Mapping[str, Any] | None:
    if not test or test[0].port != port:
        return None
    return blocking_check(context, test).evidence


# --- statefulness -----------------------------------------------------------------------


def statefulness_generate(context: Context, generator: Generator, size: int) -> Test:
    """The same item repeated (Table I: "all d values the same, for simplicity"), or, every
    other test, a list of items twice over: every input then fires twice, and a firing that
    depends on what came before shows as two firings of one input with different outputs.

    A DataFrame operator has no firings: its state shows as a whole input whose output is
    not the union of each row's alone, and Spark keeps state per group, so a list twice over
    is, with a key, a list of one key's rows (``dropDuplicates``, a per-key sum, a session
    window all need two rows of a group to show it; two rows drawn at random rarely share
    one)."""
    base = generator.base(max(2, size // 2 + 1))
    if context.rng.random() < 0.5 and len({repr(e) for e in base}) > 1:
        if not context.operator.fires and context.keys and base[0].item is not None:
            group = {k: base[0].item.get(k) for k in context.keys}
            base = tuple(generator.item(e.port, fixed=group) for e in base)
        return punctuate(context, base + base, every=True)
    return punctuate(context, tuple(base[0] for _ in range(max(2, size))), every=True)


def statefulness_check(context: Context, test: Test) -> Check:
    op = context.operator
    run = op.run(test)
    if not _runs_ok(run):
        return Check(None, False, tested=False)
    productive = bool(run.output)
    found = _stateful_firings(test, run) if op.fires else _stateful_frame(context, test, run)
    if found is None:
        return Check(None, productive)
    if not _runs_ok(again := op.run(test)) or again.output != run.output:
        return Check(None, productive)  # not reproducible: non-determinism, not state
    evidence = {"input": show_test(test), **found}
    return Check(evidence, productive, replay=lambda t: statefulness_check(context, t).evidence)


def _stateful_firings(test: Test, run: Run) -> dict[str, Any] | None:
    assert run.firings is not None
    seen: dict[str, int] = {}
    for j, (element, outputs) in enumerate(zip(test, run.firings, strict=False)):
        key = repr(element)
        if key in seen and run.firings[seen[key]] != outputs:
            first = seen[key]
            return {
                "firings": [first, j],
                "same_input": element.to_dict(),
                "outputs": [[thaw(o) for o in run.firings[first]], [thaw(o) for o in outputs]],
            }
        seen.setdefault(key, j)
    return None


def _stateful_frame(context: Context, test: Test, run: Run) -> dict[str, Any] | None:
    singles: dict[str, Run] = {}
    union: Counter[Any] = Counter()
    for element in items_of(test):
        key = repr(element)
        if key not in singles:
            singles[key] = context.operator.run((element,))
        if not _runs_ok(singles[key]):
            return None
        union.update(singles[key].output)
    if union == run.bag():
        return None
    return {
        "output": _outputs(run),
        "union_of_each_item_alone": [thaw(o) for o in sorted(union.elements(), key=repr)],
        "difference": bag_difference(run.output, union.elements()),
    }


# --- non-commutativity ------------------------------------------------------------------


def commutativity_generate(context: Context, generator: Generator, size: int) -> Test:
    """A window of items on one port (the paper's onlyUsesPort: commutativity is a port's)."""
    port = context.rng.randrange(context.operator.ports)
    return punctuate(context, tuple(items_of(generator.base(max(2, size), port=port))))


def commutativity_check(context: Context, test: Test) -> Check:
    op = context.operator
    items = items_of(test)
    tail = tuple(e for e in test if e.is_punctuation)[-1:]
    first = op.run(test)
    if not _runs_ok(first):
        return Check(None, False, tested=False)
    for order in _permutations(context.rng, len(items)):
        permuted = tuple(items[i] for i in order) + tail
        other = op.run(permuted)
        if not _runs_ok(other) or other.bag() == first.bag():
            continue
        if op.run(test).bag() != first.bag() or op.run(permuted).bag() != other.bag():
            continue  # not reproducible: non-determinism, not order
        evidence = {
            "input": show_test(test),
            "permuted": show_test(permuted),
            "outputs": [_outputs(first), _outputs(other)],
            "difference": bag_difference(first.output, other.output),
        }
        return Check(evidence, True, replay=lambda t: commutativity_check(context, t).evidence)
    return Check(None, bool(first.output))


def _permutations(rng: random.Random, n: int) -> list[tuple[int, ...]]:
    identity = tuple(range(n))
    if n <= 4:
        return [p for p in itertools.permutations(identity) if p != identity]
    orders = [tuple(reversed(identity))]
    while len(orders) < PERMUTATIONS:
        order = list(identity)
        rng.shuffle(order)
        orders.append(tuple(order))
    return orders


# --- partition-interference -------------------------------------------------------------


def interference_generate(context: Context, generator: Generator, size: int) -> Test:
    """Items of one key value, interspersed with items of other key values (Table I)."""
    keys = context.keys
    base = generator.base(max(1, size // 2 + 1))
    anchor = next((e for e in base if e.item is not None), None)
    assert anchor is not None and anchor.item is not None
    value = {k: anchor.item.get(k) for k in keys}
    same = [generator.item(e.port, fixed=value) for e in base]
    mixed: list[Element] = []
    for element in same:
        mixed.append(element)
        if context.rng.random() < 0.7:
            mixed.append(generator.item(element.port, differ=value))
    return punctuate(context, tuple(mixed))


def key_of(element: Element, keys: Sequence[str]) -> str:
    assert element.item is not None
    return repr(tuple(element.item.get(k) for k in keys))


def interference_check(context: Context, test: Test) -> Check:
    op, keys = context.operator, context.keys
    whole = op.run(test)
    if not _runs_ok(whole):
        return Check(None, False, tested=False)
    groups = sorted({key_of(e, keys) for e in items_of(test)})
    if len(groups) < 2:  # one key: nothing to interfere with
        return Check(None, bool(whole.output), tested=False)
    union: Counter[Any] = Counter()
    alone: dict[str, list[Any]] = {}
    for group in groups:
        part = tuple(e for e in test if e.is_punctuation or key_of(e, keys) == group)
        run = op.run(part)
        if not _runs_ok(run):
            return Check(None, bool(whole.output), tested=False)
        union.update(run.output)
        alone[group] = _outputs(run)
    if union == whole.bag() or op.run(test).bag() != whole.bag():
        return Check(None, bool(whole.output))
    evidence = {
        "key": list(keys),
        "input": show_test(test),
        "output": _outputs(whole),
        "output_of_each_key_alone": alone,
        "difference": bag_difference(whole.output, union.elements()),
    }
    return Check(evidence, True, replay=lambda t: interference_check(context, t).evidence)


GENERATE: dict[str, Callable[[Context, Generator, int], Test]] = {
    "nondeterminism": nondeterminism_generate,
    "selectivity": selectivity_generate,
    "blocking": blocking_generate,
    "statefulness": statefulness_generate,
    "non_commutativity": commutativity_generate,
    "partition_interference": interference_generate,
}
CHECK: dict[str, Callable[[Context, Test], Check]] = {
    "nondeterminism": nondeterminism_check,
    "selectivity": selectivity_check,
    "blocking": blocking_check,
    "statefulness": statefulness_check,
    "non_commutativity": commutativity_check,
    "partition_interference": interference_check,
}
