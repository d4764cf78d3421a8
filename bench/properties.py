"""The paper's experiment (§V) on the bundled operators (``jobs/examples/operators``):
every technique, ``--runs`` times on each operator, then recall per property and technique
(Table II's shape) and mean seconds to first evidence (Table III's), beside the paper's.

    .venv/bin/python bench/properties.py [--runs 10] [--budget 6] [--no-frames | --only-frames]
        [--techniques ...]

With ``--timing``, the time ``parity properties`` takes on each bundled DataFrame operator
(and DataFrame pair) instead, on one warm session: its default run (hybrid, ``--budget
30``, ``--budget-seconds 60``: what CI sees, and whether the time budget cut it short), then
the same tests without a time budget at ``--timing-budget`` (default 3) tests per technique,
run as they are now (a round's runs in one Spark job per step) and as before (a test at a
time, a Spark job per run), with the ratio::

    .venv/bin/python bench/properties.py --timing [--timing-budget 3] [--no-previous]
        [--operators where_positive sum_per_key ...]

Stream and two-port object operators run in this process; the DataFrame operators (and
DataFrame joins) run too unless ``--no-frames``, on one local SparkSession (``local[2]``, no
UI, two shuffle partitions), with the hybrid technique only unless ``--techniques`` says
otherwise (a Spark job per run: every technique on them is hours on two cores). Reuse is not
applicable to non-determinism (tested first, Fig. 4: nothing to reuse): "-", as in Table II.
Recall counts an operator for a property only where evidence exists (``KNOWN``); precision
is checked too: evidence where none exists is reported as a false positive.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.examples.operators import KNOWN, Known
from parity.properties.generation import ALL, parse_technique
from parity.properties.loading import load_subject
from parity.properties.properties import PROPERTIES, Context
from parity.properties.runner import Plan, check_operator

ITEMS = "jobs/examples/operators/items.jsonl"
RIGHT = "jobs/examples/operators/right.jsonl"
#: Table II (recall, %) and Table III (seconds) of the paper, hybrid column
PAPER_RECALL = {
    "nondeterminism": 74.7,
    "selectivity": 100.0,
    "blocking": 83.3,
    "statefulness": 86.4,
    "non_commutativity": 90.0,
    "partition_interference": 94.6,
}
PAPER_SECONDS = {
    "nondeterminism": 78.8,
    "selectivity": 124.3,
    "blocking": 31.9,
    "statefulness": 25.8,
    "non_commutativity": 23.5,
    "partition_interference": 18.3,
}
NAMES = [t.name for t in ALL] + ["hybrid"]


def truth(known: Known, name: str) -> bool | None:
    if name == "selectivity":
        return known.selectivity != "one_to_one"
    value: bool | None = getattr(known, name)
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument(
        "--frames",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the DataFrame operators too (default; --no-frames: stream and object ones only)",
    )
    parser.add_argument(
        "--only-frames",
        action="store_true",
        help="the DataFrame operators alone (the Spark jobs: the slow part)",
    )
    parser.add_argument("--techniques", nargs="*", default=NAMES)
    parser.add_argument("--timing", action="store_true", help="time DataFrame operators")
    parser.add_argument("--timing-budget", type=int, default=3)
    parser.add_argument(
        "--previous",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the previous way (a Spark job per run; slow)",
    )
    parser.add_argument("--operators", nargs="*", help="--timing: these operators only")
    args = parser.parse_args(argv)
    if args.timing:
        return timing(args.timing_budget, args.previous, args.operators)
    hits: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    false_positives: list[str] = []
    for known in KNOWN:
        frame = known.shape == "dataframe" or known.ref.endswith(("join", "union"))
        if (frame and not args.frames) or (args.only_frames and not frame):
            continue
        names = args.techniques if not frame or args.techniques != NAMES else ["hybrid"]
        samples = [ITEMS, RIGHT] if known.shape == "pair" else [ITEMS]
        subject = load_subject(known.ref, samples, ("key",), known.shape, 0.3)
        for name in names:
            techniques = parse_technique(name)
            for run in range(args.runs):
                plan = Plan(techniques, args.budget, run, subject.domains)
                context = Context(subject.operator, ("key",), random.Random(run), 0.03)
                report = check_operator(context, plan, name)
                for prop in PROPERTIES:
                    outcome, expected = report.properties[prop], truth(known, prop)
                    found = outcome.found
                    if expected is None or "undetermined" in outcome.extra:
                        continue
                    if expected:
                        hits[(prop, name)][1] += 1
                        if found:
                            hits[(prop, name)][0] += 1
                            times[(prop, name)].append(outcome.seconds)
                    elif found:
                        false_positives.append(f"{known.ref} {prop} ({name}, run {run})")
        print(f"done {known.ref}", file=sys.stderr, flush=True)
    _table("Recall, % (paper's hybrid in the last column)", hits, times, args.techniques, True)
    _table("Mean seconds to first evidence", hits, times, args.techniques, False)
    print(f"\nfalse positives: {len(false_positives)}")
    for line in false_positives:
        print(f"  {line}")
    return 0


def timing(budget: int, previous: bool, only: list[str] | None) -> int:
    """Seconds per DataFrame operator: the default run, then now against before."""
    frames = [k for k in KNOWN if k.shape == "dataframe" or k.ref.endswith(("join", "union"))]
    if only:
        frames = [k for k in frames if k.ref.split(":")[1] in only]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start\n")
    print(f"| operator | default run, s | time budget | budget {budget}: now, s", end="")
    print(" | before, s | ratio |" if previous else " |")
    print("|---|---|---|---" + ("|---|---|" if previous else "|"))
    for known in frames:
        samples = [ITEMS, RIGHT] if known.shape == "pair" else [ITEMS]
        subject = load_subject(known.ref, samples, ("key",), known.shape, 0.3)
        context = Context(subject.operator, ("key",), random.Random(0))
        default = Plan(ALL, 30, 0, subject.domains, seconds=60.0)
        report = check_operator(context, default, "hybrid")
        ran_out = report.time_budget()
        cut = (
            f"ran out: partial {', '.join(ran_out['partial']) or '-'}, "
            f"untested {', '.join(ran_out['untested']) or '-'}"
            if ran_out["ran_out"]
            else "enough"
        )
        now = _seconds(context, Plan(ALL, budget, 0, subject.domains))
        cells = [known.ref.split(":")[1], f"{report.seconds:.1f}", cut, f"{now:.1f}"]
        if previous:
            before = _seconds(context, Plan(ALL, budget, 0, subject.domains, together=False))
            cells += [f"{before:.1f}", f"{before / now:.1f}x"]
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    return 0


def _seconds(context: Context, plan: Plan) -> float:
    started = time.monotonic()
    check_operator(context, plan, "hybrid")
    return time.monotonic() - started


def _table(title: str, hits: dict, times: dict, names: list[str], recall: bool) -> None:  # type: ignore[type-arg]
    print(f"\n{title}\n")
    short = [n.replace("mutation", "mut").replace("reuse", "reu") for n in names]
    print("| property | " + " | ".join(short) + " | paper hybrid |")
    print("|---" * (len(names) + 2) + "|")
    for prop in PROPERTIES:
        cells = []
        for name in names:
            found, total = hits[(prop, name)]
            if prop == "nondeterminism" and "reuse" in name:
                cells.append("-")  # tested first (Fig. 4): nothing to reuse, as in the paper
            elif recall:
                cells.append(f"{100 * found / total:.1f}" if total else "-")
            else:
                spent = times[(prop, name)]
                cells.append(f"{sum(spent) / len(spent):.2f}" if spent else "-")
        paper = PAPER_RECALL[prop] if recall else PAPER_SECONDS[prop]
        print(f"| {prop} | " + " | ".join(cells) + f" | {paper} |")


if __name__ == "__main__":
    sys.exit(main())
