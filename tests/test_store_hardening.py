"""Issue 29's store items, on SQLite and PostgreSQL alike: a run id names one kind of run
(item 6), counts are 64-bit and range-checked (item 12), text lengths are the same limits on
both backends (item 14), and a run's overrides are stored with it (item 7, the store's part;
the gate's part is in ``tests/test_gate_overrides.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from matcher.spec import parse_spec, parse_yaml
from matcher.spec_digest import verdict_digest
from matcher.store import ColumnStat, RunOutcome, Store, StoredDivergence, StoreError
from matcher.store.errors import InvalidRecordError
from matcher.store.records import RunStart
from parity.cli import main

# store_fixtures is this module's plugin and its sample data: rewrite it before the import.
pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

from store_fixtures import outcome, start  # noqa: E402

RUN = "taxi/run-1"
#: today's spec of the sample run's validation, which ``parity gate`` binds its answer to
SPEC = (
    "name: taxi_distance\nreference: {application: ref.py, version: v1.4.0}\n"
    "dependence: {key: [id]}\n"
)
TODAY = verdict_digest(parse_spec(parse_yaml(SPEC, "<spec>")))


@pytest.fixture(autouse=True)
def todays_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "validations"
    folder.mkdir()
    (folder / "taxi_distance.yaml").write_text(SPEC, encoding="utf-8")
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(folder))


def divergent(store: Store, run_id: str = RUN) -> None:
    store.start_run(start(run_id, spec_hash=TODAY))
    store.record_run(run_id, outcome())


# -- item 6: a run id names one kind of run ----------------------------------------------------


@pytest.mark.parametrize("kind", ["properties", "recovery"])
def test_a_run_of_another_kind_cannot_take_a_comparison_runs_id(
    store: Store, db_url: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    divergent(store)
    assert main(["gate", "taxi_distance", "--db", db_url]) == 1
    capsys.readouterr()
    message = f"run {RUN} is a comparison run; a {kind} run cannot replace it"

    with pytest.raises(StoreError) as checked:
        store.check_run_id(RUN, kind)
    assert str(checked.value) == message
    with pytest.raises(StoreError) as started:
        store.start_run(start(RUN, kind=kind, validation="taxi_distance"))
    assert str(started.value) == message
    with pytest.raises(StoreError) as running, store.running(start(RUN, kind=kind)):
        pytest.fail("the block must not run")  # pragma: no cover
    assert str(running.value) == message
    with pytest.raises(StoreError) as failed:
        store.mark_failed(RUN, "boom", start=start(RUN, kind=kind))
    assert str(failed.value) == message

    # Nothing was overwritten: the comparison and its closed gate stand.
    stored = store.get_run(RUN)
    assert stored is not None
    assert (stored.kind, stored.status, stored.verdict, stored.total_divergences) == (
        "comparison",
        "completed",
        "divergent",
        6,
    )
    assert len(stored.divergences) == 3
    assert main(["gate", "taxi_distance", "--db", db_url]) == 1
    assert capsys.readouterr().out.splitlines()[0] == (
        "taxi_distance: gate closed: (no reason was recorded)"
    )


def test_the_same_kind_still_replaces_its_attempt(store: Store) -> None:
    store.check_run_id(RUN, "properties")  # no such run: any kind may take the id
    divergent(store)
    store.check_run_id(RUN, "comparison")
    store.start_run(start(RUN))  # a retried task
    stored = store.get_run(RUN)
    assert stored is not None and (stored.status, stored.divergences) == ("running", ())
    store.mark_failed(RUN, "boom")  # without a start: whatever kind it is
    stored = store.get_run(RUN)
    assert stored is not None and (stored.kind, stored.status) == ("comparison", "failed")


def test_a_properties_run_keeps_its_id_from_a_comparison(store: Store) -> None:
    store.start_run(start("p/1", kind="properties"))
    with pytest.raises(StoreError, match=r"^run p/1 is a properties run; a comparison run "):
        store.start_run(start("p/1"))


# -- item 12: counts are 64-bit, and checked -------------------------------------------------


def test_counts_past_32_bits_are_stored_on_both_backends(store: Store) -> None:
    store.start_run(start(RUN))
    big = 2**63 - 1
    store.record_run(
        RUN,
        RunOutcome(
            "divergent",
            counts={"loss": big},
            column_stats=(ColumnStat("fare", big),),
            divergences=(StoredDivergence(0, "loss", 1, big, None, {"id": 1}, None),),
        ),
    )
    stored = store.get_run(RUN)
    assert stored is not None
    assert (stored.counts["loss"], stored.total_divergences) == (big, big)
    assert stored.column_stats == (ColumnStat("fare", big),)
    assert stored.divergences[0].reference_position == big
    store.start_run(start("taxi/run-2"))
    store.record_run("taxi/run-2", RunOutcome("divergent", counts={"corruption": 2**40}))
    stored = store.get_run("taxi/run-2")
    assert stored is not None and stored.counts["corruption"] == 2**40


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: RunOutcome("divergent", counts={"loss": 2**63}),
            "counts.loss: 9223372036854775808 is out of range (the store keeps 0 to 2**63-1)",
        ),
        (
            lambda: RunOutcome("divergent", counts={"duplication": 99999999999999999999}),
            "counts.duplication: 99999999999999999999 is out of range "
            "(the store keeps 0 to 2**63-1)",
        ),
        (
            lambda: RunOutcome("divergent", counts={"reordering": -1}),
            "counts.reordering: -1 is out of range (the store keeps 0 to 2**63-1)",
        ),
        (
            lambda: RunOutcome("divergent", counts={"loss": 1.5}),
            "counts.loss: expected an integer, got 1.5",
        ),
        (
            lambda: RunOutcome("divergent", counts={"loss": 2**62, "corruption": 2**62}),
            "total divergences: 9223372036854775808 is out of range (the store keeps 0 to 2**63-1)",
        ),
        (
            lambda: ColumnStat("fare", 2**64),
            "column_stats.fare.mismatches: 18446744073709551616 is out of range "
            "(the store keeps 0 to 2**63-1)",
        ),
        (
            lambda: StoredDivergence(0, "loss", 1, -5, None, {"id": 1}, None),
            "divergence 0: reference_position: -5 is out of range (the store keeps 0 to 2**63-1)",
        ),
        (
            lambda: start(RUN, task_try=2**31),
            "task_try: 2147483648 is out of range (the store keeps 0 to 2**31-1)",
        ),
    ],
)
def test_numbers_out_of_range_are_one_line_before_the_database(make: Any, message: str) -> None:
    with pytest.raises(InvalidRecordError) as raised:
        make()
    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, StoreError)


# -- item 14: the same length limits on both backends ----------------------------------------


@pytest.mark.parametrize(
    ("field", "limit"),
    [
        ("run_id", 512),
        ("validation", 250),
        ("trigger", 32),
        ("reference_version", 250),
        ("candidate_version", 250),
        ("dag_id", 250),
        ("dag_run_id", 250),
        ("engine", 32),
    ],
)
def test_a_text_longer_than_its_column_is_refused_on_both_backends(
    store: Store, field: str, limit: int
) -> None:
    fits = start(**{"run_id": RUN, field: "x" * limit})
    store.start_run(fits)
    stored = store.get_run(fits.run_id)
    assert stored is not None and getattr(stored, field) == "x" * limit
    with pytest.raises(ValueError) as raised:
        start(**{"run_id": RUN, field: "é" * (limit + 1)})
    assert str(raised.value) == (
        f"{field}: {limit + 1} characters, more than the store keeps ({limit})"
    )
    assert isinstance(raised.value, InvalidRecordError)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"validation": "a\x00b"}, "validation: contains a NUL byte, which the store cannot keep"),
        ({"kind": "other"}, "kind: expected one of comparison, recovery, properties, got 'other'"),
        (
            {"overrides": ("schema",)},
            "overrides: expected sections among equality, dependence, got 'schema'",
        ),
    ],
)
def test_other_values_the_backends_keep_differently(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        start(RUN, **fields)
    assert str(raised.value) == message


# -- item 7, the store's part: a run's overrides ---------------------------------------------


def test_overrides_are_stored_and_a_later_start_that_does_not_state_them_keeps_them(
    store: Store,
) -> None:
    plan = start(RUN, overrides=("dependence", "equality"))
    assert plan.overrides == ("equality", "dependence")  # the reason's order
    store.start_run(plan)  # the plan task
    store.start_run(start(RUN))  # the match job: it does not know them
    store.record_run(RUN, RunOutcome("equivalent"))
    stored = store.get_run(RUN)
    assert stored is not None and stored.overrides == ("equality", "dependence")
    (listed,) = store.list_runs()
    assert listed.overrides == ("equality", "dependence")
    latest = store.latest_run("taxi_distance")
    assert latest is not None and latest.overrides == ("equality", "dependence")
    store.start_run(start(RUN, overrides=()))  # a writer that states none
    stored = store.get_run(RUN)
    assert stored is not None and stored.overrides == ()


def test_a_run_without_overrides_reads_none(store: Store) -> None:
    divergent(store)
    stored = store.get_run(RUN)
    assert stored is not None and stored.overrides == ()


def test_run_start_field_defaults_state_no_overrides() -> None:
    assert RunStart("r", "v").overrides is None
