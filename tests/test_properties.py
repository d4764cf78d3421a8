"""``parity properties`` on stream-shape operators with known answers (no Spark): each
property found and not found, each technique, shrinking, the suggested spec, bad input."""

from __future__ import annotations

import io
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from jobs.examples.operators import KNOWN
from matcher.spec import parse_spec, parse_yaml
from parity.cli.main import main
from parity.properties.elements import Element, item, punctuation
from parity.properties.generation import ALL, parse_technique
from parity.properties.loading import load_subject
from parity.properties.properties import Context, statefulness_check
from parity.properties.runner import Plan, check_operator
from parity.properties.shrinking import shrink
from parity.properties.steps import drive
from parity.properties.suggest import suggest_spec

ROOT = Path(__file__).resolve().parent.parent
ITEMS = str(ROOT / "jobs/examples/operators/items.jsonl")
DATA = ROOT / "examples/properties"
STREAMS = [k for k in KNOWN if k.shape == "stream"]


def _report(ref: str, sample: str = ITEMS, keys: tuple[str, ...] = ("key",), **kw: Any) -> Any:
    subject = load_subject(ref, [sample], keys, kw.pop("shape", "stream"), 0.3)
    techniques = kw.pop("techniques", ALL)
    plan = Plan(techniques, kw.pop("budget", 6), kw.pop("seed", 0), subject.domains)
    context = Context(subject.operator, keys, random.Random(0), max_delay=0.01)
    return check_operator(context, plan, "hybrid")


@pytest.mark.parametrize("known", STREAMS, ids=lambda k: k.ref.split(":")[1])
def test_hybrid_finds_the_known_properties_of_every_stream_operator(known: Any) -> None:
    # firstn (4 items of a key in a window), indexvaluepair (two of one key and x) and
    # Deduplicate (an item twice) need repeats: the narrowed pools and growing tests give them
    report = _report(known.ref, budget=6)
    props = report.properties
    assert props["nondeterminism"].found is known.nondeterminism
    assert props["selectivity"].extra["class"] == known.selectivity
    assert props["blocking"].applicable is False
    if known.statefulness is not None:
        assert props["statefulness"].found is known.statefulness
        assert props["non_commutativity"].found is known.non_commutativity
        assert props["partition_interference"].found is known.partition_interference


@pytest.mark.parametrize(
    ("ref", "prop", "shape"),
    [
        ("streams:Identity", "nondeterminism", "stream"),
        ("streams:Identity", "selectivity", "stream"),
        ("pairs:Merge", "blocking", "pair"),
        ("streams:Identity", "statefulness", "stream"),
        ("streams:WindowSumPerKey", "non_commutativity", "stream"),
        ("streams:RunningCountPerKey", "partition_interference", "stream"),
    ],
)
def test_hybrid_finds_no_evidence_where_none_exists(ref: str, prop: str, shape: str) -> None:
    report = _report(f"jobs.examples.operators.{ref}", shape=shape, budget=3)
    outcome = report.properties[prop]
    assert outcome.found is False
    assert outcome.evidence is None
    if prop == "selectivity":
        assert outcome.extra["class"] == "one_to_one"
    if prop == "non_commutativity":
        assert outcome.tests == 36  # every test of the budget ran: 12 techniques x 3


def test_a_pool_test_repeats_keys_and_a_pair_test_alternates_ports() -> None:
    from parity.properties.generation import Generator

    subject = load_subject("jobs.examples.operators.pairs:Merge", [ITEMS], (), "pair")
    generator = Generator(parse_technique("pool")[0], subject.domains, random.Random(3))
    tests = [generator.base(6) for _ in range(20)]
    for test in tests:
        ports = [e.port for e in test]
        assert all(a != b for a, b in itertools.pairwise(ports))
    repeated = sum(1 for t in tests if len({e.item["key"] for e in t if e.item}) < 3)
    assert repeated >= 10  # keys a, b, c: most narrowed tests draw fewer than all three


@pytest.mark.parametrize("technique", ["random", "pool", "pairwise", "mutation", "reuse"])
def test_each_technique_finds_state_and_order_and_not_in_a_stateless_operator(
    technique: str,
) -> None:
    found = _report(
        "jobs.examples.operators.streams:RunningCount", techniques=parse_technique(technique)
    )
    assert found.properties["statefulness"].found is True
    assert found.properties["non_commutativity"].found is True
    assert found.properties["partition_interference"].found is True
    clean = _report(
        "jobs.examples.operators.streams:Identity", techniques=parse_technique(technique), budget=3
    )
    assert clean.properties["statefulness"].found is False
    assert clean.properties["nondeterminism"].found is False


def test_pool_draws_the_values_a_comparison_needs_where_random_rarely_does() -> None:
    pool = _report(
        "jobs.examples.operators.streams:RunningCountPerKey", techniques=parse_technique("pool")
    )
    assert pool.properties["non_commutativity"].found is True


def test_statefulness_evidence_is_shrunk_to_two_firings_of_one_simple_item() -> None:
    report = _report(
        "jobs.examples.operators.streams:RunningCount", techniques=parse_technique("random")
    )
    evidence = report.properties["statefulness"].evidence
    assert evidence["input"] == [
        {"port": 0, "item": {"key": "", "offset": 0, "x": 0, "y": 0}},
        {"port": 0, "item": {"key": "", "offset": 0, "x": 0, "y": 0}},
    ]
    assert evidence["outputs"] == [[["", 0, 1]], [["", 0, 2]]]
    assert evidence["minimal"] is True


def test_ddmin_keeps_only_the_elements_the_evidence_needs() -> None:
    subject = load_subject("jobs.examples.operators.streams:WindowLast", [ITEMS], (), "stream")
    context = Context(subject.operator, (), random.Random(0))
    a = item({"key": "a", "offset": 0, "x": 5, "y": 1})
    b = item({"key": "b", "offset": 1, "x": 7, "y": 2})
    test = (a, b, a, punctuation(), b, punctuation(), a, b, punctuation())
    first = statefulness_check(context, test)
    assert first.evidence is not None and first.replay is not None
    result = shrink(
        test, first.evidence, lambda ts: [drive(context.operator, first.replay(t)) for t in ts]
    )
    # an item, then two punctuations: the first window's end emits it, the second nothing
    assert [e.is_punctuation for e in result.test] == [False, True, True]
    assert result.test[0].item == {"key": "", "offset": 0, "x": 0, "y": 0}
    assert result.evidence["outputs"] == [[["", 0]], []]


def test_blocking_on_a_gate_and_not_on_a_merge() -> None:
    gate = _report("jobs.examples.operators.pairs:Gate", keys=(), shape="pair", budget=2)
    assert gate.properties["blocking"].found is True
    assert gate.properties["blocking"].evidence["stalled_at"] == 0
    assert gate.properties["statefulness"].extra["inferred"].startswith("a blocking operator")
    merge = _report("jobs.examples.operators.pairs:Merge", keys=(), shape="pair", budget=2)
    assert merge.properties["blocking"].found is False


@pytest.mark.parametrize(
    ("ref", "shape", "announced"),
    [
        # blocking found: statefulness inferred from it; no key: no partition-interference
        ("pairs:Gate", "pair", [(1, "nondeterminism"), (2, "selectivity"), (3, "blocking"),
                                (5, "non_commutativity")]),
        # non-deterministic: order, state and keys undetermined (Fig. 4), never tested
        ("streams:RandomSample", "stream", [(1, "nondeterminism"), (2, "selectivity")]),
    ],
)  # fmt: skip
def test_each_property_tested_is_announced_as_it_starts(
    ref: str, shape: str, announced: list[tuple[int, str]]
) -> None:
    """``on_property`` hears of each property as its tests start (``parity properties``
    shows it as progress), with its place among the six; one decided without a test is
    never announced."""
    subject = load_subject(f"jobs.examples.operators.{ref}", [ITEMS], (), shape, 0.3)
    plan = Plan(ALL, 2, 0, subject.domains)
    context = Context(subject.operator, (), random.Random(0), max_delay=0.01)
    heard: list[tuple[int, str, int]] = []
    report = check_operator(
        context, plan, "hybrid", on_property=lambda name, i, total: heard.append((i, name, total))
    )
    assert heard == [(index, name, 6) for index, name in announced]
    assert [n for n, o in report.properties.items() if o.tests] == [n for _, n in announced]


def _suggested(ref: str, sample: str, keys: tuple[str, ...], budget: int = 10) -> str:
    text = suggest_spec(_report(ref, sample, keys, budget=budget), None)
    parse_spec(parse_yaml(text, "suggested.yaml"), "suggested.yaml")  # a valid spec
    return text


def test_suggested_spec_for_the_taxi_tracker_is_keyed_by_taxi() -> None:
    text = _suggested("jobs.examples.taxi:track", str(DATA / "taxi.jsonl"), ("taxi_id",))
    assert "dependence:\n  key: [taxi_id]\n" in text
    assert "equality: {}\n" in text and "reference_runs: 1\n" in text


def test_suggested_spec_for_topics_is_ordered() -> None:
    text = _suggested("jobs.examples.topics:count_topics", str(DATA / "topics.csv"), ("file",))
    assert "dependence: ordered\n" in text
    assert "# non-commutative and partition-interfering by file" in text


@pytest.mark.parametrize("name", ["maxrow", "firstn", "strconcat"])
def test_suggested_spec_for_a_reducer_is_keyed(name: str) -> None:
    text = _suggested(f"jobs.examples.operators.streams:{name}", ITEMS, ("key",), budget=6)
    assert "dependence:\n  key: [key]\n" in text


def test_suggested_spec_for_a_nondeterministic_operator_asks_for_noise_runs() -> None:
    text = _suggested("jobs.examples.operators.streams:Timestamp", ITEMS, ("key",))
    assert "noise:\n  reference_runs: 2\n" in text


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        code = main(["properties", *args])
    return code, out.getvalue()


def test_cli_json_has_every_property(tmp_path: Path) -> None:
    code, out = _cli(
        "jobs.examples.operators.streams:RunningCountPerKey",
        "--sample",
        ITEMS,
        "--key",
        "key",
        "--budget",
        "3",
        "--json",
        "--evidence-dir",
        str(tmp_path),
        "--no-store",  # the stored run is tests/test_property_runs.py's; keep ~/.parity clean
    )
    assert code == 0
    document = json.loads(out)
    props = document["properties"]
    assert sorted(props) == sorted(
        [
            "nondeterminism",
            "selectivity",
            "blocking",
            "statefulness",
            "non_commutativity",
            "partition_interference",
        ]
    )
    assert props["blocking"]["applicable"] is False
    assert props["selectivity"]["class"] == "one_to_one"
    assert props["partition_interference"]["key"] == ["key"]
    assert props["partition_interference"]["found"] is False
    assert props["statefulness"]["found"] is True
    for outcome in props.values():
        assert set(outcome) >= {"found", "evidence", "tests", "seconds"}
    stored = json.loads(next(tmp_path.iterdir()).read_text())
    assert sorted(stored["tests"]) == ["non_commutativity", "statefulness"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.module:f", "--sample", ITEMS], "cannot import module 'nope.module'"),
        (["jobs.examples.taxi:nothing", "--sample", ITEMS], "has no attribute 'nothing'"),
        (["jobs.examples.taxi:track", "--sample", "/nonexistent.jsonl"], "no such sample"),
        (
            ["jobs.examples.taxi:track", "--sample", ITEMS, "--key", "taxi"],
            "--key taxi: not a column",
        ),
        (
            ["jobs.examples.taxi:track", "--sample", ITEMS, "--technique", "fuzz"],
            "--technique fuzz",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["properties", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("parity: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_elements_round_trip_through_the_evidence_file(tmp_path: Path) -> None:
    from parity.properties.generation import load_evidence, save_evidence

    subject = load_subject("jobs.examples.operators.streams:Identity", [ITEMS], (), "stream")
    test = (Element(0, {"key": "a", "offset": 1, "x": 2, "y": 3}), punctuation())
    path = tmp_path / "e.json"
    save_evidence(path, "x:y", {"statefulness": test})
    assert load_evidence(path, subject.domains) == [test]
