"""Write the examples' "production captures": deterministic, seeded input data.

    python -m jobs.examples.generate [--out data/captures] [--scale S] [--seed N] [NAME...]

Each capture goes to ``OUT/<name>/`` as a few part files, replacing what was there (written
beside it first, so a failure leaves the old capture whole). Without names, every capture
is written. The same seed and scale give the same bytes. ``--scale`` multiplies the number
of rows (taxis, documents, items); the default makes each example job run in seconds.

Every row has ``offset`` (its place in the stream) and ``event_time`` (strictly increasing
with ``offset``, spread over 2024-05-01 06:00-18:00 UTC whatever the scale), the column a
slice window filters on.

============================  =======  ===============================================
name                          format   rows (scale 1)
============================  =======  ===============================================
taxi                          JSON     20 taxis x 50 positions, interleaved at random
topics                        CSV      20 documents of 30-150 words, each then an EOF
reducers_arbitrary            Parquet  1,000 items, 10 keys, x < 20, y < 10: any input
singleitem_wellformed         Parquet  1,000 items; a key's items are all equal
indexvaluepair_wellformed     Parquet  1,000 items; y is a function of (key, x)
maxrow_wellformed             Parquet  1,000 items; no two items of a key share a y
firstn_wellformed             Parquet  1,000 items; at most 3 items per key
strconcat_wellformed          Parquet  1,000 items; a key's items have one x
============================  =======  ===============================================
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.examples.topic_db import WORDS_BY_TOPIC

DEFAULT_OUT = "data/captures"
DEFAULT_SEED = 20240501
START_MS = int(datetime(2024, 5, 1, 6, tzinfo=UTC).timestamp() * 1000)
SPAN_MS = 12 * 3600 * 1000
PART_FILES = 4
#: Reducer items at scale 1. DiffStream used 3,000 (``--scale 3``) to catch the bugs by
#: chance; here the parallel reducers reorder every run, and fewer items keep jobs quick.
ITEMS = 1000

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Capture:
    """One capture: its format, its columns (Arrow types, for Parquet) and its rows."""

    name: str
    format: str  # json, csv or parquet
    schema: pa.Schema
    rows: Callable[[random.Random, float], list[Row]]


@dataclass(frozen=True, slots=True)
class Written:
    name: str
    path: Path
    format: str
    rows: int
    files: int


# --- the streams ----------------------------------------------------------------------


def _stamp(rows: list[Row]) -> list[Row]:
    """Give the rows, in stream order, their ``offset`` and ``event_time`` (ms since epoch)."""
    n = max(len(rows), 1)
    return [
        {"offset": i, "event_time": START_MS + i * SPAN_MS // n, **row}
        for i, row in enumerate(rows)
    ]


def _count(base: int, scale: float) -> int:
    return max(2, round(base * scale))


def taxi_rows(rng: random.Random, scale: float) -> list[Row]:
    taxis = [f"T{n:03d}" for n in range(_count(20, scale))]
    positions = 50
    tracks: dict[str, list[tuple[float, float]]] = {}
    for taxi in taxis:
        lat, lon = 40.70 + rng.random() * 0.1, -74.02 + rng.random() * 0.1
        track = []
        for _ in range(positions):
            lat += rng.uniform(-0.002, 0.002)
            lon += rng.uniform(-0.002, 0.002)
            track.append((round(lat, 6), round(lon, 6)))
        tracks[taxi] = track
    order = [taxi for taxi in taxis for _ in range(positions)]
    rng.shuffle(order)
    rows: list[Row] = []
    for taxi in order:
        lat, lon = tracks[taxi].pop(0)
        meta = {"driver": f"D{rng.randrange(10_000):04d}", "fare_cents": rng.randrange(500, 9000)}
        rows.append({"taxi_id": taxi, "lat": lat, "lon": lon, "meta": meta})
    return _stamp(rows)


_STOP_WORDS = ("the", "of", "and", "a", "in")


def topics_rows(rng: random.Random, scale: float) -> list[Row]:
    topics = sorted(WORDS_BY_TOPIC)
    vocabulary = sorted(word for words in WORDS_BY_TOPIC.values() for word in words)
    rows: list[Row] = []
    for doc in range(_count(20, scale)):
        dominant = WORDS_BY_TOPIC[rng.choice(topics)]
        for _ in range(rng.randint(30, 150)):
            draw = rng.random()
            pool = dominant if draw < 0.45 else _STOP_WORDS if draw < 0.55 else vocabulary
            rows.append({"kind": "word", "word": rng.choice(pool), "file": None})
        rows.append({"kind": "EOF", "word": None, "file": f"doc-{doc:04d}.txt"})
    return _stamp(rows)


def _keys(count: int) -> list[str]:
    return [f"k{n:02d}" for n in range(count)]


def arbitrary_items(rng: random.Random, scale: float) -> list[Row]:
    keys = _keys(10)
    return _stamp(
        [
            {"key": rng.choice(keys), "x": rng.randrange(20), "y": rng.randrange(10)}
            for _ in range(_count(ITEMS, scale))
        ]
    )


def single_item_items(rng: random.Random, scale: float) -> list[Row]:
    keys = _keys(10)
    item = {key: (rng.randrange(100), rng.randrange(100)) for key in keys}
    chosen = [rng.choice(keys) for _ in range(_count(ITEMS, scale))]
    return _stamp([{"key": k, "x": item[k][0], "y": item[k][1]} for k in chosen])


def index_value_items(rng: random.Random, scale: float) -> list[Row]:
    keys = _keys(10)
    value = {(key, x): rng.randrange(100) for key in keys for x in range(20)}
    rows = []
    for _ in range(_count(ITEMS, scale)):
        key, x = rng.choice(keys), rng.randrange(20)
        rows.append({"key": key, "x": x, "y": value[key, x]})
    return _stamp(rows)


def max_row_items(rng: random.Random, scale: float) -> list[Row]:
    keys = _keys(10)
    chosen = [rng.choice(keys) for _ in range(_count(ITEMS, scale))]
    distinct = {key: rng.sample(range(1_000_000), chosen.count(key)) for key in keys}
    return _stamp([{"key": k, "x": rng.randrange(20), "y": distinct[k].pop()} for k in chosen])


def first_n_items(rng: random.Random, scale: float) -> list[Row]:
    total, rows = _count(ITEMS, scale), list[Row]()
    while len(rows) < total:
        key = f"k{len(rows):05d}"
        rows += [
            {"key": key, "x": rng.randrange(20), "y": rng.randrange(10)}
            for _ in range(rng.randint(1, 3))
        ]
    rng.shuffle(rows)
    return _stamp(rows)


def str_concat_items(rng: random.Random, scale: float) -> list[Row]:
    keys = _keys(10)
    x_of = {key: rng.randrange(20) for key in keys}
    chosen = [rng.choice(keys) for _ in range(_count(ITEMS, scale))]
    return _stamp([{"key": k, "x": x_of[k], "y": rng.randrange(10)} for k in chosen])


_TIME = pa.timestamp("us", tz="UTC")
_ITEMS = pa.schema(
    [("offset", pa.int64()), ("event_time", _TIME), ("key", pa.string()), ("x", pa.int64()),
     ("y", pa.int64())]
)  # fmt: skip
_META = pa.struct([("driver", pa.string()), ("fare_cents", pa.int64())])

CAPTURES: dict[str, Capture] = {
    capture.name: capture
    for capture in (
        Capture(
            "taxi",
            "json",
            pa.schema(
                [
                    ("offset", pa.int64()),
                    ("event_time", _TIME),
                    ("taxi_id", pa.string()),
                    ("lat", pa.float64()),
                    ("lon", pa.float64()),
                    ("meta", _META),
                ]
            ),
            taxi_rows,
        ),
        Capture(
            "topics",
            "csv",
            pa.schema(
                [
                    ("offset", pa.int64()),
                    ("event_time", _TIME),
                    ("kind", pa.string()),
                    ("word", pa.string()),
                    ("file", pa.string()),
                ]
            ),
            topics_rows,
        ),
        Capture("reducers_arbitrary", "parquet", _ITEMS, arbitrary_items),
        Capture("singleitem_wellformed", "parquet", _ITEMS, single_item_items),
        Capture("indexvaluepair_wellformed", "parquet", _ITEMS, index_value_items),
        Capture("maxrow_wellformed", "parquet", _ITEMS, max_row_items),
        Capture("firstn_wellformed", "parquet", _ITEMS, first_n_items),
        Capture("strconcat_wellformed", "parquet", _ITEMS, str_concat_items),
    )
}


# --- writing ----------------------------------------------------------------------------


def iso_ms(ms: int) -> str:
    """``2024-05-01T06:00:00.000Z``: the capture's timestamp text (JSON and CSV)."""
    seconds, millis = divmod(ms, 1000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"


def _text_row(row: Row) -> Row:
    return {**row, "event_time": iso_ms(row["event_time"])}


def _jsonl(rows: list[Row], schema: pa.Schema) -> bytes:
    lines = [json.dumps(_text_row(row), separators=(",", ":")) for row in rows]
    return "".join(line + "\n" for line in lines).encode()


def _csv(rows: list[Row], schema: pa.Schema) -> bytes:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(schema.names)
    for row in rows:
        values = _text_row(row)
        writer.writerow(["" if values[c] is None else values[c] for c in schema.names])
    return text.getvalue().encode()


def _parquet(rows: list[Row], schema: pa.Schema) -> bytes:
    columns = {name: [row[name] for row in rows] for name in schema.names}
    columns["event_time"] = [ms * 1000 for ms in columns["event_time"]]
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pydict(columns, schema=schema), sink, compression="snappy")
    return sink.getvalue()


_WRITERS: dict[str, tuple[str, Callable[[list[Row], pa.Schema], bytes]]] = {
    "json": (".jsonl", _jsonl),
    "csv": (".csv", _csv),
    "parquet": (".parquet", _parquet),
}


def generate(
    name: str, out_dir: str | Path = DEFAULT_OUT, scale: float = 1.0, seed: int = DEFAULT_SEED
) -> Written:
    """Write capture ``name`` to ``out_dir/name/``, replacing it; the same arguments give
    the same bytes."""
    if name not in CAPTURES:
        raise ValueError(f"unknown capture {name!r} (known: {', '.join(CAPTURES)})")
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    capture = CAPTURES[name]
    rows = capture.rows(random.Random(f"{seed}:{name}"), scale)
    extension, write = _WRITERS[capture.format]
    target = Path(out_dir) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        staging.chmod(0o755)  # mkdtemp makes it private; a capture is shared data
        step = -(-len(rows) // PART_FILES)
        for part in range(PART_FILES):
            chunk = rows[part * step : (part + 1) * step]
            (staging / f"part-{part:05d}{extension}").write_bytes(write(chunk, capture.schema))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return Written(name, target, capture.format, len(rows), PART_FILES)


# --- command line ---------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"generate: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="generate", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="captures (default: all)")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"directory (default {DEFAULT_OUT})")
    parser.add_argument("--scale", type=float, default=1.0, help="row count factor (default 1)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in CAPTURES]
    if unknown:
        parser.error(f"unknown capture {unknown[0]!r} (known: {', '.join(CAPTURES)})")
    if not args.scale > 0:
        parser.error(f"--scale must be > 0, got {args.scale}")
    for name in args.names or list(CAPTURES):
        try:
            written = generate(name, args.out, args.scale, args.seed)
        except OSError as exc:
            parser.error(f"cannot write {Path(args.out) / name}: {exc.strerror or exc}")
        print(f"{written.name}: {written.rows} rows, {written.files} {written.format} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
