"""The deploy gate: does a run's verdict (and its expectations) pass the spec's gate policy?

    decision = evaluate(spec.gate, "noisy", expectations_passed=True)
    decision.passed, decision.reason     # False, "verdict noisy (gate.allow_noisy is false); ..."

The policy (``gate`` in the validation spec, ``matcher.spec_schema.GateSpec``):

* the verdict must be ``equivalent`` (``gate.require``); ``noisy`` passes too when
  ``gate.allow_noisy`` is true; ``divergent`` and ``error`` (a failed run) never pass;
* an equivalent verdict on two empty outputs (``Verdict.empty``) passes only when
  ``gate.empty`` is ``pass``: by default a release whose job wrote nothing does not ship;
* when ``gate.expectations`` is true (the default), failed expectations close the gate, and
  so do missing ones when the spec names suites (``expected_suites``); a run with no
  expectation results and no suites named is judged on its verdict alone.

The decision is a value with a one-line reason that says both halves, e.g.
``verdict equivalent; expectations passed``. The Airflow pipeline stores it with the run
(``parity.views.gate.record_run_gate``) and ``parity gate`` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from matcher.spec_schema import GateSpec


@dataclass(frozen=True, slots=True)
class GateDecision:
    """Whether the gate opens, and why (one line)."""

    passed: bool
    reason: str


def evaluate(
    policy: GateSpec,
    verdict: str | None,
    expectations_passed: bool | None,
    *,
    expected_suites: int = 0,
    empty: bool = False,
) -> GateDecision:
    """The gate's decision on a run's ``verdict`` and the outcome of its expectations
    (``None``: the run has no expectation results). ``expected_suites``: how many suites
    the spec names; when it names some, ``gate.expectations`` is on, and there are no
    results, the gate stays closed (the expectations did not run). ``empty``: both outputs
    were empty (``empty_outputs`` of a stored run's statistics)."""
    verdict_ok, verdict_reason = _verdict(policy, verdict)
    if empty and verdict_ok:
        verdict_ok, verdict_reason = _empty(policy, verdict_reason)
    expectations_ok, expectations_reason = _expectations(
        policy, expectations_passed, expected_suites
    )
    return GateDecision(verdict_ok and expectations_ok, f"{verdict_reason}; {expectations_reason}")


def _verdict(policy: GateSpec, verdict: str | None) -> tuple[bool, str]:
    if verdict == policy.require:
        return True, f"verdict {verdict}"
    if verdict == "noisy":
        if policy.allow_noisy:
            return True, "verdict noisy, allowed by gate.allow_noisy"
        return False, "verdict noisy (gate.allow_noisy is false)"
    if verdict == "divergent":
        return False, f"verdict divergent (the gate requires {policy.require})"
    if verdict == "error":
        return False, "the run failed (verdict error)"
    return False, "the run has no verdict"


def empty_outputs(stats: Mapping[str, Any] | None) -> bool:
    """Whether a stored run compared two empty outputs (its statistics' row counts)."""
    counts = [(stats or {}).get(f"{side}_count") for side in ("reference", "candidate")]
    return counts == [0, 0]


def _empty(policy: GateSpec, verdict_reason: str) -> tuple[bool, str]:
    if policy.empty == "pass":
        return True, f"{verdict_reason} on two empty outputs, allowed by gate.empty"
    return False, f"{verdict_reason}, but both outputs are empty (gate.empty is fail)"


def _expectations(policy: GateSpec, passed: bool | None, suites: int) -> tuple[bool, str]:
    if passed is None:
        if suites and policy.expectations:
            named = "1 suite" if suites == 1 else f"{suites} suites"
            return False, f"no expectation results, though the spec names {named}"
        return True, "no expectation results"
    if passed:
        return True, "expectations passed"
    if policy.expectations:
        return False, "expectations failed"
    return True, "expectations failed, ignored (gate.expectations is false)"
