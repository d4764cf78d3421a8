"""What testing found: one ``Outcome`` per property, and the ``Report`` of an operator.

An outcome's ``extra`` says how it was decided, beside ``found``: ``class`` (selectivity),
``key`` (partition-interference), ``inferred`` (Fig. 4 decided it from another property,
untested), ``reason`` (not applicable), ``undetermined`` (nothing was learnt: no test could
be checked, or Fig. 4 had nothing to infer it from), ``partial`` (the time budget ran out
after some of its tests: no evidence in those), ``not_tested`` (``"time budget"``: the
budget ran out before it, or before what it would have been inferred from).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from parity.properties.elements import Test
from parity.properties.properties import PROPERTIES


@dataclass(frozen=True, slots=True)
class Outcome:
    """One property's answer."""

    name: str
    applicable: bool = True
    found: bool = False
    evidence: Mapping[str, Any] | None = None
    tests: int = 0
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)
    test: Test | None = None

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"applicable": self.applicable}
        if self.applicable:
            shown.update(found=self.found, evidence=self.evidence)
        else:
            shown.update(found=None, evidence=None)
        shown.update(tests=self.tests, seconds=round(self.seconds, 3), **self.extra)
        return shown


@dataclass(frozen=True, slots=True)
class Report:
    """What ``parity properties`` prints."""

    operator: str
    shape: str
    technique: str
    budget: int
    seed: int
    keys: tuple[str, ...]
    properties: Mapping[str, Outcome]
    seconds: float

    budget_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "shape": self.shape,
            "technique": self.technique,
            "budget": self.budget,
            "seed": self.seed,
            "key": list(self.keys),
            "seconds": round(self.seconds, 3),
            "budget_seconds": self.budget_seconds,
            "time_budget": self.time_budget(),
            "properties": {name: self.properties[name].to_dict() for name in PROPERTIES},
        }

    def time_budget(self) -> dict[str, Any]:
        """Whether the time budget ran out, and which properties it left tested in full,
        partially, or not at all (``ran_out`` false: every property got all its tests)."""
        partial = [n for n in PROPERTIES if "partial" in self.properties[n].extra]
        left = [n for n in PROPERTIES if untested(self.properties[n])]
        full = [n for n in PROPERTIES if self.properties[n].tests and n not in partial + left]
        return {
            "seconds": self.budget_seconds,
            "ran_out": bool(partial or left),
            "full": full,
            "partial": partial,
            "untested": left,
        }

    def evidence_tests(self) -> dict[str, Test]:
        return {n: o.test for n, o in self.properties.items() if o.found and o.test}


def undetermined(outcome: Outcome) -> bool:
    """Nothing was learnt of the property: neither found nor, for want of a test, absent."""
    return "undetermined" in outcome.extra


def untested(outcome: Outcome) -> bool:
    """Not tested for want of time (the time budget ran out before it, or before what
    Fig. 4 would have inferred it from)."""
    return "not_tested" in outcome.extra
