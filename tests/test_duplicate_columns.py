"""Column names twice, or twice but for their case: one error, the same on both engines.

Python's JSON reader kept the last of a key named twice; Spark refused it, naming neither
file nor line, read a key spelled in two cases in different objects as one column (the
values of one spelling null), and read a Parquet file beyond the first with a column twice
as if it had one (``matcher.columns``, ``matcher.spark.columns``). Now every engine stops
with one line naming the file, the line (JSON, CSV) and the columns, and exit 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from matcher.errors import InputError
from matcher.files.readers import read_events
from matcher.spark.failures import known_failure
from matcher.store import Store
from parity.cli import main
from tests.test_match_job import output, submit

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

ENGINES = ("core", pytest.param("spark", marks=pytest.mark.spark))
CASE = "(Spark takes them for one column)"


def json_output(directory: Path, *lines: str) -> Path:
    directory.mkdir()
    (directory / "part-00000.json").write_text("".join(f"{line}\n" for line in lines))
    return directory


def parquet_output(directory: Path, table: pa.Table) -> Path:
    directory.mkdir()
    pq.write_table(table, directory / "part-00000.parquet")
    return directory


def struct(**columns: list[Any]) -> pa.StructArray:
    """A struct column whose fields may share a name (``x_`` is ``x`` again, ``X`` its
    capital)."""
    names = [name.rstrip("_") for name in columns]
    return pa.StructArray.from_arrays([pa.array(v) for v in columns.values()], names=names)


# (the output, the file that is wrong, the message after "FILE: ")
CASES = {
    "JSON, top level": (
        lambda d: json_output(d, '{"k":1,"a":1}', '{"k":2,"a":2,"a":3}'),
        "part-00000.json",
        "line 2: duplicate columns in the object: ['a']",
    ),
    "JSON, nested": (
        lambda d: json_output(d, '{"k":1,"s":{"x":1,"y":[{"z":1,"z":2}]}}'),
        "part-00000.json",
        "line 1: duplicate columns in the object: ['s.y[].z']",
    ),
    "JSON, case in one object": (
        lambda d: json_output(d, '{"k":1,"a":1,"A":2}'),
        "part-00000.json",
        f"line 1: columns that differ only in case: ['A', 'a'] {CASE}",
    ),
    "JSON, case across objects": (  # Spark read the second a as null, silently
        lambda d: json_output(d, '{"k":1,"s":{"x":1}}', '{"k":2,"s":{"X":2}}'),
        "part-00000.json",
        f"line 2: columns that differ only in case: ['s.X', 's.x'] {CASE}",
    ),
    "Parquet, top level": (
        lambda d: parquet_output(d, pa.table([[1], [2], [3]], names=["k", "a", "a"])),
        "part-00000.parquet",
        "duplicate columns in the Parquet schema: ['a']",
    ),
    "Parquet, nested": (
        lambda d: parquet_output(d, pa.table([[1], struct(x=[1], x_=[2])], names=["k", "s"])),
        "part-00000.parquet",
        "duplicate columns in the Parquet schema: ['s.x']",
    ),
    "Parquet, case": (
        lambda d: parquet_output(d, pa.table([[1], struct(x=[1], X=[2])], names=["k", "s"])),
        "part-00000.parquet",
        f"columns that differ only in case: ['s.X', 's.x'] {CASE}",
    ),
}


@pytest.fixture
def spec(tmp_path: Path) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text("name: names\ndependence: {key: [k]}\n")
    return str(path)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(CASES))
def test_parity_compare_says_which_file_line_and_columns(
    case: str,
    engine: str,
    spec: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if engine == "spark":
        request.getfixturevalue("spark")  # the shared session, which the command then uses
    write, file, message = CASES[case]
    bad = write(tmp_path / "out")
    code = main(["compare", str(bad), str(bad), "--spec", spec, "--engine", engine])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"parity: error: {bad / file}: {message}\n")


def test_a_csv_header_that_differs_only_in_case(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("k,a,A\n1,2,3\n")
    with pytest.raises(InputError) as info:
        list(read_events(path))
    expected = f"{path}: line 1: columns that differ only in case: ['A', 'a'] {CASE}"
    assert str(info.value) == expected


@pytest.mark.spark
@pytest.mark.slow
def test_the_match_job_stores_the_run_failed(tmp_path: Path) -> None:
    """The case Spark read without a word: a key spelled ``A`` in one object and ``a`` in
    the others. The job used to find the candidate divergent (``A``'s value read as null)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: names\ndependence: {key: [k]}\n")
    reference = json_output(tmp_path / "reference", '{"k":1,"a":1}', '{"k":2,"a":2}')
    candidate = json_output(tmp_path / "candidate", '{"k":1,"a":1}', '{"k":2,"A":2}')
    db = f"sqlite:///{tmp_path / 'results.db'}"
    result = submit(
        tmp_path,
        *("--reference", str(reference), "--candidate", str(candidate)),
        *("--spec", str(spec), "--db", db, "--run-id", "names-1"),
    )
    assert result.returncode == 2, output(result)[-3000:]
    assert "Traceback" not in output(result)
    errors = [line for line in output(result).splitlines() if line.startswith("match: error:")]
    file = candidate / "part-00000.json"
    message = f"line 2: columns that differ only in case: ['A', 'a'] {CASE}"
    assert errors == [f"match: error: {file}: {message}"]
    with Store(db) as store:
        run = store.get_run("names-1")
    assert run is not None
    assert (run.status, run.verdict, run.divergences) == ("failed", "error", ())


@pytest.mark.spark
def test_a_column_twice_in_a_later_parquet_file_that_spark_reads_remotely(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A path that is not local (a glob here, as HDFS or S3 would be): Spark takes the
    schema from the first file, and fails the task that reads the second. Its error
    becomes the core's, naming the file."""
    from matcher.spark import read_stream

    pq.write_table(pa.table([[1], [2]], names=["k", "a"]), tmp_path / "part-00000.parquet")
    twice = pa.table([[3], [4], [5]], names=["k", "a", "a"])
    pq.write_table(twice, tmp_path / "part-00001.parquet")
    with pytest.raises(Py4JJavaError) as info:
        read_stream(spark, f"{tmp_path}/*.parquet", format="parquet").collect()
    found = known_failure(info.value)
    assert isinstance(found, InputError)
    file = f"file://{tmp_path}/part-00001.parquet"
    assert str(found) == f"{file}: duplicate columns in the Parquet schema: ['a']"


# -- the reader's check of every JSON object, against an oracle -----------------------------

KEYS = st.sampled_from(["a", "b", "A", 'c"', "d:e"])
SPACE = st.sampled_from(["", " ", "\t", "  "])


@st.composite
def json_texts(draw: st.DrawFn, depth: int = 0) -> str:
    """A JSON object written by hand: keys may repeat, spaces may stand before a colon, and
    a value may be an object, an array of objects or a string holding ``":``."""
    members = []
    for _ in range(draw(st.integers(0, 4))):
        key = json.dumps(draw(KEYS))
        choice = draw(st.integers(0, 3 if depth < 2 else 1))
        if choice == 0:
            value = str(draw(st.integers(0, 9)))
        elif choice == 1:
            value = json.dumps(draw(st.sampled_from(['x":', "08:00", "y"])))
        elif choice == 2:
            value = draw(json_texts(depth + 1))
        else:
            value = f"[{draw(json_texts(depth + 1))}]"
        members.append(f"{key}{draw(SPACE)}:{draw(SPACE)}{value}")
    return "{" + ",".join(members) + "}"


def repeats(text: str) -> bool:
    """The oracle: does any object of ``text`` name a key twice?"""
    found = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in items]
        found.append(len(set(names)) < len(names))
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)
    return any(found)


@given(st.lists(json_texts(), min_size=1, max_size=4))
def test_the_reader_refuses_exactly_the_objects_that_repeat_a_key(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = tmp_path_factory.mktemp("json") / "out.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines))
    first = next((n for n, line in enumerate(lines, start=1) if repeats(line)), None)
    if first is None:
        assert [json.dumps(e) for e in read_events(path)] == [
            json.dumps(json.loads(line)) for line in lines
        ]
    else:
        where = re.escape(f"{path}: line {first}: duplicate columns in the object")
        with pytest.raises(InputError, match=f"^{where}"):
            list(read_events(path))
