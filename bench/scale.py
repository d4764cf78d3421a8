"""How the Spark matcher's time grows with the outputs: ``bench/spark_matcher.py``'s Parity
contender at several sizes, with Spark's default memory (issue 15, item 7).

    .venv/bin/python bench/scale.py [--rows 1000000 5000000 20000000] [--repeat 1]

Each size runs in a process of its own (``bench/spark_matcher.py --rows N --keys N/10
--memory default --skip a b c c2``): ten events per key at every size, so that only the
volume grows; the driver keeps Spark's default ``spark.driver.memory`` (1g), so the largest
size must spill rather than run out of memory. Prints, per size, the equivalent and the
faulty candidate's times (the median of ``--repeat`` runs after one untimed run) and the
counts, then the least-squares slope in seconds per million rows per side and each size's
time per million rows: a linear growth keeps the latter flat.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: a contender's line: "  Parity (read + match + store)   12.3 s  [12.3]  divergent (...)"
PARITY_LINE = re.compile(r"^\s+Parity \(read \+ match \+ store\)\s+([0-9.]+) s\s+\[[^]]*\]\s+(.*)$")


def measure(rows: int, repeat: int, data: Path | None) -> tuple[float, float, list[str], float]:
    """The equivalent and faulty candidates' median seconds at ``rows``, their outcomes,
    and the whole process's wall time (data generation included)."""
    command = [sys.executable, str(HERE / "spark_matcher.py"), "--rows", str(rows)]
    command += ["--keys", str(max(1, rows // 10)), "--memory", "default"]
    command += ["--skip", "a", "b", "c", "c2", "--repeat", str(repeat)]
    if data is not None:
        command += ["--data", str(data)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise SystemExit(
            f"scale: {rows:,} rows failed (exit {done.returncode}): " + " | ".join(tail)
        )
    found = [m for m in map(PARITY_LINE.match, done.stdout.splitlines()) if m]
    if len(found) != 2:
        raise SystemExit(f"scale: {rows:,} rows: unexpected output:\n{done.stdout}")
    (equivalent, faulty) = (float(m.group(1)) for m in found)
    return equivalent, faulty, [m.group(2) for m in found], wall


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of ``(x, y)`` points."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000, 20_000_000])
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per size (median)")
    parser.add_argument("--data", type=Path, help="where the generated outputs go (reused)")
    args = parser.parse_args(argv)

    results = []
    for rows in sorted(args.rows):
        print(f"{rows:,} rows per side ...", flush=True)
        equivalent, faulty, outcomes, wall = measure(rows, args.repeat, args.data)
        results.append((rows, equivalent, faulty))
        print(f"  equivalent {equivalent:.1f} s, faulty {faulty:.1f} s (process {wall:.0f} s)")
        print(f"  faulty: {outcomes[1]}", flush=True)
    print("\n| rows per side | equivalent | faulty | equivalent per 1M | faulty per 1M |")
    print("|---|---|---|---|---|")
    for rows, equivalent, faulty in results:
        millions = rows / 1e6
        print(
            f"| {rows:,} | {equivalent:.1f} s | {faulty:.1f} s | {equivalent / millions:.2f} s "
            f"| {faulty / millions:.2f} s |"
        )
    if len(results) > 1:
        for column, name in ((1, "equivalent"), (2, "faulty")):
            fitted = slope([(r[0] / 1e6, r[column]) for r in results])
            print(f"slope ({name}): {fitted:.2f} s per million rows per side")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
