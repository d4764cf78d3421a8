"""Issue 29, item 21: "the nesting depth limit fell from about 480 to under 400 levels".

The limit was Python's recursion limit, met by accident: comparing two JSON outputs whose
values nest arrays and objects ~340 levels deep failed (cleanly, but at a depth set by how
many frames each level happened to cost: ``all(generator)`` in ``same``, generators in the
schema's ``render``). Now the bound is stated, ``matcher.equality.MAX_NESTING`` (480),
checked where a JSON value is first typed and where values are compared or hashed, with one
line beyond it; and a spec's YAML has its own, ``matcher.spec.MAX_SPEC_NESTING`` (100).
Both sides of each bound are here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from matcher.equality import MAX_NESTING, freeze, same
from matcher.errors import InputError, SpecError
from matcher.spec import MAX_SPEC_NESTING, parse_yaml
from parity.cli import main

TOO_DEEP = (
    "a value is nested deeper than 480 levels (arrays, maps and structs): too deep to compare"
)


def nested(levels: int, leaf: str = "1") -> str:
    """JSON text of a value ``levels`` containers deep, arrays and objects alternating."""
    text = leaf
    for level in range(levels):
        text = f'{{"a":{text}}}' if level % 2 else f"[{text}]"
    return text


def value(levels: int, leaf: int = 1) -> object:
    built: object = leaf
    for level in range(levels):
        built = {"a": built} if level % 2 else [built]
    return built


def compare(tmp_path: Path, capsys: pytest.CaptureFixture[str], levels: int, leaf: str, spec: str):
    ref = tmp_path / "ref.jsonl"
    cand = tmp_path / "cand.jsonl"
    ref.write_text('{"k":1,"v":' + nested(levels) + "}\n")
    cand.write_text('{"k":1,"v":' + nested(levels, leaf) + "}\n")
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(f"dependence: {spec}\n")
    code = main(["compare", "--engine", "core", "--spec", str(spec_path), str(ref), str(cand)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_bound_is_at_least_the_old_depth() -> None:
    assert MAX_NESTING == 480


SPECS = ["unordered", "ordered", "{key: [k]}", "{key: [v]}"]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize(("leaf", "code"), [("1", 0), ("2", 1)])
def test_a_value_at_the_bound_is_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, leaf: str, code: int
) -> None:
    got, out, err = compare(tmp_path, capsys, MAX_NESTING, leaf, spec)
    assert (got, err) == (code, "")
    assert ("verdict: equivalent" if code == 0 else "verdict: divergent") in out


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("leaf", ["1", "2"])
def test_a_value_past_the_bound_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, leaf: str
) -> None:
    assert compare(tmp_path, capsys, MAX_NESTING + 1, leaf, spec) == (
        2,
        "",
        f"parity: error: {TOO_DEEP}\n",
    )


def test_the_matcher_compares_and_hashes_to_the_bound() -> None:
    deepest = value(MAX_NESTING)
    assert same(deepest, value(MAX_NESTING)) is True
    assert same(deepest, value(MAX_NESTING, 2)) is False
    assert freeze(deepest) == freeze(value(MAX_NESTING))
    for call in (lambda v: same(v, v), freeze):
        with pytest.raises(InputError) as caught:
            call(value(MAX_NESTING + 1))
        assert str(caught.value) == TOO_DEEP


def spec_text(levels: int) -> str:
    """A spec document ``levels`` deep, the document's own mapping the first."""
    return "dependence: " + "[" * (levels - 1) + "1" + "]" * (levels - 1) + "\n"


def test_a_spec_at_its_bound_parses() -> None:
    parsed = parse_yaml(spec_text(MAX_SPEC_NESTING), "F")
    depth, inner = 1, parsed["dependence"]
    while isinstance(inner, list):
        depth, inner = depth + 1, inner[0]
    assert (depth, inner) == (MAX_SPEC_NESTING, 1)


@pytest.mark.parametrize("levels", [MAX_SPEC_NESTING + 1, 600, 5000])
def test_a_spec_past_its_bound_is_one_line(levels: int) -> None:
    """Past ~490 levels PyYAML's composer raised RecursionError (a traceback from
    ``parity compare``, every validation's DAG gone in Airflow)."""
    with pytest.raises(SpecError) as caught:
        parse_yaml(spec_text(levels), "F")
    assert str(caught.value) == "F: line 1: nested deeper than 100 levels: not a validation spec"
