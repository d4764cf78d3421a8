"""matcher.spec: every dependence form and section loads into matcher objects that behave
as written, and every bad spec is one exact line naming the file and key."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from matcher import compare
from matcher.dependence import Dependence
from matcher.errors import IncompatibleEqualityError, SpecError
from matcher.spec import Spec, load_spec, parse_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(autouse=True)
def _forget_imported_modules() -> Iterator[None]:
    """Specs import user modules; drop them so each test imports its own afresh."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def spec_file(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str) -> Spec:
    return load_spec(spec_file(tmp_path, text))


def problem(tmp_path: Path, text: str) -> str:
    """The one-line error of loading ``text``, with the file's path replaced by FILE."""
    path = spec_file(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert "\n" not in message
    return message.replace(str(path), "FILE")


def module(tmp_path: Path, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


def ev(**columns: object) -> dict[str, object]:
    return dict(columns)


def equivalent(
    dependence: Dependence, reference: list[dict[str, object]], candidate: list[dict[str, object]]
) -> bool:
    return compare(reference, candidate, dependence).equivalent


# --- dependence forms ---------------------------------------------------------------------


@pytest.mark.parametrize("text", ["dependence: unordered", "dependence: {unordered: true}"])
def test_unordered(tmp_path: Path, text: str) -> None:
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.describe() == "unordered"
    assert equivalent(dependence, [ev(a=1), ev(a=2)], [ev(a=2), ev(a=1)])


@pytest.mark.parametrize("text", ["dependence: ordered", "dependence: {ordered: true}"])
def test_ordered(tmp_path: Path, text: str) -> None:
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.describe() == "ordered"
    assert not equivalent(dependence, [ev(a=1), ev(a=2)], [ev(a=2), ev(a=1)])


@pytest.mark.parametrize("text", ["dependence: {key: [k]}", "dependence: {key: k}"])
def test_key(tmp_path: Path, text: str) -> None:
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.describe() == "by_key(k)"
    assert dependence.depends(ev(k=1, v=1), ev(k=1, v=2))
    assert not dependence.depends(ev(k=1, v=1), ev(k=2, v=1))


def test_composite_key(tmp_path: Path) -> None:
    dependence = load(tmp_path, "dependence: {key: [a, b]}").build_dependence()
    assert dependence.describe() == "by_key(a, b)"
    assert dependence.depends(ev(a=1, b=2), ev(a=1, b=2))
    assert not dependence.depends(ev(a=1, b=2), ev(a=1, b=3))


@pytest.mark.parametrize("equals", ["EOF", "[EOF, EOD]"])
def test_key_with_barrier_by_column(tmp_path: Path, equals: str) -> None:
    text = f"dependence: {{key: [doc], barrier: {{column: kind, equals: {equals}}}}}"
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.describe() == "by_key(doc) with barriers"
    assert dependence.columns == frozenset({"doc", "kind"})
    eof = ev(kind="EOF", doc="")
    assert dependence.depends(eof, ev(kind="w", doc="d1"))
    assert not dependence.depends(ev(kind="w", doc="d1"), ev(kind="w", doc="d2"))
    words = [ev(kind="w", doc="d1"), ev(kind="w", doc="d2")]
    assert equivalent(dependence, [*words, eof], [*reversed(words), eof])
    assert not equivalent(dependence, [*words, eof], [words[0], eof, words[1]])


def test_barrier_by_function_imported_from_the_spec_directory(tmp_path: Path) -> None:
    module(tmp_path, "udf_barrier", "def is_eod(e):\n    return e['kind'] == 'EOD'\n")
    text = """\
        dependence:
          key: doc
          barrier: {function: "udf_barrier:is_eod", columns: [kind]}
        """
    path_before = list(sys.path)
    spec = load(tmp_path, text)
    assert sys.path == path_before
    dependence = spec.build_dependence()
    assert dependence.describe() == "by_key(doc) with barriers"
    assert dependence.columns == frozenset({"doc", "kind"})
    eod = ev(kind="EOD", doc=None)
    assert dependence.depends(eod, ev(kind="x", doc=1))
    assert dependence.depends(eod, ev(kind="x", doc=2))
    assert not dependence.depends(ev(kind="x", doc=1), ev(kind="x", doc=2))


def test_ordered_with_barrier(tmp_path: Path) -> None:
    text = "dependence: {ordered: true, barrier: {column: kind, equals: EOD}}"
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.describe() == "ordered with barriers"
    assert dependence.depends(ev(kind="a"), ev(kind="b"))
    assert dependence.depends(ev(kind="EOD"), ev(kind="b"))


def test_unordered_with_barrier(tmp_path: Path) -> None:
    text = "dependence: {unordered: true, barrier: {column: kind, equals: EOD}}"
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.describe() == "unordered with barriers"
    assert not dependence.depends(ev(kind="a", n=1), ev(kind="a", n=2))
    assert dependence.depends(ev(kind="EOD"), ev(kind="a", n=2))
    assert dependence.is_barrier(ev(kind="EOD"))
    assert not dependence.is_barrier(ev(kind="a", n=1))


TYPED = """\
    dependence:
      typed:
        classify: kind
        types: {taxi: [taxi_id], EOD: null, EOM: null}
        edges: [[taxi, taxi], [EOD, "*"], [EOM, EOM]]
    """


def test_typed(tmp_path: Path) -> None:
    dependence = load(tmp_path, TYPED).build_dependence()
    assert dependence.describe() == "typed(taxi, EOD, EOM)"
    assert dependence.columns == frozenset({"kind", "taxi_id"})
    t1, t2 = ev(kind="taxi", taxi_id=1), ev(kind="taxi", taxi_id=2)
    eod, eom = ev(kind="EOD"), ev(kind="EOM")
    assert dependence.depends(t1, ev(kind="taxi", taxi_id=1))
    assert not dependence.depends(t1, t2)
    assert dependence.depends(eod, t1)
    assert dependence.depends(eod, eom)
    assert dependence.depends(eom, eom)
    assert not dependence.depends(eom, t1)


def test_typed_same_key_edge_and_single_column_key(tmp_path: Path) -> None:
    text = """\
        dependence:
          typed:
            classify: kind
            types: {A: k, B: k}
            edges: [[A, B, same_key]]
        """
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.depends(ev(kind="A", k=1), ev(kind="B", k=1))
    assert not dependence.depends(ev(kind="A", k=1), ev(kind="B", k=2))
    assert not dependence.depends(ev(kind="A", k=1), ev(kind="A", k=1))


def test_typed_classify_function(tmp_path: Path) -> None:
    module(tmp_path, "udf_kind", "def kind(e):\n    return 'EOD' if e['eod'] else 'row'\n")
    text = """\
        dependence:
          typed:
            classify: {function: "udf_kind:kind", columns: [eod]}
            types: {row: null, EOD: null}
            edges: [[EOD, "*"]]
        """
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.columns == frozenset({"eod"})
    assert dependence.depends(ev(eod=True), ev(eod=False))
    assert not dependence.depends(ev(eod=False), ev(eod=False))


def test_punctuation_by_column(tmp_path: Path) -> None:
    text = "dependence: {punctuation: {timestamp: ts, column: kind, equals: P}}"
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.describe() == "punctuation(ts)"
    assert dependence.columns == frozenset({"kind", "ts"})
    assert dependence.depends(ev(kind="P", ts=5), ev(kind="x", ts=3))
    assert not dependence.depends(ev(kind="P", ts=5), ev(kind="x", ts=7))
    assert not dependence.depends(ev(kind="x", ts=1), ev(kind="x", ts=7))


def test_punctuation_by_function(tmp_path: Path) -> None:
    module(tmp_path, "udf_punct", "def is_p(e):\n    return e.get('p', False)\n")
    text = 'dependence: {punctuation: {timestamp: ts, function: "udf_punct:is_p"}}'
    dependence = load(tmp_path, text).build_dependence()
    assert dependence.columns == frozenset({"ts"})  # known: the timestamp; the function is opaque
    assert dependence.depends(ev(p=True, ts=5), ev(ts=3))


def test_predicate_with_and_without_columns(tmp_path: Path) -> None:
    module(tmp_path, "udf_pred", "def same_user(x, y):\n    return x['user'] == y['user']\n")
    spec = load(tmp_path, 'dependence: {predicate: "udf_pred:same_user", columns: user}')
    dependence = spec.build_dependence()
    assert dependence.describe() == "predicate(udf_pred:same_user)"
    assert dependence.columns == frozenset({"user"})
    assert dependence.depends(ev(user=1, n=1), ev(user=1, n=2))
    assert not dependence.depends(ev(user=1), ev(user=2))
    bare = load(tmp_path, 'dependence: {predicate: "udf_pred:same_user"}').build_dependence()
    assert bare.columns is None


# --- equality -----------------------------------------------------------------------------


def test_equality_options(tmp_path: Path) -> None:
    text = """\
        dependence: unordered
        equality:
          ignore: [at]
          tolerance: {x: {abs: 1e-9}, y: {rel: 0.01}}
          normalize: {name: [trim, lower]}
          nan_equal: false
        """
    equality = load(tmp_path, text).build_equality()
    assert equality.ignore == frozenset({"at"})
    assert equality.tolerance["x"].abs == 1e-9
    assert equality.tolerance["y"].rel == 0.01
    assert dict(equality.normalize) == {"name": ("trim", "lower")}
    assert equality.nan_equal is False
    base = ev(at=1, x=1.0, y=100.0, name="Ann")
    assert equality.equal(base, ev(at=2, x=1.0 + 1e-10, y=100.9, name="  ann "))
    assert not equality.equal(base, ev(at=1, x=1.0 + 1e-8, y=100.0, name="Ann"))
    assert not equality.equal(base, ev(at=1, x=1.0, y=102.0, name="Ann"))
    assert not equality.equal(ev(v=float("nan")), ev(v=float("nan")))


def test_equality_defaults_to_exact_with_nan_equal(tmp_path: Path) -> None:
    equality = load(tmp_path, "dependence: ordered").build_equality()
    assert equality.is_plain
    assert equality.equal(ev(v=float("nan")), ev(v=float("nan")))


def test_equality_function(tmp_path: Path) -> None:
    module(tmp_path, "udf_eq", "def close(a, b):\n    return abs(a['v'] - b['v']) < 10\n")
    equality = load(
        tmp_path, 'dependence: unordered\nequality: {function: "udf_eq:close"}'
    ).build_equality()
    assert equality.function_name == "udf_eq:close"
    assert equality.equal(ev(v=1), ev(v=9))
    assert not equality.equal(ev(v=1), ev(v=19))


# --- the whole file -----------------------------------------------------------------------

DESIGN_SPEC = """\
    name: taxi_distance
    reference:  {application: jobs/examples/taxi.py, args: [--variant, sequential]}
    candidate:  {application: jobs/examples/taxi.py, args: [--variant, parallel, --cores, 4],
                 conf: {spark.sql.shuffle.partitions: 8, spark.speculation: false},
                 version: "2.1"}
    input:      {path: data/replay/taxi, format: parquet,
                 slice: {column: event_time, window: 1d, sample: 0.1}}
    output:     {format: parquet, order_by: [seq]}
    dependence: {key: [taxi_id]}
    equality:   {ignore: [emitted_at], tolerance: {distance_km: {abs: 1.0e-9}}}
    expectations: [expectations/taxi_output.json]
    noise:      {reference_runs: 2}
    schedule:   "@daily"
    gate:       {require: equivalent, allow_noisy: true, expectations: false}
    """


def test_the_design_sketch_loads_with_every_section(tmp_path: Path) -> None:
    spec = load(tmp_path, DESIGN_SPEC)
    assert spec.name == "taxi_distance"
    assert spec.reference is not None and spec.candidate is not None
    assert spec.reference.application == "jobs/examples/taxi.py"
    assert spec.reference.args == ("--variant", "sequential")
    assert spec.candidate.args == ("--variant", "parallel", "--cores", "4")
    assert spec.candidate.conf == {
        "spark.sql.shuffle.partitions": "8",
        "spark.speculation": "false",
    }
    assert spec.candidate.version == "2.1"
    assert spec.input is not None and spec.input.slice is not None
    assert (spec.input.path, spec.input.format) == ("data/replay/taxi", "parquet")
    assert (spec.input.slice.column, spec.input.slice.window) == ("event_time", "1d")
    assert spec.input.slice.sample == 0.1
    assert (spec.output.format, spec.output.order_by) == ("parquet", ("seq",))
    assert spec.dependence.form == "key"
    assert spec.expectations.suites == ("expectations/taxi_output.json",)
    assert spec.noise.reference_runs == 2
    assert spec.schedule == "@daily"
    assert (spec.gate.require, spec.gate.allow_noisy, spec.gate.expectations) == (
        "equivalent",
        True,
        False,
    )


def test_defaults_of_a_minimal_spec(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, "dependence: ordered\n", name="nightly_orders.yaml"))
    assert spec.name == "nightly_orders"
    assert (spec.reference, spec.candidate, spec.input, spec.schedule) == (None, None, None, None)
    assert (spec.output.format, spec.output.order_by) == (None, ())
    assert spec.expectations.suites == ()
    assert spec.noise.reference_runs == 1
    assert (spec.gate.require, spec.gate.allow_noisy, spec.gate.expectations) == (
        "equivalent",
        False,
        True,
    )
    assert spec.gate.empty == "fail"  # two empty outputs prove nothing: no release on them


def test_gate_empty_says_whether_two_empty_outputs_pass(tmp_path: Path) -> None:
    spec = load(tmp_path, "dependence: ordered\ngate: {empty: pass}\n")
    assert spec.gate.empty == "pass"
    assert problem(tmp_path, "dependence: ordered\ngate: {empty: maybe}\n") == (
        "FILE: gate.empty: expected 'pass' or 'fail', got 'maybe'"
    )


def test_parse_spec_from_a_mapping() -> None:
    spec = parse_spec({"name": "x", "dependence": {"key": "k"}}, source="inline")
    assert (spec.source, spec.name, spec.dependence.key) == ("inline", "x", ("k",))


def test_the_bundled_examples_load() -> None:
    taxi = load_spec(EXAMPLES / "taxi" / "spec.yaml")
    assert taxi.name == "taxi_distance"
    assert taxi.build_dependence().describe() == "by_key(taxi_id)"
    assert taxi.build_equality().ignore == frozenset({"emitted_at"})
    topics = load_spec(EXAMPLES / "topics" / "spec.yaml")
    assert topics.build_dependence().describe() == "by_key(doc) with barriers"


# --- columns ------------------------------------------------------------------------------


def test_check_columns_accepts_an_output_with_every_named_column(tmp_path: Path) -> None:
    spec = load(tmp_path, DESIGN_SPEC)
    spec.check_columns(["taxi_id", "seq", "distance_km", "emitted_at", "extra"])


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (
            ["seq", "distance_km", "emitted_at"],
            "FILE: dependence.key: unknown column 'taxi_id' (output columns: seq, distance_km, emitted_at)",  # noqa: E501
        ),
        (
            ["taxi_id", "seq", "distance_km"],
            "FILE: equality.ignore: unknown column 'emitted_at' (output columns: taxi_id, seq, distance_km)",  # noqa: E501
        ),
        (
            ["taxi_id", "seq", "emitted_at"],
            "FILE: equality.tolerance: unknown column 'distance_km' (output columns: taxi_id, seq, emitted_at)",  # noqa: E501
        ),
        (
            ["taxi_id", "distance_km", "emitted_at"],
            "FILE: output.order_by: unknown column 'seq' (output columns: taxi_id, distance_km, emitted_at)",  # noqa: E501
        ),
    ],
)
def test_check_columns_names_the_key_and_the_missing_column(
    tmp_path: Path, columns: list[str], message: str
) -> None:
    path = spec_file(tmp_path, DESIGN_SPEC)
    with pytest.raises(SpecError) as info:
        load_spec(path).check_columns(columns)
    assert str(info.value).replace(str(path), "FILE") == message


def test_check_columns_says_where(tmp_path: Path) -> None:
    spec = parse_spec(
        {"dependence": {"typed": {"classify": "kind", "types": {"a": ["k"]}}}}, "s.yaml"
    )
    with pytest.raises(SpecError) as info:
        spec.check_columns(["kind"], where="candidate out/")
    assert str(info.value) == (
        "s.yaml: dependence.typed.types.a: unknown column 'k' in candidate out/ "
        "(output columns: kind)"
    )


# --- bad specs: one exact line each -------------------------------------------------------

KNOWN_SECTIONS = (
    "name, reference, candidate, application, recovery, input, output, dependence, equality, "
    "expectations, noise, schedule, gate, airflow, properties, schema"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "dependence: ordered\ncolour: blue\n",
            f"FILE: colour: unknown key (expected one of: {KNOWN_SECTIONS})",
        ),
        (
            "dependence: {key: a, order: b}\n",
            "FILE: dependence.order: unknown key (expected one of: unordered, ordered, key, "
            "barrier, typed, punctuation, predicate, columns)",
        ),
        (
            "dependence: ordered\nequality: {tolerance: {x: {absolute: 1}}}\n",
            "FILE: equality.tolerance.x.absolute: unknown key (expected one of: abs, rel)",
        ),
        ("dependence: {key: 3}\n", "FILE: dependence.key: expected a list, got 3"),
        (
            "dependence: {key: [a, 3]}\n",
            "FILE: dependence.key[1]: expected a string, got 3 (quote it)",
        ),
        ("dependence: {key: []}\n", "FILE: dependence.key: must not be empty"),
        ("name: x\n", "FILE: dependence: required key is missing"),
        ("", "FILE: dependence: required key is missing"),
        (
            "- dependence: ordered\n",
            "FILE: not a validation spec: expected a mapping of sections, got a list",
        ),
        (
            "dependence: sorted\n",
            "FILE: dependence: expected 'unordered', 'ordered' or a mapping, got 'sorted'",
        ),
        (
            "dependence: {key: a, ordered: true}\n",
            "FILE: dependence: give exactly one of unordered, ordered, key, typed, punctuation, "
            "predicate; got ordered and key",
        ),
        (
            "dependence: {unordered: false}\n",
            "FILE: dependence: give exactly one of unordered, ordered, key, typed, punctuation, "
            "predicate; got none",
        ),
        (
            "dependence: {key: a, barrier: {column: kind}}\n",
            "FILE: dependence.barrier: 'column' and 'equals' go together",
        ),
        (
            "dependence: {key: a, barrier: {column: kind, equals: [x, {y: 1}]}}\n",
            "FILE: dependence.barrier.equals: expected strings, numbers or booleans, got a mapping",
        ),
        (
            "dependence: {punctuation: {timestamp: ts, column: k, equals: P}, barrier: {column: k, equals: E}}\n",  # noqa: E501
            "FILE: dependence: 'barrier' combines with key, ordered or unordered, not punctuation",
        ),
        (
            "dependence: {key: a, columns: [b]}\n",
            "FILE: dependence: 'columns' names what a predicate reads; it needs 'predicate'",
        ),
        (
            "dependence: {predicate: not_a_reference}\n",
            "FILE: dependence.predicate: expected 'module:function', got 'not_a_reference'",
        ),
        (
            "dependence: {typed: {classify: kind, types: {A: null}, edges: [[A, B]]}}\n",
            "FILE: dependence: typed: edge ['A', 'B'] names unknown type 'B'",
        ),
        (
            "dependence: ordered\noutput: {format: xml}\n",
            "FILE: output.format: expected 'parquet', 'json', 'jsonl' or 'csv', got 'xml'",
        ),
        (
            "dependence: ordered\nequality: {normalize: {a: strip}}\n",
            "FILE: equality.normalize.a[0]: expected 'trim', 'lower', 'upper' or 'casefold', "
            "got 'strip'",
        ),
        (
            "dependence: ordered\nequality: {tolerance: {a: {abs: -1}}}\n",
            "FILE: equality.tolerance.a.abs: must be >= 0.0, got -1",
        ),
        (
            "dependence: ordered\nequality: {nan_equal: maybe}\n",
            "FILE: equality.nan_equal: expected true or false, got 'maybe'",
        ),
        (
            "dependence: ordered\nequality: {function: 'm:f', ignore: [a]}\n",
            "FILE: equality: 'function' replaces ignore, tolerance and normalize: give one",
        ),
        (
            "dependence: ordered\nnoise: {reference_runs: 0}\n",
            "FILE: noise.reference_runs: must be >= 1, got 0",
        ),
        (
            "dependence: ordered\ninput: {path: x, slice: {column: t, window: 1 day}}\n",
            "FILE: input.slice.window: expected a duration such as 30m, 6h, 1d or 2w, got '1 day'",
        ),
        (
            "dependence: ordered\ninput: {path: x, slice: {window: 1d}}\n",
            "FILE: input.slice: a window needs the time column it applies to ('column')",
        ),
        (
            "dependence: ordered\ninput: {format: csv}\n",
            "FILE: input.path: required key is missing",
        ),
        (
            "dependence: ordered\ngate: {require: anything}\n",
            "FILE: gate.require: expected 'equivalent', got 'anything'",
        ),
        (
            "dependence: ordered\nreference: {application: a.py, version: 1.2}\n",
            "FILE: reference.version: expected a string, got 1.2 (quote it)",
        ),
        (
            "dependence: ordered\nname: my spec\n",
            "FILE: name: use letters, digits, '_', '-' and '.', got 'my spec'",
        ),
        (
            "dependence: ordered\noutput: {format: xml}\nnoise: {reference_runs: 0}\n",
            "FILE: output.format: expected 'parquet', 'json', 'jsonl' or 'csv', got 'xml' "
            "(and 1 more)",
        ),
    ],
)
def test_bad_spec(tmp_path: Path, text: str, message: str) -> None:
    assert problem(tmp_path, text) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "dependence: {key: [a]\n",
            "FILE: line 2, column 1: YAML syntax error: expected ',' or '}', but got "
            "'<stream end>'",
        ),
        (
            "dependence: ordered\nname: a\nname: b\n",
            "FILE: line 3, column 1: YAML syntax error: duplicate key 'name'",
        ),
        (
            "dependence: ordered\n\tname: a\n",
            "FILE: line 2, column 1: YAML syntax error: found character '\\t' that cannot "
            "start any token",
        ),
    ],
)
def test_yaml_syntax_errors_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    assert problem(tmp_path, text) == message


def test_missing_spec_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path / "nope.yaml")
    assert (
        str(info.value)
        == f"{tmp_path / 'nope.yaml'}: cannot read the spec: No such file or directory"
    )


def test_spec_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(info.value) == f"{path}: not UTF-8 text (byte 9)"


@pytest.mark.parametrize(
    ("source", "reference", "message"),
    [
        (
            None,
            "udf_absent:fn",
            "FILE: dependence.predicate: cannot import 'udf_absent:fn': ModuleNotFoundError: "
            "No module named 'udf_absent'",
        ),
        (
            "def other(x, y):\n    return True\n",
            "udf_bad:fn",
            "FILE: dependence.predicate: cannot import 'udf_bad:fn': no attribute 'fn'",
        ),
        (
            "fn = 3\n",
            "udf_bad:fn",
            "FILE: dependence.predicate: 'udf_bad:fn' is not callable",
        ),
        (
            "def fn(x, y)\n    return True\n",
            "udf_bad:fn",
            "FILE: dependence.predicate: cannot import 'udf_bad:fn': SyntaxError: expected ':' "
            "(udf_bad.py, line 1)",
        ),
        (
            "raise RuntimeError('no database here')\n",
            "udf_bad:fn",
            "FILE: dependence.predicate: cannot import 'udf_bad:fn': RuntimeError: "
            "no database here",
        ),
    ],
)
def test_unimportable_functions(
    tmp_path: Path, source: str | None, reference: str, message: str
) -> None:
    if source is not None:
        module(tmp_path, "udf_bad", source)
    assert problem(tmp_path, f'dependence: {{predicate: "{reference}"}}\n') == message


def test_unimportable_equality_function(tmp_path: Path) -> None:
    text = 'dependence: ordered\nequality: {function: "udf_nothing:eq"}\n'
    assert problem(tmp_path, text) == (
        "FILE: equality.function: cannot import 'udf_nothing:eq': ModuleNotFoundError: "
        "No module named 'udf_nothing'"
    )


@pytest.mark.parametrize(
    ("equality", "message"),
    [
        (
            "{ignore: [taxi_id]}",
            "FILE: equality.ignore: equality ignores column 'taxi_id', which the dependence "
            "reads: events it calls equal could differ in their dependences",
        ),
        (
            "{tolerance: {taxi_id: {abs: 1}}}",
            "FILE: equality.tolerance: equality has a tolerance on column 'taxi_id', which the "
            "dependence reads: events it calls equal could differ in their dependences",
        ),
        (
            "{normalize: {taxi_id: [lower]}}",
            "FILE: equality.normalize: equality normalises column 'taxi_id', which the "
            "dependence reads: events it calls equal could differ in their dependences",
        ),
        (
            "{normalize: {'*': [trim]}}",
            "FILE: equality.normalize: equality normalises every string column ('*'), including "
            "dependence column 'taxi_id': list the columns to normalise instead",
        ),
    ],
)
def test_incompatible_equality(tmp_path: Path, equality: str, message: str) -> None:
    path = spec_file(tmp_path, f"dependence: {{key: taxi_id}}\nequality: {equality}\n")
    with pytest.raises(IncompatibleEqualityError) as info:
        load_spec(path)
    assert str(info.value).replace(str(path), "FILE") == message


def test_barrier_column_counts_for_compatibility(tmp_path: Path) -> None:
    text = "dependence: {key: d, barrier: {column: kind, equals: EOF}}\nequality: {ignore: kind}\n"
    assert problem(tmp_path, text).startswith(
        "FILE: equality.ignore: equality ignores column 'kind', which the dependence reads"
    )
