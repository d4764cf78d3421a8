"""Benchmark of explaining reorderings: one key whose events came out of order.

    python bench/explain_reorderings.py [--events 3000,50000]
        [--cases reversed,shuffled,moved,function] [--old-max-events 50000]
        [--function-max-events 5000] [--moved 10] [--seed 7] [--repeat 3]

Each case compares one key's reference events (``{"key": 0, "seq": i, "value": ...}``) with
a candidate holding the same events in another order, through ``matcher.compare`` under
``by_key("key")``: the online matcher finds the key diverged, aligns it again and again while
trying to resynchronise, and the classifier explains it (``matcher.classify``), both with
``matcher.diff.align``. Cases:

* ``reversed``: the key's events in reverse order (issue 11: 3,000 took 15 s and 1 GB);
* ``shuffled``: in a random order;
* ``moved``: in order but for ``--moved`` events, each put back at a random place;
* ``function``: reversed, under a user's equality function, which has no canonical form,
  so the new ``align`` falls back on Myers' linear-space algorithm. Only up to
  ``--function-max-events``: past a few thousand events the classifier's pairing of moved
  events (``Classifier._moved``, one bucket when there is no canonical form) costs
  O(events²) calls of the function, minutes at 50,000 whichever ``align`` runs.

Every run is a fresh subprocess, for each algorithm: ``old`` is ``matcher/diff.py`` as it
was before the rewrite (Myers' algorithm keeping every V array, copied verbatim below),
patched into the matcher; ``new`` is today's ``matcher.diff.align``. Prints the seconds of
``compare``, the peak resident memory it added over the generated events (``ru_maxrss``),
the divergences it reports, and old/new ratios. The old one is skipped above
``--old-max-events`` (it takes about a minute at 50,000). Each figure is the fastest of
``--repeat`` runs, but runs longer than 10 s are not repeated.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from matcher import Equality, compare
from matcher.dependence import by_key
from matcher.pools import Entry

Event = dict[str, Any]
CASES = ("reversed", "shuffled", "moved", "function")
QUICK = 10.0  # seconds: a run this long is not repeated


# -- baseline: matcher/diff.py before the rewrite (commit 547ad79), verbatim ----------------

#: beyond this many differences, align position by position instead
MAX_EDIT_DISTANCE = 5_000

#: ``(i, j)`` a match, ``(i, None)`` a deletion from the first, ``(None, j)`` an insertion
Op = tuple[int | None, int | None]


def align(
    a: Sequence[Entry], b: Sequence[Entry], equal: Callable[[Entry, Entry], bool]
) -> list[Op]:
    """A shortest edit script from ``a`` to ``b``: ``(i, j)`` match, ``(i, None)`` delete,
    ``(None, j)`` insert. Myers' O((N+M)·D) algorithm after trimming the common ends."""
    n, m = len(a), len(b)
    start = 0
    while start < n and start < m and equal(a[start], b[start]):
        start += 1
    end_a, end_b = n, m
    while end_a > start and end_b > start and equal(a[end_a - 1], b[end_b - 1]):
        end_a, end_b = end_a - 1, end_b - 1
    middle = _myers(a[start:end_a], b[start:end_b], equal)
    ops: list[Op] = [(i, i) for i in range(start)]
    ops.extend(
        (None if i is None else i + start, None if j is None else j + start) for i, j in middle
    )
    ops.extend((end_a + t, end_b + t) for t in range(n - end_a))
    return ops


def _myers(
    a: Sequence[Entry], b: Sequence[Entry], equal: Callable[[Entry, Entry], bool]
) -> list[Op]:
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return [(i, None) for i in range(n)] + [(None, j) for j in range(m)]
    v: dict[int, int] = {1: 0}
    trace: list[dict[int, int]] = []
    for d in range(min(n + m, MAX_EDIT_DISTANCE) + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            down = k == -d or (k != d and v[k - 1] < v[k + 1])
            x = v[k + 1] if down else v[k - 1] + 1
            y = x - k
            while x < n and y < m and equal(a[x], b[y]):
                x, y = x + 1, y + 1
            v[k] = x
            if x >= n and y >= m:
                return _backtrack(trace, n, m)
    # Too different to align exactly: compare position by position.
    ops: list[Op] = []
    for i in range(max(n, m)):
        if i < n and i < m and equal(a[i], b[i]):
            ops.append((i, i))
        else:
            ops.extend(
                op
                for op in ((i if i < n else None, None), (None, i if i < m else None))
                if op != (None, None)
            )
    return ops


def _backtrack(trace: list[dict[int, int]], n: int, m: int) -> list[Op]:
    x, y = n, m
    ops: list[Op] = []
    for d in range(len(trace) - 1, 0, -1):
        v = trace[d]
        k = x - y
        prev_k = k + 1 if k == -d or (k != d and v[k - 1] < v[k + 1]) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            ops.append((x - 1, y - 1))
            x, y = x - 1, y - 1
        ops.append((None, y - 1) if x == prev_x else (x - 1, None))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        ops.append((x - 1, y - 1))
        x, y = x - 1, y - 1
    ops.reverse()
    return ops


# -- the cases -----------------------------------------------------------------------------


def make_case(case: str, n: int, moved: int, seed: int) -> tuple[list[Event], list[Event]]:
    rng = random.Random(seed)
    reference = [{"key": 0, "seq": i, "value": rng.random()} for i in range(n)]
    if case in ("reversed", "function"):
        return reference, reference[::-1]
    candidate = list(reference)
    if case == "shuffled":
        rng.shuffle(candidate)
    else:
        for _ in range(moved):
            candidate.insert(rng.randrange(n), candidate.pop(rng.randrange(n)))
    return reference, candidate


def same_event(x: Event, y: Event) -> bool:
    return x == y


def run_child(algorithm: str, case: str, n: int, moved: int, seed: int) -> dict[str, Any]:
    """One timed ``compare`` in this process (a fresh one, so ``ru_maxrss`` is its own)."""
    if algorithm == "old":
        import matcher.classify
        import matcher.online

        matcher.classify.align = align  # type: ignore[assignment]
        matcher.online.align = align  # type: ignore[assignment]
    reference, candidate = make_case(case, n, moved, seed)
    equality = Equality(function=same_event, function_name="==") if case == "function" else None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    verdict = compare(reference, candidate, by_key("key"), equality)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"seconds": seconds, "mb": (peak - before) / 1024, "counts": dict(verdict.counts)}


def measure(algorithm: str, case: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    """The fastest of ``--repeat`` fresh runs (one if it takes over ``QUICK`` seconds), with
    the most memory any of them added."""
    child = [sys.executable, __file__, "--child", algorithm, case, str(n)]
    child += ["--moved", str(args.moved), "--seed", str(args.seed)]
    runs: list[dict[str, Any]] = []
    while len(runs) < args.repeat and (not runs or runs[0]["seconds"] < QUICK):
        out = subprocess.run(child, check=True, stdout=subprocess.PIPE, text=True).stdout
        runs.append(json.loads(out))
    best = min(runs, key=lambda run: float(run["seconds"]))
    return {**best, "mb": max(float(run["mb"]) for run in runs)}


def describe(counts: dict[str, int]) -> str:
    return " ".join(f"{kind[:4]}={number}" for kind, number in counts.items() if number) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="3000,50000", help="events in the key, per side")
    parser.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    parser.add_argument("--old-max-events", type=int, default=50_000)
    parser.add_argument("--function-max-events", type=int, default=5_000)
    parser.add_argument("--moved", type=int, default=10, help="events moved, case 'moved'")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure, fastest kept")
    parser.add_argument("--child", nargs=3, metavar=("ALGORITHM", "CASE", "EVENTS"))
    args = parser.parse_args(argv)
    if args.child:
        algorithm, case, n = args.child
        print(json.dumps(run_child(algorithm, case, int(n), args.moved, args.seed)))
        return 0

    sizes = [int(s) for s in args.events.split(",")]
    cases = args.cases.split(",")
    print(
        "one key, by_key('key'), matcher.compare; old = Myers keeping every V array "
        "(before the rewrite), new = matcher.diff.align;\nMB = peak RSS added by compare; "
        "x time = old s / new s; x mem = old MB / max(new MB, 1)"
    )
    header = f"{'case':<9} {'events':>7} {'old s':>8} {'old MB':>7} {'new s':>7} {'new MB':>7}"
    header += f" {'x time':>7} {'x mem':>6}  divergences old | new"
    print(header)
    for case in cases:
        for n in sizes:
            if case == "function" and n > args.function_max_events:
                print(f"{case:<9} {n:>7,} skipped above --function-max-events")
                continue
            new = measure("new", case, n, args)
            if n > args.old_max_events:
                print(
                    f"{case:<9} {n:>7,} {'skipped':>8} {'':>7} {new['seconds']:>7.2f} "
                    f"{new['mb']:>7.0f} {'':>7} {'':>6}  (old skipped above "
                    f"--old-max-events={args.old_max_events:,}) | {describe(new['counts'])}"
                )
                continue
            old = measure("old", case, n, args)
            ratio = old["seconds"] / new["seconds"]
            memory = f"{old['mb'] / max(new['mb'], 1.0):>6.1f}" if old["mb"] >= 1 else f"{'-':>6}"
            print(
                f"{case:<9} {n:>7,} {old['seconds']:>8.2f} {old['mb']:>7.0f} "
                f"{new['seconds']:>7.2f} {new['mb']:>7.0f} {ratio:>7.1f} {memory}  "
                f"{describe(old['counts'])} | {describe(new['counts'])}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
