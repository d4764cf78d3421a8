"""Writes the Parquet outputs of the schema examples in docs/reference/dependence-equality.md:
``python docs/examples/schemas/generate.py`` (deterministic; commit what it writes)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def main() -> None:
    taxi = HERE / "taxi"
    taxi.mkdir(exist_ok=True)
    # fare widened int -> bigint, zone removed, tip added; seq narrowed but ignored.
    pq.write_table(
        pa.table(
            {
                "taxi_id": pa.array(["T1", "T1", "T2"]),
                "seq": pa.array([0, 1, 0], pa.int64()),
                "fare": pa.array([12, 7, 30], pa.int32()),
                "zone": pa.array(["north", "north", "south"]),
            }
        ),
        taxi / "reference.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "taxi_id": pa.array(["T1", "T1", "T2"]),
                "seq": pa.array([0, 1, 0], pa.int32()),
                "fare": pa.array([12, 7, 30], pa.int64()),
                "tip": pa.array([1.5, 0.0, 4.0], pa.float64()),
            }
        ),
        taxi / "candidate.parquet",
    )
    prices = HERE / "prices"
    prices.mkdir(exist_ok=True)
    # price decimal(10,2) -> double and qty string -> bigint: no common type, compared as read.
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "price": pa.array([Decimal("1.50"), Decimal("2.25")], pa.decimal128(10, 2)),
                "qty": pa.array(["3", None], pa.string()),
            }
        ),
        prices / "reference.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "price": pa.array([1.5, 2.25], pa.float64()),
                "qty": pa.array([3, None], pa.int64()),
            }
        ),
        prices / "candidate.parquet",
    )


if __name__ == "__main__":
    main()
