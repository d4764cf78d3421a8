"""Generate the taxi example: a reference output and two candidates.

    python examples/taxi/generate.py

The job under test reports, per taxi, each new position and the distance driven so far.
Its consumer reads each taxi's positions in order but does not care how taxis interleave,
so the spec says ``dependence: {key: [taxi_id]}``.

* ``reference.jsonl``: 4 taxis x 10 positions, interleaved in time order.
* ``candidate_ok.jsonl``: the same events, taxis interleaved differently (each taxi's own
  order kept), other ``emitted_at`` stamps and float noise below 1e-9 on ``distance_km``:
  equivalent under the spec.
* ``candidate_bug.jsonl``: ``candidate_ok`` with two positions of taxi T3 swapped and one
  position of taxi T2 lost: divergent.

Deterministic (fixed seed), so the committed files are exactly what this script writes.
"""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TAXIS = ("T1", "T2", "T3", "T4")
POSITIONS = 10
START = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)


def _km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance (haversine) in kilometres."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def reference(rng: random.Random) -> list[dict[str, Any]]:
    tracks: dict[str, list[dict[str, Any]]] = {}
    for number, taxi in enumerate(TAXIS):
        position = (40.70 + 0.02 * number, -73.99 + 0.01 * number)
        distance = 0.0
        tracks[taxi] = []
        for seq in range(POSITIONS):
            if seq:
                step = (rng.uniform(-0.004, 0.004), rng.uniform(-0.004, 0.004))
                moved = (position[0] + step[0], position[1] + step[1])
                distance += _km(position, moved)
                position = moved
            tracks[taxi].append(
                {
                    "taxi_id": taxi,
                    "seq": seq,
                    "lat": round(position[0], 6),
                    "lon": round(position[1], 6),
                    "distance_km": round(distance, 6),
                    "emitted_at": _stamp(START + timedelta(seconds=60 * seq + 7 * number)),
                }
            )
    # The reference job is sequential: events come out in time order.
    return [tracks[taxi][seq] for seq in range(POSITIONS) for taxi in TAXIS]


def candidate_ok(rng: random.Random, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A different interleaving of the taxis (each taxi's order kept), later emission
    stamps, and float noise far below the spec's tolerance of 1e-9 km."""
    queues = {taxi: [dict(e) for e in events if e["taxi_id"] == taxi] for taxi in TAXIS}
    out = []
    while any(queues.values()):
        taxi = rng.choice([t for t in TAXIS if queues[t]])
        event = queues[taxi].pop(0)
        emitted = datetime.fromisoformat(event["emitted_at"].replace("Z", "+00:00"))
        event["emitted_at"] = _stamp(emitted + timedelta(milliseconds=rng.randint(200, 900)))
        if event["distance_km"]:
            event["distance_km"] += rng.choice((-1, 1)) * 1e-12 * rng.randint(1, 9)
        out.append(event)
    return out


def candidate_bug(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two positions of T3 (seq 4 and 5) swapped, and T2's position seq 7 lost."""
    out = [dict(e) for e in events]
    first = next(i for i, e in enumerate(out) if (e["taxi_id"], e["seq"]) == ("T3", 4))
    second = next(i for i, e in enumerate(out) if (e["taxi_id"], e["seq"]) == ("T3", 5))
    out[first], out[second] = out[second], out[first]
    return [e for e in out if (e["taxi_id"], e["seq"]) != ("T2", 7)]


def write(name: str, events: list[dict[str, Any]]) -> None:
    with (HERE / name).open("w", encoding="utf-8") as stream:
        for event in events:
            stream.write(json.dumps(event) + "\n")


def main() -> None:
    rng = random.Random(20240501)
    ref = reference(rng)
    ok = candidate_ok(rng, ref)
    write("reference.jsonl", ref)
    write("candidate_ok.jsonl", ok)
    write("candidate_bug.jsonl", candidate_bug(ok))


if __name__ == "__main__":
    main()
