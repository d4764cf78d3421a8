"""The slice job: which rows a slice keeps, the order it writes them in, and its errors.

The selection and the ordered writer run on the shared ``local[2]`` session; the job itself
runs once through real ``spark-submit`` for its happy path and once for an empty slice.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from jobs.slice import SliceError, select_slice, write_ordered
from matcher.spark import read_stream

pytest_plugins = ("tests.spark_fixtures",)

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
BASE = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
KEYS = [f"T{n}" for n in range(10)]


def rows(count: int = 40) -> list[dict[str, Any]]:
    """One row an hour from 2024-05-01 00:00 UTC, keys T0..T9 in turn."""
    return [
        {"offset": n, "event_time": BASE + dt.timedelta(hours=n), "taxi_id": KEYS[n % 10]}
        for n in range(count)
    ]


def write_capture(directory: Path, data: list[dict[str, Any]], files: int = 3) -> Path:
    directory.mkdir(parents=True)
    step = -(-len(data) // files)
    for n in range(files):
        part = data[n * step : (n + 1) * step]
        pq.write_table(pa.Table.from_pylist(part), directory / f"part-{n:05d}.parquet")
    return directory


@pytest.fixture
def utc(spark: SparkSession) -> Iterator[None]:
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    yield
    spark.conf.set("spark.sql.session.timeZone", old)


def offsets(df: Any) -> list[int]:
    return [r["offset"] for r in df.orderBy("__pos").collect()]


def test_window_keeps_start_and_drops_end(spark: SparkSession, tmp_path: Path) -> None:
    capture = read_stream(spark, str(write_capture(tmp_path / "cap", rows())), "parquet")
    start, end = BASE + dt.timedelta(hours=5), BASE + dt.timedelta(hours=9)
    assert offsets(select_slice(capture, "event_time", start, end, None, [])) == [5, 6, 7, 8]


def test_key_sample_is_stable_and_nested(spark: SparkSession, tmp_path: Path) -> None:
    capture = read_stream(spark, str(write_capture(tmp_path / "cap", rows(20))), "parquet")

    def kept(fraction: float) -> list[str]:
        chosen = select_slice(capture, None, None, None, fraction, ["taxi_id"])
        return sorted({r["taxi_id"] for r in chosen.collect()})

    # pmod(xxhash64(taxi_id), 1e6): T4 140466, T3 169099, T2 227868, T9 259936, T5 261202, ...
    assert kept(0.25) == ["T2", "T3", "T4"]
    assert kept(0.5) == ["T2", "T3", "T4", "T5", "T9"]
    assert kept(1.0) == sorted(KEYS)


@pytest.mark.usefixtures("utc")
def test_time_as_iso_strings_and_epoch_seconds(spark: SparkSession) -> None:
    strings = spark.createDataFrame(
        [
            (0, "2024-05-01T00:30:00Z", 0),
            (1, "2024-05-01 01:30:00", 1),
            (2, "2024-05-01T03:00:00+01:00", 2),
        ],
        "offset long, at string, __pos long",
    )
    start, end = BASE + dt.timedelta(hours=1), BASE + dt.timedelta(hours=3)
    # 01:30 (no zone: UTC) and 03:00+01:00 (02:00 UTC) are in [01:00, 03:00); 00:30 is not.
    assert offsets(select_slice(strings, "at", start, end, None, [])) == [1, 2]
    epochs = spark.createDataFrame(
        [(n, int((BASE + dt.timedelta(hours=n)).timestamp()), n) for n in range(5)],
        "offset long, at long, __pos long",
    )
    assert offsets(select_slice(epochs, "at", start, end, None, [])) == [1, 2]


def test_unparsable_time_and_unknown_columns_are_one_line(spark: SparkSession) -> None:
    df = spark.createDataFrame([(0, "yesterday", 0)], "offset long, at string, __pos long")
    with pytest.raises(SliceError) as info:
        select_slice(df, "at", BASE, BASE + dt.timedelta(days=1), None, [])
    assert str(info.value) == "time column 'at': 'yesterday' is not an ISO 8601 date-time"
    with pytest.raises(SliceError) as info:
        select_slice(df, "time", BASE, BASE + dt.timedelta(days=1), None, [])
    assert str(info.value) == "--column: no column 'time' in the capture (columns: offset, at)"
    with pytest.raises(SliceError) as info:
        select_slice(df, None, None, None, 0.5, ["taxi"])
    assert str(info.value) == "--key: no column 'taxi' in the capture (columns: offset, at)"


@pytest.mark.parametrize("kind", ["parquet", "json", "csv"])
def test_writes_ordered_files_that_read_back_in_stream_order(
    spark: SparkSession, tmp_path: Path, kind: str
) -> None:
    data = [{**r, "note": None} for r in rows(30)]
    capture = read_stream(spark, str(write_capture(tmp_path / "cap", data, files=5)), "parquet")
    out = tmp_path / "slice"
    count, files = write_ordered(capture, str(out), kind, 3)
    assert (count, len(files)) == (30, 3)
    assert files == sorted(files)
    # Modification times increase in name order, for a file stream source.
    times = [(out / name).stat().st_mtime for name in files]
    assert times == sorted(set(times))
    back = read_stream(spark, str(out), kind)
    assert [int(r["offset"]) for r in back.orderBy("__pos").collect()] == list(range(30))
    assert "note" in back.columns  # an all-null column stays in the schema
    written = spark.read.option("header", True).format(kind).load(str(out)).columns
    assert not [c for c in written if c.startswith("__")]  # no position or order column


def submit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    command += ["--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"]
    return subprocess.run(
        [*command, str(ROOT / "jobs" / "slice.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_the_job_writes_the_slice_and_its_summary(tmp_path: Path) -> None:
    capture = write_capture(tmp_path / "cap", rows())
    summary = tmp_path / "slice.json"
    result = submit(
        tmp_path,
        *("--capture", str(capture), "--format", "parquet", "--out", str(tmp_path / "slice")),
        *("--column", "event_time", "--start", "2024-05-01T02:00:00Z"),
        *("--end", "2024-05-02T00:00:00+00:00", "--sample", "0.5", "--key", "taxi_id"),
        *("--files", "2", "--summary-json", str(summary)),
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    document = json.loads(summary.read_text())
    # Hours 2..23 of keys T2, T3, T4, T5, T9 (the 0.5 sample): offsets 2-5, 9, 12-15, 19, 22-23.
    kept = [2, 3, 4, 5, 9, 12, 13, 14, 15, 19, 22, 23]
    assert {k: document[k] for k in ("start", "end", "sample", "key", "rows")} == {
        "start": "2024-05-01T02:00:00+00:00",
        "end": "2024-05-02T00:00:00+00:00",
        "sample": 0.5,
        "key": ["taxi_id"],
        "rows": len(kept),
    }
    assert len(document["files"]) == 2
    table = pq.read_table([tmp_path / "slice" / name for name in document["files"]])
    assert table.column("offset").to_pylist() == kept
    assert f"slice: {len(kept)} rows of [2024-05-01T02:00:00+00:00" in result.stdout


@pytest.mark.slow
def test_an_empty_slice_is_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    capture = write_capture(tmp_path / "cap", rows())
    result = submit(
        tmp_path,
        *("--capture", str(capture), "--format", "parquet", "--out", str(tmp_path / "slice")),
        *("--column", "event_time", "--start", "2024-06-01T00:00:00Z"),
        *("--end", "2024-06-02T00:00:00Z"),
    )
    assert result.returncode == 2
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("slice: error:")]
    assert errors == [
        f"slice: error: the slice is empty: no row of {capture} has event_time in "
        "[2024-06-01T00:00:00+00:00, 2024-06-02T00:00:00+00:00) (the capture has times from "
        "2024-05-01T00:00:00+00:00 to 2024-05-02T15:00:00+00:00)"
    ]
    assert not (tmp_path / "slice").exists()
