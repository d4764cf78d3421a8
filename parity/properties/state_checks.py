"""What Fig. 4 tests once an operator is (potentially) deterministic: statefulness,
non-commutativity and partition-interference (Table I; ``properties`` has the others and
the translation to each shape).

A DataFrame check asks for every run it may need in one step (the test and each item
alone; the test and every permutation; the test and each key's part), which the runner
answers in one Spark job with the other checks' of the round; a stream check, run in this
process, asks one run at a time and stops where the sequential check stops.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from parity.properties.checking import (
    Check,
    Context,
    evidence_of,
    one_run,
    outputs_shown,
    punctuate,
    runs_ok,
)
from parity.properties.elements import (
    Element,
    Run,
    Test,
    bag_difference,
    items_of,
    show_test,
    thaw,
)
from parity.properties.generation import Generator
from parity.properties.operators import CANONICAL
from parity.properties.steps import Steps

#: permutations tried per window: all of them up to 4 items, else this many at random
PERMUTATIONS = 12


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


def statefulness_steps(context: Context, test: Test) -> Steps[Check]:
    op = context.operator
    singles = _singles(test) if not op.fires else {}
    # a DataFrame's run of the test and of each distinct item alone, together
    run, *alone = yield tuple((t, CANONICAL) for t in (test, *singles.values()))
    if not runs_ok(run):
        return Check(None, False, tested=False)
    productive = bool(run.output)
    found = (
        _stateful_firings(test, run)
        if op.fires
        else _stateful_frame(test, run, dict(zip(singles, alone, strict=True)))
    )
    if found is None:
        return Check(None, productive)
    again = yield from one_run(test)
    if not runs_ok(again) or again.output != run.output:
        return Check(None, productive)  # not reproducible: non-determinism, not state
    evidence = {"input": show_test(test), **found}
    return Check(evidence, productive, replay=lambda t: evidence_of(statefulness_steps(context, t)))


def _singles(test: Test) -> dict[str, Test]:
    """Each distinct item of the test, as a test of its own."""
    return {repr(e): (e,) for e in items_of(test)}


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


def _stateful_frame(test: Test, run: Run, singles: Mapping[str, Run]) -> dict[str, Any] | None:
    union: Counter[Any] = Counter()
    for element in items_of(test):
        alone = singles[repr(element)]
        if not runs_ok(alone):
            return None
        union.update(alone.output)
    if union == run.bag():
        return None
    return {
        "output": outputs_shown(run),
        "union_of_each_item_alone": [thaw(o) for o in sorted(union.elements(), key=repr)],
        "difference": bag_difference(run.output, union.elements()),
    }


# --- non-commutativity ------------------------------------------------------------------


def commutativity_generate(context: Context, generator: Generator, size: int) -> Test:
    """A window of items on one port (the paper's onlyUsesPort: commutativity is a port's)."""
    port = context.rng.randrange(context.operator.ports)
    return punctuate(context, tuple(items_of(generator.base(max(2, size), port=port))))


def commutativity_steps(context: Context, test: Test) -> Steps[Check]:
    op = context.operator
    items = items_of(test)
    tail = tuple(e for e in test if e.is_punctuation)[-1:]
    orders = [
        tuple(items[i] for i in order) + tail for order in _permutations(context.rng, len(items))
    ]
    if op.fires:  # in this process: a permutation at a time, stopping at a difference
        first = yield from one_run(test)
        others: list[Run | None] = [None] * len(orders)
    else:  # a DataFrame: the test and every permutation, together
        first, *ran = yield tuple((t, CANONICAL) for t in (test, *orders))
        others = list(ran)
    if not runs_ok(first):
        return Check(None, False, tested=False)
    for permuted, known in zip(orders, others, strict=True):
        other = known if known is not None else (yield from one_run(permuted))
        if not runs_ok(other) or other.bag() == first.bag():
            continue
        again, other_again = yield ((test, CANONICAL), (permuted, CANONICAL))
        if again.bag() != first.bag() or other_again.bag() != other.bag():
            continue  # not reproducible: non-determinism, not order
        evidence = {
            "input": show_test(test),
            "permuted": show_test(permuted),
            "outputs": [outputs_shown(first), outputs_shown(other)],
            "difference": bag_difference(first.output, other.output),
        }
        return Check(evidence, True, replay=lambda t: evidence_of(commutativity_steps(context, t)))
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


def interference_steps(context: Context, test: Test) -> Steps[Check]:
    op, keys = context.operator, context.keys
    groups = sorted({key_of(e, keys) for e in items_of(test)})
    parts = [
        tuple(e for e in test if e.is_punctuation or key_of(e, keys) == group) for group in groups
    ]
    if op.fires or len(groups) < 2:  # in this process: a part at a time, stopping at a stall
        whole = yield from one_run(test)
        runs: list[Run | None] = [None] * len(parts)
    else:  # a DataFrame: the whole test and each key's part, together
        whole, *ran = yield tuple((t, CANONICAL) for t in (test, *parts))
        runs = list(ran)
    if not runs_ok(whole):
        return Check(None, False, tested=False)
    if len(groups) < 2:  # one key: nothing to interfere with
        return Check(None, bool(whole.output), tested=False)
    union: Counter[Any] = Counter()
    alone: dict[str, list[Any]] = {}
    for group, part, known in zip(groups, parts, runs, strict=True):
        run = known if known is not None else (yield from one_run(part))
        if not runs_ok(run):
            return Check(None, bool(whole.output), tested=False)
        union.update(run.output)
        alone[group] = outputs_shown(run)
    if union == whole.bag():
        return Check(None, bool(whole.output))
    again = yield from one_run(test)
    if again.bag() != whole.bag():
        return Check(None, bool(whole.output))
    evidence = {
        "key": list(keys),
        "input": show_test(test),
        "output": outputs_shown(whole),
        "output_of_each_key_alone": alone,
        "difference": bag_difference(whole.output, union.elements()),
    }
    return Check(evidence, True, replay=lambda t: evidence_of(interference_steps(context, t)))
