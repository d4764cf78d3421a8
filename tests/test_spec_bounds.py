"""Issue 29, items 1 and 19, at the loader: every duration, instant, seed and name a spec
gives is range-checked where it is parsed (``matcher.spec_bounds``), with one line naming
the key; both sides of each bound are here. The DAG side: ``tests/test_dags_isolation.py``
and ``tests/test_spec_fuzz.py``.
"""

from __future__ import annotations

import datetime as dt

import pytest

from matcher.errors import SpecError
from matcher.spec import Spec, load_spec, parse_spec, parse_yaml
from matcher.spec_bounds import MAX_DURATION, parse_duration

BASE = "dependence: {key: [k]}\n"
SLICE = "input: {{path: capture, slice: {{column: t, {fields}}}}}\n"
RECOVERY = "application: {{application: a.py, args: ['{{checkpoint}}']}}\nrecovery: {{{fields}}}\n"


def load(text: str) -> Spec:
    return parse_spec(parse_yaml(BASE + text, "F"), "F")


def problem(text: str) -> str:
    with pytest.raises(SpecError) as caught:
        load(text)
    return str(caught.value)


def on_slice(fields: str) -> str:
    return SLICE.format(fields=fields)


REFUSED = [
    # item 1: the reproductions
    (
        "airflow: {task_timeout: 99999999999999d}\n",
        "F: airflow.task_timeout: at most 3650d (ten years), got '99999999999999d'",
    ),
    (
        on_slice("window: 99999999999999d, start: '2024-01-01T00:00:00Z'"),
        "F: input.slice.window: at most 3650d (ten years), got '99999999999999d'",
    ),
    (
        on_slice("window: 1d, start: '9999-12-31T23:00:00Z'"),
        "F: input.slice.start: must be from 1000-01-01 to before 9000-01-01 (UTC), got "
        "9999-12-31T23:00:00+00:00",
    ),
    (
        on_slice("window: 1d, end: '0001-01-01T01:00:00Z'"),
        "F: input.slice.end: must be from 1000-01-01 to before 9000-01-01 (UTC), got "
        "0001-01-01T01:00:00+00:00",
    ),
    # item 1: just past each bound
    (
        "airflow: {task_timeout: 3651d}\n",
        "F: airflow.task_timeout: at most 3650d (ten years), got '3651d'",
    ),
    (on_slice("window: 522w"), "F: input.slice.window: at most 3650d (ten years), got '522w'"),
    (
        on_slice("window: 315360001s"),
        "F: input.slice.window: at most 3650d (ten years), got '315360001s'",
    ),
    (
        on_slice("window: " + "9" * 5000 + "d"),  # longer than int() converts
        "F: input.slice.window: at most 3650d (ten years), got '" + "9" * 5000 + "d'",
    ),
    (
        on_slice("window: 1d, start: '0999-12-31T23:59:59Z'"),
        "F: input.slice.start: must be from 1000-01-01 to before 9000-01-01 (UTC), got "
        "0999-12-31T23:59:59+00:00",
    ),
    (
        on_slice("window: 1d, end: '9000-01-01T00:00:00Z'"),
        "F: input.slice.end: must be from 1000-01-01 to before 9000-01-01 (UTC), got "
        "9000-01-01T00:00:00+00:00",
    ),
    (  # in UTC it is 0999: the offset counts
        on_slice("window: 1d, start: '1000-01-01T00:00:00+01:00'"),
        "F: input.slice.start: must be from 1000-01-01 to before 9000-01-01 (UTC), got "
        "1000-01-01T00:00:00+01:00",
    ),
    (
        RECOVERY.format(fields="seed: -1"),
        "F: recovery.seed: must be >= 0, got -1",
    ),
    (
        RECOVERY.format(fields="seed: 2147483648"),
        "F: recovery.seed: must be <= 2147483647, got 2147483648",
    ),
    (
        RECOVERY.format(fields="check: windows, expected: 99999999999999999999"),
        "F: recovery.expected: must be <= 2147483647, got 99999999999999999999",
    ),
    (
        "properties: [{operator: 'm:f', sample: s, seed: 2147483648}]\n",
        "F: properties[0].seed: must be <= 2147483647, got 2147483648",
    ),
    (
        "equality: {tolerance: {v: {abs: .nan}}}\n",
        "F: equality.tolerance.v.abs: expected a finite number, got nan",
    ),
    (
        "equality: {tolerance: {v: {rel: .inf}}}\n",
        "F: equality.tolerance.v.rel: expected a finite number, got inf",
    ),
    (
        "expectations: {derived: {range_tolerance: .inf}}\n",
        "F: expectations.derived.range_tolerance: expected a finite number, got inf",
    ),
    (on_slice("sample: .nan, key: k"), "F: input.slice.sample: must be <= 1.0, got nan"),
    ("name: " + "a" * 201 + "\n", "F: name: at most 200 characters, got 201"),
    (  # the store keeps a version in 250 characters: the spec's bound is the names'
        "candidate: {application: a.py, version: " + "v" * 201 + "}\n",
        "F: candidate.version: at most 200 characters, got 201",
    ),
    # item 19: names that reach a command line or Airflow
    (
        'airflow: {pool: "../../x y"}\n',
        "F: airflow.pool: a pool name is letters, digits, '_', '.' and '-', got '../../x y'",
    ),
    (
        "airflow: {pool: " + "p" * 201 + "}\n",
        "F: airflow.pool: a pool name is at most 200 characters, got 201",
    ),
    (
        'airflow: {spark_conf: {"spark.a b": 1}}\n',
        "F: airflow.spark_conf: a Spark configuration key is letters, digits, '_', '.' and "
        "'-', got 'spark.a b'",
    ),
    (
        'airflow: {match_conf: {"spark.a\\nb": 1}}\n',
        "F: airflow.match_conf: a Spark configuration key is letters, digits, '_', '.' and "
        "'-', got 'spark.a\\nb'",
    ),
    (
        'reference: {application: a.py, conf: {"spark.x\\ty": 1}}\n',
        "F: reference.conf: a Spark configuration key is letters, digits, '_', '.' and '-', "
        "got 'spark.x\\ty'",
    ),
    (
        'noise: {conf: {"spark.a=b --jars x": 1}}\n',
        "F: noise.conf: a Spark configuration key is letters, digits, '_', '.' and '-', got "
        "'spark.a=b --jars x'",
    ),
    (
        "noise: {conf: {not.spark: 1}}\n",
        "F: noise.conf: 'not.spark': Spark ignores configuration keys not starting 'spark.'",
    ),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_a_value_out_of_range_is_one_line_naming_its_key(text: str, message: str) -> None:
    assert problem(text) == message


ACCEPTED = [
    ("airflow: {task_timeout: 3650d}\n", lambda s: s.airflow.execution_timeout(), MAX_DURATION),
    ("airflow: {task_timeout: 521w}\n", lambda s: s.airflow.pool, "parity_spark"),
    (
        on_slice("window: 3650d, start: '1000-01-01T00:00:00Z'"),
        lambda s: s.input.slice.fixed_window()[1],
        dt.datetime(1009, 12, 30, tzinfo=dt.UTC),  # 1004 and 1008 are leap years,
    ),
    (
        on_slice("window: 3650d, end: '8999-12-31T23:59:59Z'"),
        lambda s: s.input.slice.fixed_window()[0],
        dt.datetime(8990, 1, 2, 23, 59, 59, tzinfo=dt.UTC),
    ),
    (
        on_slice("window: 315360000s"),
        lambda s: s.input.slice.window,
        "315360000s",
    ),
    (RECOVERY.format(fields="seed: 2147483647"), lambda s: s.recovery.seed, 2**31 - 1),
    (RECOVERY.format(fields="seed: 0"), lambda s: s.recovery.seed, 0),
    ("airflow: {pool: p.1_a-b}\n", lambda s: s.airflow.pool, "p.1_a-b"),
    (
        "airflow: {spark_conf: {spark.hadoop.fs.s3a.bucket.my-bucket.endpoint: x}}\n",
        lambda s: dict(s.airflow.spark_conf),
        {"spark.hadoop.fs.s3a.bucket.my-bucket.endpoint": "x"},
    ),
    ("name: " + "a" * 200 + "\n", lambda s: len(s.name), 200),
]


@pytest.mark.parametrize(("text", "read", "value"), ACCEPTED)
def test_a_value_at_its_bound_is_accepted(text: str, read: object, value: object) -> None:
    assert read(load(text)) == value  # type: ignore[operator]


def test_the_duration_bound_is_the_factory_s() -> None:
    """One rule: the schema checks with the parser the factory computes with."""
    assert parse_duration("3650d") == MAX_DURATION
    with pytest.raises(ValueError, match=r"^at most 3650d \(ten years\), got '3651d'$"):
        parse_duration("3651d")


def test_a_file_that_is_no_spec_is_not_quoted(tmp_path: object) -> None:
    """Item 19: text that is no mapping (as ``/etc/passwd`` reads) is named by its kind."""
    from pathlib import Path

    path = Path(str(tmp_path)) / "x.yaml"
    path.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == (
        f"{path}: not a validation spec: expected a mapping of sections, got text"
    )
