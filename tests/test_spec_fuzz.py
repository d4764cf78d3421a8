"""Issue 29's fuzz test: over the spec schema's numbers, durations and instants, a spec the
loader accepts always builds its DAG, and a spec it refuses gets one line naming the key.

The values are drawn from the whole range of each type (and the issue's hostile ones), not
from what the schema allows: the point is that the loader's bounds (``matcher.spec_bounds``)
and the DAG factory agree. No Spark: building a DAG only computes with the spec.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import yaml

# Before anything that imports Airflow: it sets Airflow's home and configuration.
from airflow_fixtures import ROOT
from hypothesis import example, given, settings
from hypothesis import strategies as st

from matcher.errors import SpecError
from matcher.spec import Spec, parse_spec, parse_yaml
from parity.airflow.factory import build_dag, recovery_dag
from parity.airflow.tasks import spark_task_args

pytest_plugins = ("airflow_fixtures",)

HOSTILE_DURATIONS = ["99999999999999d", "3650d", "3651d", "521w", "522w", "0d", "1s", "-1d"]
HOSTILE_INSTANTS = [
    "9999-12-31T23:00:00Z",
    "0001-01-01T01:00:00Z",
    "1000-01-01T00:00:00Z",
    "0999-12-31T23:59:59Z",
    "8999-12-31T23:59:59Z",
    "9000-01-01T00:00:00Z",
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59-23:00",
    "2024-01-01T00:00:00",  # no time zone
]
#: the longest duration the schema allows, in each unit (3650 days)
_MOST = {"s": 315_360_000, "m": 5_256_000, "h": 87_600, "d": 3650, "w": 521}

offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)


def _instants(low: dt.datetime, high: dt.datetime) -> st.SearchStrategy[str]:
    return st.builds(
        lambda value, zone: value.replace(tzinfo=zone).isoformat(),
        st.datetimes(min_value=low, max_value=high),
        st.one_of(st.just(dt.UTC), offsets),
    )


def _durations(most: dict[str, int]) -> st.SearchStrategy[str]:
    return st.sampled_from("smhdw").flatmap(
        lambda unit: st.integers(1, most[unit]).map(lambda n: f"{n}{unit}")
    )


#: (what the schema allows, anything of the type) for each kind of value
DURATIONS = (
    _durations(_MOST),
    st.one_of(
        st.sampled_from(HOSTILE_DURATIONS),
        _durations({unit: 10**30 for unit in _MOST}),
        st.integers(-5, 5).map(lambda n: f"{n}d"),
    ),
)
INSTANTS = (
    _instants(dt.datetime(1000, 1, 2), dt.datetime(8999, 12, 30)),
    st.one_of(
        st.sampled_from(HOSTILE_INSTANTS),
        _instants(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)),
    ),
)
ANY_INT = st.one_of(
    st.integers(-3, 12), st.integers(-(2**70), 2**70), st.sampled_from([2**31 - 1, 2**31])
)
ANY_FLOAT = st.one_of(st.floats(), st.sampled_from([math.nan, math.inf, -0.0, 1e300, 1e309]))
CONF_KEYS = (
    st.from_regex(r"spark\.[A-Za-z0-9_.-]{1,20}", fullmatch=True),
    st.one_of(
        st.sampled_from(["spark.a b", "spark.a\nb", "spark.x\ty", "spark." + "x" * 300]),
        st.text(min_size=1, max_size=8).map(lambda text: f"spark.{text}"),
    ),
)
POOLS = (
    st.from_regex(r"[A-Za-z0-9_.-]{1,30}", fullmatch=True),
    st.one_of(st.sampled_from(["../../x y", "a b", "x" * 300]), st.text(max_size=8)),
)


def _after(start: str) -> st.SearchStrategy[str]:
    """An instant the schema allows after ``start`` (one it allows too), in UTC."""
    first = dt.datetime.fromisoformat(start).astimezone(dt.UTC).replace(tzinfo=None)
    first += dt.timedelta(seconds=1)
    last = dt.datetime(8999, 12, 31, 23, 59, 59)
    return st.datetimes(min_value=min(first, last), max_value=last).map(
        lambda value: value.replace(tzinfo=dt.UTC).isoformat()
    )


def ints(low: int, high: int) -> tuple[st.SearchStrategy[int], st.SearchStrategy[int]]:
    return st.integers(low, high), ANY_INT


def floats(
    low: float, high: float, *, exclude_min: bool = False
) -> tuple[st.SearchStrategy[float], st.SearchStrategy[float]]:
    return st.floats(low, high, exclude_min=exclude_min), ANY_FLOAT


KEYS = (
    "airflow.task_timeout", "airflow.max_active_runs", "airflow.pool", "airflow.spark_conf",
    "input.slice.files", "input.slice.window", "input.slice.start", "input.slice.end",
    "input.slice.sample", "recovery.crashes", "recovery.seed", "recovery.timeout",
    "recovery.expected", "noise.reference_runs", "equality.tolerance",
    "expectations.derived.row_count_tolerance", "expectations.derived.range_tolerance",
    "properties",
)  # fmt: skip


@st.composite
def specs(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A spec document whose values are within the schema but for one key's (``target``),
    which may be anything of its type; and that key."""
    target = draw(st.sampled_from(KEYS))

    def pick(key: str, kinds: tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]) -> Any:
        allowed, anything = kinds
        return draw(st.one_of(allowed, anything) if key == target else allowed)

    airflow = {
        "task_timeout": pick("airflow.task_timeout", DURATIONS),
        "max_active_runs": pick("airflow.max_active_runs", ints(1, 64)),
        "pool": pick("airflow.pool", POOLS),
        "spark_conf": {pick("airflow.spark_conf", CONF_KEYS): "1"},
    }
    slice_: dict[str, Any] = {"column": "t", "files": pick("input.slice.files", ints(1, 10_000))}
    form = draw(st.sampled_from(["window", "start", "end", "both"]))
    if form in ("window", "start", "end"):
        slice_["window"] = pick("input.slice.window", DURATIONS)
    if form in ("start", "both"):
        slice_["start"] = pick("input.slice.start", INSTANTS)
    if form == "end":
        slice_["end"] = pick("input.slice.end", INSTANTS)
    if form == "both":  # an end after the start, unless one of them may be anything
        ordered = target not in ("input.slice.start", "input.slice.end")
        slice_["end"] = draw(_after(slice_["start"]) if ordered else INSTANTS[1])
    if draw(st.booleans()):
        slice_["sample"] = pick("input.slice.sample", floats(0, 1, exclude_min=True))
    doc: dict[str, Any] = {
        "name": "fuzz",
        "input": {"path": "capture", "format": "parquet", "slice": slice_},
        "dependence": {"key": ["k"]},
        "airflow": airflow,
    }
    if draw(st.booleans()):
        doc["schedule"] = "0 2 * * *"
    if target.startswith("recovery.") or draw(st.booleans()):  # a recovery validation
        doc["application"] = {"application": "app.py", "args": ["{checkpoint}"]}
        recovery = {
            "crashes": pick("recovery.crashes", ints(1, 100)),
            "seed": pick("recovery.seed", ints(0, 2**31 - 1)),
            "timeout": pick("recovery.timeout", ints(10, 86_400)),
        }
        if draw(st.booleans()):
            expected = pick("recovery.expected", ints(1, 2**31 - 1))
            recovery |= {"check": "windows", "expected": expected}
        doc["recovery"] = recovery
        return doc, target
    doc["reference"] = {"application": "ref.py"}
    doc["candidate"] = {"application": "cand.py"}
    doc["noise"] = {"reference_runs": pick("noise.reference_runs", ints(1, 2))}
    abs_, rel = (pick("equality.tolerance", floats(0, 1e300)) for _ in range(2))
    doc["equality"] = {"tolerance": {"v": {"abs": abs_, "rel": rel}}}
    derived = "expectations.derived."
    doc["expectations"] = {
        "derived": {
            "row_count_tolerance": pick(f"{derived}row_count_tolerance", floats(0, 1e300)),
            "range_tolerance": pick(f"{derived}range_tolerance", floats(0, 1e300)),
        }
    }
    budget, seed = ints(1, 1000), ints(0, 2**31 - 1)
    doc["properties"] = [
        {
            "operator": "ops:op",
            "sample": "s.jsonl",
            "budget": pick("properties", budget),
            "seed": pick("properties", seed),
        }
    ]
    return doc, target


def build(spec: Spec) -> None:
    """What the DAG factory computes from a spec, and the plan's sums over it."""
    if spec.recovery is None:
        build_dag(spec, root=ROOT)
    else:
        recovery_dag(spec, root=ROOT)
    chosen = spec.input.slice if spec.input is not None else None
    if chosen is not None:
        chosen.fixed_window()
    timeout = spark_task_args(spec)["execution_timeout"]
    dt.datetime.now(dt.UTC) + 4 * timeout + dt.timedelta(seconds=600)  # the plan's lease


def reported_key(message: str) -> str:
    match = re.match(r"^F: ([^:]+): ", message)
    assert match is not None, message
    return match.group(1)


def issue_case(target: str, **changes: Any) -> tuple[dict[str, Any], str]:
    """Issue 29's reproductions: a comparison spec with ``changes`` to its slice or airflow."""
    slice_ = {"column": "t", **changes.get("slice", {})}
    doc = {
        "name": "issue",
        "reference": {"application": "ref.py"},
        "candidate": {"application": "cand.py"},
        "input": {"path": "capture", "slice": slice_},
        "dependence": {"key": ["k"]},
        "airflow": changes.get("airflow", {}),
    }
    return doc, target


@settings(max_examples=120, deadline=None)
@given(specs())
@example(issue_case("airflow.task_timeout", airflow={"task_timeout": "99999999999999d"}))
@example(
    issue_case(
        "input.slice.window",
        slice={"window": "99999999999999d", "start": "2024-01-01T00:00:00Z"},
    )
)
@example(issue_case("input.slice.start", slice={"window": "1d", "start": "9999-12-31T23:00:00Z"}))
@example(issue_case("input.slice.end", slice={"window": "1d", "end": "0001-01-01T01:00:00Z"}))
@example(issue_case("airflow.pool", airflow={"pool": "../../x y"}))
@example(issue_case("airflow.spark_conf", airflow={"spark_conf": {"spark.a b": "1"}}))
def test_a_spec_the_loader_accepts_builds_its_dag(case: tuple[dict[str, Any], str]) -> None:
    doc, target = case
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    try:
        spec = parse_spec(parse_yaml(text, "F"), "F")
    except SpecError as exc:
        message = str(exc)
        assert "\n" not in message
        key = reported_key(message)
        # the key drawn out of the schema's range, or the section that checks it with others
        # (input.slice: 'start' must be before 'end')
        assert key == target or target.startswith(f"{key}.") or key.startswith(f"{target}."), (
            message,
            target,
        )
        return
    build(spec)
    for tolerance in spec.equality.tolerance.values():
        assert math.isfinite(tolerance.abs) and math.isfinite(tolerance.rel)
