"""Benchmark of a whole validation against the user's own job: where a validation's wall
time goes (issue 15: within 2.5x of the candidate job alone is the target).

    .venv/bin/python bench/pipeline.py [--validation topics_parallel] [--home DIR] [--repeat N]

In one run, on the demo's setup (``tools.demo.prepare``: captures, a local Airflow home
with SQLite, real ``spark-submit`` on ``local[*]``, the demo's Spark defaults):

* the validation end to end through Airflow's ``dag.test()`` on the real dags folder: the
  plan, the slice, the reference, its noise rerun, the candidate, the match, the
  expectations, the record, the gate (and the spec's property re-test), each task's time
  read back from Airflow's database;
* the candidate application alone, as the user runs it: one ``spark-submit`` of the spec's
  candidate on the slice the validation used, with the same Spark defaults.

Each is run ``--repeat`` times (default 1) after one untimed warm-up of the candidate alone
(the first JVM of a cold machine pays for reading the jars from disk); the medians are
compared. Prints both wall times, their ratio, and every task's time with its share of the
validation's. The default validation is the bundled one with the largest slice.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matcher.spec import load_spec  # noqa: E402
from matcher.store.run_ids import dag_id_for  # noqa: E402
from parity.airflow.plan import workspace, workspace_root_of  # noqa: E402
from parity.recovery.runner import find_spark_submit  # noqa: E402
from parity.runs.submits import build_app_job, spark_submit_argv  # noqa: E402
from tools.demo import prepare, run_validation, task_seconds  # noqa: E402

#: the bundled validation with the largest slice (1,810 rows)
DEFAULT = "topics_parallel"


def candidate_alone(spec_path: Path, slice_dir: Path, out: Path) -> float:
    """One ``spark-submit`` of the spec's candidate on ``slice_dir``: its wall time."""
    spec = load_spec(spec_path)
    if spec.candidate is None:
        raise SystemExit(f"bench: {spec_path.name} names no candidate application")
    dirs = {"slice": str(slice_dir), "candidate": str(out)}
    job = build_app_job(spec.name, "candidate", spec.candidate, dirs, str(out.parent), ROOT)
    argv = spark_submit_argv(job, spark_submit=find_spark_submit(), master="local[*]")
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"bench: the candidate alone failed (exit {done.returncode}): {tail}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--validation", default=DEFAULT, help=f"default {DEFAULT}")
    parser.add_argument("--home", help="the demo home to use (default: a new temporary one)")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs of each (default 1)")
    args = parser.parse_args(argv)
    spec_path = ROOT / "dags" / "validations" / f"{args.validation}.yaml"
    if not spec_path.is_file():
        parser.error(f"no validation {args.validation!r} in dags/validations")
    home = Path(args.home or tempfile.mkdtemp(prefix="parity-bench-pipeline-")).resolve()
    print(f"pipeline benchmark: {args.validation}, home {home}", flush=True)
    if prepare(home, 1.0, sys.stdout) is None:
        return 2
    dag_id = dag_id_for(load_spec(spec_path).name)

    whole: list[float] = []
    tasks: list[dict[str, float]] = []
    slice_dir: Path | None = None
    for attempt in range(args.repeat):
        log = home / "logs" / f"{args.validation}-{attempt}.log"
        _, run_id, state, seconds = run_validation(spec_path, log)
        if state != "success" and "gate" not in state:
            print(f"  run {attempt + 1}: DAG run {state} (see {log})", flush=True)
        whole.append(seconds)
        tasks.append(task_seconds(dag_id, run_id))
        slice_dir = Path(workspace(workspace_root_of(home), dag_id, run_id)) / "slice"
        print(f"  validation run {attempt + 1}: {seconds:.1f} s ({state})", flush=True)
    assert slice_dir is not None

    alone: list[float] = []
    scratch = Path(tempfile.mkdtemp(prefix="candidate-", dir=home))
    candidate_alone(spec_path, slice_dir, scratch / "warm-up")
    for attempt in range(args.repeat):
        seconds = candidate_alone(spec_path, slice_dir, scratch / f"run-{attempt}")
        alone.append(seconds)
        print(f"  candidate alone run {attempt + 1}: {seconds:.1f} s", flush=True)

    validation, job = statistics.median(whole), statistics.median(alone)
    print(f"\nvalidation through Airflow  {validation:7.1f} s   (median of {len(whole)})")
    print(f"candidate job alone         {job:7.1f} s   (median of {len(alone)})")
    print(f"ratio                       {validation / job:7.2f}x  (target: 2.5x or less)")
    print("\ntask                      seconds   share  (the last validation run)")
    last = tasks[-1]
    for task_id, seconds in last.items():
        print(f"  {task_id:<22} {seconds:8.1f}  {100 * seconds / validation:5.1f}%")
    serial = sum(last.values())
    print(f"  {'(sum of tasks)':<22} {serial:8.1f}  (tasks run {os.cpu_count()} cores wide)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
