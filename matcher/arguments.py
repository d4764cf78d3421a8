"""Argument types shared by the command lines: ``parity``, the Spark jobs, the examples.

    parser.add_argument("--limit", type=whole_number(0))           # 0 .. 2**63 - 1
    parser.add_argument("--crashes", type=whole_number(1, 100))

A value is ASCII digits only (no sign, no underscores, no spaces): what a person types and a
script writes; the upper bound defaults to the store's 64-bit integers. A bad value is one
``argparse`` error naming the range.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

#: the largest count the store's 64-bit integers hold
MAX_COUNT = 2**63 - 1


def whole_number(least: int = 0, most: int = MAX_COUNT) -> Callable[[str], int]:
    """An ``argparse`` type for a whole number from ``least`` to ``most``."""

    def parse(text: str) -> int:
        value = int(text) if text.isascii() and text.isdigit() else None
        if most != MAX_COUNT and (value is None or not least <= value <= most):
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {least} to {most}, got {text!r}"
            )
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {least}, got {text!r}")
        if value > most:
            raise argparse.ArgumentTypeError(f"expected a whole number <= {most}, got {text!r}")
        return value

    return parse
