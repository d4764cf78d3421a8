"""Generate the sequence-window corpus: a detector's output, correct and with seeded faults.

    python examples/windows/generate.py            # writes beside this file
    parity windows examples/windows/pass.jsonl --expected 10

The detector is Wallaroo's sequence window (``matcher.windows`` says what it checks):
each key reads 1..10 and the detector emits its ring of the last 4 values per
input, ``{"key": "k1", "window": [0, 0, 0, 1]}``; the three keys ``k1``, ``k2``, ``k3``
are interleaved at random (fixed seed), each key's records in order. Each file but the
first seeds one fault, into the detector's state (the windows from there on carry it) or
into its output records:

* ``pass.jsonl``: correct; passes.
* ``pass_at_least_once.jsonl``: k2 crashes after 7, restarts from its checkpoint at 4 and
  replays 5, 6, 7: passes with ``--at-least-once`` only (else a duplication of 3 records).
* ``loss_tail_jump.jsonl``: k1's records for 5 and 6 are lost (output).
* ``loss_state_reset.jsonl``: k3 restarts after 6 with an empty ring, ``[0, 0, 0, 7]``.
* ``loss_stops_short.jsonl``: k2 stops after 7: fails with ``--expected 10`` only.
* ``loss_window_gap.jsonl``: k1's ring loses 3 after 5, ``[2, 4, 5, 6]`` (state).
* ``duplication_repeated_window.jsonl``: k3's record for 4 is written twice (output).
* ``duplication_value_twice.jsonl``: k1 applies 6 twice, ``[5, 6, 6, 7]`` (state).
* ``reordering_swapped_tails.jsonl``: k2's records for 5 and 6 are swapped (output).
* ``reordering_inside_window.jsonl``: k3's ring holds 3 before 2, ``[1, 3, 2, 4]`` (state).
* ``corruption_wrong_size.jsonl``: k1's record for 8 holds 3 values (output).
* ``corruption_non_integer.jsonl``: k2's ring holds the string ``"3"`` from 4 on (state).
* ``corruption_zero_after_nonzero.jsonl``: k3's ring zeroes 4 after 5, ``[3, 0, 5, 6]``.
* ``corruption_missing_window.jsonl``: k2's record for 9 has no ``window`` (output).
* ``partition_interference.jsonl``: k2's update 6 lands in k1's ring and is emitted under
  k1; k2 never gets it (state): both keys fail.
* ``sink/``: a Spark file sink's output, 3 keys x 12 values in 12 batches: one part file
  per batch, named by a random UUID (name order is not batch order), the log in
  ``_spark_metadata`` (``0`` .. ``8``, ``9.compact``, ``10``, ``11``, as Spark leaves
  them), and an orphan part file, a first attempt at batch 11 killed before its commit.
  Passes with ``--expected 12`` when read in log order, the orphan ignored.

``tests/test_windows.py`` checks every file with ``--expected 10`` (the sink with
``--expected 12``), and ``loss_stops_short.jsonl`` and ``pass_at_least_once.jsonl`` also
without it and with ``--at-least-once``: the verdict, the counts per kind, and the first
violation's kind, key, position and window.

Deterministic (fixed seed), so the committed files are exactly what this script writes.
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KEYS = ("k1", "k2", "k3")
VALUES = 10
SEED = 20171005  # the Wallaroo post's date
SINK_VALUES = 12
#: where the log says the sink wrote its files (a reader finds them by name in OUTPUT)
SINK_URI = "file:///data/parity/windows/sink"
#: 2024-05-01T08:00:00Z in milliseconds, Spark's modificationTime
SINK_TIME = 1714550400000

Record = dict[str, Any]
Windows = list[Any]


def detector(values: Sequence[Any], ring: Sequence[Any] = (0, 0, 0, 0)) -> Windows:
    """The detector's windows for ``values``: push each into the ring of 4, emit the ring."""
    current = list(ring)
    windows = []
    for value in values:
        current = [*current[1:], value]
        windows.append(list(current))
    return windows


def correct() -> Windows:
    return detector(range(1, VALUES + 1))


def interleave(per_key: dict[str, Windows]) -> list[Record]:
    """The keys' records merged at random, each key's in order (the same seed every file)."""
    rng = random.Random(SEED)
    queues = {key: list(windows) for key, windows in per_key.items()}
    records = []
    while any(queues.values()):
        key = rng.choice([k for k in KEYS if queues.get(k)])
        records.append({"key": key, "window": queues[key].pop(0)})
    return records


def seeded(**faults: Windows) -> list[Record]:
    """The correct output, but the keys named have the windows given."""
    return interleave({key: faults.get(key, correct()) for key in KEYS})


def corpus() -> dict[str, list[Record]]:
    ok = correct()
    replay = detector(range(1, 8)) + ok[4:7] + ok[7:]
    reset = ok[:6] + detector(range(7, VALUES + 1), ring=(0, 0, 0, 0))
    gap = ok[:5] + detector(range(6, VALUES + 1), ring=(1, 2, 4, 5))
    twice = ok[:6] + detector(range(7, VALUES + 1), ring=(4, 5, 6, 6))
    inside = ok[:3] + detector(range(4, VALUES + 1), ring=(0, 1, 3, 2))
    text = ok[:3] + detector(range(4, VALUES + 1), ring=(0, 1, 2, "3"))
    zeroed = ok[:5] + detector(range(6, VALUES + 1), ring=(2, 3, 0, 5))
    k1 = ok[:4] + detector([6, *range(5, VALUES + 1)], ring=ok[3])  # k2's 6 in k1's ring
    k2 = ok[:5] + detector(range(7, VALUES + 1), ring=ok[4])  # which k2 never gets
    records = {
        "pass.jsonl": seeded(),
        "pass_at_least_once.jsonl": seeded(k2=replay),
        "loss_tail_jump.jsonl": seeded(k1=ok[:4] + ok[6:]),
        "loss_state_reset.jsonl": seeded(k3=reset),
        "loss_stops_short.jsonl": seeded(k2=ok[:7]),
        "loss_window_gap.jsonl": seeded(k1=gap),
        "duplication_repeated_window.jsonl": seeded(k3=ok[:4] + ok[3:]),
        "duplication_value_twice.jsonl": seeded(k1=twice),
        "reordering_swapped_tails.jsonl": seeded(k2=[*ok[:4], ok[5], ok[4], *ok[6:]]),
        "reordering_inside_window.jsonl": seeded(k3=inside),
        "corruption_wrong_size.jsonl": seeded(k1=[*ok[:7], ok[7][1:], *ok[8:]]),
        "corruption_non_integer.jsonl": seeded(k2=text),
        "corruption_zero_after_nonzero.jsonl": seeded(k3=zeroed),
        "corruption_missing_window.jsonl": seeded(k2=[*ok[:8], None, *ok[9:]]),
        "partition_interference.jsonl": seeded(k1=k1, k2=k2),
    }
    for record in records["corruption_missing_window.jsonl"]:
        if record["window"] is None:
            del record["window"]
    return records


def line(record: Record) -> str:
    """One JSON line as Spark's JSON writer spells it."""
    return json.dumps(record, separators=(",", ":")) + "\n"


def write_sink(out: Path) -> None:
    """A file sink's output: one part file per batch, the log, and one orphan."""
    rng = random.Random(SEED)
    records = interleave({key: detector(range(1, SINK_VALUES + 1)) for key in KEYS})
    size = len(records) // SINK_VALUES
    batches = [records[i : i + size] for i in range(0, len(records), size)]

    def part() -> str:
        return f"part-00000-{uuid.UUID(int=rng.getrandbits(128), version=4)}-c000.json"

    log = out / "_spark_metadata"
    log.mkdir(parents=True, exist_ok=True)
    entries: list[str] = []
    for batch, rows in enumerate(batches):
        if batch == len(batches) - 1:  # the first attempt, killed before its commit
            (out / part()).write_text("".join(map(line, rows[:2])), encoding="utf-8")
        name = part()
        data = "".join(map(line, rows))
        (out / name).write_text(data, encoding="utf-8")
        entry = {
            "path": f"{SINK_URI}/{name}",
            "size": len(data.encode("utf-8")),
            "isDir": False,
            "modificationTime": SINK_TIME + 1000 * batch,
            "blockReplication": 1,
            "blockSize": 33554432,
            "action": "add",
        }
        entries.append(json.dumps(entry, separators=(",", ":")))
        compact = (batch + 1) % 10 == 0  # Spark's default compactInterval
        logged = entries if compact else entries[-1:]
        file = log / (f"{batch}.compact" if compact else str(batch))
        file.write_text("v1\n" + "\n".join(logged), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Write the corpus into the directory given (default: beside this script)."""
    args = sys.argv[1:] if argv is None else list(argv)
    out = Path(args[0]) if args else HERE
    out.mkdir(parents=True, exist_ok=True)
    for name, records in corpus().items():
        (out / name).write_text("".join(map(line, records)), encoding="utf-8")
    write_sink(out / "sink")
    return 0


if __name__ == "__main__":
    sys.exit(main())
