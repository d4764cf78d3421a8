"""``parity properties --budget-seconds``: testing stops when its time runs out, with what it
found, and the report says which properties were tested in full, partially, or not at all.

The slow operators are real: a Python UDF that sleeps a minute per row, run by Spark. A job
still running at a deadline is cancelled (the run ends within its budget, not after the
sleeps). One operator stalls on every test; the other only on tests of four rows or more,
so that the tests before them finish and stand, as partial results.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from parity.cli.properties import time_budget_line
from parity.properties.generation import parse_technique
from parity.properties.loading import load_subject
from parity.properties.outcomes import Outcome, Report
from parity.properties.properties import Context
from parity.properties.runner import Plan, check_operator
from parity.properties.suggest import suggest_spec

pytest_plugins = ("tests.spark_fixtures",)

ROOT = Path(__file__).resolve().parent.parent
ITEMS = str(ROOT / "jobs/examples/operators/items.jsonl")
HERE = "tests.test_properties_budget"


def _sleeps_then_positive(seconds: float) -> Any:
    def positive(x):  # no type hints: Spark warns of them (an error here)
        time.sleep(seconds)
        return x is not None and x > 0

    return F.udf(positive, "boolean")


def stalled_filter(df: DataFrame) -> DataFrame:
    """``x > 0``, each row taking a minute: no test can finish within a small budget."""
    return df.where(_sleeps_then_positive(60.0)(F.col("x")))


def stalls_from_four_rows(df: DataFrame) -> DataFrame:
    """``x > 0``; on four rows or more, each row takes a minute. Algorithm 1's tests grow by
    one item a round from two, so rounds 1 and 2 finish and round 3 never does."""
    if df.count() >= 4:
        return stalled_filter(df)
    return df.where(F.col("x") > 0)


# --- the report -----------------------------------------------------------------------------


def _outcomes(**extra: dict[str, Any]) -> dict[str, Outcome]:
    base = {
        "nondeterminism": Outcome("nondeterminism", tests=360, seconds=20.0),
        "selectivity": Outcome("selectivity", tests=40, extra={"class": "one_to_one"}),
        "blocking": Outcome("blocking", applicable=False, extra={"reason": "one input"}),
        "statefulness": Outcome("statefulness", tests=0),
        "non_commutativity": Outcome("non_commutativity"),
        "partition_interference": Outcome("partition_interference"),
    }
    return {n: Outcome(n, o.applicable, o.found, o.evidence, o.tests, o.seconds,
                       {**o.extra, **extra.get(n, {})}) for n, o in base.items()}  # fmt: skip


def test_the_report_says_what_the_time_budget_left_tested_in_full_partially_and_not() -> None:
    untested = {"undetermined": "the time budget ran out", "not_tested": "time budget"}
    outcomes = _outcomes(
        selectivity={"partial": "the time budget ran out after 40 of its 360 tests"},
        statefulness=untested,
        non_commutativity=untested,
        partition_interference={"inferred": "stateless"},
    )
    report = Report("m:f", "dataframe", "hybrid", 30, 0, (), outcomes, 61.0, 60.0)
    assert report.time_budget() == {
        "seconds": 60.0,
        "ran_out": True,
        "full": ["nondeterminism"],
        "partial": ["selectivity"],
        "untested": ["statefulness", "non_commutativity"],
    }
    assert time_budget_line(report) == (
        "time budget of 60 s ran out, testing stopped with what it had found; tested in "
        "full: nondeterminism; partially: selectivity; not tested: statefulness, "
        "non_commutativity"
    )
    assert report.to_dict()["time_budget"] == report.time_budget()
    # what was not tested is never read as absent: every event keeps its place
    assert "dependence: ordered" in suggest_spec(report)
    assert "(the time budget ran out before they were tested)" in suggest_spec(report)


def test_a_run_the_budget_did_not_cut_short_has_no_budget_line() -> None:
    report = Report("m:f", "dataframe", "hybrid", 30, 0, (), _outcomes(), 3.0, 60.0)
    assert report.time_budget()["ran_out"] is False
    assert time_budget_line(report) is None


# --- real operators, real Spark -------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
def test_a_job_running_at_the_deadline_is_cancelled_and_nothing_is_counted() -> None:
    """The whole command, in a process of its own: every row sleeps a minute, the budget is
    3 s. The jobs running at each property's deadline are cancelled, so the run ends in
    seconds; no test finished, so nothing is found or called absent: every property is
    untested (non-determinism and selectivity for want of time, the rest because Fig. 4
    infers nothing from an undetermined non-determinism), the exit code is 0 (it ran), and
    stderr says so in one line."""
    command = [
        *(sys.executable, "-m", "parity", "properties", f"{HERE}:stalled_filter"),
        *("--sample", ITEMS, "--budget-seconds", "3", "--no-store", "--json", "--no-progress"),
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    untested = [
        "nondeterminism",
        "selectivity",
        "statefulness",
        "non_commutativity",
        "partition_interference",  # Fig. 4 infers nothing from an undetermined one
    ]
    assert report["time_budget"] == {
        "seconds": 3.0,
        "ran_out": True,
        "full": [],
        "partial": [],
        "untested": untested,
    }
    for name in untested:
        outcome = report["properties"][name]
        assert (outcome["found"], outcome["tests"], outcome["not_tested"]) == (
            False,
            0,
            "time budget",
        )
    assert report["properties"]["nondeterminism"]["undetermined"] == (
        "the time budget ran out before any of its 360 tests was checked: not tested"
    )
    assert report["seconds"] < 3.0 + 6.0  # cancelled: a single row sleeps a minute
    assert elapsed < 120
    warning = [line for line in done.stderr.splitlines() if "time budget" in line]
    assert warning == [
        "parity: warning: time budget of 3 s ran out, testing stopped with what it had "
        "found; not tested: nondeterminism, selectivity, statefulness, non_commutativity, "
        "partition_interference"
    ]


@pytest.mark.spark
@pytest.mark.slow
def test_what_was_tested_before_the_budget_ran_out_stands_as_partial(spark: SparkSession) -> None:
    """One technique, a test a round: non-determinism checks its tests of two and three rows,
    then stalls on four until its share of the 40 s runs out: what is left but a tenth of
    the budget for each property Fig. 4 will test after it, selectivity and statefulness
    (32 s; non-commutativity only on a stateful operator, kept nothing). It is
    partial after exactly 2 of its 30 tests, deterministic on those. The later properties
    share the rest, and stall the same way; every stalled job is cancelled."""
    subject = load_subject(f"{HERE}:stalls_from_four_rows", [ITEMS], (), session=lambda: spark)
    plan = Plan(parse_technique("pool"), 30, 0, subject.domains, seconds=40.0)
    context = Context(subject.operator, (), random.Random(0))
    report = check_operator(context, plan, "pool")
    props = report.properties
    assert (props["nondeterminism"].found, props["nondeterminism"].tests) == (False, 2)
    assert props["nondeterminism"].extra == {
        "partial": "the time budget ran out after 2 of its 30 tests"
    }
    assert props["nondeterminism"].seconds > 25.0  # it had its share
    budget = report.time_budget()
    assert budget["ran_out"] is True
    assert budget["full"] == []
    assert budget["partial"][0] == "nondeterminism"
    for name in ("selectivity", "statefulness"):  # a few seconds each: one round or two
        assert name in budget["partial"] + budget["untested"]
        assert props[name].tests <= 2
    assert report.seconds < 40.0 + 8.0  # each stalled job cancelled at its deadline


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "1e9", "soon"])
def test_a_budget_that_is_not_a_number_of_seconds_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from parity.cli.main import main

    assert main(["properties", "m:f", "--sample", ITEMS, "--budget-seconds", value]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(
        f"argument --budget-seconds: expected a number of seconds from 0 (no time budget) "
        f"to 86400, got {value!r}"
    )
