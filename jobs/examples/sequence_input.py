"""The input of the sequence-window detector: per key the natural numbers 1..N, as files.

    .venv/bin/python -m jobs.examples.sequence_input --out DIR --keys K --count N \\
        [--files F] [--seed S]

Per key (``k0`` .. ``k{K-1}``) the sequence 1..N; the keys are interleaved by a seeded
shuffle that keeps each key's values in order (Wallaroo's detector reads the natural
numbers partitioned by key, so every key's output is a moving window over 1..N). The stream
is cut into F JSON-lines files named in stream order (``part-00000.jsonl``, ...), the
first files one row longer when F does not divide K*N, each row
``{"key": "k3", "value": 5, "offset": <position in the whole stream>}``.

The same arguments write the same bytes. The files' modification times increase in name
order, one second apart and ending now: Spark's file source takes new files by modification
time, and ``maxFilesPerTrigger`` then replays the stream file by file. Writing into DIR
replaces the ``part-*.jsonl`` files already there and nothing else.

Exit 0 on success, 2 with one line ``sequence_input: error: ...`` on a user error.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

EXIT_OK, EXIT_ERROR = 0, 2


@dataclass(frozen=True, slots=True)
class Record:
    """One input value: the ``value``-th of ``key``'s sequence, at ``offset`` in the stream."""

    key: str
    value: int
    offset: int

    def to_json(self) -> str:
        return json.dumps({"key": self.key, "value": self.value, "offset": self.offset})


def key_names(keys: int) -> list[str]:
    return [f"k{i}" for i in range(keys)]


def interleave(keys: int, count: int, seed: int) -> list[Record]:
    """Every key's 1..count, interleaved by a shuffle seeded with ``seed``: the stream order."""
    slots = [key for key in key_names(keys) for _ in range(count)]
    random.Random(seed).shuffle(slots)  # which key comes next; the values follow per key
    seen = dict.fromkeys(key_names(keys), 0)
    records = []
    for offset, key in enumerate(slots):
        seen[key] += 1
        records.append(Record(key, seen[key], offset))
    return records


def split(records: Sequence[Record], files: int) -> list[list[Record]]:
    """``records`` cut into ``files`` consecutive runs, the first ones one record longer."""
    size, extra = divmod(len(records), files)
    runs, start = [], 0
    for n in range(files):
        end = start + size + (1 if n < extra else 0)
        runs.append(list(records[start:end]))
        start = end
    return runs


def write_input(
    out: Path | str, *, keys: int, count: int, files: int = 8, seed: int = 1
) -> list[Path]:
    """Write the detector's input into ``out`` (see the module docstring); return the files
    in stream order."""
    if keys < 1 or count < 1:
        raise ValueError(f"keys and count must be at least 1, got {keys} and {count}")
    if not 1 <= files <= keys * count:
        raise ValueError(f"files must be between 1 and keys*count ({keys * count}), got {files}")
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("part-*.jsonl"):
        old.unlink()
    now = int(time.time())
    paths = []
    for n, run in enumerate(split(interleave(keys, count, seed), files)):
        path = directory / f"part-{n:05d}.jsonl"
        staging = directory / f".part-{n:05d}.jsonl.tmp"  # hidden: the file source skips it
        staging.write_text("".join(record.to_json() + "\n" for record in run))
        stamp = now - files + 1 + n  # one second apart, in name order, the last one now
        os.utime(staging, (stamp, stamp))
        staging.rename(path)
        paths.append(path)
    return paths


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sequence_input", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, metavar="DIR", help="the input directory")
    parser.add_argument("--keys", type=int, required=True, help="number of keys, k0..k{K-1}")
    parser.add_argument("--count", type=int, required=True, help="values per key, 1..N")
    parser.add_argument("--files", type=int, default=8, help="number of files (default 8)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the interleaving")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        paths = write_input(
            args.out, keys=args.keys, count=args.count, files=args.files, seed=args.seed
        )
    except (ValueError, OSError) as exc:
        print(f"sequence_input: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_ERROR
    print(f"sequence_input: {args.keys * args.count} records in {len(paths)} files -> {args.out}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
