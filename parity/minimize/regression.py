"""The pytest file ``parity minimize`` writes beside a minimal input: both applications run
on it with ``spark-submit``, their outputs held to the validation's spec with
``parity.testing.assert_equivalent``. It fails while the candidate diverges and passes once
the candidate is equivalent to the reference there: a regression test a team can commit.

    path = write_regression_test(out, validation="taxi_parallel_buggy", run_id=RUN,
                                 reference=job, candidate=job, rows=5, rows_before=2000,
                                 reproduces="divergent: corruption on distance_km")

The jobs' arguments keep the placeholders ``{input}``, ``{output}``, ``{checkpoint}`` and
``{run_dir}``, filled in when the test runs. ``job_literal`` is how a job is written in the
file (one assignment, ``NAME = dict(...)``), so that a caller can find and replace it.
"""

from __future__ import annotations

import re
from pathlib import Path

from parity.runs.submits import SparkJob

_TEMPLATE = '''\
"""A regression test written by ``parity minimize`` for run {run_id}
of validation {validation}.

On the {rows} rows in ``input/`` ({rows_before} rows in the run's slice), the candidate's
output diverges from the reference's ({reproduces}). The test runs both applications on that
input with ``spark-submit`` and holds their outputs to the validation's spec
(``spec.yaml``): it fails while the candidate has the bug and passes once its output is
equivalent to the reference's. ``witness.txt`` beside it shows the divergence.

    pytest {file_name}

``PARITY_TEST_MASTER`` sets the master (default ``local[2]``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from parity.testing import assert_equivalent

HERE = Path(__file__).resolve().parent
INPUT = HERE / "input"
SPEC = HERE / "spec.yaml"
MASTER = os.environ.get("PARITY_TEST_MASTER", "local[2]")
TIMEOUT = 900

{reference}
{candidate}

def test_the_candidate_is_equivalent_to_the_reference_on_the_minimal_input(tmp_path):
    reference = run(REFERENCE, tmp_path / "reference", tmp_path)
    candidate = run(CANDIDATE, tmp_path / "candidate", tmp_path)
    assert_equivalent(reference, candidate, spec=SPEC)


def run(job, output, work):
    """Run ``job`` on ``INPUT`` with its output at ``output``; its log on failure."""
    values = {{
        "{{input}}": str(INPUT),
        "{{output}}": str(output),
        "{{checkpoint}}": str(work / ("checkpoint-" + output.name)),
        "{{run_dir}}": str(work),
    }}
    args = []
    for arg in job["args"]:
        for name, value in values.items():
            arg = arg.replace(name, value)
        args.append(arg)
    argv = [spark_submit(), "--master", MASTER, "--name", job["name"]]
    for key, value in job["conf"].items():
        argv += ["--conf", f"{{key}}={{value}}"]
    if job["py_files"]:
        argv += ["--py-files", ",".join(job["py_files"])]
    if job["jars"]:
        argv += ["--jars", ",".join(job["jars"])]
    if job["main_class"]:
        argv += ["--class", job["main_class"]]
    env = {{**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}}
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    done = subprocess.run(
        [*argv, job["application"], *args], env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert done.returncode == 0, (
        f"{{job['name']}} failed (exit {{done.returncode}}):\\n{{done.stdout[-3000:]}}"
        f"{{done.stderr[-3000:]}}"
    )
    return output


def spark_submit():
    beside = Path(sys.executable).parent / "spark-submit"
    return str(beside) if beside.exists() else shutil.which("spark-submit") or "spark-submit"
'''


def regression_file_name(validation: str) -> str:
    """``test_<validation>_minimal.py``, the name made a Python identifier."""
    return f"test_{re.sub(r'[^0-9A-Za-z_]', '_', validation)}_minimal.py"


def job_literal(name: str, job: SparkJob) -> str:
    """``NAME = dict(...)``: the job's fields, one per line, as Python literals."""
    fields = {
        "name": job.name,
        "application": job.application,
        "args": list(job.args),
        "conf": dict(job.conf),
        "py_files": list(job.py_files),
        "jars": list(job.jars),
        "main_class": job.main_class,
    }
    lines = [f"{name} = dict("]
    lines += [f"    {field}={value!r}," for field, value in fields.items()]
    lines.append(")")
    return "\n".join(lines) + "\n"


def write_regression_test(
    directory: Path,
    *,
    validation: str,
    run_id: str,
    reference: SparkJob,
    candidate: SparkJob,
    rows: int,
    rows_before: int,
    reproduces: str,
) -> Path:
    """Write the test into ``directory`` (beside ``input/`` and ``spec.yaml``); its path."""
    name = regression_file_name(validation)
    text = _TEMPLATE.format(
        run_id=_docstring_safe(run_id),
        validation=_docstring_safe(validation),
        rows=f"{rows:,}",
        rows_before=f"{rows_before:,}",
        reproduces=_docstring_safe(reproduces),
        file_name=name,
        reference=job_literal("REFERENCE", reference),
        candidate=job_literal("CANDIDATE", candidate),
    )
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def _docstring_safe(text: str) -> str:
    """``text`` as it may stand inside the file's docstring (a column's name is data)."""
    return "".join(c if c.isprintable() and c not in '\\"' else f"\\u{ord(c):04x}" for c in text)
