"""Issue 29, items 1 and 19, on real Airflow: one spec never takes the other validations'
DAGs down. A value out of range is the spec's import error (it used to pass the loader and
crash the DAG factory with ``OverflowError``, leaving ``DagBag`` with no DAG and no error);
any exception while one spec's DAG is built is that spec's import error; a spec file that
links to a file outside the validations folder is refused without its contents quoted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import DAGS, ParityEnv, dag_bag

from parity.airflow import factory

pytest_plugins = ("airflow_fixtures",)

GOOD = """\
name: {name}
reference: {{application: tests/pipelines/relay.py}}
candidate: {{application: tests/pipelines/relay.py}}
input: {{path: capture, format: parquet{slice}}}
dependence: {{key: [taxi_id]}}
"""
ERRORS_FILE = str(DAGS / "parity_spec_errors.py")
PREFIX = "parity.airflow.factory.InvalidValidationSpecs: "


def spec(name: str, slice_: str = "", extra: str = "") -> str:
    return GOOD.format(name=name, slice=slice_) + extra


#: the issue's reproductions: each passed the loader and crashed the factory
HOSTILE = {
    "timeout": (
        spec("timeout", extra="airflow: {task_timeout: 99999999999999d}\n"),
        "airflow.task_timeout: at most 3650d (ten years), got '99999999999999d'",
    ),
    "window": (
        spec(
            "window",
            ", slice: {column: t, window: 99999999999999d, start: '2024-01-01T00:00:00Z'}",
        ),
        "input.slice.window: at most 3650d (ten years), got '99999999999999d'",
    ),
    "start": (
        spec("start", ", slice: {column: t, window: 1d, start: '9999-12-31T23:00:00Z'}"),
        "input.slice.start: must be from 1000-01-01 to before 9000-01-01 (UTC), got "
        "9999-12-31T23:00:00+00:00",
    ),
    "end": (
        spec("end", ", slice: {column: t, window: 1d, end: '0001-01-01T01:00:00Z'}"),
        "input.slice.end: must be from 1000-01-01 to before 9000-01-01 (UTC), got "
        "0001-01-01T01:00:00+00:00",
    ),
}


def last_line(bag: Any) -> str:
    return str(bag.import_errors[ERRORS_FILE]).strip().splitlines()[-1]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_value_out_of_range_is_its_spec_import_error(case: str, parity_env: ParityEnv) -> None:
    text, reason = HOSTILE[case]
    (parity_env.validations / "good.yaml").write_text(spec("good"))
    (parity_env.validations / "bad.yaml").write_text(text)
    bag = dag_bag()
    assert bag.dag_ids == ["parity_good"]
    assert list(bag.import_errors) == [ERRORS_FILE]
    assert last_line(bag) == f"{PREFIX}{parity_env.validations}/bad.yaml: {reason}"


def test_all_the_hostile_specs_are_listed_and_the_good_one_loads(
    parity_env: ParityEnv,
) -> None:
    (parity_env.validations / "good.yaml").write_text(spec("good"))
    for case, (text, _) in HOSTILE.items():
        (parity_env.validations / f"{case}.yaml").write_text(text)
    bag = dag_bag()
    assert bag.dag_ids == ["parity_good"]
    lines = str(bag.import_errors[ERRORS_FILE]).strip().splitlines()
    shown = parity_env.validations
    assert lines[-5:] == [
        f"{PREFIX}4 validation specs do not load:",
        *(f"{shown}/{case}.yaml: {HOSTILE[case][1]}" for case in sorted(HOSTILE)),
    ]


def test_any_exception_building_one_dag_is_that_spec_import_error(
    parity_env: ParityEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the factory's bug, it costs one spec its DAG, not every validation."""
    real = factory.dag_doc

    def dag_doc(loaded: Any) -> str:
        if loaded.name == "bad":
            raise OverflowError("date value out of range")
        return real(loaded)

    monkeypatch.setattr(factory, "dag_doc", dag_doc)
    (parity_env.validations / "a.yaml").write_text(spec("good"))
    (parity_env.validations / "b.yaml").write_text(spec("bad"))
    (parity_env.validations / "c.yaml").write_text(spec("other"))
    bag = dag_bag()
    assert sorted(bag.dag_ids) == ["parity_good", "parity_other"]
    assert list(bag.import_errors) == [ERRORS_FILE]
    assert last_line(bag) == (
        f"{PREFIX}{parity_env.validations}/b.yaml: its DAG cannot be built: OverflowError: "
        "date value out of range"
    )


def test_the_errors_file_defines_no_dag_when_every_spec_builds(parity_env: ParityEnv) -> None:
    """The errors file builds every DAG to find the ones that fail; it must not register
    them as its own (Airflow would see each DAG id in two files)."""
    (parity_env.validations / "good.yaml").write_text(spec("good"))
    bag = dag_bag()
    assert bag.import_errors == {}
    assert bag.dag_ids == ["parity_good"]
    assert bag.dags["parity_good"].fileloc == str(DAGS / "parity_validations.py")


@pytest.mark.parametrize("target", ["/etc/passwd", "/etc/hostname"])
def test_a_link_out_of_the_folder_is_refused_unread(
    target: str, parity_env: ParityEnv, tmp_path: Path
) -> None:
    assert os.path.isfile(target)  # Debian has both: the link must point at a real file
    (parity_env.validations / "good.yaml").write_text(spec("good"))
    (parity_env.validations / "x.yaml").symlink_to(target)
    bag = dag_bag()
    assert bag.dag_ids == ["parity_good"]
    error = str(bag.import_errors[ERRORS_FILE])
    assert error.strip().splitlines()[-1] == (
        f"{PREFIX}{parity_env.validations}/x.yaml: a link to a file outside the validations "
        "folder: copy the spec in"
    )
    first = Path(target).read_text().splitlines()[0].strip()
    assert first not in error


def test_a_link_inside_the_folder_is_a_spec(parity_env: ParityEnv) -> None:
    (parity_env.validations / "specs").mkdir()
    (parity_env.validations / "specs" / "real.yml.txt").write_text(spec("linked"))
    (parity_env.validations / "linked.yaml").symlink_to(
        parity_env.validations / "specs" / "real.yml.txt"
    )
    bag = dag_bag()
    assert (bag.import_errors, bag.dag_ids) == ({}, ["parity_linked"])


def test_a_fifo_is_refused_not_read(parity_env: ParityEnv) -> None:
    (parity_env.validations / "good.yaml").write_text(spec("good"))
    os.mkfifo(parity_env.validations / "pipe.yaml")  # reading it would block forever
    bag = dag_bag()
    assert bag.dag_ids == ["parity_good"]
    assert last_line(bag) == f"{PREFIX}{parity_env.validations}/pipe.yaml: not a regular file"


def test_a_text_file_is_not_quoted(parity_env: ParityEnv) -> None:
    """Any text parses as a YAML string: the error names its kind, not its contents."""
    (parity_env.validations / "notes.yaml").write_text("root:x:0:0:root:/root:/bin/bash\n")
    bag = dag_bag()
    assert last_line(bag) == (
        f"{PREFIX}{parity_env.validations}/notes.yaml: not a validation spec: expected a "
        "mapping of sections, got text"
    )
