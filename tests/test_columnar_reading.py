"""The columnar JSON lines reader (``matcher.files.columnar``) against the per-line one
(``PARITY_READER=lines``): the same events (values, their types, key order), the same
schemas, the same verdicts and the same one-line errors, on the bundled outputs and on
every shape of line that the columnar path must either read exactly or hand back."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matcher.equality import Equality
from matcher.errors import InputError, ParityError
from matcher.files import columnar, compare
from matcher.files.compare import compare_files
from matcher.files.output_schema import read_schema
from matcher.files.readers import (
    COLUMN_SAMPLE,
    READER_VARIABLE,
    data_files,
    json_event_batches,
    read_columns,
    read_events,
)
from matcher.online import _keyed_equal
from matcher.spec import parse_spec

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted(
    [p for p in (ROOT / "examples").rglob("*") if p.suffix in (".jsonl", ".csv", ".json")]
    + [ROOT / "examples" / "topics" / "candidate_ok"]
    + list((ROOT / "jobs" / "examples").rglob("*.jsonl"))
)


def both(monkeypatch: pytest.MonkeyPatch, read: Callable[[], Any]) -> tuple[Any, Any]:
    """``read()`` with the columnar reader, then with the per-line one; each is an outcome:
    its value's ``repr`` (which tells ``1`` from ``1.0`` and ``True``, and shows key order)
    or its error's message."""
    outcomes = []
    for reader in ("columnar", "lines"):
        if reader == "lines":
            monkeypatch.setenv(READER_VARIABLE, "lines")
        else:
            monkeypatch.delenv(READER_VARIABLE, raising=False)
        try:
            outcomes.append(repr(read()))
        except ParityError as exc:  # an InputError, or a SpecError before any event
            outcomes.append(f"{type(exc).__name__}: {exc}")
    monkeypatch.delenv(READER_VARIABLE, raising=False)
    return outcomes[0], outcomes[1]


def events_of(path: Path, columns: tuple[str, ...] = ()) -> Callable[[], Any]:
    return lambda: list(read_events(path, None, columns))


def assert_same(monkeypatch: pytest.MonkeyPatch, path: Path) -> str:
    """Events (with and without the output's columns) and schema agree; returns the
    columnar outcome of the events."""
    try:
        columns = read_columns(path) or ()
    except InputError:  # the error is in the first objects: read_events says it too
        columns = ()
    columnar_events, line_events = both(monkeypatch, events_of(path, columns))
    assert columnar_events == line_events
    assert both(monkeypatch, events_of(path)) == both(monkeypatch, events_of(path))[::-1]
    assert (
        both(monkeypatch, lambda: read_schema(path))
        == (both(monkeypatch, lambda: read_schema(path))[1],) * 2
    )
    return columnar_events


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


@pytest.fixture(params=[columnar.BLOCK_BYTES, 64], ids=["one-block", "many-blocks"])
def block(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Each file read in one block, and in blocks of 64 bytes (lines cross blocks)."""
    monkeypatch.setattr(columnar, "BLOCK_BYTES", request.param)
    return int(request.param)


# --- the bundled outputs ----------------------------------------------------------------------


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_bundled_outputs_read_the_same(
    path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same(monkeypatch, path)


def test_bundled_json_is_read_columnar_not_handed_back(tmp_path: Path) -> None:
    path = ROOT / "examples" / "taxi" / "reference.jsonl"
    batches = list(json_event_batches(path))
    assert sum(len(b.events) for b in batches) == len(list(read_events(path)))
    assert all(b.decoded == () and b.error is None for b in batches)


def test_gzipped_and_part_file_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = ROOT / "examples" / "taxi" / "reference.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    out = tmp_path / "out"
    write(out / "part-00000.json", b"".join(lines[: len(lines) // 2]))
    write(out / "part-00001.json.gz", gzip.compress(b"".join(lines[len(lines) // 2 :])))
    write(out / "_SUCCESS", "")
    events = assert_same(monkeypatch, out)
    assert events == repr(list(read_events(source, None, read_columns(source) or ())))


# --- every shape of line ----------------------------------------------------------------------

SHAPES = {
    "flat": '{"k": 1, "v": 1.5, "s": "x", "b": true}\n{"k": 2, "v": -0.25, "s": "y", "b": false}\n',
    "compact": '{"k":1,"v":1.5}\n{"k":2,"v":2.5}',
    "mixed int and float": '{"v": 1.5}\n{"v": 2}\n{"v": 3.0}\n{"v": -0}\n{"v": 1e3}\n{"v": 7}\n',
    "only ints then floats": '{"v": 1}\n{"v": 2}\n' + '{"v": 1.0}\n' * 3,
    "missing fields": '{"a": 1, "b": 2}\n{"a": 3}\n{"b": 4}\n{"a": 5, "b": 6}\n',
    "keys in another order": '{"a": 1, "b": 2}\n{"b": 3, "a": 4}\n{"a": 5, "b": 6}\n',
    "nulls": '{"a": 1, "b": null}\n{"a": null, "b": 2}\n{"a": 3, "b": 4}\n',
    "nan and infinities": '{"a": 1.5}\n{"a": NaN}\n{"a": Infinity}\n{"a": -Infinity}\n',
    "overflowing and tiny": '{"a": 1e400}\n{"a": 5e-324}\n{"a": 1.5}\n'
    '{"a": 2.2250738585072014e-308}\n',
    "long integers": '{"a": 1}\n{"a": 123456789012345678}\n{"a": 1234567890123456789}\n'
    '{"a": -9223372036854775809}\n{"a": 99999999999999999999999999}\n{"a": 2}\n',
    "nested": '{"a": 1, "s": {"x": 1}}\n{"a": 2, "l": [1, 2.0, "x"]}\n{"a": 3, "s": {"x": 2}}\n',
    "unicode": '{"s": "caf\u00e9 \u4e2d\u6587 \U0001f600"}\n{"s": "\\u00e9\\ud83d\\ude00"}\n'
    '{"s": "plain"}\n{"\u00e9t\u00e9": "\u00e9"}\n',
    "escapes and quotes": '{"s": "a\\"b"}\n{"s": "a\\\\b"}\n{"s": "tab\\there"}\n{"s": "/\\/"}\n'
    '{"s": "x"}\n{"s": "\\u0000"}\n',
    "names that need escapes": '{"a b": 1, "c.d": 2, "e\\"f": 3, "(x)": 4}\n'
    '{"a b": 5, "c.d": 6, "e\\"f": 7, "(x)": 8}\n',
    "colons in values": '{"t": "12:30:00", "a": 1}\n{"t": "13:00:00", "a": 2}\n',
    "blank and whitespace lines": '\n{"a": 1}\n   \n\t\n{"a": 2}\r\n\r\n  {"a": 3}  \n\u3000\n',
    "crlf": '{"a": 1}\r\n{"a": 2}\r\n',
    "byte order mark": '\ufeff{"a": 1}\n{"a": 2}\n',
    "no trailing newline": '{"a": 1}\n{"a": 2}',
    "booleans and numbers mixed": '{"a": true}\n{"a": 1}\n{"a": false}\n{"a": 0}\n',
    "strings and numbers mixed": '{"a": "1"}\n{"a": 1}\n{"a": "x"}\n',
    "empty object": '{}\n{"a": 1}\n{}\n',
    "leading whitespace": ' \t{ "a" : 1 , "b" : "x" } \t\n{"a":2,"b":"y"}\n',
    "only blank lines": "\n\n  \n",
    "empty file": "",
    "names differing in case": '{"a": 1}\n{"A": 2}\n',
}

ERRORS = {
    "malformed": '{"a": 1}\n{"a": }\n{"a": 2}\n',
    "trailing garbage": '{"a": 1}\n{"a": 2} x\n',
    "trailing comma": '{"a": 1}\n{"a": 2,}\n',
    "not an object": '{"a": 1}\n[1, 2]\n',
    "duplicate key": '{"a": 1, "b": 2}\n{"a": 1, "a": 2}\n',
    "duplicate key nested": '{"a": 1}\n{"a": {"x": 1, "x": 2}}\n',
    "duplicate key then malformed": '{"a": 1}\n{"a": 1, "a": 2} x\n',
    "leading zero": '{"a": 1}\n{"a": 01}\n',
    "single quotes": "{\"a\": 1}\n{'a': 2}\n",
    "raw control character": '{"a": "x"}\n{"a": "x\ty"}\n',
    "bare word": '{"a": 1}\n{"a": nul}\n',
}


@pytest.mark.parametrize("text", list(SHAPES.values()), ids=list(SHAPES))
def test_every_shape_reads_the_same(
    text: str, tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same(monkeypatch, write(tmp_path / "out.jsonl", text))


@pytest.mark.parametrize("text", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_keep_their_one_line_message(
    text: str, tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "out.jsonl", text)
    got = assert_same(monkeypatch, path)
    assert got.startswith(f"InputError: {path}: line 2: ")
    assert "\n" not in got


def test_exact_messages(tmp_path: Path) -> None:
    def error(name: str, data: str | bytes) -> str:
        path = write(tmp_path / name, data)
        with pytest.raises(InputError) as info:
            list(read_events(path))
        return str(info.value).replace(str(path), "F")

    assert error("a.jsonl", b'{"a": 1}\n{"a": "caf\xe9"}\n') == (
        "F: line 2: not UTF-8 (byte 0xe9 at column 11)"
    )
    assert error("b.jsonl", '{"a": 1}\n{"a": }\n') == (
        "F: line 2: malformed JSON: Expecting value (column 7)"
    )
    assert error("c.jsonl", '{"a": 1, "b": 2}\n{"a": 1, "a": 2}\n') == (
        "F: line 2: duplicate columns in the object: ['a']"
    )


def test_non_utf8_in_a_later_block_streams_the_rows_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 64)
    good = "".join(f'{{"a": {i}}}\n' for i in range(20))
    path = write(tmp_path / "out.jsonl", good.encode() + b'{"a": "\xff"}\n{"a": 1}\n')
    events = read_events(path)
    assert list(itertools.islice(events, 20)) == [{"a": i} for i in range(20)]
    with pytest.raises(InputError, match=r"line 21: not UTF-8 \(byte 0xff at column 8\)"):
        next(events)


# --- verdicts ---------------------------------------------------------------------------------

SPEC = {"name": "t", "dependence": {"key": ["k"]}, "equality": {"ignore": ["seq"]}}


@pytest.mark.parametrize(
    ("reference", "candidate"),
    [
        ('{"k": 1, "seq": 0, "v": 1.5}\n{"k": 2, "seq": 1, "v": 2}\n',
         '{"k": 2, "seq": 0, "v": 2}\n{"k": 1, "seq": 1, "v": 1.5}\n'),
        ('{"k": 1, "seq": 0, "v": 1.5}\n{"k": 1, "seq": 1, "v": 2}\n',
         '{"k": 1, "seq": 0, "v": 2}\n{"k": 1, "seq": 1, "v": 1.5}\n'),
        ('{"k": 1, "seq": 0, "v": 1}\n', '{"k": 1, "seq": 0, "v": 1.0}\n'),
        ('{"k": 1, "seq": 0, "v": 1}\n', '{"k": 1, "seq": 0, "v": true}\n'),
        ('{"k": 1, "seq": 0, "v": NaN}\n', '{"k": 1, "seq": 0, "v": NaN}\n'),
        ('{"k": 1, "seq": 0, "v": 1}\n', '{"k": 1, "seq": 0}\n'),
        ('{"k": 1, "seq": 0, "v": "x"}\n', '{"k": 1, "seq": 0, "v": 1}\n'),
        ('{"k": 1, "seq": 0, "v": 1}\n{"k": 1, "seq": 1, "v": 1}\n',
         '{"k": 1, "seq": 0, "v": 1}\n'),
        ('{"k": 1, "seq": 0}\n{"k": 1, "seq": 1}\n{"k": 1, "seq": }\n',
         '{"k": 1, "seq": 0}\n{"k": 1, "seq": }\n'),
        ('{"k": 1, "seq": 0}\n', '{"seq": 0}\n'),
        ('{"k": 1, "seq": 0, "v": 1}\n', '{"k": "1", "seq": 0, "v": 1}\n'),
        ('{"k": 1, "seq": 0, "v": 1}\n', '{"k": 1, "seq": 0, "v": 1, "V": 2}\n'),
    ],
)  # fmt: skip
def test_verdicts_are_the_same(
    reference: str, candidate: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = parse_spec(SPEC)
    ref = write(tmp_path / "reference.jsonl", reference)
    cand = write(tmp_path / "candidate.jsonl", candidate)

    def verdict() -> Any:
        found = compare_files(spec, str(ref), str(cand), 10)
        return found.to_dict()

    columnar_verdict, line_verdict = both(monkeypatch, verdict)
    assert columnar_verdict == line_verdict


def test_a_large_equivalent_pair_matches_in_one_pass(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"k": i % 7, "seq": i, "v": i * 0.5, "s": f"e{i}"} for i in range(3000)
    ]
    moved = sorted(rows, key=lambda r: (r["seq"] // 10, -r["k"]))  # each key keeps its order
    moved = [{**r, "seq": n} for n, r in enumerate(moved)]
    ref = write(tmp_path / "r.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    cand = write(tmp_path / "c.jsonl", "".join(json.dumps(r) + "\n" for r in moved))
    verdict = compare_files(parse_spec(SPEC), str(ref), str(cand), 10)
    assert (verdict.equivalent, verdict.matched_count) == (True, 3000)


def test_an_error_in_the_one_pass_is_the_two_passes_error(tmp_path: Path) -> None:
    """Past the objects ``read_columns`` samples, the pass meets the candidate's bad line
    before the reference's; the two passes read the reference's schema first, so theirs
    is the reference's error, and so is ``compare_files``'s."""
    good = [f'{{"k": 1, "seq": {i}}}\n' for i in range(COLUMN_SAMPLE + 10)]
    bad = '{"k": 1, "seq": }\n'
    ref = write(tmp_path / "r.jsonl", "".join(good) + bad)
    cand = write(tmp_path / "c.jsonl", "".join(good[:COLUMN_SAMPLE]) + bad)
    with pytest.raises(InputError) as info:
        compare_files(parse_spec(SPEC), str(ref), str(cand), 10)
    line = COLUMN_SAMPLE + 11
    assert str(info.value) == f"{ref}: line {line}: malformed JSON: Expecting value (column 17)"


def test_an_unexpected_error_in_the_one_pass_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spec's function that raises is not one of Parity's errors: it propagates from the
    pass, and the outputs are not read again."""
    (tmp_path / "one_pass_equality.py").write_text("def eq(a, b):\n    return 1 / 0\n")
    spec = parse_spec(
        {"dependence": {"key": ["k"]}, "equality": {"function": "one_pass_equality:eq"}},
        base_dir=tmp_path,
    )
    path = write(tmp_path / "out.jsonl", '{"k": 1, "seq": 0}\n')
    monkeypatch.setattr(compare, "output_types", _not_called)
    with pytest.raises(ZeroDivisionError):
        compare_files(spec, str(path), str(path), 10)


def _not_called(*args: Any) -> None:
    raise AssertionError("the two passes ran")


# --- property: any lines of flat objects ------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
objects = st.dictionaries(st.sampled_from(["a", "b", "c", "A b"]), scalars, max_size=4)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(objects, max_size=12),
    compact=st.booleans(),
    ascii_only=st.booleans(),
)  # fmt: skip
def test_property_any_flat_lines_read_the_same(
    rows: list[dict[str, Any]],
    compact: bool,
    ascii_only: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    text = "".join(
        json.dumps(r, separators=separators, ensure_ascii=ascii_only) + "\n" for r in rows
    )
    path = write(tmp_path / "p.jsonl", text)
    assert_same(monkeypatch, path)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(allow_nan=False, allow_infinity=False)
    | st.from_regex(r"-?[1-9][0-9]{0,25}\.[0-9]{1,30}(e-?[0-9]{1,3})?", fullmatch=True)
)
def test_property_floats_are_parsed_as_python_parses_them(value: float | str) -> None:
    literal = repr(value) if isinstance(value, float) else value
    expected = float(literal)
    path_events = columnar._columns(*_one_line(f'{{"v": {literal}}}\n'))
    [[got]] = path_events[0]
    assert (math.copysign(1, got), got) == (math.copysign(1, expected), expected)


def _one_line(line: str) -> tuple[Any, Any]:
    block = line.encode()
    _, lines = columnar._raw_lines(block)
    layout = columnar._layout(block)
    assert layout is not None
    return lines, layout


def test_directory_listing_is_unchanged(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "topics" / "candidate_ok", tmp_path / "out")
    assert [f.name for f, _ in data_files(tmp_path / "out")] == ["part-00000.csv", "part-00001.csv"]


@pytest.mark.parametrize(
    "shape",
    ["flat", "compact", "mixed int and float", "overflowing and tiny", "colons in values",
     "blank and whitespace lines", "crlf", "leading whitespace"],
)  # fmt: skip
def test_plain_shapes_are_read_columnar(shape: str, tmp_path: Path) -> None:
    """The shapes the columnar path stands for are not all handed back line by line (the
    differential tests above would pass if they were)."""
    path = write(tmp_path / "out.jsonl", SHAPES[shape])
    batches = list(json_event_batches(path))
    assert [b.decoded for b in batches] == [()] * len(batches)
    assert all(b.column_types for b in batches)


# --- the matcher's fast path for an equality that ignores columns ----------------------------

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, math.nan, math.inf]),
    st.sampled_from(["", "x", "X"]),
    st.lists(st.integers(0, 1) | st.booleans(), max_size=2),
)
events = st.dictionaries(st.sampled_from(["k", "seq", "v", "w"]), values, max_size=4)


@settings(max_examples=400, deadline=None)
@given(a=events, b=events, ignore=st.sets(st.sampled_from(["seq", "w"]), min_size=1))
def test_property_keyed_equal_is_the_rules(
    a: dict[str, Any], b: dict[str, Any], ignore: set[str]
) -> None:
    equality = Equality(ignore=frozenset(ignore))
    fast = _keyed_equal(equality)
    assert fast is not None
    assert fast(a, b) == equality.equal(a, b)
    assert fast(b, a) == equality.equal(b, a)


def test_keyed_equal_only_for_plain_or_ignoring_equalities() -> None:
    assert _keyed_equal(Equality()) is not None
    assert _keyed_equal(Equality(ignore=frozenset({"seq"}), nan_equal=False)) is None
    assert _keyed_equal(Equality(ignore=frozenset({"seq"}), normalize={"s": ("trim",)})) is None
