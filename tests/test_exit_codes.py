"""Exit 1 means divergent and nothing else (issue 10, item 9): every failure is exit 2 with
one line on stderr, a bug included; and keys of any type (lists, structs, maps) work."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from matcher import compare
from matcher.dependence import by_key, column_equals, ordered, punctuation, typed, with_barriers
from matcher.equality import NAN
from matcher.errors import InputError, SpecError
from matcher.relation import key_form
from matcher.serialize import json_safe
from matcher.spark.failures import known_failure
from parity.cli import main

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

ONE_REORDERING = {"loss": 0, "duplication": 0, "reordering": 1, "corruption": 0}


def write_lines(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def spec_file(tmp_path: Path, text: str = "dependence: {key: [k]}\n") -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- keys of any type -------------------------------------------------------------------------


def test_key_forms_are_hashable_and_equal_exactly_when_the_values_are() -> None:
    assert key_form([1, [2, None]]) == (1, (2, None))
    assert key_form({"b": 1, "a": [2]}) == key_form({"a": [2], "b": 1})  # entry order aside
    assert key_form({"a": 1}) != key_form([["a", 1]])  # a map is not a list of pairs
    assert key_form([float("nan")]) == (NAN,)
    assert key_form(bytearray(b"x")) == b"x"
    assert {key_form({"a": {"b": [1]}}): 1}  # hashable, however nested


@pytest.mark.parametrize(
    ("first", "second"),
    [([1, 2], [3]), ({"x": 1}, {"x": 2}), ({"m": 1, "n": 2}, {"n": 3})],
    ids=["list", "struct", "map"],
)
def test_nested_values_are_keys_on_the_core(first: Any, second: Any) -> None:
    reference = [{"k": first, "v": 1}, {"k": second, "v": 2}, {"k": first, "v": 3}]
    assert compare(reference, [reference[1], reference[0], reference[2]], by_key("k")).equivalent
    verdict = compare(reference, [reference[2], reference[1], reference[0]], by_key("k"))
    assert dict(verdict.counts) == ONE_REORDERING
    assert [(d.kind, d.key) for d in verdict.divergences] == [("reordering", first)]


def test_a_map_key_is_one_key_whatever_its_entry_order() -> None:
    reference = [{"k": {"a": 1, "b": 2}, "v": 1}, {"k": {"b": 2, "a": 1}, "v": 2}]
    verdict = compare(reference, reference[::-1], by_key("k"))
    assert dict(verdict.counts) == ONE_REORDERING


def test_nested_values_in_other_forms_are_no_crash() -> None:
    events = [{"kind": ["E"], "k": [1], "ts": 1}]
    barriers = with_barriers(by_key("k"), column_equals("kind", "B"))
    assert compare(events, events, barriers).equivalent is True  # a list is never "B"
    with pytest.raises(InputError, match=r"event type \['E'\] is not declared in types"):
        compare(events, events, typed("kind", {"E": ["k"]}, [["E", "E"]]))
    mixed: list[dict[str, Any]] = [{"ts": 1, "p": True}, {"ts": "x", "p": False}]
    with pytest.raises(InputError, match=r"timestamps .* cannot be compared"):
        compare(mixed, mixed[::-1], punctuation(column_equals("p", True), "ts"))
    assert compare([{"k": [1]}], [{"k": [1]}], ordered()).equivalent is True


def test_a_list_key_through_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "a.jsonl", ['{"k":[1,2],"v":1}', '{"k":{"a":1},"v":2}'])
    code, _, err = call(capsys, "compare", path, path, "--spec", spec_file(tmp_path))
    assert (code, err) == (0, "")


# -- exit 2, one line -------------------------------------------------------------------------


def test_deep_nesting_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_lines(tmp_path / "a.jsonl", ['{"k":1,"v":' + "[" * 500 + "1" + "]" * 500 + "}"])
    b = write_lines(tmp_path / "b.jsonl", ['{"k":1,"v":' + "[" * 500 + "2" + "]" * 500 + "}"])
    code, out, err = call(capsys, "compare", a, b, "--spec", spec_file(tmp_path))
    assert (code, out) == (2, "")
    assert err == (  # matcher.equality.MAX_NESTING (issue 29, item 21)
        "parity: error: a value is nested deeper than 480 levels (arrays, maps and structs): "
        "too deep to compare\n"
    )


def test_a_lone_surrogate_is_escaped_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_lines(tmp_path / "a.jsonl", ['{"k":1,"v":"\\ud800"}'])
    b = write_lines(tmp_path / "b.jsonl", ['{"k":1,"v":"x"}'])
    code, out, err = call(capsys, "compare", "--json", a, b, "--spec", spec_file(tmp_path))
    assert (code, err) == (1, "")
    out.encode("utf-8")  # writable as UTF-8
    (witness,) = json.loads(out)["divergences"]
    assert (witness["kind"], witness["reference_event"]) == ("corruption", {"k": 1, "v": "\\ud800"})
    assert json_safe({"\udcff": ["a\ud800b", "é"]}) == {"\\udcff": ["a\\ud800b", "é"]}


def test_a_spec_function_that_raises_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "raising_equality.py").write_text("def eq(a, b):\n    return 1 / 0\n")
    spec = spec_file(
        tmp_path, "dependence: {key: [k]}\nequality: {function: 'raising_equality:eq'}\n"
    )
    a = write_lines(tmp_path / "a.jsonl", ['{"k":1,"v":1}'])
    code, out, err = call(capsys, "compare", a, a, "--spec", spec)
    assert (code, out) == (2, "")
    assert err == (
        "parity: error: the spec's function raising_equality:eq raised "
        "ZeroDivisionError: division by zero\n"
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["compare", "a", "b", "--spec", "s", "--limit", str(2**70)],
            f"parity compare: error: argument --limit: expected a whole number <= {2**63 - 1}, "
            f"got '{2**70}'",
        ),
        (
            ["history", "--limit", str(2**70)],
            f"parity history: error: argument --limit: expected a whole number <= {2**63 - 1}, "
            f"got '{2**70}'",
        ),
    ],
    ids=["compare", "history"],
)
def test_an_out_of_range_limit_is_a_usage_error(
    args: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = call(capsys, *args)
    assert (code, out, err.splitlines()[-1]) == (2, "", line)


def test_non_utf8_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'results.db'}"
    code, out, err = call(capsys, "history", "--validation", "\udcff", "--db", db)
    assert (code, out, err) == (2, "", "parity: error: argument b'\\xff' is not UTF-8 text\n")
    # compare's arguments are paths, and a path may be any bytes
    a = write_lines(tmp_path / "a\udcff.jsonl", ['{"k":1}'])
    code, out, err = call(capsys, "compare", "--json", a, a, "--spec", spec_file(tmp_path))
    assert (code, err) == (0, "")
    assert json.loads(out)["reference"] == a.replace("\udcff", "\\udcff")


def test_a_bug_is_an_internal_error_with_its_traceback_in_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("parity.cli.compare.compare_files", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    a = write_lines(tmp_path / "a.jsonl", ['{"k":1}'])
    code, out, err = call(capsys, "compare", a, a, "--spec", spec_file(tmp_path))
    assert (code, out) == (2, "")
    match = re.fullmatch(
        r"parity: internal error: RuntimeError: boom \(a bug in Parity; traceback in "
        r"(.*/parity-traceback-\w+\.txt)\)\n",
        err,
    )
    assert match is not None, err
    saved = Path(match.group(1)).read_text(encoding="utf-8")
    assert saved.startswith("Traceback (most recent call last):\n")
    assert saved.endswith("RuntimeError: boom\nsecond line\n")


def test_known_failures() -> None:
    assert known_failure(RuntimeError("x")) is None

    class PythonException(Exception):  # how a Spark worker's exception reaches the driver
        pass

    worker = PythonException(
        "\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/spec/dir/eqs.py", line 2, in eq\n'
        "    return 1 / 0\n"
        "ZeroDivisionError: division by zero\n"
    )
    failure = known_failure(worker)
    assert (type(failure), str(failure)) == (
        InputError,
        "a Spark worker failed: ZeroDivisionError: division by zero",
    )

    def eq(a: Any, b: Any) -> bool:
        return True

    from pyspark.errors import PySparkValueError

    too_deep = PySparkValueError(
        errorClass="CANNOT_PARSE_DATATYPE", messageParameters={"msg": "too deep"}
    )
    assert (
        str(known_failure(too_deep))
        == "[CANNOT_PARSE_DATATYPE] Unable to parse datatype. too deep."
    )

    class Py4JJavaError(Exception):
        pass

    jvm = Py4JJavaError(
        "An error occurred while calling o1.count.\n: java.lang.StackOverflowError\n"
    )
    assert str(known_failure(jvm)) == "Spark failed: java.lang.StackOverflowError"

    eq.__code__ = eq.__code__.replace(co_filename="/spec/dir/eqs.py")
    failure = known_failure(worker, {"eqs:eq": eq})
    assert (type(failure), str(failure)) == (
        SpecError,
        "the spec's function eqs:eq raised ZeroDivisionError: division by zero",
    )


# -- the match job ----------------------------------------------------------------------------


def test_a_bug_in_the_match_job_stores_the_run_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobs.match import main as match_main
    from matcher.store import Store

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("unhashable type: 'list'")

    monkeypatch.setattr("jobs.match.compare", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    db = f"sqlite:///{tmp_path / 'results.db'}"
    args = ["--reference", "a", "--candidate", "b", "--spec", spec_file(tmp_path)]
    assert match_main([*args, "--db", db, "--run-id", "bug-1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert re.fullmatch(
        r"match: internal error: TypeError: unhashable type: 'list' \(a bug in Parity; "
        r"traceback in .*/match-traceback-\w+\.txt\)\n",
        err,
    ), err
    with Store(db) as store:
        run = store.get_run("bug-1")
    assert run is not None
    assert (run.status, run.verdict) == ("failed", "error")


def test_the_match_job_refuses_non_utf8_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    from jobs.match import parse_args

    with pytest.raises(SystemExit) as exit_:
        parse_args(["--reference", "a", "--candidate", "b", "--spec", "s", "--run-id", "\udcff"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "match: error: argument b'\\xff' is not UTF-8 text"
    )


# -- Spark ------------------------------------------------------------------------------------


@pytest.mark.spark
def test_nested_keys_group_on_spark(spark: Any) -> None:
    """Arrays, maps and structs holding maps as keys; two maps with their entries in a
    different order are one key (Spark can neither group by nor hash a map)."""
    from matcher.spark import compare_dataframes

    names = ("a", "m", "s", "v")
    schema = "__pos long, a array<int>, m map<string,int>, s struct<f:map<string,int>>, v int"

    def stream_frames(*streams: list[dict[str, Any]]) -> list[Any]:
        return [
            spark.createDataFrame(
                [(pos, *(event[n] for n in names)) for pos, event in enumerate(events)], schema
            )
            for events in streams
        ]

    first = {"a": [1, 2], "m": {"x": 1, "y": 2}, "s": {"f": {"x": 1, "y": 2}}, "v": 1}
    again = {"a": [1, 2], "m": {"y": 2, "x": 1}, "s": {"f": {"y": 2, "x": 1}}, "v": 2}
    other = {"a": [3], "m": {"z": 3}, "s": {"f": {"z": 3}}, "v": 3}
    reference = [first, other, again]
    reordered = [again, other, first]
    ref, cand = stream_frames(reference, reordered)
    for column in ("a", "m", "s"):
        verdict = compare_dataframes(ref, cand, by_key(column))
        assert (dict(verdict.counts), verdict.divergences[0].key) == (
            ONE_REORDERING,
            first[column],
        ), column
