"""The proof of equivalence on texts (``matcher.files.columnar_equivalence``) against the
online matcher fed events (``PARITY_READER=events``) and the per-line reader
(``PARITY_READER=lines``): the same verdict document, to ``peak_unmatched``, on random
keyed outputs with and without faults, in one block and in many, in one file and in
several; and it proves (not merely falls back) where it should, and gives up where a text
does not name its value alone."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matcher.errors import ParityError
from matcher.files import columnar, columnar_equivalence, compare
from matcher.files.compare import compare_files
from matcher.files.output_schema import JsonInference
from matcher.files.readers import READER_VARIABLE
from matcher.spec import parse_spec

READERS = ("proof", "events", "lines")


def verdicts(
    monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any], reference: Path, candidate: Path
) -> tuple[list[dict[str, Any]], list[bool]]:
    """The verdict document under each of ``READERS`` (``{"error": message}`` for one of
    Parity's errors), and whether the proof held: ``[True]`` or ``[False]`` when the first
    reader tried it, ``[]`` when it did not (the other readers never do)."""
    parsed = parse_spec(spec)
    proven = spy_on_proof(monkeypatch)
    documents = []
    for reader in READERS:
        if reader == "proof":
            monkeypatch.delenv(READER_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(READER_VARIABLE, reader)
        try:
            documents.append(compare_files(parsed, str(reference), str(candidate), 10).to_dict())
        except ParityError as exc:  # the outcome is then its one-line message
            documents.append({"error": f"{type(exc).__name__}: {exc}"})
    monkeypatch.delenv(READER_VARIABLE, raising=False)
    assert len(proven) <= 1, "only the first reader tries the proof"
    return documents, proven


def spy_on_proof(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """A list to which each ``compare_files`` call that tries the proof adds whether it
    held."""
    proven: list[bool] = []
    prove = columnar_equivalence.prove_equivalent

    def spy(*args: Any) -> Any:
        found = prove(*args)
        proven.append(found is not None)
        return found

    monkeypatch.setattr(compare, "prove_equivalent", spy)
    return proven


def write(path: Path, lines: list[str], parts: int = 1) -> Path:
    """``lines`` as one ``.jsonl`` file, or as a directory of ``parts`` part files (Spark's
    layout)."""
    if parts == 1:
        path = path.with_suffix(".jsonl")
        path.write_text("".join(lines))
        return path
    path.mkdir()
    step = -(-len(lines) // parts) or 1
    for n in range(parts):
        (path / f"part-{n:05d}.json").write_text("".join(lines[n * step : (n + 1) * step]))
    (path / "_SUCCESS").write_text("")
    return path


SPEC = {"name": "t", "dependence": {"key": ["k"]}, "equality": {"ignore": ["seq"]}}


def lines(rows: list[tuple[str, str]], extra: str = "") -> list[str]:
    """JSON lines of ``(key text, value text)`` rows, each with its ``seq``."""
    return [f'{{"k": {k}, "seq": {n}, "v": {v}{extra}}}\n' for n, (k, v) in enumerate(rows)]


# --- exact cases ------------------------------------------------------------------------------


def test_proven_with_the_online_matchers_peak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reference a, b, c; candidate b, c, a. Interleaved: a (1 waiting), b (2), b settles
    (1), c (2), c settles (1), a settles (0): the peak is 2."""
    ref = write(tmp_path / "r.jsonl", lines([("1", '"a"'), ("2", '"b"'), ("3", '"c"')]))
    cand = write(tmp_path / "c.jsonl", lines([("2", '"b"'), ("3", '"c"'), ("1", '"a"')]))
    documents, proven = verdicts(monkeypatch, SPEC, ref, cand)
    assert proven == [True]
    assert documents[0] == documents[1] == documents[2]
    assert (documents[0]["equivalent"], documents[0]["peak_unmatched"]) == (True, 2)
    assert documents[0]["matched_count"] == 3


@pytest.mark.parametrize(
    ("reference", "candidate", "proven", "equivalent"),
    [
        # a key's text that does not name its value alone: the online matcher decides
        ([("1", "1"), ("1.0", "2")], [("1", "1"), ("1.0", "2")], False, True),
        ([("0", "1")], [("-0", "1")], False, True),
        ([("true", "1")], [("true", "1")], False, True),
        # equal values written differently
        ([("1", "1.0")], [("1", "1.00")], False, True),
        ([("1", "1e2")], [("1", "100.0")], False, True),
        ([("1", '"\\u0061"')], [("1", '"a"')], False, True),
        # a column whose kind changes between the sides
        ([("1", "1")], [("1", '"1"')], False, False),
        ([("1", "1")], [('"1"', "1")], False, None),  # a key column: an error
        # a null, which the columnar reader leaves to the per-line one
        ([("1", "null")], [("1", "null")], False, True),
        # faults: the proof stops, the online matcher explains
        ([("1", "1"), ("2", "2")], [("2", "2"), ("1", "3")], False, False),
        ([("1", "1"), ("1", "2")], [("1", "2"), ("1", "1")], False, False),
        ([("1", "1"), ("2", "2")], [("2", "2")], False, False),
        ([("1", "1")], [("1", "1"), ("1", "1")], False, False),
        # long integers and floats are texts like any other, up to what int64 holds
        ([("123456789012345678", "0.30000000000000004")],
         [("123456789012345678", "0.30000000000000004")], True, True),
        ([("12345678901234567890", "1")], [("12345678901234567890", "1")], False, True),
        ([('"k é"', "-1.5e-300")], [('"k é"', "-1.5e-300")], True, True),
    ],
)  # fmt: skip
def test_gives_up_where_a_text_may_not_name_its_value(
    reference: list[tuple[str, str]],
    candidate: list[tuple[str, str]],
    proven: bool,
    equivalent: bool | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ref = write(tmp_path / "r.jsonl", lines(reference))
    cand = write(tmp_path / "c.jsonl", lines(candidate))
    documents, tried = verdicts(monkeypatch, SPEC, ref, cand)
    assert documents[0] == documents[1] == documents[2]
    assert documents[0].get("equivalent") is equivalent
    assert tried == [proven]


def test_other_forms_and_files_are_left_to_the_online_matcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [("1", "1"), ("2", "2")]
    ref = write(tmp_path / "r.jsonl", lines(rows))
    cand = write(tmp_path / "c.jsonl", lines(rows[::-1]))
    for spec in (
        {"dependence": "unordered", "equality": {"ignore": ["seq"]}},
        {"dependence": {"key": ["k"]}, "equality": {"tolerance": {"v": {"abs": 0.1}}}},
        {"dependence": {"key": ["k"]}},  # seq compared: a divergence
    ):
        documents, tried = verdicts(monkeypatch, spec, ref, cand)
        assert documents[0] == documents[1] == documents[2]
        assert tried in ([], [False])
    # a first block without the key column, the output's columns not known: not proven
    no_key = write(tmp_path / "n.jsonl", ['{"seq": 0, "v": 1}\n', '{"k": 1, "seq": 1, "v": 1}\n'])
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 16)  # one line per block
    inferences = (JsonInference(), JsonInference())
    proof = columnar_equivalence.prove_equivalent
    assert proof(parse_spec(SPEC), ([no_key], [no_key]), ((), ()), inferences) is None
    monkeypatch.undo()
    zipped = tmp_path / "z"
    zipped.mkdir()
    (zipped / "part-00000.json.gz").write_bytes(gzip.compress(ref.read_bytes()))
    documents, tried = verdicts(monkeypatch, SPEC, zipped, cand)
    assert documents[0] == documents[1] == documents[2]
    assert (documents[0]["equivalent"], tried) == (True, [])


def test_ordered_and_two_key_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [("1", "1"), ("2", "2"), ("1", "3")]
    ref = write(tmp_path / "r.jsonl", lines(rows, ', "j": 0'))
    same = write(tmp_path / "s.jsonl", lines(rows, ', "j": 0'))
    moved = write(tmp_path / "m.jsonl", lines([rows[1], rows[0], rows[2]], ', "j": 0'))
    ordered = {"dependence": "ordered", "equality": {"ignore": ["seq"]}}
    two = {"dependence": {"key": ["k", "j"]}, "equality": {"ignore": ["seq"]}}
    for spec, cand, equivalent in ((ordered, same, True), (ordered, moved, False),
                                   (two, moved, True)):  # fmt: skip
        documents, tried = verdicts(monkeypatch, spec, ref, cand)
        assert documents[0] == documents[1] == documents[2]
        assert (documents[0]["equivalent"], tried) == (equivalent, [equivalent])


def test_a_schema_finding_joins_the_proven_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference's ``v`` holds integers, the candidate's fractions too: the proof
    gives up on ``1`` against ``1.0``; with equal texts it holds, and the schema finding
    (``bigint`` against ``double``, a projection) sends the events to the online matcher."""
    ref = write(tmp_path / "r.jsonl", lines([("1", "1"), ("2", "2")]))
    cand = write(tmp_path / "c.jsonl", lines([("1", "1"), ("2", "2.5")]))
    documents, _ = verdicts(monkeypatch, SPEC, ref, cand)
    assert documents[0] == documents[1] == documents[2]
    assert documents[0]["equivalent"] is False


# --- property: random keyed outputs -----------------------------------------------------------

#: each pool but the last holds texts of one kind, so its lines share a layout (provable);
#: the last mixes texts the proof gives up on
KEY_POOLS = (["0", "1", "2", "-3", "40"], ['"a"', '"b"', '"c d"', '"é"'], ["1", "1.0", "true"])
VALUE_POOLS = (["1", "-2", "40"], ["2.5", "-0.125", "1e3", "7"], ['"x"', '"y z"', '""'],
               ["true", "false"], ["1", "1.0", '"a\\"b"', "null", '"x"'])  # fmt: skip


@st.composite
def outputs(draw: st.DrawFn) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """A reference and a candidate that interleaves its keys' events otherwise, keeping
    each key's order, and may then carry one fault."""
    keys = draw(st.sampled_from(KEY_POOLS[:2] * 2 + KEY_POOLS[2:]))  # mostly provable
    values = draw(st.sampled_from(VALUE_POOLS))
    reference = draw(
        st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(values)), max_size=40)
    )
    queues: dict[str, list[tuple[str, str]]] = {}
    for row in reference:
        queues.setdefault(row[0], []).append(row)
    candidate: list[tuple[str, str]] = []
    while queues:
        key = draw(st.sampled_from(sorted(queues)))
        candidate.append(queues[key].pop(0))
        if not queues[key]:
            del queues[key]
    fault = draw(st.sampled_from(["none"] * 3 + ["change", "drop", "duplicate"]))
    if candidate and fault != "none":
        at = draw(st.integers(0, len(candidate) - 1))
        if fault == "change":
            candidate[at] = (candidate[at][0], draw(st.sampled_from(values)))
        elif fault == "drop":
            del candidate[at]
        else:
            candidate.insert(at, candidate[at])
    return reference, candidate


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pair=outputs(),
    parts=st.integers(1, 3),
    block_bytes=st.sampled_from([columnar.BLOCK_BYTES, 64, 200]),
    spec=st.sampled_from([
        SPEC,
        {"name": "o", "dependence": "ordered", "equality": {"ignore": ["seq"]}},
        {"name": "two", "dependence": {"key": ["k", "v"]}, "equality": {"ignore": ["seq"]}},
    ]),
)  # fmt: skip
def test_property_the_same_verdict_as_the_online_matcher(
    pair: tuple[list[tuple[str, str]], list[tuple[str, str]]],
    parts: int,
    block_bytes: int,
    spec: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(columnar, "BLOCK_BYTES", block_bytes)
    base = tmp_path_factory.mktemp("pair")
    ref = write(base / "reference", lines(pair[0]), parts)
    cand = write(base / "candidate", lines(pair[1]), 4 - parts)
    documents, tried = verdicts(monkeypatch, spec, ref, cand)
    assert documents[0] == documents[1] == documents[2]
    if tried == [True]:
        assert documents[0]["equivalent"] is True
