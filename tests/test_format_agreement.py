"""One typed reading of every format on both engines (issue 31).

The same outputs written as CSV, JSON lines and Parquet give the same verdict and counts,
on the core (``compare_files``, what ``parity compare --engine core`` and the match job's
core run) and on Spark (``compare_on_spark``), with and without a tolerance:

* on each format, the two engines give the same verdict, witnesses and schema findings;
* across formats, Parquet, JSON lines and CSV read with its declared ``output.schema``
  give the same verdict and counts; CSV with inferred types too, when no string column
  looks like a number (``"007"`` is the integer 7 to Spark's ``inferSchema``, as it is to
  Parity: that is what ``output.schema`` is for).

Hypothesis draws the values: whole-valued floats (written ``85`` by a JSON or CSV writer
that drops the ``.0``, on one side only), floats a rounding apart, NaN, numeric-looking
strings (``"007"``, ``"1e5"``, ``"NaN"``, ``"true"``, ``" 1"``), empty strings and nulls.
Each example costs eight Spark comparisons, so there are few examples.

The issue's two wrong verdicts are here as tests of their own: CSV float sums a rounding
apart under a relative tolerance, and JSON ``85`` against ``85.1``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from matcher.files.compare import compare_files
from matcher.serialize import json_safe
from matcher.spark.outputs import compare_on_spark
from matcher.spec import Spec, load_spec
from matcher.verdict import Verdict
from parity.cli import main

pytest_plugins = ("tests.spark_fixtures",)  # the shared ``spark`` fixture

pytestmark = pytest.mark.spark

Row = dict[str, Any]
COLUMNS = ("k", "f", "s", "n", "b")
DECLARED = "k BIGINT, f DOUBLE, s STRING, n BIGINT, b BOOLEAN"
ARROW = pa.schema(
    [("k", pa.int64()), ("f", pa.float64()), ("s", pa.string()), ("n", pa.int64()),
     ("b", pa.bool_())]
)  # fmt: skip
FLOATS = st.sampled_from([85.0, 85.1, 10666.0, 10665.999999999998, 0.5, -0.0, 1e16, math.nan])
NUMBERISH = ["007", "7", "1e5", "100000", "NaN", "true", " 1", "1", "", None]
WORDS = ["abc", "a b", "x", "", None]
EXAMPLES = settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def summary(verdict: Verdict) -> dict[str, Any]:
    """What the two engines must agree on (NaN-safe, for ``==``)."""
    result = verdict.to_dict()
    for key in ("peak_unmatched", "detected_at", "side_stats", "warnings"):
        result.pop(key)
    return json_safe(result)


def outcome(verdict: Verdict) -> tuple[str, dict[str, int], int, int]:
    """What every format must agree on: the verdict and its counts."""
    return (
        verdict.status,
        dict(verdict.counts),
        verdict.reference_count or 0,
        verdict.candidate_count or 0,
    )


# --- writers, as the pipelines' own writers write ------------------------------------------


def java_double(value: float, whole_as_integer: bool) -> str:
    """A double as Spark's CSV writer writes it (``NaN``, ``Infinity``), or, for a writer
    that drops a whole number's ``.0``, ``85``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if whole_as_integer and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def write_csv(directory: Path, rows: list[Row], whole_as_integer: bool) -> str:
    def cell(name: str, value: Any) -> str:
        if value is None:
            return ""  # unquoted: null
        if name == "f":
            return java_double(value, whole_as_integer)
        if name == "b":
            return "true" if value else "false"
        if name == "s":
            return f'"{value}"' if value == "" or "," in value else value  # "": quoted
        return str(value)

    directory.mkdir(parents=True)
    lines = [",".join(COLUMNS)] + [",".join(cell(c, r[c]) for c in COLUMNS) for r in rows]
    (directory / "part-00000.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(directory)


def write_json(directory: Path, rows: list[Row], whole_as_integer: bool) -> str:
    def value(name: str, v: Any) -> Any:
        if name == "f" and whole_as_integer and math.isfinite(v) and v == int(v):
            return int(v) if abs(v) < 1e15 else v
        return v

    directory.mkdir(parents=True)
    lines = [json.dumps({c: value(c, r[c]) for c in COLUMNS}) for r in rows]
    (directory / "part-00000.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(directory)


def write_parquet(directory: Path, rows: list[Row], _whole_as_integer: bool) -> str:
    directory.mkdir(parents=True)
    table = pa.Table.from_pylist(rows, schema=ARROW)
    pq.write_table(table, directory / "part-00000.parquet")
    return str(directory)


WRITERS = {"csv": write_csv, "json": write_json, "parquet": write_parquet}


def spec_of(directory: Path, fmt: str, tolerance: bool, declared: bool) -> Spec:
    lines = [
        f"output: {{format: {fmt}" + (f", schema: '{DECLARED}'" if declared else "") + "}",
        "dependence: {key: [k]}",
    ]
    if tolerance:
        lines.append("equality: {tolerance: {f: {rel: 1.0e-9}}}")
    name = f"{fmt}{'_declared' if declared else ''}{'_tolerant' if tolerance else ''}.yaml"
    (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_spec(directory / name)


# --- the outputs Hypothesis draws ----------------------------------------------------------


@st.composite
def output_pairs(draw: st.DrawFn) -> tuple[list[Row], list[Row], bool, bool]:
    """A reference, a candidate made from it by a few changes, and whether each side's
    writer drops a whole number's ``.0``."""
    texts = draw(st.sampled_from([NUMBERISH, WORDS]))
    row = st.fixed_dictionaries(
        {
            "k": st.integers(0, 4),
            "f": FLOATS,
            "s": st.sampled_from(texts),
            "n": st.one_of(st.none(), st.integers(-3, 3)),
            "b": st.booleans(),
        }
    )
    reference: list[Row] = draw(st.lists(row, min_size=2, max_size=12))
    reference[0]["n"] = 1  # a column that is null throughout has no type to infer
    candidate = [dict(r) for r in reference]
    for _ in range(draw(st.integers(0, 3))):
        change = draw(st.sampled_from(["nudge", "alter", "text", "drop", "duplicate"]))
        i = draw(st.integers(1, len(candidate) - 1))
        if change == "nudge":  # a rounding apart: within the tolerance
            candidate[i]["f"] = math.nextafter(candidate[i]["f"], math.inf)
        elif change == "alter":
            candidate[i]["f"] = draw(FLOATS)
        elif change == "text":
            candidate[i]["s"] = draw(st.sampled_from(texts))
        elif change == "drop" and len(candidate) > 2:
            del candidate[i]
        elif change == "duplicate":
            candidate.insert(i, dict(candidate[i]))
    return reference, candidate, draw(st.booleans()), draw(st.booleans())


def looks_like_text(rows: list[Row]) -> bool:
    return all(r["s"] in WORDS for r in rows)


@EXAMPLES
@given(pair=output_pairs())
def test_every_format_gives_one_verdict_on_both_engines(
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
    pair: tuple[list[Row], list[Row], bool, bool],
) -> None:
    reference, candidate, ref_whole, cand_whole = pair
    root = tmp_path_factory.mktemp("formats")
    paths = {
        fmt: (
            write(root / fmt / "reference", reference, ref_whole),
            write(root / fmt / "candidate", candidate, cand_whole),
        )
        for fmt, write in WRITERS.items()
    }
    for tolerance in (False, True):
        outcomes = {}
        for fmt, declared in (("parquet", False), ("json", False), ("csv", True), ("csv", False)):
            spec = spec_of(root, fmt, tolerance, declared)
            core = compare_files(spec, *paths[fmt], 10)
            on_spark = compare_on_spark(spark, spec, *paths[fmt], limit=10).verdict
            assert summary(on_spark) == summary(core), (fmt, declared, tolerance)
            outcomes[fmt + ("_declared" if declared else "")] = outcome(core)
        same_everywhere = [outcomes["parquet"], outcomes["json"], outcomes["csv_declared"]]
        if looks_like_text(reference + candidate):
            same_everywhere.append(outcomes["csv"])
        assert same_everywhere == [outcomes["parquet"]] * len(same_everywhere), tolerance


# --- the wrong verdicts ------------------------------------------------------------


def daily_sums(directory: Path, fmt: str, totals: list[float]) -> str:
    rows = [
        {"k": day, "f": total, "s": f"2020-{1 + day // 28:02d}-{1 + day % 28:02d}", "n": 1,
         "b": True}
        for day, total in enumerate(totals)
    ]  # fmt: skip
    return WRITERS[fmt](directory, rows, False)


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_float_sums_a_rounding_apart_are_equivalent_under_a_relative_tolerance(
    spark: SparkSession, tmp_path: Path, fmt: str
) -> None:
    # the issue: CSV on the core compared 10666.0 and 10665.999999999998 as text
    totals = [10666.0 + day for day in range(300)]
    apart = [math.nextafter(t, -math.inf) if day % 3 == 0 else t for day, t in enumerate(totals)]
    reference = daily_sums(tmp_path / "reference", fmt, totals)
    candidate = daily_sums(tmp_path / "candidate", fmt, apart)
    spec = spec_of(tmp_path, fmt, tolerance=True, declared=False)
    for verdict in (
        compare_files(spec, reference, candidate, 10),
        compare_on_spark(spark, spec, reference, candidate, limit=10).verdict,
    ):
        assert outcome(verdict) == ("equivalent", dict.fromkeys(
            ("loss", "duplication", "reordering", "corruption"), 0), 300, 300)  # fmt: skip
    exact = spec_of(tmp_path, fmt, tolerance=False, declared=False)
    for verdict in (
        compare_files(exact, reference, candidate, 10),
        compare_on_spark(spark, exact, reference, candidate, limit=10).verdict,
    ):
        assert (verdict.status, verdict.counts["corruption"]) == ("divergent", 100)


def test_json_85_and_85_1_are_numbers_within_a_tolerance(
    spark: SparkSession, tmp_path: Path
) -> None:
    # the issue: bigint here, double there was a divergent retyping under compatible
    reference = tmp_path / "reference"
    candidate = tmp_path / "candidate"
    for directory, values in ((reference, [85, 3]), (candidate, [85.1, 3])):
        directory.mkdir()
        lines = [json.dumps({"k": k, "v": v}) for k, v in enumerate(values)]
        (directory / "part-00000.json").write_text("\n".join(lines) + "\n")
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(
        "output: {format: json}\ndependence: {key: [k]}\n"
        "equality: {tolerance: {v: {abs: 0.2}}}\nschema: {mode: compatible}\n"
    )
    spec = load_spec(spec_path)
    listed = {
        "mode": "compatible",
        "divergent": False,
        "findings": [
            {
                "kind": "retyped",
                "column": "v",
                "reference": "bigint",
                "candidate": "double",
                "divergent": False,
                "widening": False,
                "compared_as": "double",
                "inferred": True,
                "explanation": "column 'v' changed type bigint -> double (numbers inferred "
                "from text; values compared as double)",
            }
        ],
    }
    for verdict in (
        compare_files(spec, str(reference), str(candidate), 10),
        compare_on_spark(spark, spec, str(reference), str(candidate), limit=10).verdict,
    ):
        assert verdict.status == "equivalent"
        assert verdict.schema is not None and verdict.schema.to_dict() == listed
    # without the tolerance: one corruption, whose witness holds the double Spark reads
    strict = tmp_path / "exact.yaml"
    strict.write_text("output: {format: json}\ndependence: {key: [k]}\n")
    for verdict in (
        compare_files(load_spec(strict), str(reference), str(candidate), 10),
        compare_on_spark(
            spark, load_spec(strict), str(reference), str(candidate), limit=10
        ).verdict,
    ):
        [witness] = verdict.divergences
        assert (witness.kind, witness.reference_event, witness.candidate_event) == (
            "corruption",
            {"k": 0, "v": 85.0},
            {"k": 0, "v": 85.1},
        )
        assert type(witness.reference_event["v"]) is float  # type: ignore[index]


def test_parquet_bigint_to_double_stays_a_divergent_retyping(
    spark: SparkSession, tmp_path: Path
) -> None:
    # only text formats infer number types: Parquet's are the writer's
    for name, kind, values in (
        ("reference", pa.int64(), [85, 3]),
        ("candidate", pa.float64(), [85.0, 3.0]),
    ):
        (tmp_path / name).mkdir()
        table = pa.table({"k": pa.array([0, 1], pa.int64()), "v": pa.array(values, kind)})
        pq.write_table(table, tmp_path / name / "part-00000.parquet")
    (tmp_path / "spec.yaml").write_text("output: {format: parquet}\ndependence: {key: [k]}\n")
    spec = load_spec(tmp_path / "spec.yaml")
    for verdict in (
        compare_files(spec, str(tmp_path / "reference"), str(tmp_path / "candidate"), 10),
        compare_on_spark(
            spark, spec, str(tmp_path / "reference"), str(tmp_path / "candidate"), limit=10
        ).verdict,
    ):
        assert verdict.status == "divergent"
        assert verdict.schema is not None
        [finding] = verdict.schema.findings
        assert (finding.divergent, finding.inferred) == (True, False)


# --- errors when the spec meets the outputs ------------------------------------------------


@pytest.mark.parametrize("engine", ["core", "spark"])
def test_a_tolerance_on_a_column_read_as_text_is_an_error(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    for name in ("reference", "candidate"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "part-00000.csv").write_text("k,total\n1,10666.0\n2,N/A\n")
    (tmp_path / "spec.yaml").write_text(
        "output: {format: csv}\ndependence: {key: [k]}\n"
        "equality: {tolerance: {total: {rel: 1.0e-9}}}\n"
    )
    argv = ["compare", str(tmp_path / "reference"), str(tmp_path / "candidate")]
    code = main([*argv, "--spec", str(tmp_path / "spec.yaml"), "--engine", engine])
    err = capsys.readouterr().err
    prefix = f"{tmp_path / 'spec.yaml'}: " if engine == "core" else ""
    assert (code, err) == (
        2,
        f"parity: error: {prefix}equality.tolerance: column 'total' is string in both "
        "outputs, not a number: a tolerance applies to numbers only (in CSV, one value that "
        "is not a number makes a column text: declare its type in output.schema)\n",
    )


@pytest.mark.parametrize("engine", ["core", "spark"])
def test_a_declared_column_reads_its_type_and_refuses_other_values(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    for name, total in (("reference", "10666.0"), ("candidate", "10665.999999999998")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "part-00000.csv").write_text(f"day,code,total\n2020-1-2,007,{total}\n")
    (tmp_path / "spec.yaml").write_text(
        "output: {format: csv, schema: 'day DATE, code STRING, total DOUBLE'}\n"
        "dependence: {key: [day]}\nequality: {tolerance: {total: {rel: 1.0e-9}}}\n"
    )
    argv = ["compare", str(tmp_path / "reference"), str(tmp_path / "candidate")]
    argv += ["--spec", str(tmp_path / "spec.yaml"), "--engine", engine, "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "equivalent"
    (tmp_path / "candidate" / "part-00000.csv").write_text("day,code,total\n2020-1-2,007,N/A\n")
    assert main(argv[:-1]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    if engine == "core":
        assert err == (
            f"parity: error: {tmp_path / 'candidate' / 'part-00000.csv'}: line 2: column "
            "'total': 'N/A' is not a DOUBLE (output.schema)\n"
        )
    else:  # Spark's reader says the file and the record, as it parsed it, not the line
        assert err.startswith(
            f"parity: error: {tmp_path / 'candidate' / 'part-00000.csv'}: a value is not of "
            "the type output.schema declares (Spark's reader refused the record ["
        ), err
