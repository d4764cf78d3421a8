"""The demo's own logic: what a spec expects, the witness line, the verdict table, its
environment. (The demo itself runs every validation through Airflow: `make demo`.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matcher.store import RunOutcome, RunRecord, RunStart, Store, StoredDivergence
from tools.demo import Expected, Outcome, demo_env, expected_of, table, witness


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# Expected verdict: equivalent\nname: a\n", Expected("equivalent")),
        (
            "# x\n# Expected verdict: divergent (corruption) (DiffStream: bug found)\n",
            Expected("divergent", ("corruption",)),
        ),
        (
            "#  Expected verdict: divergent (loss, corruption)\n",
            Expected("divergent", ("loss", "corruption")),
        ),
        ("name: a\n", None),
    ],
)
def test_expected_verdict_comments(text: str, expected: Expected | None) -> None:
    assert expected_of(text) == expected


CORRUPTION = StoredDivergence(
    ordinal=0,
    kind="corruption",
    key="T3",
    reference_position=4,
    candidate_position=6,
    reference_event={"taxi_id": "T3", "km": 1.25, "seq": 2},
    candidate_event={"taxi_id": "T3", "km": 1.5000001, "seq": 9},
    columns=("km", "seq"),
)
LOSS = StoredDivergence(0, "loss", None, 7, None, {"word": "x\x00y"}, None)


def test_witness_lines() -> None:
    assert witness(CORRUPTION) == (
        "corruption at key 'T3', ref #4 / cand #6: km 1.25 vs 1.5 (+1 columns)"
    )
    assert witness(LOSS) == "loss at (no key), ref #7 / cand #-"


def record(tmp_path: Path, run_id: str, outcome: RunOutcome) -> RunRecord:
    with Store.open(f"sqlite:///{tmp_path / 'r.db'}") as store:
        store.start_run(RunStart(run_id, run_id, trigger="adhoc", candidate_version="2"))
        store.record_run(run_id, outcome)
        stored = store.get_run(run_id)
    assert stored is not None
    return stored


def test_the_verdict_table(tmp_path: Path) -> None:
    ok = record(tmp_path, "taxi_ok", RunOutcome(verdict="equivalent"))
    bad = record(
        tmp_path,
        "taxi_bug",
        RunOutcome(verdict="divergent", counts={"corruption": 3}, divergences=(CORRUPTION,)),
    )
    outcomes = [
        Outcome("taxi_ok", "2", Expected("equivalent"), ok, 1.0, "success"),
        Outcome("taxi_bug", "2", Expected("divergent", ("loss",)), bad, 1.0, "failed"),
    ]
    assert table(outcomes) == [
        "validation  candidate  verdict     kinds         expected                       "
        "first witness",
        "----------  ---------  ----------  ------------  -----------------------------  "
        "-------------",
        "taxi_ok     2          equivalent  -             ok                             -",
        "taxi_bug    2          divergent   corruption 3  MISMATCH (expected divergent)  "
        "corruption at key 'T3', ref #4 / cand #6: km 1.25 vs 1.5 (+1 columns)",
    ]


def test_the_demo_environment(tmp_path: Path) -> None:
    env = demo_env(tmp_path)
    root = Path(__file__).resolve().parent.parent
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"]) == {
        "conn_type": "spark",
        "host": "local[*]",
    }
    assert {
        k: env[k] for k in ("AIRFLOW_HOME", "PARITY_HOME", "PARITY_DB_URL", "SPARK_CONF_DIR")
    } == {
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "PARITY_HOME": str(tmp_path),
        "PARITY_DB_URL": f"sqlite:///{tmp_path / 'parity.db'}",
        "SPARK_CONF_DIR": str(tmp_path / "spark-conf"),
    }
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(root / "dags")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
