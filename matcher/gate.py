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
  expectation results and no suites named is judged on its verdict alone;
* a run whose trigger overrode the spec's ``equality`` or ``dependence`` (an ad-hoc run's
  parameters, recorded with the run) passes only when ``gate.allow_overrides`` is true:
  whoever may trigger a run may otherwise loosen the rules (``tolerance: {x: {abs: 1e300}}``,
  ``dependence: unordered``) and so open the gate for an untested candidate. Any override
  that differs from the spec's own section counts as loosening: telling a tighter rule
  from a looser one in general (functions, barriers, typed graphs) is undecidable, and
  closing the gate on a stricter override costs a re-run, not a bad release.

The decision is a value with a one-line reason that says both halves, e.g.
``verdict equivalent; expectations passed`` (and, for an overriding run,
``; overrides equality, dependence (gate.allow_overrides is false)``). The Airflow pipeline
stores it with the run (``parity.views.gate.record_run_gate``) and ``parity gate`` reads it
back.

``GateSpec`` is a plain dataclass, not a pydantic model like the spec's other sections: the
spec's loader validates it all the same (``matcher.spec_schema``: pydantic validates a
dataclass field by its annotations, and ``__pydantic_config__`` forbids unknown keys), while
``parity gate``, which reads the policy stored with a run (``GateSpec.from_document``),
answers without importing pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Literal, get_args, get_type_hints

#: the spec's sections a run's trigger may replace (``parity.airflow.plan``), in the order a
#: reason names them
OVERRIDABLE = ("equality", "dependence")


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
    #: whether a run whose trigger overrode the spec's ``equality`` or ``dependence`` may
    #: open the gate (by default it may not: permission to trigger is not permission to ship)
    allow_overrides: bool = False

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
    overrides: Sequence[str] = (),
) -> GateDecision:
    """The gate's decision on a run's ``verdict`` and the outcome of its expectations
    (``None``: the run has no expectation results). ``expected_suites``: how many suites
    the spec names; when it names some, ``gate.expectations`` is on, and there are no
    results, the gate stays closed (the expectations did not run). ``empty``: both outputs
    were empty (``empty_outputs`` of a stored run's statistics). ``overrides``: the spec's
    sections the run's trigger replaced (``RunSummary.overrides``)."""
    verdict_ok, verdict_reason = _verdict(policy, verdict)
    if empty and verdict_ok:
        verdict_ok, verdict_reason = _empty(policy, verdict_reason)
    expectations_ok, expectations_reason = _expectations(
        policy, expectations_passed, expected_suites
    )
    reason = f"{verdict_reason}; {expectations_reason}"
    if not overrides:
        return GateDecision(verdict_ok and expectations_ok, reason)
    overrides_ok, overrides_reason = _overrides(policy, overrides)
    return GateDecision(
        verdict_ok and expectations_ok and overrides_ok, f"{reason}; {overrides_reason}"
    )


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


def _overrides(policy: GateSpec, overrides: Sequence[str]) -> tuple[bool, str]:
    named = f"overrides {', '.join(overrides)}"
    if policy.allow_overrides:
        return True, f"{named}, allowed by gate.allow_overrides"
    return False, f"{named} (gate.allow_overrides is false)"


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
