"""Natural positions for an output written in its ``order_by`` order (``matcher.spark.presorted``).

Whenever the check says an output is sorted, its natural positions must be exactly the
sorted ones (``matcher.spark.ordering``), on the layouts Spark writes (many files packed
into a partition, a file split across tasks, small row groups); whenever it is not, or
cannot tell (nulls, NaN, a tie of the order across files out of file order), the stream
must come back as it was. And the verdict of a divergent pair is the same either way.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from matcher.dependence import by_key
from matcher.equality import Equality
from matcher.spark import compare_dataframes, read_stream
from matcher.spark import screen as screen_module
from matcher.spark.presorted import natural_streams, natural_when_sorted
from matcher.spark.schema import POS
from tests.spark_fixtures import write_files

pytest_plugins = ("tests.spark_fixtures",)

pytestmark = pytest.mark.spark


def by_position(stream: DataFrame) -> list[tuple[Any, ...]]:
    rows = sorted((r[POS], r["id"]) for r in stream.select(POS, "id").collect())
    assert [r[0] for r in rows] == list(range(len(rows)))
    return [r[1] for r in rows]


def sorted_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """Rows in ``seq`` order with ties, a string and a time that rise with it."""
    rng = random.Random(seed)
    seq, rows = 0, []
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for i in range(n):
        seq += rng.choice((0, 0, 1, 2))
        rows.append(
            {
                "id": i,
                "seq": seq,
                "name": f"n{seq:06d}",
                "at": start + dt.timedelta(seconds=seq),
                "x": float(seq) / 3,
            }
        )
    return rows


@pytest.mark.parametrize(
    ("files", "row_group", "order_by"),
    [
        (1, 1_000_000, ["seq"]),
        (7, 50, ["seq"]),
        (23, 13, ["seq", "id"]),
        (5, 40, ["name"]),
        (5, 40, ["at", "x"]),
    ],
)
def test_a_sorted_output_gets_the_sorted_positions_without_a_sort(
    spark: SparkSession,
    tmp_path: Path,
    tiny_splits: None,
    files: int,
    row_group: int,
    order_by: list[str],
) -> None:
    write_files(tmp_path / "out", sorted_rows(2_000, files), files, row_group)
    stream = read_stream(spark, tmp_path / "out", order_by=order_by)
    natural = natural_when_sorted(stream)
    assert natural is not stream
    assert by_position(natural) == by_position(stream)
    assert "Window" not in natural._jdf.queryExecution().optimizedPlan().toString()


@pytest.mark.parametrize("fault", ["swap", "null", "nan", "tie_across_files"])
def test_an_output_out_of_order_keeps_its_sorted_positions(
    spark: SparkSession, tmp_path: Path, tiny_splits: None, fault: str
) -> None:
    rows = sorted_rows(1_000, 3)
    if fault == "swap":  # two rows out of order, far apart, in different files
        rows[100], rows[900] = rows[900], rows[100]
    elif fault == "null":
        rows[500]["x"] = None
    elif fault == "nan":
        rows[500]["x"] = float("nan")
    else:  # the last file starts below where the first ended
        rows[-1]["seq"] = -1
    write_files(tmp_path / "out", rows, 4, 30)
    order_by = ["x"] if fault in ("null", "nan") else ["seq"]
    stream = read_stream(spark, tmp_path / "out", order_by=order_by)
    assert natural_when_sorted(stream) is stream


def test_a_divergent_verdict_is_the_same_with_and_without_the_check(
    spark: SparkSession, tmp_path: Path, tiny_splits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faults in every key, past the core's exact limit: the chains' job's counts and
    witnesses, natural positions against sorted ones."""
    rng = random.Random(7)
    reference = [{"id": i, "key": i % 37, "seq": i, "v": rng.randrange(5)} for i in range(3_000)]
    candidate = [dict(r) for r in reference]
    for n in range(0, 3_000, 41):
        candidate[n]["v"] = 99
    del candidate[1_500]
    candidate[10], candidate[50] = candidate[50], candidate[10]
    for n, row in enumerate(candidate):
        row["seq"] = n
    write_files(tmp_path / "ref", reference, 5, 100)
    write_files(tmp_path / "cand", candidate, 3, 100)
    monkeypatch.setattr(screen_module, "EXACT_LIMIT", 10)

    def verdict() -> Any:
        reference, candidate = (
            read_stream(spark, tmp_path / s, order_by=["seq"]) for s in ("ref", "cand")
        )
        ignore = Equality(ignore=frozenset({"seq", "id"}))
        found = compare_dataframes(reference, candidate, by_key("key"), ignore, limit=20)
        return dict(found.counts), [d.to_dict() for d in found.divergences]

    checks = natural_streams
    natural: list[bool] = []

    def recorded(streams: Any, reference_runs: Any = None) -> Any:
        found = checks(streams, reference_runs)
        natural.append(found.reference is not streams.reference)
        natural.append(found.candidate is not streams.candidate)
        return found

    monkeypatch.setattr(screen_module, "natural_streams", recorded)
    checked = verdict()
    assert natural == [True, True]
    monkeypatch.setattr(screen_module, "natural_streams", lambda streams, _runs=None: streams)
    assert checked == verdict()
    assert sum(checked[0].values()) > 0


def test_two_instants_of_a_daylight_saving_fold_are_compared_as_instants(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first file ends at 06:10 UTC and the second starts at 05:30 UTC: out of order,
    though in New York's local time, the driver's, they read 01:10 EST and 01:30 EDT."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        end = dt.datetime(2026, 11, 1, 6, 10, tzinfo=dt.UTC)
        start = dt.datetime(2026, 11, 1, 5, 30, tzinfo=dt.UTC)
        rows = [
            {"id": 0, "at": end - dt.timedelta(hours=1)},
            {"id": 1, "at": end},
            {"id": 2, "at": start},
            {"id": 3, "at": end + dt.timedelta(hours=1)},
        ]
        write_files(tmp_path / "out", rows, 2, 10)
        stream = read_stream(spark, tmp_path / "out", order_by=["at"])
        assert natural_when_sorted(stream) is stream
    finally:
        monkeypatch.undo()
        time.tzset()
