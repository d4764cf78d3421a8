"""The core on local JSON lines at the scale users run it (``parity compare --engine core``):
the proof on texts (``matcher.files.columnar_equivalence``) gives the verdict document the
online matcher gives on events (``PARITY_READER=events``), to ``peak_unmatched``, on
millions of rows, in one file and in the many part files Spark writes.

Not part of the default test run: ``make scale`` runs it with ``tests/test_scale.py``.
``PARITY_SCALE_ROWS`` sets the rows per output (default 3,000,000). The outputs are those
of ``bench/compare_files.py``: four columns, 20,000 keys, the candidate a bounded
re-interleaving of the reference (each key's events in their order), ``seq`` ignored.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_columnar_equivalence import spy_on_proof

from matcher.files.compare import compare_files
from matcher.files.readers import READER_VARIABLE
from matcher.spec import load_spec

pytestmark = [pytest.mark.scale]

ROOT = Path(__file__).resolve().parent.parent
ROWS = int(os.environ.get("PARITY_SCALE_ROWS", "3000000"))
KEYS = 20_000
PARTS = 16  # part files per output in the split layout


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_compare_files", ROOT / "bench" / "compare_files.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The bench's reference, its re-interleaved candidate and the spec; the same two split
    into ``PARTS`` part files each; and a faulty candidate (one value changed halfway)."""
    data = tmp_path_factory.mktemp("core_scale")
    reference, candidate, spec = bench().generate(data, ROWS, KEYS)
    found = {"spec": spec, "reference": reference, "candidate": candidate}
    for name in ("reference", "candidate"):
        lines = found[name].read_bytes().splitlines(keepends=True)
        split = data / f"{name}_parts"
        split.mkdir()
        step = -(-len(lines) // PARTS)
        for n in range(PARTS):
            (split / f"part-{n:05d}.json").write_bytes(b"".join(lines[n * step : (n + 1) * step]))
        (split / "_SUCCESS").write_bytes(b"")
        found[f"{name}_parts"] = split
    lines = candidate.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = lines[middle].replace(b'"s":"e', b'"s":"changed e')
    faulty = data / "faulty.jsonl"
    faulty.write_bytes(b"".join(lines))
    found["faulty"] = faulty
    return found


def documents(
    monkeypatch: pytest.MonkeyPatch, outputs: dict[str, Path], reference: str, candidate: str
) -> tuple[dict[str, Any], dict[str, Any], list[bool]]:
    """The verdict document with the proof, and on events; whether the proof held."""
    spec = load_spec(outputs["spec"])
    proven = spy_on_proof(monkeypatch)
    paths = str(outputs[reference]), str(outputs[candidate])
    monkeypatch.delenv(READER_VARIABLE, raising=False)
    with_proof = compare_files(spec, *paths, 100).to_dict()
    monkeypatch.setenv(READER_VARIABLE, "events")
    on_events = compare_files(spec, *paths, 100).to_dict()
    return with_proof, on_events, proven


@pytest.mark.parametrize(
    ("reference", "candidate"),
    [("reference", "candidate"), ("reference_parts", "candidate_parts"),
     ("reference", "candidate_parts")],
    ids=["one file each", "part files each", "one file against part files"],
)  # fmt: skip
def test_the_proof_gives_the_online_matchers_verdict(
    monkeypatch: pytest.MonkeyPatch, outputs: dict[str, Path], reference: str, candidate: str
) -> None:
    with_proof, on_events, proven = documents(monkeypatch, outputs, reference, candidate)
    assert proven == [True]
    assert with_proof == on_events
    assert (with_proof["equivalent"], with_proof["matched_count"]) == (True, ROWS)
    assert 0 < with_proof["peak_unmatched"] < 1000  # the window the bench moves events in


def test_a_fault_halfway_is_left_to_the_online_matcher(
    monkeypatch: pytest.MonkeyPatch, outputs: dict[str, Path]
) -> None:
    with_proof, on_events, proven = documents(monkeypatch, outputs, "reference", "faulty")
    assert proven == [False]
    assert with_proof == on_events
    assert with_proof["counts"] == {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 1}
