"""Issue 29 item 7: overrides that loosen the verdict are recorded and close the gate unless
the spec allows them (``gate.allow_overrides``). The policy, the plan's record of what a
run overrides, the gate task's decision on a stored run (SQLite and PostgreSQL) and
``parity gate``'s reason. The end-to-end DAG run is in ``tests/test_adhoc_overrides.py``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from matcher.errors import SpecError
from matcher.gate import GateSpec, evaluate
from matcher.spec import Spec, parse_spec, parse_yaml
from matcher.spec_digest import verdict_digest
from matcher.store import RunOutcome, RunStart, Store
from parity.airflow.gate import plan_start, record_run_gate
from parity.airflow.plan import AdhocPolicy, RunContext, RunPlan, plan_run
from parity.cli import main

pytest_plugins = ["store_fixtures"]

UTC = dt.UTC
SPEC = """\
name: nightly
reference: {application: jobs/app.py, version: "1.0"}
candidate: {application: jobs/app.py, version: "1.1"}
input:
  path: data/captures/taxi
  format: jsonl
  slice: {column: event_time, window: 1d}
output: {format: parquet}
dependence: {key: [taxi_id]}
equality: {tolerance: {km: {abs: 0.001}}}
"""
#: the issue's hostile overrides: a tolerance that accepts anything, and no order at all
LOOSE_EQUALITY = {"tolerance": {"km": {"abs": 1e300}}}
LOOSE_DEPENDENCE = "unordered"


# -- the policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "overrides", "passed", "reason"),
    [
        (GateSpec(), (), True, "verdict equivalent; no expectation results"),
        (
            GateSpec(),
            ("equality", "dependence"),
            False,
            "verdict equivalent; no expectation results; overrides equality, dependence "
            "(gate.allow_overrides is false)",
        ),
        (
            GateSpec(),
            ("dependence",),
            False,
            "verdict equivalent; no expectation results; overrides dependence "
            "(gate.allow_overrides is false)",
        ),
        (
            GateSpec(allow_overrides=True),
            ("equality",),
            True,
            "verdict equivalent; no expectation results; overrides equality, allowed by "
            "gate.allow_overrides",
        ),
    ],
)
def test_overrides_close_the_gate_unless_the_spec_allows_them(
    policy: GateSpec, overrides: tuple[str, ...], passed: bool, reason: str
) -> None:
    decision = evaluate(policy, "equivalent", None, overrides=overrides)
    assert (decision.passed, decision.reason) == (passed, reason)


def test_allowed_overrides_do_not_open_a_closed_verdict() -> None:
    decision = evaluate(GateSpec(allow_overrides=True), "divergent", None, overrides=("equality",))
    assert not decision.passed


def test_allow_overrides_is_read_by_the_loader_and_from_a_stored_policy(tmp_path: Path) -> None:
    assert GateSpec().to_dict()["allow_overrides"] is False
    assert GateSpec.from_document({"allow_overrides": True}) == GateSpec(allow_overrides=True)
    with pytest.raises(ValueError, match=r"^allow_overrides: 'yes' is not a valid value$"):
        GateSpec.from_document({"allow_overrides": "yes"})
    text = SPEC + "gate: {allow_overrides: true}\n"
    assert parse_spec(parse_yaml(text, "s.yaml"), "s.yaml").gate.allow_overrides is True
    with pytest.raises(SpecError, match=r"gate\.allow_overrides"):
        bad = SPEC + "gate: {allow_overrides: sometimes}\n"
        parse_spec(parse_yaml(bad, "s.yaml"), "s.yaml")


# -- the plan: which sections the run overrides ----------------------------------------------


@pytest.fixture
def spec(tmp_path: Path) -> Spec:
    path = tmp_path / "dags" / "validations" / "nightly.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(SPEC)
    source = "dags/validations/nightly.yaml"
    return parse_spec(parse_yaml(SPEC, source), source, base_dir=path.parent)


def planned(spec: Spec, root: Path, **params: Any) -> RunPlan:
    context = RunContext(
        dag_id="parity_nightly",
        dag_run_id="manual__o",
        params=params,
        interval_start=dt.datetime(2024, 5, 1, tzinfo=UTC),
        interval_end=dt.datetime(2024, 5, 2, tzinfo=UTC),
    )
    return plan_run(spec, context, root=root, home=root / "home", adhoc=AdhocPolicy())


@pytest.mark.parametrize(
    ("params", "overridden"),
    [
        ({}, ()),
        ({"equality": LOOSE_EQUALITY}, ("equality",)),
        ({"dependence": LOOSE_DEPENDENCE}, ("dependence",)),
        ({"dependence": LOOSE_DEPENDENCE, "equality": LOOSE_EQUALITY}, ("equality", "dependence")),
        # the spec's own sections, spelled as the trigger form sends them: no override
        ({"dependence": {"key": ["taxi_id"]}}, ()),
        ({"equality": {"tolerance": {"km": {"abs": 0.001}}}}, ()),
        # stricter counts too: which rule is looser is not decided (see matcher.gate)
        ({"equality": {"tolerance": {"km": {"abs": 0.0}}}}, ("equality",)),
    ],
)
def test_the_plan_records_the_sections_that_differ_from_the_specs(
    spec: Spec, tmp_path: Path, params: dict[str, Any], overridden: tuple[str, ...]
) -> None:
    made = planned(spec, tmp_path, **params)
    assert made.overridden == overridden
    assert RunPlan.from_dict(made.to_dict()).overridden == overridden


def test_a_plan_from_before_overridden_counts_every_override(spec: Spec, tmp_path: Path) -> None:
    document = planned(spec, tmp_path, equality=LOOSE_EQUALITY).to_dict()
    del document["overridden"]
    assert RunPlan.from_dict(document).overridden == ("equality",)


# -- the gate task and parity gate, on a stored run ------------------------------------------


def todays_spec(tmp_path: Path, gate: dict[str, Any]) -> tuple[str, str]:
    """Today's spec of ``nightly`` with ``gate``: its file (for ``--spec``) and its digest."""
    path = tmp_path / "today" / "nightly.yaml"
    path.parent.mkdir(exist_ok=True)
    text = SPEC + f"gate: {{allow_overrides: {str(gate['allow_overrides']).lower()}}}\n"
    path.write_text(text, encoding="utf-8")
    return str(path), verdict_digest(parse_spec(parse_yaml(text, str(path)), str(path)))


def overriding_run(
    store: Store, overrides: tuple[str, ...], gate: dict[str, Any], spec_hash: str | None = None
) -> None:
    # The plan task's start: the overrides, and the digest of the DAG's spec.
    store.start_run(
        RunStart(
            "parity_nightly/manual__o",
            "nightly",
            trigger="adhoc",
            reference_version="1.0",
            candidate_version="untested",
            overrides=overrides,
            spec_hash=spec_hash,
        )
    )
    # The match job's own start, which states neither (it may run the effective spec),
    # then its verdict.
    store.start_run(
        RunStart(
            "parity_nightly/manual__o",
            "nightly",
            trigger="adhoc",
            reference_version="1.0",
            candidate_version="untested",
            spec={"gate": gate},
        )
    )
    store.record_run("parity_nightly/manual__o", RunOutcome("equivalent"))


def test_the_gate_task_closes_on_a_stored_runs_overrides(store: Store, spec: Spec) -> None:
    overriding_run(store, ("equality", "dependence"), GateSpec().to_dict())
    decision = record_run_gate(store, "parity_nightly/manual__o", spec)
    assert (decision.passed, decision.reason) == (
        False,
        "verdict equivalent; no expectation results; overrides equality, dependence "
        "(gate.allow_overrides is false)",
    )
    stored = store.get_run("parity_nightly/manual__o")
    assert stored is not None
    assert (stored.gate_passed, stored.gate_reason, stored.overrides) == (
        False,
        decision.reason,
        ("equality", "dependence"),
    )


def test_the_gate_task_counts_the_plans_overrides_too(store: Store, spec: Spec) -> None:
    overriding_run(store, (), GateSpec().to_dict())
    decision = record_run_gate(store, "parity_nightly/manual__o", spec, overrides=("equality",))
    assert not decision.passed
    assert decision.reason.endswith("; overrides equality (gate.allow_overrides is false)")


def test_parity_gate_says_why_an_overriding_run_does_not_open_it(
    store: Store, db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Recorded outside Airflow (no stored decision): evaluated now, with the stored policy.
    path, digest = todays_spec(tmp_path, GateSpec().to_dict())
    overriding_run(store, ("dependence",), GateSpec().to_dict(), digest)
    args = ["gate", "nightly", "--candidate", "untested", "--spec", path, "--db", db_url]
    assert main(args) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "nightly (candidate untested): gate closed: verdict equivalent; no expectation "
        "results; overrides dependence (gate.allow_overrides is false)"
    )
    assert "  overrides: dependence (the trigger's, not the spec's)" in lines


def test_parity_gate_opens_when_the_spec_allows_overrides(
    store: Store, db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    allowing = GateSpec(allow_overrides=True).to_dict()
    path, digest = todays_spec(tmp_path, allowing)
    overriding_run(store, ("dependence",), allowing, digest)
    assert main(["gate", "nightly", "--spec", path, "--db", db_url]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "nightly: gate open: verdict equivalent; no expectation results; overrides "
        "dependence, allowed by gate.allow_overrides"
    )


def test_an_overriding_run_is_bound_to_the_dags_spec_not_its_effective_one(
    spec: Spec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plan's spec file is the effective spec (the overrides laid over the DAG's): the
    # run's digest is the DAG's spec's, so that an allowed override can still open the gate.
    made = planned(spec, tmp_path, equality=LOOSE_EQUALITY)
    assert made.spec_file.endswith("spec.yaml") and made.overridden == ("equality",)
    assert plan_start(made, spec=spec).spec_hash == verdict_digest(spec)
    # No spec given: the validations folder's (the DAG's), never the effective one's.
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(tmp_path / "dags" / "validations"))
    assert plan_start(made).spec_hash == verdict_digest(spec)
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(tmp_path / "nowhere"))
    assert plan_start(made).spec_hash is None
    plain = planned(spec, tmp_path)
    assert plan_start(plain).spec_hash == verdict_digest(spec)  # its file is the DAG's
