"""Issue 29, the command line's and user code's boundaries: items 4, 5, 13, 16, 17, 20.

* 4: ``parity report --html PATH`` (and the match job's ``--json-out``/``--report-dir``)
  never write through or over a symbolic link, device, FIFO, folder or hard-linked file;
* 5: a spec's function that calls ``sys.exit``, raises ``KeyboardInterrupt`` or returns
  the wrong type is exit 2 naming it, never a verdict, and the match job stores it failed;
* 13: every error line escapes control characters (a spec function's message, argparse's);
* 16: the match job puts ``match.json`` in place only after the store committed the run;
* 17: ``compare`` with a ``properties:`` spec and a store it cannot read is an error;
* 20: ``report --html - --json`` (two documents on stdout) is refused.

Everything here runs on the core engine: no Spark session starts.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from matcher.errors import OutputPathError, UserCodeError
from matcher.files.output_paths import write_output
from matcher.store import Store
from matcher.user_code import UserFunction, note_interrupts
from parity.cli import main

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

ROOT = Path(__file__).resolve().parents[1]
ROWS = ['{"k": 1, "v": 1}', '{"k": 2, "v": 2}']


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def outputs(tmp_path: Path) -> str:
    path = tmp_path / "out.jsonl"
    path.write_text("".join(row + "\n" for row in ROWS), encoding="utf-8")
    return str(path)


def reversed_outputs(tmp_path: Path) -> str:
    """``outputs`` in the other order: a dependence function is asked about a pair."""
    path = tmp_path / "reversed.jsonl"
    path.write_text("".join(row + "\n" for row in reversed(ROWS)), encoding="utf-8")
    return str(path)


def spec_with(tmp_path: Path, module: str, body: str, section: str) -> str:
    """A spec naming ``module:f`` (whose body is ``body``) in ``section``."""
    (tmp_path / f"{module}.py").write_text(
        "import sys\n\n\ndef f(*events):\n" + textwrap.indent(body, "    ") + "\n",
        encoding="utf-8",
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(section.replace("REF", f"{module}:f"), encoding="utf-8")
    return str(spec)


# -- 5: SystemExit, KeyboardInterrupt and wrong types from a spec's function ------------------

EXIT_MESSAGE = "a spec's function must return a value, not end the process"
HOSTILE_BODIES = {
    "exit": ("sys.exit()", f"called sys.exit(): {EXIT_MESSAGE}"),
    "exit1": ("sys.exit(1)", f"called sys.exit(1): {EXIT_MESSAGE}"),
    "exit0": ("sys.exit(0)", f"called sys.exit(0): {EXIT_MESSAGE}"),
    "exit_text": ("sys.exit('bye')", f"called sys.exit('bye'): {EXIT_MESSAGE}"),
    "interrupt": ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
    "generator_exit": ("raise GeneratorExit", "raised GeneratorExit"),
    "none": ("return None", "returned NoneType None, expected a bool (true or false)"),
    "int": ("return 1", "returned int 1, expected a bool (true or false)"),
    "text": ("return 'yes'", "returned str 'yes', expected a bool (true or false)"),
}
SECTIONS = {
    "equality": "dependence: {key: [k]}\nequality: {function: 'REF'}\n",
    "predicate": "dependence: {predicate: 'REF', columns: [k]}\n",
    "barrier": "dependence: {key: [k], barrier: {function: 'REF', columns: [v]}}\n",
    "punctuation": "dependence: {punctuation: {timestamp: v, function: 'REF'}}\n",
}


@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=list(HOSTILE_BODIES))
@pytest.mark.parametrize("section", SECTIONS, ids=list(SECTIONS))
def test_a_spec_function_that_exits_or_returns_a_non_bool_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, section: str
) -> None:
    module = f"hostile_{section}_{body}"
    code_text, problem = HOSTILE_BODIES[body]
    spec = spec_with(tmp_path, module, code_text, SECTIONS[section])
    out, other = outputs(tmp_path), reversed_outputs(tmp_path)
    assert call(capsys, "compare", out, other, "--spec", spec, "--engine", "core") == (
        2,
        "",
        f"parity: error: the spec's function {module}:f {problem}\n",
    )


def test_a_spec_module_that_exits_while_imported_is_a_spec_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "hostile_import_exit.py").write_text(
        "import sys\nsys.exit(0)\n\n\ndef f(a, b):\n    return True\n", encoding="utf-8"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(SECTIONS["equality"].replace("REF", "hostile_import_exit:f"), encoding="utf-8")
    out = outputs(tmp_path)
    assert call(capsys, "compare", out, out, "--spec", str(spec)) == (
        2,
        "",
        f"parity: error: {spec}: equality.function: cannot import 'hostile_import_exit:f': "
        "SystemExit: 0\n",
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("sys.exit(1)", f"called sys.exit(1): {EXIT_MESSAGE}"),
        ("return 3", "returned int 3, expected a type name (a string)"),
    ],
    ids=["exit", "int"],
)
def test_a_typed_classifier_that_exits_or_returns_a_non_string_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, problem: str
) -> None:
    module = f"hostile_classify_{'exit' if 'exit' in body else 'int'}"
    section = (
        "dependence:\n  typed:\n    classify: {function: 'REF', columns: [v]}\n"
        "    types: {row: [k]}\n    edges: [[row, row]]\n"
    )
    spec = spec_with(tmp_path, module, body, section)
    out = outputs(tmp_path)
    assert call(capsys, "compare", out, out, "--spec", spec, "--engine", "core") == (
        2,
        "",
        f"parity: error: the spec's function {module}:f {problem}\n",
    )


def test_a_numpy_bool_is_a_bool() -> None:
    numpy = pytest.importorskip("numpy")
    guarded = UserFunction(lambda a, b: numpy.bool_(True), "m:f")
    assert guarded({}, {}) is True


def test_a_real_interrupt_during_a_spec_function_stays_an_interrupt() -> None:
    # A SIGINT that arrives while the function runs is the user's Ctrl-C, not the function's.
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        note_interrupts()

        def slow(a: Any, b: Any) -> bool:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # interrupted by the signal above
            return True

        with pytest.raises(KeyboardInterrupt):
            UserFunction(slow, "m:slow")({}, {})

        def raising(a: Any, b: Any) -> bool:
            raise KeyboardInterrupt

        with pytest.raises(UserCodeError, match=r"^the spec's function m:raising raised "):
            UserFunction(raising, "m:raising")({}, {})
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_core_match_job_stores_a_spec_function_that_exits_as_failed(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobs.match import main as match_main

    spec = spec_with(tmp_path, "hostile_match_exit", "sys.exit(1)", SECTIONS["equality"])
    out = outputs(tmp_path)
    args = ["--engine", "core", "--spec", spec, "--reference", out, "--candidate", out]
    assert match_main([*args, "--db", sqlite_url, "--run-id", "exits"]) == 2
    line = f"the spec's function hostile_match_exit:f called sys.exit(1): {EXIT_MESSAGE}"
    assert capsys.readouterr() == ("", f"match: error: {line}\n")
    with Store.open_readonly(sqlite_url) as store:
        run = store.get_run("exits")
    assert run is not None
    assert (run.status, run.verdict, run.error) == ("failed", "error", f"UserCodeError: {line}")


# -- 13: error lines escape control characters ------------------------------------------------


def test_a_spec_function_raising_an_escape_sequence_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = spec_with(
        tmp_path, "hostile_escape", "raise ValueError('\\x1b[2J\\x1b]0;owned\\x07')",
        SECTIONS["equality"],
    )  # fmt: skip
    out = outputs(tmp_path)
    assert call(capsys, "compare", out, out, "--spec", spec, "--engine", "core") == (
        2,
        "",
        "parity: error: the spec's function hostile_escape:f raised ValueError: "
        "\\x1b[2J\\x1b]0;owned\\x07\n",
    )


def test_the_match_jobs_error_line_is_escaped(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobs.match import main as match_main

    spec = spec_with(
        tmp_path, "hostile_match_escape", "raise ValueError('\\x1b[31mred\\u202e')",
        SECTIONS["equality"],
    )  # fmt: skip
    out = outputs(tmp_path)
    args = ["--engine", "core", "--spec", spec, "--reference", out, "--candidate", out]
    assert match_main([*args, "--db", sqlite_url]) == 2
    assert capsys.readouterr().err == (
        "match: error: the spec's function hostile_match_escape:f raised ValueError: "
        "\\x1b[31mred\\u202e\n"
    )


def test_a_usage_error_quoting_an_argument_is_escaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = call(capsys, "history", "\x1b]0;owned\x07")
    assert (code, out) == (2, "")
    assert err.endswith("parity: error: unrecognized arguments: \\x1b]0;owned\\x07\n")
    assert "\x1b" not in err


# -- 17: a properties check that cannot run is an error ---------------------------------------

PROPERTIES_SPEC = (
    "dependence: {key: [k]}\n"
    "properties:\n  - {operator: jobs.examples.taxi:track, sample: data/sample, key: k}\n"
)


def test_compare_with_a_properties_spec_and_an_unreadable_store_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROPERTIES_SPEC, encoding="utf-8")
    out = outputs(tmp_path)
    db = "postgresql+psycopg://parity:s3cret@127.0.0.1:1/parity"
    code, stdout, err = call(capsys, "compare", out, out, "--spec", str(spec), "--db", db)
    assert (code, stdout) == (2, "")
    head = f"parity: error: {spec}: properties: cannot hold the spec against the stored "
    tail = " (remove the section, or point --db at the store that has them)\n"
    assert err.startswith(head + "properties runs: ") and err.endswith(tail)
    assert err.count("\n") == 1 and "s3cret" not in err


def test_compare_with_a_properties_spec_and_no_store_yet_has_nothing_to_warn_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SQLite store not created yet holds no properties run: as for operators never
    tested, there is nothing to hold the spec against (and nothing is created)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROPERTIES_SPEC, encoding="utf-8")
    out = outputs(tmp_path)
    db = f"sqlite:///{tmp_path / 'none.db'}"
    assert call(capsys, "compare", out, out, "--spec", str(spec), "--db", db)[0] == 0
    assert not (tmp_path / "none.db").exists()


# -- 20: two documents on one stream ----------------------------------------------------------


def test_report_html_to_stdout_with_json_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert call(capsys, "report", "any", "--html", "-", "--json", "--db", "sqlite://") == (
        2,
        "",
        "parity: error: report: --html - and --json would both write to standard output: give "
        "--html a file name, or leave out one of them\n",
    )


# -- 4: output paths are never followed nor replaced unless a regular file --------------------


@pytest.fixture
def stored_run(sqlite_url: str) -> str:
    from store_fixtures import outcome, start

    with Store.open(sqlite_url) as store:
        store.start_run(start("taxi/run-1"))
        store.record_run("taxi/run-1", outcome())
    return sqlite_url


def _device(path: Path) -> None:
    # a /dev/null of its own: the project's machines and CI run the tests as root
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))


PLANTED = {
    "symlink": lambda p, t: p.symlink_to(t / "victim.txt"),
    "dangling_symlink": lambda p, t: p.symlink_to(t / "nowhere.txt"),
    "symlink_to_dev_null": lambda p, t: p.symlink_to("/dev/null"),
    "fifo": lambda p, t: os.mkfifo(p),
    "device": lambda p, t: _device(p),
    "directory": lambda p, t: p.mkdir(),
    "hard_link": lambda p, t: os.link(t / "victim.txt", p),
}
KIND = {
    "symlink": "a symbolic link",
    "dangling_symlink": "a symbolic link",
    "symlink_to_dev_null": "a symbolic link",
    "fifo": "a FIFO",
    "device": "a character device",
    "directory": "a directory",
    "hard_link": "a file with 2 hard links",
}


@pytest.mark.parametrize("planted", PLANTED, ids=list(PLANTED))
def test_report_html_never_replaces_what_is_not_a_regular_file(
    tmp_path: Path, stored_run: str, capsys: pytest.CaptureFixture[str], planted: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    target = tmp_path / "page.html"
    PLANTED[planted](target, tmp_path)
    before = os.lstat(target)
    listing = sorted(os.listdir(tmp_path))
    code, out, err = call(capsys, "report", "taxi/run-1", "--html", str(target), "--db", stored_run)
    assert (code, out) == (2, "")
    assert err == (
        f"parity: error: --html: {target} is {KIND[planted]}: refusing to replace it (give a "
        "new file name, or an existing regular file)\n"
    )
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert victim.read_text(encoding="utf-8") == "keep me\n"
    assert sorted(os.listdir(tmp_path)) == listing  # no temporary file left


def test_report_html_writes_a_new_file_and_replaces_a_regular_one(
    tmp_path: Path, stored_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "page.html"
    args = ["report", "taxi/run-1", "--html", str(target), "--db", stored_run]
    assert call(capsys, *args) == (0, f"wrote {target}\n", "")
    first = target.read_text(encoding="utf-8")
    assert first.startswith("<!DOCTYPE html>") or first.lstrip().startswith("<!")
    target.write_text("old page", encoding="utf-8")
    assert call(capsys, *args) == (0, f"wrote {target}\n", "")
    assert target.read_text(encoding="utf-8") == first
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []


def test_write_output_refuses_a_name_that_appears_while_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the race: nothing at the path when checked, a symbolic link there when placed
    from matcher.files import output_paths

    target = tmp_path / "page.html"
    real = output_paths.StagedOutput.place

    def planted_first(self: Any) -> None:
        target.symlink_to("/dev/null")
        real(self)

    monkeypatch.setattr(output_paths.StagedOutput, "place", planted_first)
    with pytest.raises(OutputPathError) as raised:
        write_output(target, "page", "--html")
    assert str(raised.value) == f"--html: {target} appeared while it was written: not replaced"
    assert os.readlink(target) == "/dev/null"
    assert sorted(os.listdir(tmp_path)) == ["page.html"]


def test_the_match_job_refuses_a_symlinked_json_out(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobs.match import main as match_main

    spec = tmp_path / "spec.yaml"
    spec.write_text("dependence: {key: [k]}\n", encoding="utf-8")
    out = outputs(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    (tmp_path / "verdict.json").symlink_to(victim)
    args = ["--engine", "core", "--spec", str(spec), "--reference", out, "--candidate", out]
    json_out = str(tmp_path / "verdict.json")
    assert match_main([*args, "--db", sqlite_url, "--run-id", "r", "--json-out", json_out]) == 2
    line = (
        f"--json-out: {json_out} is a symbolic link: refusing to replace it (give a new file "
        "name, or an existing regular file)"
    )
    assert capsys.readouterr().err == f"match: error: {line}\n"
    assert victim.read_text(encoding="utf-8") == "keep me\n"
    with Store.open_readonly(sqlite_url) as store:
        run = store.get_run("r")
    assert run is not None and (run.status, run.error) == ("failed", f"OutputPathError: {line}")


# -- 16: match.json only once the store holds the verdict -------------------------------------


def test_match_json_is_placed_only_after_the_store_committed(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobs.match import main as match_main

    spec = tmp_path / "spec.yaml"
    spec.write_text("dependence: {key: [k]}\n", encoding="utf-8")
    out = outputs(tmp_path)
    report_dir = tmp_path / "report"
    seen: list[list[str]] = []
    real = Store.record_run

    def spy(self: Store, run_id: str, outcome: Any) -> None:
        seen.append(sorted(p.name for p in report_dir.iterdir() if not p.name.startswith(".")))
        real(self, run_id, outcome)

    monkeypatch.setattr(Store, "record_run", spy)
    args = ["--engine", "core", "--spec", str(spec), "--reference", out, "--candidate", out]
    assert match_main([*args, "--db", sqlite_url, "--run-id", "r1", "--report-dir",
                       str(report_dir)]) == 0  # fmt: skip
    assert seen == [[]]  # nothing finished in the folder while the run was not committed
    document = json.loads((report_dir / "match.json").read_text(encoding="utf-8"))
    assert (document["run_id"], document["verdict"]) == ("r1", "equivalent")
    assert sorted(p.name for p in report_dir.iterdir()) == ["match.json"]


def test_a_match_job_killed_before_its_commit_leaves_no_finished_document(
    tmp_path: Path, sqlite_url: str
) -> None:
    # A real SIGKILL of the job, at the moment it would commit (the mock decides only when).
    spec = tmp_path / "spec.yaml"
    spec.write_text("dependence: {key: [k]}\n", encoding="utf-8")
    out = outputs(tmp_path)
    report_dir = tmp_path / "report"
    argv = ["--engine", "core", "--spec", str(spec), "--reference", out, "--candidate", out]
    argv += ["--db", sqlite_url, "--run-id", "killed", "--report-dir", str(report_dir)]
    script = (
        "import os, signal, sys\n"
        "from matcher.store import Store\n"
        "Store.record_run = lambda *args: os.kill(os.getpid(), signal.SIGKILL)\n"
        "from jobs.match import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PARITY_RUN_LEASE_SECONDS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=120
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert not (report_dir / "match.json").exists()
    time.sleep(1.2)  # the lease of the killed job passes
    with Store.open_readonly(sqlite_url) as store:
        run = store.get_run("killed")
    assert run is not None and (run.status, run.verdict) == ("failed", "error")
