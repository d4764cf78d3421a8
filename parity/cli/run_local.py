"""``parity run``'s local mode, the caller's side: find the spec, start ``tools.local_run``
as a child process, then answer the gate of the run it made from the results store.

    run_local(RunRequest("maxrow_wellformed", {"candidate_version": "2"}), Progress(sys.stderr))

The child (``python -m tools.local_run``, a checkout's developer tool: started by name, never
imported) prepares the demo's local Airflow home and runs
the DAG with ``dag.test()``; it is a process of its own so that Airflow reads that home's
configuration however this process was started, and so that ``--timeout`` can stop it (its
whole process group: the ``spark-submit`` JVMs too). It writes its DAG run's id and state to
a file; the gate is then ``parity.views.gate.gate_status`` on the store the child wrote to,
of the candidate version the run was stored under.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from matcher.store import Store
from matcher.store.run_ids import dag_id_for
from parity.cli.run import Outcome, Progress, RunError, RunRequest
from parity.views import gate as gate_view

#: the checkout this module is part of: its dags folder and bundled validations
ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "dags" / "validations"
#: the child that runs the DAG (``tools/local_run.py``)
CHILD = "tools.local_run"
_NAME_LINE = re.compile(r"^name:\s*([A-Za-z0-9_.-]+)\s*$", re.MULTILINE)
#: seconds a stopped child gets to end before it is killed
GRACE_SECONDS = 10


def local_home() -> Path:
    """The demo's home (``tools.local_run.default_home``): ``$PARITY_HOME/demo``."""
    return Path(os.environ.get("PARITY_HOME") or "~/.parity").expanduser().resolve() / "demo"


def run_local(request: RunRequest, progress: Progress) -> Outcome:
    """Run the validation's DAG here with ``dag.test()`` and answer its gate."""
    if not (ROOT / "tools" / "local_run.py").is_file() or not BUNDLED.is_dir():
        raise RunError(f"local mode needs a checkout of Parity (none at {ROOT}): give --airflow")
    directory, spec_file = spec_of(request)
    home = local_home()
    db_url = request.db or os.environ.get("PARITY_DB_URL") or f"sqlite:///{home / 'parity.db'}"
    dag_id = dag_id_for(request.validation)
    log = home / "logs" / f"{request.validation}.log"
    progress.line(f"{request.validation}: running {dag_id} here with dag.test() (log: {log})")
    result = _child(request, home, db_url, directory)
    outcome = Outcome(request.validation, dag_id, mode="local")
    if result is None:
        return outcome.no_verdict(f"--timeout {request.timeout_text} passed: the run was stopped")
    if result.get("error"):
        raise RunError(f"the local run failed: {result['error']} (log: {log})")
    outcome = Outcome(
        request.validation, dag_id, result.get("dag_run_id"), result.get("state"), mode="local"
    )
    with Store.open_readonly(db_url) as store:
        record = store.get_run(str(outcome.run_id))
        candidate = request.conf.get("candidate_version")
        if candidate is None and record is not None:
            candidate = record.candidate_version
        status = gate_view.gate_status(
            store, request.validation, candidate, **_current(request.validation, spec_file)
        )
    return outcome.with_gate(status.to_dict())


def spec_of(request: RunRequest) -> tuple[Path, Path]:
    """The validations folder the DAGs are built from, and the validation's spec file in it:
    ``--spec FILE``'s folder, else ``PARITY_VALIDATIONS_DIR``, else the bundled ones."""
    if request.spec is not None:
        path = Path(request.spec).expanduser().resolve()
        if not path.is_file():
            raise RunError(f"--spec: no such file: {request.spec}")
        name = _name(path)
        if name != request.validation:
            raise RunError(
                f"--spec: {request.spec} is validation {name!r}, not {request.validation!r}"
            )
        return path.parent, path
    named = os.environ.get("PARITY_VALIDATIONS_DIR")
    directory = Path(named).expanduser().resolve() if named else BUNDLED
    if not directory.is_dir():
        where = "PARITY_VALIDATIONS_DIR" if named else "a checkout of Parity"
        raise RunError(f"local mode: no validations folder {directory} ({where})")
    specs = {_name(p): p for p in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])}
    if request.validation not in specs:
        near = difflib.get_close_matches(request.validation, list(specs), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise RunError(
            f"unknown validation {request.validation!r}: no spec in {directory} has that name{hint}"
        )
    return directory, specs[request.validation]


def _name(path: Path) -> str:
    """A spec's ``name:`` (its file's stem when the line is not there or not plain)."""
    try:
        found = _NAME_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        found = None
    return found.group(1) if found else path.stem


def _current(validation: str, spec_file: Path) -> dict[str, Any]:
    """``current=`` for ``gate_status``: today's spec, so that a verdict made under another
    spec is no usable verdict (``parity.views.gate.current_spec``, where it exists)."""
    finder = getattr(gate_view, "current_spec", None)
    if finder is None:
        return {}
    return {"current": finder(validation, str(spec_file))}


def _child(request: RunRequest, home: Path, db_url: str, directory: Path) -> dict[str, Any] | None:
    """Run ``tools.local_run`` to its end (its result) or ``request.timeout`` (None)."""
    with tempfile.TemporaryDirectory(prefix="parity-run-") as scratch:
        result = Path(scratch) / "result.json"
        argv = [sys.executable, "-m", CHILD, request.validation]
        argv += ["--home", str(home), "--result", str(result), "--conf", json.dumps(request.conf)]
        if directory != BUNDLED:
            argv += ["--validations", str(directory)]
        env = {**os.environ, "PARITY_DB_URL": db_url}
        child = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=2, start_new_session=True
        )
        try:
            child.wait(timeout=request.timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            _stop(child)
        if not result.is_file():
            raise RunError(f"the local run ended (exit {child.returncode}) without a result")
        found: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        return found


def _stop(child: subprocess.Popen[bytes]) -> None:
    """End the child's process group if it is still running (a timeout, a Ctrl-C)."""
    if child.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, sig)
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
