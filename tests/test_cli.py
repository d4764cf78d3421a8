"""parity compare: exit codes, the human report, --json, and one-line errors."""

from __future__ import annotations

import datetime as dt
import json
import math
import shlex
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parity.cli import main
from parity.cli.render import show

ROOT = Path(__file__).resolve().parents[1]
TAXI = ROOT / "examples" / "taxi"
TOPICS = ROOT / "examples" / "topics"


def run(*args: str, module: str = "parity") -> subprocess.CompletedProcess[str]:
    """The real entry point, in a child process, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write_spec(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def strict_json(text: str) -> Any:
    def reject(constant: str) -> None:
        raise AssertionError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=reject)


# --- the bundled examples, through the real entry point -------------------------------------


def test_taxi_ok_is_equivalent() -> None:
    result = run(
        "compare",
        "examples/taxi/reference.jsonl",
        "examples/taxi/candidate_ok.jsonl",
        "--spec",
        "examples/taxi/spec.yaml",
    )
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout == textwrap.dedent(
        """\
        parity compare: taxi_distance
          reference   examples/taxi/reference.jsonl
          candidate   examples/taxi/candidate_ok.jsonl
          dependence  by_key(taxi_id)
          equality    ignore emitted_at; distance_km within abs 1e-09

        verdict: equivalent
        counts: loss 0, duplication 0, reordering 0, corruption 0
        rows: reference 40, candidate 40, matched 40, peak unmatched 11
        """
    )


def test_taxi_bug_is_divergent_with_witnesses() -> None:
    result = run(
        "compare",
        "examples/taxi/reference.jsonl",
        "examples/taxi/candidate_bug.jsonl",
        "--spec",
        "examples/taxi/spec.yaml",
        module="parity.cli",
    )
    assert result.returncode == 1
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[6:10] == [
        "verdict: divergent",
        "counts: loss 1, duplication 0, reordering 1, corruption 0",
        "rows: reference 40, candidate 39, matched 31, peak unmatched 18",
        "proven divergent after 54 of 79 rows read",
    ]
    headers = [line for line in lines if line.startswith("divergence ")]
    assert headers == [
        "divergence 1 of 2: reordering, key 'T3', reference #18, candidate #28",
        "divergence 2 of 2: loss, key 'T2', reference #29, candidate near #32",
    ]
    loss_table = lines[lines.index(headers[1]) + 2 :]
    assert loss_table[0].split() == ["column", "|", "reference", "|", "candidate"]
    assert loss_table[2].split() == ["seq", "|", "7", "|", "-"]
    assert loss_table[6].split() == [
        "emitted_at",
        "(ignored)",
        "|",
        "'2024-05-01T08:07:07.000Z'",
        "|",
        "-",
    ]


def test_topics_directory_candidate_is_equivalent(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(
        capsys,
        "compare",
        str(TOPICS / "reference.csv"),
        str(TOPICS / "candidate_ok"),
        "--spec",
        str(TOPICS / "spec.yaml"),
        "--engine",
        "core",
    )
    assert code == 0
    assert "verdict: equivalent\n" in out
    assert "rows: reference 28, candidate 28, matched 28, peak unmatched 6\n" in out


def test_topics_bug_crosses_a_barrier_and_corrupts_a_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = call(
        capsys,
        "compare",
        str(TOPICS / "reference.csv"),
        str(TOPICS / "candidate_bug.csv"),
        "--spec",
        str(TOPICS / "spec.yaml"),
    )
    assert code == 1
    assert "counts: loss 0, duplication 0, reordering 1, corruption 1\n" in out
    assert "corrupted columns: word 1\n" in out
    assert "  * word   | 'truth'   | 'turth'\n" in out


# --- --json ---------------------------------------------------------------------------------


def test_json_output_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(
        capsys,
        "compare",
        str(TAXI / "reference.jsonl"),
        str(TAXI / "candidate_bug.jsonl"),
        "--spec",
        str(TAXI / "spec.yaml"),
        "--json",
    )
    assert (code, err) == (1, "")
    assert out.count("\n") == 1
    document = strict_json(out)
    assert list(document)[:6] == [
        "verdict",
        "spec",
        "spec_file",
        "reference",
        "candidate",
        "equivalent",
    ]
    assert document["verdict"] == "divergent"
    assert document["spec"] == "taxi_distance"
    assert document["reference"] == str(TAXI / "reference.jsonl")
    assert document["counts"] == {"loss": 1, "duplication": 0, "reordering": 1, "corruption": 0}
    assert (document["reference_count"], document["candidate_count"]) == (40, 39)
    assert [(d["kind"], d["key"]) for d in document["divergences"]] == [
        ("reordering", "T3"),
        ("loss", "T2"),
    ]
    loss = document["divergences"][1]
    assert loss["reference_event"]["seq"] == 7
    assert loss["candidate_event"] is None
    assert loss["explanation"] == (
        "reference event #29 is missing from the candidate (expected near #32)"
    )


def test_json_is_strict_for_nan_datetime_decimal_and_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import datetime as dt
    from decimal import Decimal

    moment = dt.datetime(2024, 5, 1, 8, 30, tzinfo=dt.UTC)
    table = pa.table(
        {
            "id": pa.array([1]),
            "x": pa.array([float("nan")]),
            "at": pa.array([moment], pa.timestamp("us", tz="UTC")),
            "amount": pa.array([Decimal("1.10")], pa.decimal128(5, 2)),
            "blob": pa.array([b"\x00\xff"]),
        }
    )
    pq.write_table(table, tmp_path / "ref.parquet")
    pq.write_table(table.slice(0, 0), tmp_path / "cand.parquet")
    spec = write_spec(tmp_path, "dependence: unordered\n")
    code, out, _ = call(
        capsys,
        "compare",
        str(tmp_path / "ref.parquet"),
        str(tmp_path / "cand.parquet"),
        "--spec",
        spec,
        "--json",
    )
    assert code == 1
    [loss] = strict_json(out)["divergences"]
    assert loss["reference_event"] == {
        "id": 1,
        "x": "NaN",
        "at": "2024-05-01T08:30:00+00:00",
        "amount": "1.10",
        "blob": "AP8=",
    }


def test_limit_keeps_fewer_witnesses_but_counts_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = write_jsonl(tmp_path / "ref.jsonl", [{"n": i} for i in range(5)])
    cand = write_jsonl(tmp_path / "cand.jsonl", [])
    spec = write_spec(tmp_path, "dependence: unordered\n")
    code, out, _ = call(capsys, "compare", ref, cand, "--spec", spec, "--json", "--limit", "2")
    document = strict_json(out)
    assert code == 1
    assert document["counts"]["loss"] == 5
    assert len(document["divergences"]) == 2
    code, out, _ = call(capsys, "compare", ref, cand, "--spec", spec, "--limit", "0")
    assert code == 1
    assert "counts: loss 5, duplication 0, reordering 0, corruption 0\n" in out
    assert out.endswith("\n... and 5 more (raise --limit to see their witnesses)\n")


# --- semantics the CLI adds -----------------------------------------------------------------


def test_order_by_sorts_each_output_before_comparing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"seq": i, "v": i * i} for i in range(6)]
    ref = write_jsonl(tmp_path / "ref.jsonl", rows)
    cand = write_jsonl(tmp_path / "cand.jsonl", rows[3:] + rows[:3])
    ordered = write_spec(tmp_path, "dependence: ordered\n")
    assert call(capsys, "compare", ref, cand, "--spec", ordered)[0] == 1
    sorted_spec = write_spec(tmp_path, "dependence: ordered\noutput: {order_by: [seq]}\n")
    assert call(capsys, "compare", ref, cand, "--spec", sorted_spec)[0] == 0


def test_empty_reference_against_a_non_empty_candidate_is_divergent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = write_jsonl(tmp_path / "ref.jsonl", [])
    cand = write_jsonl(tmp_path / "cand.jsonl", [{"k": 1}])
    spec = write_spec(tmp_path, "dependence: {key: k}\n")
    code, out, _ = call(capsys, "compare", ref, cand, "--spec", spec)
    assert code == 1
    assert "counts: loss 0, duplication 1, reordering 0, corruption 0\n" in out


def test_witness_values_are_printable_and_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = write_jsonl(tmp_path / "ref.jsonl", [{"k": 1, "text": "bell\x07tab\there"}])
    cand = write_jsonl(tmp_path / "cand.jsonl", [{"k": 1, "text": "x" * 100}])
    spec = write_spec(tmp_path, "dependence: {key: k}\n")
    code, out, _ = call(capsys, "compare", ref, cand, "--spec", spec)
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("  * "))
    assert row == "  * text   | 'bell\\x07tab\\there' | 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."
    assert show(None) == "null"
    assert show(True) == "true"


def test_values_print_as_the_json_documents_spell_them() -> None:
    """Spark gives datetimes, decimals and NaN where the core's JSON reading gives strings
    and numbers: each prints one way on every path."""
    when = dt.datetime(2024, 5, 1, 6, 0)
    assert show(when) == "2024-05-01T06:00:00"
    assert show(dt.date(2024, 5, 1)) == "2024-05-01"
    assert show(Decimal("12.50")) == "12.50"
    assert [show(v) for v in (math.nan, math.inf, -math.inf, 1.5)] == [
        "NaN", "Infinity", "-Infinity", "1.5",
    ]  # fmt: skip
    assert show(("T1", when)) == "('T1', 2024-05-01T06:00:00)"
    assert show(("T1",)) == "('T1',)"
    assert show({"at": [when, None]}) == "{'at': [2024-05-01T06:00:00, null]}"


# --- errors: exit 2, one line, no traceback -------------------------------------------------


def assert_one_line_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr == f"parity: error: {message}\n"


def test_missing_reference_file() -> None:
    result = run(
        "compare",
        "examples/taxi/nope.jsonl",
        "examples/taxi/candidate_ok.jsonl",
        "--spec",
        "examples/taxi/spec.yaml",
    )
    assert_one_line_error(result, "examples/taxi/nope.jsonl: no such file or directory")


def test_bad_spec_is_one_line(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "dependence: {key: taxi_id}\nequality: {ignore: [taxi_id]}\n")
    result = run(
        "compare",
        "examples/taxi/reference.jsonl",
        "examples/taxi/candidate_ok.jsonl",
        "--spec",
        spec,
    )
    assert_one_line_error(
        result,
        f"{spec}: equality.ignore: equality ignores column 'taxi_id', which the dependence "
        "reads: events it calls equal could differ in their dependences",
    )


def test_unknown_column_names_the_output(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "dependence: {key: taxi}\n")
    result = run(
        "compare",
        "examples/taxi/reference.jsonl",
        "examples/taxi/candidate_ok.jsonl",
        "--spec",
        spec,
    )
    assert_one_line_error(
        result,
        f"{spec}: dependence.key: unknown column 'taxi' in reference "
        "examples/taxi/reference.jsonl (output columns: taxi_id, seq, lat, lon, distance_km, "
        "emitted_at)",
    )


def test_malformed_candidate_line(tmp_path: Path) -> None:
    cand = tmp_path / "cand.jsonl"
    cand.write_text('{"taxi_id": "T1"}\n{"taxi_id": \n', encoding="utf-8")
    result = run(
        "compare",
        "examples/taxi/reference.jsonl",
        str(cand),
        "--spec",
        write_spec(tmp_path, "dependence: {key: taxi_id}\n"),
    )
    assert_one_line_error(result, f"{cand}: line 2: malformed JSON: Expecting value (column 13)")


def test_event_missing_the_key_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON line without the key reads as a null key (Spark's writer drops null fields);
    tests/test_null_keys.py has the rest."""
    ref = write_jsonl(tmp_path / "ref.jsonl", [{"k": 1}, {"v": 2}])
    spec = write_spec(tmp_path, "dependence: {key: k}\n")
    code, _, err = call(capsys, "compare", ref, ref, "--spec", spec)
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("args", "last_line"),
    [
        (
            ["compare", "a", "b"],
            "parity compare: error: the following arguments are required: --spec",
        ),
        ([], "parity: error: the following arguments are required: COMMAND"),
        (
            ["compare", "a", "b", "--spec", "s", "--limit", "-1"],
            "parity compare: error: argument --limit: expected a whole number >= 0, got '-1'",
        ),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], last_line: str
) -> None:
    code, out, err = call(capsys, *args)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == last_line


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, "frobnicate")
    assert (code, out) == (2, "")
    # The list of choices is quoted or not depending on the Python patch release.
    assert err.splitlines()[-1].startswith(
        "parity: error: argument COMMAND: invalid choice: 'frobnicate' (choose from "
    )


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(capsys, "compare", "--help")
    assert code == 0
    assert out.startswith("usage: parity compare [-h] --spec SPEC.yaml [--json] [--limit N]")


@pytest.mark.spark
@pytest.mark.slow
def test_console_script_on_a_directory_matches_on_spark_quietly() -> None:
    """A directory output makes ``--engine auto`` use a local Spark: same verdict as the
    core, and none of the JVM's chatter on stderr."""
    script = Path(sys.executable).parent / "parity"
    assert script.exists(), "make install puts the parity console script in the venv"
    bug = ["examples/topics/reference.csv", "examples/topics/candidate_bug.csv"]
    result = subprocess.run(
        [str(script), "compare", *bug, "--spec", "examples/topics/spec.yaml", "--json",
         "--engine", "spark"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (1, "")
    core = subprocess.run(
        [str(script), "compare", *bug, "--spec", "examples/topics/spec.yaml", "--json",
         "--engine", "core"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    on_spark, on_core = strict_json(result.stdout), strict_json(core.stdout)
    assert on_spark["counts"] == on_core["counts"]
    assert on_spark["divergences"] == on_core["divergences"]
    ok = subprocess.run(
        [str(script), "compare", "examples/topics/reference.csv", "examples/topics/candidate_ok",
         "--spec", "examples/topics/spec.yaml", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert (ok.returncode, ok.stderr) == (0, "")
    assert strict_json(ok.stdout)["verdict"] == "equivalent"


def test_readme_shows_the_real_demo_output() -> None:
    """The worked example in the README is pasted output; this keeps it true."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```text\n$ parity compare ", 1)[1].split("```", 1)[0]
    sessions = ("$ parity compare " + block).split("$ ")[1:]
    assert len(sessions) == 2
    for session in sessions:
        command, _, expected = session.partition("\n")
        result = run(*shlex.split(command)[1:])
        assert result.returncode in (0, 1)
        assert result.stdout == expected.rstrip("\n") + "\n"
