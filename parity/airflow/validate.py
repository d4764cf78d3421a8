"""Check pipeline spec files as the DAG factory and the ``plan`` task would, before Airflow does.

    python -m parity.airflow.validate [--root DIR] [--no-files] SPEC...

``parity validate`` runs this module as a child process: the checks need Airflow (a
schedule is valid when Airflow's timetable accepts it, and the DAG is built for real),
which the CLI never imports. For each file, in this order, the first problem is its line
(the checks after a failed one would only repeat it):

1. the file is a regular file of at most 1 MiB (``parity.airflow.spec_files``);
2. the spec loads: YAML, every key and value (``matcher.spec.parse_spec``: an ``airflow:``
   typo is ``airflow.pol: unknown key ...``), and its name is not another given spec's;
3. it can run as a pipeline: both applications (or a recovery validation's one), the
   input, a schedule Airflow's timetable accepts (``factory.check_pipeline``);
4. its DAG builds (``factory.build_dag`` / ``factory.recovery_dag``);
5. a run can be planned: the jobs' command lines, the slice (a spec without a fixed window
   is planned on a one-day data interval, as a scheduled run gets), and, unless
   ``--no-files``, the applications and the capture exist (``plan.check_files``).

Each problem is one line, ``PATH: what is wrong``, on stdout; a spec without one gets
``PATH: OK (validation NAME, DAG DAG_ID, schedule S)``. Exit 0 when every spec is OK, 2
otherwise. ``--root``: the directory relative paths in specs start from (the DAG factory's
is the dags folder's parent).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from matcher.errors import ParityError, SpecError
from matcher.spec import Spec, parse_spec, parse_yaml
from matcher.store.run_ids import dag_id_for
from parity.airflow.spec_files import one_line, read_spec_text

#: the data interval a spec without a fixed window is planned on (a scheduled run's)
PLANNED_INTERVAL = (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), dt.datetime(2024, 1, 2, tzinfo=dt.UTC))
EXIT_OK, EXIT_PROBLEMS = 0, 2


def spec_problem(path: Path, *, root: Path, files: bool = True) -> tuple[Spec | None, str | None]:
    """The spec in ``path`` and its first problem (one line naming the file), or ``None``."""
    shown = str(path)
    try:
        text = read_spec_text(path, path.parent, shown)
        spec = parse_spec(parse_yaml(text, shown), shown, base_dir=path.parent)
    except (SpecError, OSError, UnicodeDecodeError) as exc:
        return None, _line(shown, exc)
    try:
        _check(spec, root=root, files=files)
    except (ParityError, OSError) as exc:
        return spec, _line(shown, exc)
    except Exception as exc:  # what the factory reports as "its DAG cannot be built"
        return spec, one_line(f"{shown}: its DAG cannot be built: {type(exc).__name__}: {exc}")
    return spec, None


def _check(spec: Spec, *, root: Path, files: bool) -> None:
    from parity.airflow.factory import build_dag, check_pipeline, recovery_dag

    check_pipeline(spec)
    with tempfile.TemporaryDirectory(prefix="parity-validate-") as home:
        if spec.recovery is not None:
            recovery_dag(spec, root=root)
            _plan_recovery(spec, root=root, home=Path(home), files=files)
        else:
            build_dag(spec, root=root)
            _plan_comparison(spec, root=root, home=Path(home), files=files)


def _plan_comparison(spec: Spec, *, root: Path, home: Path, files: bool) -> None:
    from parity.airflow.plan import AdhocPolicy, RunContext, check_files, plan_run

    dag_id = dag_id_for(spec.name)
    context = RunContext(
        dag_id,
        "scheduled__validate",
        run_type="scheduled",
        interval_start=PLANNED_INTERVAL[0],
        interval_end=PLANNED_INTERVAL[1],
    )
    made = plan_run(spec, context, root=root, home=home, adhoc=AdhocPolicy())
    if files:
        check_files(made, spec, root)


def _plan_recovery(spec: Spec, *, root: Path, home: Path, files: bool) -> None:
    from parity.recovery.plan import plan_recovery
    from parity.runs.submits import is_local, resolve_path

    made = plan_recovery(spec, root=root, home=home, run_id="validate")
    if not files:
        return
    assert spec.application is not None
    application = resolve_path(spec.application.application, root)
    if is_local(application) and not Path(application).exists():
        raise SpecError(f"{spec.source}: application.application: no such file: {application}")
    capture = made.slice["capture"] if made.slice is not None else made.input
    if is_local(str(capture)) and not Path(str(capture)).exists():
        raise SpecError(
            f"{spec.source}: input.path: no such capture: {capture} (write the capture first)"
        )


def _line(shown: str, exc: BaseException) -> str:
    """The error as one line that names the file (the loader's messages already do)."""
    text = one_line(str(exc).strip() or type(exc).__name__)
    return text if text.startswith(f"{shown}:") else f"{shown}: {text}"


def validate(paths: Sequence[Path], *, root: Path, files: bool, out: TextIO) -> int:
    """Check every spec of ``paths``; one line each on ``out``; the exit code."""
    problems = 0
    seen: dict[str, Path] = {}
    for path in paths:
        spec, problem = spec_problem(path, root=root, files=files)
        if problem is None and spec is not None and spec.name in seen:  # two DAGs, one id
            problem = one_line(f"{path}: name: {spec.name!r} is already used by {seen[spec.name]}")
        if spec is not None:
            seen.setdefault(spec.name, path)
        if problem is not None:
            problems += 1
            out.write(problem + "\n")
            continue
        assert spec is not None
        schedule = spec.schedule or "none (ad hoc only)"
        out.write(
            one_line(
                f"{path}: OK (validation {spec.name}, DAG {dag_id_for(spec.name)}, "
                f"schedule {schedule})"
            )
            + "\n"
        )
    out.flush()
    return EXIT_PROBLEMS if problems else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.airflow.validate")
    parser.add_argument("specs", nargs="+", type=Path, metavar="SPEC")
    parser.add_argument("--root", type=Path, default=Path.cwd())
    parser.add_argument("--no-files", action="store_true")
    args = parser.parse_args(argv)
    return validate(args.specs, root=args.root.resolve(), files=not args.no_files, out=sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
