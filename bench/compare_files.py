"""Benchmark of ``parity compare --engine core`` on two local JSON lines files against the
five-line polars script a user would otherwise write (issue 15, item 5: within 2x of it).

    .venv/bin/python bench/compare_files.py [--rows 1000000] [--keys 20000] [--data DIR]
        [--repeat 3] [--reader columnar|events|lines]

Writes two JSON lines files of ``--rows`` rows each, four columns (``k`` the key, ``seq``
the row's place in its file, a double ``v`` and a string ``s``): the candidate is the
reference re-interleaved within a bounded window, each key's events in their order, so the
two are equivalent under ``dependence: {key: [k]}`` with ``seq`` ignored. Generated files
are reused when present in ``--data`` (default: a new temporary directory).

Then, as whole processes run in turn (Python's start-up and imports included, as the user
pays them), one untimed warm-up each and ``--repeat`` timed runs, it times:

* ``parity compare REF CAND --spec S --engine core``. ``--reader`` sets ``PARITY_READER``
  for the figures before: ``events`` reads columnar to events for the online matcher,
  without the proof on texts (``matcher.files.columnar_equivalence``), and ``lines`` forces
  the per-line reader, the path before the columnar one;
* the polars script: read both files, sort by key and sequence, compare without ``seq``.

and prints the median wall time, CPU time and peak RSS of each (from ``os.wait4``'s
``rusage`` of the child: per process, not a maximum over all children) and the ratios. The
polars baseline is skipped, saying so, when polars is not installed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
WINDOW = 64  # how far the candidate may move an event: a bounded re-interleaving

SPEC = """\
name: bench_compare_files
dependence:
  key: [k]
equality:
  ignore: [seq]             # each file numbers its own rows
"""

POLARS_SCRIPT = """\
import sys, polars as pl
ref = pl.read_ndjson(sys.argv[1]).sort(["k", "seq"]).drop("seq")
cand = pl.read_ndjson(sys.argv[2]).sort(["k", "seq"]).drop("seq")
same = ref.equals(cand)
print("equivalent" if same else "divergent"); sys.exit(0 if same else 1)
"""


@dataclass(frozen=True, slots=True)
class Run:
    """One timed process: its wall time and CPU time (user and system) in seconds, and
    its peak RSS in MiB. The CPU time is the steadier figure on a shared machine."""

    wall: float
    cpu: float
    peak_mib: float


def generate(data: Path, rows: int, keys: int) -> tuple[Path, Path, Path]:
    """The reference, the candidate and the spec in ``data`` (reused when present)."""
    data.mkdir(parents=True, exist_ok=True)
    reference, candidate, spec = (
        data / "reference.jsonl",
        data / "candidate.jsonl",
        data / "spec.yaml",
    )
    spec.write_text(SPEC)
    if reference.exists() and candidate.exists():
        return reference, candidate, spec
    rng = random.Random(15)
    events = [
        (rng.randrange(keys), round(rng.uniform(-1000, 1000), 3), f"e{rng.randrange(10**6)}")
        for _ in range(rows)
    ]
    # Each slot moves by less than WINDOW; the key's events then refill its slots in their
    # order, so every key keeps its order while keys interleave differently.
    slots = sorted(range(rows), key=lambda i: i + rng.random() * WINDOW)
    by_key: dict[int, list[int]] = {}
    for i, (k, _, _) in enumerate(events):
        by_key.setdefault(k, []).append(i)
    cursor = dict.fromkeys(by_key, 0)
    order = []
    for slot in slots:
        k = events[slot][0]
        order.append(by_key[k][cursor[k]])
        cursor[k] += 1
    _write(reference, (events[i] for i in range(rows)))
    _write(candidate, (events[i] for i in order))
    return reference, candidate, spec


def _write(path: Path, events: Iterable[tuple[int, float, str]]) -> None:
    partial = path.with_suffix(".partial")
    with partial.open("w") as out:
        for seq, (k, v, s) in enumerate(events):
            out.write(f'{{"k":{k},"seq":{seq},"v":{v!r},"s":"{s}"}}\n')
    partial.rename(path)


def timed(argv: list[str], env: dict[str, str]) -> tuple[Run, int]:
    """Run ``argv`` to its end: its wall time and peak RSS, and its exit code."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, cpu, usage.ru_maxrss / 1024), process.returncode  # ru_maxrss: KiB


def measure(name: str, argv: list[str], env: dict[str, str], repeat: int) -> Run:
    _, code = timed(argv, env)  # warm-up: the page cache, the interpreter's .pyc files
    runs = []
    for _ in range(repeat):
        run, code = timed(argv, env)
        runs.append(run)
    median = Run(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        statistics.median(r.peak_mib for r in runs),
    )
    walls = ", ".join(f"{r.wall:.2f}" for r in runs)
    print(
        f"{name:<20} {median.wall:6.2f} s wall (runs {walls})  {median.cpu:6.2f} s CPU  "
        f"{median.peak_mib:5.0f} MiB peak  exit {code}",
        flush=True,
    )
    return median


def polars_installed() -> bool:
    probe = subprocess.run([PYTHON, "-c", "import polars"], capture_output=True, check=False)
    return probe.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per file")
    parser.add_argument("--keys", type=int, default=20_000, help="distinct keys")
    parser.add_argument("--data", help="where the files are (default: a new temporary dir)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument(
        "--reader",
        choices=("columnar", "events", "lines"),
        default="columnar",
        help="the core's JSON path (events: no proof on texts; lines: the per-line reader)",
    )
    args = parser.parse_args(argv)
    data = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="parity-bench-"))
    reference, candidate, spec = generate(data, args.rows, args.keys)
    print(f"{args.rows} rows per file, {args.keys} keys, in {data}", flush=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PARITY_READER", None)
    if args.reader != "columnar":
        env["PARITY_READER"] = args.reader
    parity_argv = [PYTHON, "-m", "parity", "compare", str(reference), str(candidate)]
    parity_argv += ["--spec", str(spec), "--engine", "core"]
    ours = measure(f"parity ({args.reader})", parity_argv, env, args.repeat)
    if not polars_installed():
        print("polars is not installed in this interpreter: its baseline is skipped")
        return 0
    script = data / "compare_polars.py"
    script.write_text(POLARS_SCRIPT)
    theirs = measure("polars script", [PYTHON, str(script), str(reference), str(candidate)],
                     env, args.repeat)  # fmt: skip
    print(
        f"ratio: {ours.wall / theirs.wall:.2f}x the wall time, {ours.cpu / theirs.cpu:.2f}x "
        f"the CPU time, {ours.peak_mib / theirs.peak_mib:.2f}x the peak RSS of the polars script"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
