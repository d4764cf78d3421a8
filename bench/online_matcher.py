"""Benchmark of the online matcher against a floor that only reads events into per-key lists.

    python bench/online_matcher.py [--events 1000000] [--keys 10000] [--drift 1000]

For each dependence form the candidate is an equivalent reordering of the reference: for
``by_key`` and the predicate equivalent to it, events move by at most ``drift`` positions
while each key keeps its order; for ``unordered``, events move by at most ``drift`` freely;
for ``ordered``, the candidate is the same sequence, fed ``drift`` events behind. Both sides
are generated before timing; the matcher and the floor read the same lists in one run.

Prints events/second (both sides counted), peak ``unmatched_count``, and the ratio of the
matcher's time to the floor's. The general predicate form costs O(unmatched) per event, so
it runs on ``--predicate-events`` events per side.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from matcher import StreamMatcher
from matcher.dependence import Dependence, by_key, ordered, predicate, unordered

Event = dict[str, Any]


def make_reference(n: int, keys: int, seed: int) -> list[Event]:
    rng = random.Random(seed)
    seq: dict[int, int] = defaultdict(int)
    out = []
    for _ in range(n):
        key = rng.randrange(keys)
        seq[key] += 1
        out.append({"key": key, "seq": seq[key], "value": rng.random(), "tag": f"t{key % 7}"})
    return out


def jitter(events: list[Event], drift: int, seed: int, keep_key_order: bool) -> list[Event]:
    """Move each event by less than ``drift`` positions; optionally restore per-key order."""
    rng = random.Random(seed)
    order = sorted(range(len(events)), key=lambda i: i + rng.random() * drift)
    moved = [events[i] for i in order]
    if not keep_key_order:
        return moved
    queues: dict[Any, Iterator[Event]] = {}
    per_key: dict[Any, list[Event]] = defaultdict(list)
    for e in events:
        per_key[e["key"]].append(e)
    queues = {k: iter(v) for k, v in per_key.items()}
    return [next(queues[e["key"]]) for e in moved]


def run_matcher(
    dependence: Dependence, reference: list[Event], candidate: list[Event], lag: int
) -> tuple[float, int, bool]:
    gc.collect()
    start = time.perf_counter()
    matcher = StreamMatcher(dependence)
    for event in reference[:lag]:  # the candidate trails by ``lag`` events throughout
        matcher.push("reference", event)
    matcher.feed(reference[lag:], candidate)
    verdict = matcher.finish()
    return time.perf_counter() - start, verdict.peak_unmatched, verdict.equivalent


def run_floor(reference: list[Event], candidate: list[Event]) -> float:
    gc.collect()
    start = time.perf_counter()
    lists: dict[Any, list[Event]] = defaultdict(list)
    for event in reference:
        lists[event["key"]].append(event)
    for event in candidate:
        lists[event["key"]].append(event)
    return time.perf_counter() - start


def same_key(x: Event, y: Event) -> bool:
    return bool(x["key"] == y["key"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events per side")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--drift", type=int, default=1_000)
    parser.add_argument("--predicate-events", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    reference = make_reference(args.events, args.keys, args.seed)
    keyed = jitter(reference, args.drift, args.seed + 1, keep_key_order=True)
    free = jitter(reference, args.drift, args.seed + 2, keep_key_order=False)
    small = reference[: args.predicate_events]
    small_keyed = jitter(small, args.drift, args.seed + 3, keep_key_order=True)

    cases: list[tuple[str, Callable[[], Dependence], list[Event], list[Event], int]] = [
        ("by_key", lambda: by_key("key"), reference, keyed, 0),
        ("ordered", ordered, reference, reference, args.drift),
        ("unordered", unordered, reference, free, 0),
        ("predicate (= by_key)", lambda: predicate(same_key, ["key"]), small, small_keyed, 0),
    ]
    print(
        f"{args.events:,} events per side, {args.keys:,} keys, drift ≤ {args.drift:,}; "
        "floor = read both sides into per-key lists"
    )
    header = f"{'dependence':<22} {'events':>10} {'seconds':>8} {'events/s':>12} "
    header += f"{'peak unmatched':>15} {'floor s':>8} {'x floor':>8}  verdict"
    print(header)
    for name, make, ref, cand, lag in cases:
        floor = run_floor(ref, cand)
        seconds, peak, equivalent = run_matcher(make(), ref, cand, lag)
        total = len(ref) + len(cand)
        verdict = "equivalent" if equivalent else "DIVERGENT"
        print(
            f"{name:<22} {total:>10,} {seconds:>8.2f} {total / seconds:>12,.0f} "
            f"{peak:>15,} {floor:>8.2f} {seconds / floor:>8.1f}  {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
