"""The spec sections the Airflow pipeline reads: applications, the input slice, noise and
the schedule. Each loads into exact values; each mistake is one exact line."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from matcher.errors import SpecError
from matcher.spec import RERUN_CONF, load_spec, parse_duration, placeholders

FULL = """\
name: nightly
reference:
  application: jobs/app.jar
  main_class: com.example.Nightly
  jars: libs/extra.jar
  args: [--mode, batch]
  conf: {spark.sql.shuffle.partitions: 8, spark.speculation: false}
  version: "4.1"
candidate:
  application: s3a://builds/app-4.2.py
  py_files: [deps.zip]
  args: [--in, "{input}", --out, "{output}", --scratch, "{run_dir}/tmp", --json, "{{}}"]
  version: 4.2-rc1
input:
  path: data/captures/orders
  format: csv
  slice: {column: ordered_at, start: 2024-05-01T00:00:00Z, window: 6h, sample: 0.1, files: 8}
dependence: {key: [customer]}
noise: {reference_runs: 2, args: [--partitions, 3]}
schedule: "30 1 * * 1-5"
"""


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def problem(tmp_path: Path, text: str) -> str:
    path = spec_file(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return str(info.value).replace(str(path), "FILE")


def test_every_pipeline_section_loads(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, FULL))
    assert spec.reference is not None and spec.candidate is not None and spec.input is not None
    assert (spec.reference.main_class, spec.reference.jars) == (
        "com.example.Nightly",
        ("libs/extra.jar",),
    )
    assert spec.reference.conf == {
        "spark.sql.shuffle.partitions": "8",
        "spark.speculation": "false",
    }
    assert spec.candidate.py_files == ("deps.zip",)
    assert spec.candidate.args[-1] == "{{}}"
    assert spec.candidate.version == "4.2-rc1"
    chosen = spec.input.slice
    assert chosen is not None
    assert chosen.fixed_window() == (
        dt.datetime(2024, 5, 1, tzinfo=dt.UTC),
        dt.datetime(2024, 5, 1, 6, tzinfo=dt.UTC),
    )
    assert (chosen.sample, chosen.key, chosen.files) == (0.1, None, 8)
    assert (spec.noise.reference_runs, spec.noise.args) == (2, ("--partitions", "3"))
    assert (
        spec.noise.conf
        == RERUN_CONF
        == {
            "spark.sql.shuffle.partitions": "7",
            "spark.default.parallelism": "7",
            "spark.sql.adaptive.coalescePartitions.enabled": "false",
        }
    )
    assert spec.schedule == "30 1 * * 1-5"


@pytest.mark.parametrize(
    ("slice_", "window"),
    [
        ("{column: t, start: 2024-05-01T00:00:00Z, end: 2024-05-03T00:00:00Z}", (1, 3)),
        ("{column: t, end: 2024-05-03T00:00:00+00:00, window: 2d}", (1, 3)),
        ("{column: t, window: 1d}", None),
        ("{column: t}", None),
    ],
)
def test_fixed_windows(tmp_path: Path, slice_: str, window: tuple[int, int] | None) -> None:
    spec = load_spec(
        spec_file(tmp_path, f"dependence: ordered\ninput: {{path: x, slice: {slice_}}}\n")
    )
    assert spec.input is not None and spec.input.slice is not None
    expected = None
    if window is not None:
        expected = tuple(dt.datetime(2024, 5, day, tzinfo=dt.UTC) for day in window)
    assert spec.input.slice.fixed_window() == expected


def test_placeholders_and_durations() -> None:
    assert placeholders("--out={output}/part-{{n}}") == {"output"}
    assert placeholders("{input}{run_dir}") == {"input", "run_dir"}
    assert parse_duration("90m") == dt.timedelta(minutes=90)
    assert parse_duration("2w") == dt.timedelta(weeks=2)


PLACEHOLDER_HELP = (
    "(known: {input}, {output}, {run_dir}, {checkpoint}; write {{ and }} for literal braces)"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "reference: {application: a.py, args: ['--in={inptu}']}\n",
            "FILE: reference.args: '--in={inptu}': unknown placeholder {inptu} " + PLACEHOLDER_HELP,
        ),
        (
            "reference: {application: a.py, args: ['{input!r}']}\n",
            "FILE: reference.args: '{input!r}': unknown placeholder {input} " + PLACEHOLDER_HELP,
        ),
        (
            "reference: {application: a.py, args: ['{input']}\n",
            "FILE: reference.args: '{input': expected '}' before end of string (write {{ and }} "
            "for literal braces)",
        ),
        (
            "reference: {application: a.py, args: [--out, '{output}']}\n",
            "FILE: reference.args: {output} is used but {input} is not: give both placeholders, "
            "or neither (then --input SLICE --output OUT are appended)",
        ),
        (
            "reference: {application: a.py, conf: {sql.shuffle.partitions: 4}}\n",
            "FILE: reference.conf: 'sql.shuffle.partitions': Spark ignores configuration keys "
            "not starting 'spark.'",
        ),
        (
            "candidate: {application: a.py, main_class: x.Main}\n",
            "FILE: candidate: 'main_class' is for a JAR application, not 'a.py'",
        ),
        (
            "input: {path: x, slice: {column: t, start: 2024-05-01T00:00:00, window: 1d}}\n",
            "FILE: input.slice.start: give a time zone, as in 2024-05-01T00:00:00Z or "
            "2024-05-01T00:00:00+02:00",
        ),
        (
            "input: {path: x, slice: {column: t, start: 2024-05-02T00:00:00Z, "
            "end: 2024-05-01T00:00:00Z}}\n",
            "FILE: input.slice: 'start' (2024-05-02T00:00:00+00:00) must be before 'end' "
            "(2024-05-01T00:00:00+00:00)",
        ),
        (
            "input: {path: x, slice: {column: t, start: 2024-05-01T00:00:00Z, "
            "end: 2024-05-02T00:00:00Z, window: 1d}}\n",
            "FILE: input.slice: give two of 'start', 'end' and 'window', not all three",
        ),
        (
            "input: {path: x, slice: {column: t, end: 2024-05-01T00:00:00Z}}\n",
            "FILE: input.slice: 'end' needs 'window' (or both 'start' and 'end')",
        ),
        (
            "input: {path: x, slice: {start: 2024-05-01T00:00:00Z, window: 1d}}\n",
            "FILE: input.slice: a window needs the time column it applies to ('column')",
        ),
        (
            "input: {path: x, slice: {key: k}}\n",
            "FILE: input.slice: 'key' names the columns a sample hashes: it needs 'sample'",
        ),
        (
            "input: {path: x, slice: {files: 0}}\n",
            "FILE: input.slice.files: must be >= 1, got 0",
        ),
        (
            "input: {path: x, slice: {sample: 0.5}}\n",
            "FILE: input.slice.key: a sample hashes key columns: name them (the dependence has "
            "no key to default to)",
        ),
        ("noise: {reference_runs: 3}\n", "FILE: noise.reference_runs: must be <= 2, got 3"),
        (
            "reference: {application: a.py, conf: {spark.sql.shuffle.partitions: 7, "
            "spark.default.parallelism: 7, spark.sql.adaptive.coalescePartitions.enabled: "
            "false}}\nnoise: {reference_runs: 2}\n",
            "FILE: noise.conf: the rerun would repeat the reference exactly; give Spark "
            "configuration (or noise.args) that differs from the reference's",
        ),
        (
            "schedule: daily\n",
            "FILE: schedule: expected a cron expression (5 fields, as '0 2 * * *') or one of "
            "@hourly, @daily, @weekly, @monthly, @quarterly, @yearly, got 'daily'",
        ),
        (
            "schedule: '@once'\n",
            "FILE: schedule: expected a cron expression (5 fields, as '0 2 * * *') or one of "
            "@hourly, @daily, @weekly, @monthly, @quarterly, @yearly, got '@once'",
        ),
    ],
)
def test_pipeline_mistakes_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    assert problem(tmp_path, "dependence: unordered\n" + text) == message


def test_a_sample_defaults_to_the_dependence_key(tmp_path: Path) -> None:
    text = "dependence: {key: [k]}\ninput: {path: x, slice: {sample: 0.5}}\n"
    spec = load_spec(spec_file(tmp_path, text))
    assert spec.input is not None and spec.input.slice is not None
    assert (spec.input.slice.sample, spec.input.slice.key, spec.dependence.key) == (
        0.5,
        None,
        ("k",),
    )
