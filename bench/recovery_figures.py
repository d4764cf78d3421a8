"""Recovery figures: the sequence-window detector and its buggy variants, each over seeded
runs under real SIGKILLs of the driver, checked by the Wallaroo validator.

    .venv/bin/python bench/recovery_figures.py [--runs 10] [--crashes 5] [--keys 6]
        [--count 40] [--files 20] [--variants correct,driver_state,...] [--out DIR]

(``make recovery-figures`` runs the defaults.) For each variant and seed 1..runs, one
``parity recovery`` run (``parity.recovery.runner.recover``) on the same input; then one row
per variant: crashes injected, restarts that recovered, the updates lost, duplicated,
reordered and corrupted (summed over the runs), how many runs passed, and how many failed
with the variant's own kind. The correct detector must pass every run; each buggy one must
fail with its kind. Every run is stored in ``OUT/parity.db`` (``parity history --db ...``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from jobs.examples.sequence_input import write_input
from matcher.spec import load_spec
from matcher.verdict import KINDS
from parity.recovery.crashes import RecoveryError
from parity.recovery.runner import (
    find_spark_submit,
    plan_recovery,
    recover,
    spark_env,
)

ROOT = Path(__file__).resolve().parent.parent
#: each variant and the kind a crash must make it show (None: it must pass)
VARIANTS = {
    "correct": None,
    "at_least_once_sink": "duplication",
    "driver_state": "loss",
    "state_timeout": "loss",
}
#: the db sink inside the output folder, where the crash loop watches for its writes
SINK = {"at_least_once_sink": ["--sink", "db", "--sink-url", "sqlite:///{output}/_sink.db"]}


@dataclass
class Row:
    variant: str
    runs: int = 0
    injected: int = 0
    recovered: int = 0
    passed: int = 0
    own_kind: int = 0
    errors: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    seconds: float = 0.0


def spec_text(variant: str, inputs: Path, crashes: int, count: int) -> str:
    args = [
        *("--input", '"{input}"', "--output", '"{output}"', "--checkpoint", '"{checkpoint}"'),
        *("--files-per-batch", '"1"', "--variant", variant),
        *(f'"{a}"' for a in SINK.get(variant, [])),
    ]
    return f"""\
name: figures_{variant}
application:
  application: jobs/examples/sequence_window.py
  args: [{", ".join(args)}]
  conf: {{spark.ui.enabled: "false", spark.sql.shuffle.partitions: "2"}}
  version: {variant}
recovery: {{crashes: {crashes}, check: windows, expected: {count}, timeout: 1800}}
input: {{path: {inputs}, format: jsonl}}
output: {{format: jsonl}}
dependence: {{key: [key]}}
"""


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # so that the crash loop kills the job it started on the way out


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--crashes", type=int, default=5)
    parser.add_argument("--keys", type=int, default=6)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("/tmp/parity-recovery-figures"))
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    args.out.mkdir(parents=True, exist_ok=True)
    inputs = args.out / "input"
    if not inputs.exists():
        write_input(inputs, keys=args.keys, count=args.count, files=args.files, seed=1)
    db = f"sqlite:///{args.out / 'parity.db'}"
    rows = []
    for variant in variants:
        spec_path = args.out / f"{variant}.yaml"
        spec_path.write_text(spec_text(variant, inputs, args.crashes, args.count))
        spec = load_spec(spec_path)
        row = Row(variant)
        for seed in range(1, args.runs + 1):
            plan = plan_recovery(
                spec, root=ROOT, home=args.out / "home", seed=seed, run_id=f"{variant}-{seed}"
            )
            started = time.monotonic()
            row.runs += 1
            try:
                record = recover(plan, env=spark_env(), spark_submit=find_spark_submit(), db=db)
            except RecoveryError as exc:
                row.errors += 1
                print(f"{variant} seed {seed}: error: {exc}", flush=True)
                continue
            finally:
                row.seconds += time.monotonic() - started
            stats = record.stats or {}
            log = stats.get("crashes", {})
            row.injected += int(log.get("injected", 0))
            row.recovered += int(log.get("recovered", 0))
            for kind in KINDS:
                row.counts[kind] += record.counts[kind]
            row.passed += record.verdict == "equivalent"
            wanted = VARIANTS[variant]
            row.own_kind += wanted is not None and record.counts[wanted] > 0
            counts = ", ".join(f"{k} {n}" for k, n in record.counts.items())
            print(
                f"{variant} seed {seed}: {record.verdict} ({counts}); "
                f"{log.get('injected')} crashes, {log.get('recovered')} recovered, "
                f"{time.monotonic() - started:.0f}s",
                flush=True,
            )
        rows.append(row)
    print()
    print(
        "| application | runs | crashes injected | restarts recovered | lost | duplicated "
        "| reordered | corrupted | passed | failed with its kind | errors | time |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        wanted = VARIANTS[row.variant]
        own = "—" if wanted is None else f"{row.own_kind} ({wanted})"
        c = row.counts
        print(
            f"| {row.variant} | {row.runs} | {row.injected} | {row.recovered} | {c['loss']} "
            f"| {c['duplication']} | {c['reordering']} | {c['corruption']} | {row.passed} "
            f"| {own} | {row.errors} | {row.seconds / 60:.1f} min |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
