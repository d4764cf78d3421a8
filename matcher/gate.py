"""The deploy gate: does a run's verdict (and its expectations) pass the spec's gate policy?

    decision = evaluate(spec.gate, "noisy", expectations_passed=True)
    decision.passed, decision.reason     # False, "verdict noisy (gate.allow_noisy is false); ..."

The policy (``gate`` in the validation spec, ``GateSpec``):

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

``GateSpec`` is a plain dataclass, not a pydantic model like the spec's other sections: the
spec's loader validates it all the same (``matcher.spec_schema``: pydantic validates a
dataclass field by its annotations, and ``__pydantic_config__`` forbids unknown keys), while
``parity gate``, which reads the policy stored with a run (``GateSpec.from_document``),
answers without importing pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Literal, get_args, get_type_hints


@dataclass(frozen=True, slots=True)
class GateSpec:
    """What opens the deploy gate (used by the Airflow pipeline and ``parity gate``)."""

    #: the spec's loader forbids unknown keys here as in every section
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    require: Literal["equivalent"] = "equivalent"
    allow_noisy: bool = False
    expectations: bool = True
    #: two empty outputs are equivalent but prove nothing: by default they close the gate
    empty: Literal["pass", "fail"] = "fail"
    #: what a closed gate does to the Airflow DAG run: ``fail`` it (a deploy pipeline gating
    #: on the DAG run stops), or ``warn``: the ``gate`` task is skipped, the DAG run succeeds,
    #: and the verdict is on its note and the Parity page (a job's failure still fails it)
    on_closed: Literal["fail", "warn"] = "fail"

    def to_dict(self) -> dict[str, Any]:
        """The policy as a JSON object (what the match job stores with a run)."""
        return asdict(self)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> GateSpec:
        """The policy ``to_dict`` wrote, checked key by key (``ValueError`` naming the first
        key that is unknown or holds a value the spec would refuse)."""
        hints = get_type_hints(cls)
        names = {f.name for f in fields(cls)}
        for key, value in document.items():
            if key not in names:
                raise ValueError(f"{key}: unknown key")
            allowed = get_args(hints[key])  # a ``Literal``'s strings; none for a ``bool``
            valid = (
                isinstance(value, str) and value in allowed if allowed else isinstance(value, bool)
            )
            if not valid:
                raise ValueError(f"{key}: {value!r} is not a valid value")
        return cls(**document)


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
