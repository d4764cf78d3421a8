"""The demo: bundled validations through Airflow, then a verdict table.

    python -m tools.demo [--all | --only NAME ...] [--home DIR] [--scale S] [--workers N]

By default a representative handful (``HANDFUL``: an equivalent candidate, a divergent one,
one with the reference's noise rerun and its operator's property re-test, a streaming one);
``--all`` (``make demo ALL=1``) runs every spec in ``dags/validations``.

It generates the examples' captures (``data/captures``), sets up a local Airflow home
(``$PARITY_HOME/demo/airflow``, SQLite) and runs the DAG of each ``dags/validations/*.yaml``
with ``dag.test()``: real ``spark-submit`` on ``local[*]``, the results in SQLite
(``$PARITY_HOME/demo/parity.db``). It prints each task as it starts and one line per
validation as it finishes, then the table (validation, candidate, verdict, divergence kinds,
first witness) and how to open the Airflow UI on the same data. ``--workers`` validations
run at once, each in its own process (their ``dag.test()`` share Airflow's database);
Airflow's and Spark's output goes to ``logs/<validation>.log`` under the demo home, and each
task's also to its own log file in Airflow's log folder, where the UI shows it. ``env.sh``
under the demo home holds the whole environment (DAGs, the Parity plugin, the logs, the
results store) for ``airflow standalone``.

The demo checks itself: each spec says what to expect in a comment,
``# Expected verdict: divergent (corruption)``; the exit code is 0 when every verdict (and
every kind named) came out as expected, 1 otherwise, 2 on error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from matcher.errors import ParityError
from matcher.spec import load_spec
from matcher.store import RunRecord, Store, StoredDivergence
from matcher.store.run_ids import pipeline_run_id
from matcher.verdict import KINDS
from tools import class_archive

ROOT = Path(__file__).resolve().parent.parent
#: the recovery validations' capture (jobs.examples.sequence_input), here and in the compose
#: stack's parity-captures service (tests/test_docker_compose.py checks they agree)
SEQUENCE_WINDOW_INPUT = {"keys": 6, "count": 40, "files": 20}
BIN = Path(sys.executable).parent
#: the default run: equivalent (DiffStream's maxrow), divergent (the buggy topics job: loss
#: and corruption), the reference's noise rerun with the operator's properties re-tested
#: (taxi), and a Structured Streaming job
HANDFUL = ("maxrow_wellformed", "topics_parallel_buggy", "taxi_parallel", "taxi_streaming")
_EXPECTED = re.compile(r"^#\s*Expected verdict:\s*(\w+)(?:\s*\(([^)]*)\))?", re.MULTILINE)
#: the Airflow pool of the validations' Spark tasks (``AirflowSpec.pool``'s default): two
#: Spark applications at once on this 2-core machine
SPARK_POOL, SPARK_POOL_SLOTS = "parity_spark", 2
SPARK_POOL_DOC = "Parity: Spark applications at once (docs/how-to/airflow.md, Concurrency)"
#: Local runs: no web UI to start, no progress bars in the logs.
SPARK_PROPERTIES = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}
#: Jobs of seconds on a small machine: the JIT's first tier and the serial collector halve
#: each job's CPU time (the driver is the whole local[*] JVM). Not for big jobs.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Spark's settings reach the driver's JVM as options and ``-D`` properties in
#: ``SPARK_SUBMIT_OPTS``, and ``SPARK_CONF_DIR`` stays empty: Spark's launcher puts that
#: directory on the class path, and the JVM archives no class path with a non-empty
#: directory in it (``tools.class_archive``, which starts each JVM seconds sooner).
LOG4J2_FILE = "spark-log4j2.properties"


#: Spark's own logging: warnings and errors only (the jobs print what they did).
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


@dataclass(frozen=True, slots=True)
class Expected:
    """What a spec's comment says its run should give."""

    verdict: str
    kinds: tuple[str, ...] = ()

    def met_by(self, run: RunRecord) -> bool:
        present = {kind for kind, n in run.counts.items() if n}
        return run.verdict == self.verdict and set(self.kinds) <= present


@dataclass(frozen=True, slots=True)
class Outcome:
    validation: str
    candidate: str
    expected: Expected | None
    run: RunRecord | None
    seconds: float
    state: str

    @property
    def ok(self) -> bool:
        return self.expected is not None and self.run is not None and self.expected.met_by(self.run)


def expected_of(text: str) -> Expected | None:
    """``# Expected verdict: divergent (loss, corruption)`` in a spec's text."""
    found = _EXPECTED.search(text)
    if found is None:
        return None
    kinds = tuple(k.strip() for k in (found.group(2) or "").split(",") if k.strip() in KINDS)
    return Expected(found.group(1), kinds)


def demo_env(home: Path) -> dict[str, str]:
    """The environment the demo runs Airflow and Spark in, and that ``env.sh`` gives
    ``airflow standalone`` to show the same data: the DAGs, the Parity plugin (its page and
    the **Parity run** link), the task logs the demo's runs wrote, the results store."""
    return {
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        # Where the demo writes each task's log (_task_logs) and the UI reads it back.
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "airflow" / "logs"),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "PARITY_HOME": str(home),
        "PARITY_DB_URL": f"sqlite:///{home / 'parity.db'}",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": str(BIN / "python"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(home / "spark-conf"),
        "SPARK_SUBMIT_OPTS": spark_submit_opts(home),
    }


def spark_submit_opts(home: Path) -> str:
    """The driver JVM's options: the demo's JIT and collector, its Spark properties, its
    log4j configuration (the class archive is added once it is built)."""
    log4j = str(home / LOG4J2_FILE)
    if any(c.isspace() for c in log4j):
        log4j = f'"{log4j}"'
    properties = [f"-D{key}={value}" for key, value in SPARK_PROPERTIES.items()]
    return " ".join([JVM_OPTIONS, *properties, f"-Dlog4j2.configurationFile={log4j}"])


def witness(divergence: StoredDivergence) -> str:
    """The first divergence as one line: kind, key, places, and what differs."""
    where = (
        f"ref #{_at(divergence.reference_position)} / cand #{_at(divergence.candidate_position)}"
    )
    key = "(no key)" if divergence.key is None else f"key {_short(divergence.key)}"
    text = f"{divergence.kind} at {key}, {where}"
    ref, cand = divergence.reference_event or {}, divergence.candidate_event or {}
    if divergence.kind == "corruption" and divergence.columns:
        column = divergence.columns[0]
        text += f": {column} {_short(ref.get(column))} vs {_short(cand.get(column))}"
        if len(divergence.columns) > 1:
            text += f" (+{len(divergence.columns) - 1} columns)"
    return text


def table(outcomes: Sequence[Outcome]) -> list[str]:
    """The verdict table, one row per validation (the witness last: it is the longest)."""
    rows = [("validation", "candidate", "verdict", "kinds", "expected", "first witness")]
    for o in outcomes:
        run = o.run
        verdict = run.verdict if run is not None and run.verdict else o.state
        kinds = ", ".join(f"{k} {n}" for k, n in run.counts.items() if n) if run else ""
        first = witness(run.divergences[0]) if run is not None and run.divergences else ""
        if run is not None and run.status == "failed":
            first = _short(run.error or "", 70)
        want = "?" if o.expected is None else o.expected.verdict
        mark = "ok" if o.ok else f"MISMATCH (expected {want})"
        rows.append((o.validation, o.candidate, verdict, kinds or "-", mark, first or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for n, row in enumerate(rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
        if n == 0:
            lines.append("  ".join(["-" * w for w in widths] + ["-" * 13]))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.demo", description=__doc__.splitlines()[0]
    )
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument(
        "--all", action="store_true", help="every validation (default: " + ", ".join(HANDFUL) + ")"
    )
    chosen.add_argument("--only", nargs="+", metavar="NAME", help="these validations only")
    parser.add_argument("--home", help="demo home (default $PARITY_HOME/demo, ~/.parity/demo)")
    parser.add_argument("--scale", type=float, default=1.0, help="capture size (default 1)")
    parser.add_argument(
        "--workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="validations run at once, each in its own process (default: 2, or 1 on one core)",
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    base = Path(os.environ.get("PARITY_HOME") or "~/.parity").expanduser()
    home = Path(args.home).expanduser() if args.home else base / "demo"
    out = sys.stdout
    try:
        only = None if args.all else (args.only or list(HANDFUL))
        return _run(home.resolve(), only, args.scale, args.workers, out)
    except (ParityError, OSError) as exc:
        print(f"demo: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def prepare(home: Path, scale: float, out: TextIO) -> dict[str, str] | None:
    """Set this process up as the demo runs validations (also ``bench/pipeline.py``): the
    environment, Spark's defaults, ``env.sh``, the captures, Airflow's database with every DAG
    and the Spark pool, the results store. The environment, or None after printing the DAG
    import errors."""
    env = demo_env(home)
    os.environ.update(env)
    os.environ.pop("PARITY_VALIDATIONS_DIR", None)
    _write_spark_settings(home, Path(env["SPARK_CONF_DIR"]))
    archive = _archive_classes(home, env, out)
    if archive is not None:
        env["SPARK_SUBMIT_OPTS"] = class_archive.with_archive(env["SPARK_SUBMIT_OPTS"], archive)
        os.environ.update(env)
    _write_env_file(home, env)

    from jobs.examples.generate import CAPTURES, generate
    from jobs.examples.sequence_input import write_input

    for name in CAPTURES:
        generate(name, ROOT / "data" / "captures", scale=scale)
    # The recovery validations' input: per key 1..40, as 20 files (one micro-batch each).
    write_input(ROOT / "data" / "captures" / "sequence_window", **SEQUENCE_WINDOW_INPUT)
    print(f"  captures written to {ROOT / 'data' / 'captures'} (scale {scale:g})", file=out)

    with _quiet(home / "logs" / "airflow-setup.log"):
        errors = _prepare_airflow()
        Store.open().close()  # create or upgrade the results store once, quietly
    for path, error in errors.items():
        print(f"demo: error: {path}: {error.strip().splitlines()[-1]}", file=sys.stderr)
    return None if errors else env


def _run(home: Path, only: Sequence[str] | None, scale: float, workers: int, out: TextIO) -> int:
    started = time.monotonic()
    specs = sorted((ROOT / "dags" / "validations").glob("*.yaml"))
    bundled = len(specs)
    if only:
        unknown = sorted(set(only) - {p.stem for p in specs})
        if unknown:
            raise ParityError(f"--only: no validation {unknown[0]!r} in dags/validations")
        specs = [p for p in specs if p.stem in only]
    logs = home / "logs"
    rest = "" if len(specs) == bundled else "; --all or make demo ALL=1: all of them"
    print(
        f"Parity demo: {len(specs)} of {bundled} bundled validations through Airflow "
        f"(logs: {logs}{rest})",
        file=out,
    )
    env = prepare(home, scale, out)
    if env is None:
        return 2
    print(f"  Airflow home {env['AIRFLOW_HOME']} ready; {workers} at a time:", file=out, flush=True)
    outcomes = _validate_all(specs, logs, workers, out)
    print("", file=out)
    for line in table(outcomes):
        print(line, file=out)
    print("", file=out)
    _ratio(outcomes, home, out)
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    print(f"Demo wall time: {minutes}m{seconds:02d}s.", file=out)
    print(
        f"\nTo browse the same data in the Airflow UI (DAGs, runs, the Parity history):\n"
        f"  source {home / 'env.sh'} && airflow standalone\n"
        f"then open http://localhost:8080 (user admin; the password is in "
        f"{home / 'airflow' / 'simple_auth_manager_passwords.json.generated'}).",
        file=out,
    )
    good = sum(o.ok for o in outcomes)
    print(f"{good} of {len(outcomes)} verdicts as the specs expect.", file=out)
    return 0 if good == len(outcomes) else 1


def _prepare_airflow() -> dict[str, str]:
    """Migrate Airflow's database and write every DAG into it once, so that the workers'
    ``dag.test()`` calls find them there and never race to create them; import errors."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.utils import db
    from airflow.utils.session import create_session

    db.upgradedb()
    manager = DagBundlesManager()  # type: ignore[no-untyped-call]
    with create_session() as session:
        manager.sync_bundles_to_db(session=session)
    errors: dict[str, str] = {}
    for bundle in manager.get_all_dag_bundles():
        bundle.initialize()
        bag = BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name)
        sync_bag_to_db(bag, bundle.name, bundle.version)
        errors.update(bag.import_errors)
    # The pool of the validations' Spark tasks: without it the scheduler of
    # `airflow standalone` would never start them (docs/how-to/airflow.md, "Concurrency").
    from airflow.models.pool import Pool

    with create_session() as session:
        Pool.create_or_update_pool(
            SPARK_POOL, slots=SPARK_POOL_SLOTS, description=SPARK_POOL_DOC,
            include_deferred=False, session=session,
        )  # fmt: skip
    return errors


def _validate_all(specs: Sequence[Path], logs: Path, workers: int, out: TextIO) -> list[Outcome]:
    """Run every validation's DAG, ``workers`` at a time, and read each verdict back; the
    outcomes come in the order of ``specs``."""
    jobs = [(path, logs / f"{path.stem}.log") for path in specs]
    if workers == 1:
        results = (run_validation(path, log) for path, log in jobs)
        return [_report(path, result, out) for (path, _), result in zip(jobs, results, strict=True)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {
            pool.submit(run_validation, path, log): path
            for path, log in sorted(jobs, key=lambda job: -expected_cost(job[0]))
        }
        done = {futures[f]: _report(futures[f], f.result(), out) for f in as_completed(futures)}
    return [done[path] for path, _ in jobs]


_BAG: Any = None


def expected_cost(path: Path) -> int:
    """How long a validation takes, in rank only: a recovery validation (its application
    killed and restarted) longest, then one with a rerun of the reference (``noise``), then
    the rest, which run one application each. Started longest first, the workers end
    together rather than one of them finishing a long validation alone."""
    spec = load_spec(path)
    return 2 if spec.recovery is not None else 1 if spec.noise.reference_runs > 1 else 0


def run_validation(path: Path, log: Path) -> tuple[str, str, str, float]:
    """``dag.test()`` of the validation in ``path`` (in this process or a worker): its DAG
    id, run id, final state and wall time. Airflow's and Spark's output go to ``log``."""
    global _BAG
    from matcher.store.run_ids import dag_id_for

    started = time.monotonic()
    terminal = os.dup(1)  # where progress goes while Airflow's and Spark's output is quieted
    try:
        with _quiet(log), _task_logs(log, progress=_progress(terminal, path.stem)):
            if _BAG is None:
                from airflow.dag_processing.dagbag import DagBag

                _BAG = DagBag(dag_folder=str(ROOT / "dags"))
            dag = _BAG.dags[dag_id_for(_name(path.read_text(encoding="utf-8")) or path.stem)]
            run = dag.test()
    finally:
        os.close(terminal)
    return dag.dag_id, run.run_id, str(run.state), time.monotonic() - started


def _progress(terminal: int, name: str) -> Callable[[str], None]:
    """A line on the terminal for each task a validation starts, so that the demo is never
    silent for minutes (workers write whole lines: they do not interleave mid-line)."""
    started = time.monotonic()

    def line(task_id: str) -> None:
        elapsed = round(time.monotonic() - started)
        os.write(terminal, f"    {name:<30} {task_id:<22} (at {elapsed}s)\n".encode())

    return line


def _report(path: Path, result: tuple[str, str, str, float], out: TextIO) -> Outcome:
    dag_id, run_id, state, seconds = result
    text = path.read_text(encoding="utf-8")
    with Store.open(migrate=False) as store:
        record = store.get_run(pipeline_run_id(dag_id, run_id))
    name = _name(text) or path.stem
    candidate = (record.candidate_version if record else None) or "-"
    outcome = Outcome(name, candidate, expected_of(text), record, seconds, state)
    verdict = record.verdict if record is not None else f"no verdict (DAG run {state})"
    mark = "ok" if outcome.ok else "MISMATCH"
    print(f"  {name:<32} {verdict or '-':<11} {seconds:6.0f}s  {mark}", file=out, flush=True)
    return outcome


def _ratio(outcomes: Sequence[Outcome], home: Path, out: TextIO) -> None:
    """The match task's time against the candidate job's, on the largest slice."""
    largest: tuple[int, Outcome] | None = None
    for o in outcomes:
        if o.run is None or not isinstance(o.run.slice, Mapping):
            continue
        summary = Path(str(o.run.report_path or "")).parent / "slice.json"
        rows = json.loads(summary.read_text())["rows"] if summary.is_file() else 0
        if largest is None or rows > largest[0]:
            largest = (rows, o)
    if largest is None or largest[1].run is None:
        return
    rows, o = largest
    assert o.run is not None
    seconds = task_seconds(str(o.run.dag_id), str(o.run.dag_run_id))
    if "match" in seconds and "run_candidate" in seconds:
        print(
            f"On the largest slice ({o.validation}, {rows} rows): match {seconds['match']:.0f}s, "
            f"candidate job {seconds['run_candidate']:.0f}s "
            f"(ratio {seconds['match'] / seconds['run_candidate']:.2f}).",
            file=out,
        )


def task_seconds(dag_id: str, run_id: str) -> dict[str, float]:
    """Each task's wall time in one DAG run, in the order the tasks started."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = session.query(TaskInstance).filter(
            TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id
        )
        done = [(ti.start_date, ti.task_id, ti.duration) for ti in tis]
    return {task: float(seconds) for start, task, seconds in sorted(done, key=_started) if seconds}


def _started(row: tuple[Any, ...]) -> str:
    return str(row[0])


def _name(text: str) -> str | None:
    found = re.search(r"^name:\s*([A-Za-z0-9_.-]+)\s*$", text, re.MULTILINE)
    return found.group(1) if found else None


def _write_spark_settings(home: Path, conf_dir: Path) -> None:
    """The log4j configuration ``spark_submit_opts`` names, and ``SPARK_CONF_DIR`` empty:
    the files earlier demos wrote there are removed."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    for old in ("spark-defaults.conf", "log4j2.properties"):
        (conf_dir / old).unlink(missing_ok=True)
    (home / LOG4J2_FILE).write_text(LOG4J2, encoding="utf-8")


def _archive_classes(home: Path, env: Mapping[str, str], out: TextIO) -> Path | None:
    """The class archive the demo's JVMs start from, built on the first run (about half a
    minute) into ``spark-classes/``; None when this JVM cannot make one."""
    from parity.recovery.runner import find_spark_submit

    directory = home / "spark-classes"
    existed = any(directory.glob(f"{class_archive.PREFIX}*{class_archive.SUFFIX}"))
    started = time.monotonic()
    archive = class_archive.ensure_archive(
        directory,
        find_spark_submit(),
        env["SPARK_SUBMIT_OPTS"],
        app=ROOT / "jobs" / "class_warmup.py",
        env=os.environ,
    )
    if archive is None:
        print("  Spark's classes: no class archive, JVMs start as usual", file=out)
    elif not existed:
        seconds = time.monotonic() - started
        print(f"  Spark's classes archived in {seconds:.0f} s (JVMs start sooner)", file=out)
    return archive


def env_file_text(env: Mapping[str, str]) -> str:
    """``env.sh``: the demo's environment for a shell (``source env.sh && airflow
    standalone``), the venv's ``bin`` put first on the shell's own ``PATH``."""
    lines = [f"export {key}={shlex.quote(value)}" for key, value in env.items() if key != "PATH"]
    lines.append(f'export PATH={shlex.quote(str(BIN))}:"$PATH"')
    # The demo runs the bundled specs whatever the caller's shell says (see _run).
    lines.append("unset PARITY_VALIDATIONS_DIR")
    return "\n".join(lines) + "\n"


def _write_env_file(home: Path, env: Mapping[str, str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "env.sh").write_text(env_file_text(env), encoding="utf-8")


@contextlib.contextmanager
def _quiet(log: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (and its children's) to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log.open("ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def task_log_path(ti: Any) -> Path:
    """Where Airflow's UI looks for the log of task instance ``ti`` (``dag_id``, ``run_id``,
    ``task_id``, ``map_index``, ``try_number``): Airflow's ``log_filename_template`` under
    ``[logging] base_log_folder``."""
    from airflow.configuration import conf
    from airflow.utils.helpers import log_filename_template_renderer

    base = Path(conf.get("logging", "base_log_folder")).expanduser()
    return base / log_filename_template_renderer()(ti=ti)


@contextlib.contextmanager
def _task_logs(log: Path, progress: Callable[[str], None] | None = None) -> Iterator[None]:
    """Give each task that ``dag.test()`` runs its own log file where the Airflow UI reads it.

    ``dag.test()`` runs every task in this process (``run_task_in_process``) and its task
    logger writes to stdout, not to the task's log file as an executor's task would, so the
    UI would show no logs for the demo's runs. Here each task's output (Airflow's, and its
    ``spark-submit``'s) goes to :func:`task_log_path`, then is appended to ``log`` as well;
    ``progress`` is told each task's id as it starts."""
    from airflow.sdk.execution_time import supervisor

    run_in_process = supervisor.run_task_in_process

    def run_with_log_file(ti: Any, task: Any, client: Any = None) -> Any:
        path = task_log_path(ti)
        # A deferred task runs again into the same file: copy only what this run added.
        start = path.stat().st_size if path.is_file() else 0
        if progress is not None:
            progress(ti.task_id)
        try:
            with _quiet(path):
                return run_in_process(ti, task, client=client)
        finally:
            with log.open("ab") as sink, path.open("rb") as task_log:
                sink.write(f"--- task {ti.task_id} (log: {path}) ---\n".encode())
                task_log.seek(start)
                sink.write(task_log.read())

    # dag.test() imports run_task_in_process from the module at each task, so this reaches it.
    supervisor.run_task_in_process = run_with_log_file
    try:
        yield
    finally:
        supervisor.run_task_in_process = run_in_process


def _at(position: int | None) -> str:
    return "-" if position is None else str(position)


def _short(value: Any, limit: int = 22) -> str:
    text = repr(value) if not isinstance(value, float) else f"{value:.6g}"
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


if __name__ == "__main__":
    sys.exit(main())
