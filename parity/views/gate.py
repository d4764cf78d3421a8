"""The deploy gate as read from the results store: "may it ship?".

``decide`` is the gate's decision on a stored run (``matcher.gate.evaluate`` on its verdict
and expectation results); the pipeline stores it with the run (``parity.airflow.gate``) and
``stored_decision`` reads it back. ``gate_status`` is what ``parity gate`` and the UI's JSON
API read (DESIGN.md, "The release loop"): the NEWEST attempt of the validation (of that
candidate version) decides, whatever its status, so that a failed or running attempt is
never skipped in favour of an older verdict:

    state       exit  when
    open        0     the newest attempt completed and its gate opened (or an approval
                      covers exactly its divergences)
    closed      1     it completed and the verdict or its expectations closed the gate
    no_verdict  3     it is running, it failed, it finished longer ago than ``max_age``,
                      it was made under another spec or reference version than today's
                      (``current``), or the validation never ran (for that version)
    error       2     no run at all under that name (the nearest names are suggested);
                      the callers turn a store that is down and bad arguments into it too

    status = gate_status(store, "taxi", "1.5.0", current=current_spec("taxi"))

``current`` (``CurrentSpec``, from ``current_spec``: today's spec file) binds the answer to
today's spec: the run's stored ``spec_hash`` (``matcher.spec_digest``) and reference
version must be today's, and a run stored without a hash (before spec binding) is no
usable verdict. ``current=None`` checks neither (a library caller that has no spec).

A completed run's decision is the one the pipeline recorded, or, for a run recorded outside
Airflow (no decision stored), the decision evaluated now with the gate policy the match job
stored in the run's spec document. A decision closed by the verdict alone (divergent, or
noisy where the spec does not allow it) opens when an active approval of the same
validation and candidate version accepted exactly the run's divergences
(``matcher.approvals``); failed expectations, overrides, empty outputs and failed tasks are
never approved away. Approvals are read at every answer, so a revocation closes the gate
again; ``apply_approval`` is the same rule for the pipeline's record step.
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from matcher.approvals import covering_approval, describe_signature, divergence_signature
from matcher.gate import GateDecision, GateSpec, empty_outputs, evaluate
from matcher.serialize import json_safe
from matcher.spec_bounds import parse_duration
from matcher.spec_digest import short
from matcher.store import ApprovalRecord, RunRecord, RunSummary, Store, StoreError, UnknownRunError
from matcher.store.records import APPROVABLE_VERDICTS, utc_now
from parity.views.printable import printable
from parity.views.spec_binding import CurrentSpec, current_spec, where_looked

__all__ = ["CurrentSpec", "GateStatus", "MaxAge", "current_spec", "gate_status", "where_looked"]

EXIT_OPEN, EXIT_CLOSED, EXIT_ERROR, EXIT_NO_VERDICT = 0, 1, 2, 3
OPEN, CLOSED, NO_VERDICT, ERROR = "open", "closed", "no_verdict", "error"
EXIT_CODES = {OPEN: EXIT_OPEN, CLOSED: EXIT_CLOSED, NO_VERDICT: EXIT_NO_VERDICT, ERROR: EXIT_ERROR}
#: how the text output names each state
WORDS = {OPEN: "open", CLOSED: "closed", NO_VERDICT: "no usable verdict", ERROR: "error"}
#: at most this many names are suggested for an unknown validation
SUGGESTIONS = 3
#: how an approval's decision begins (the stored reason of a run the pipeline approved)
APPROVED = "approved by "
#: at most this many approvals of other divergences are named in the details
OTHER_APPROVALS = 3


def stored_decision(store: Store, run_id: str) -> GateDecision:
    """The gate decision stored with the run (``record_run_gate``); the pipeline's ``gate``
    task fails the DAG run when it did not pass. A failed run's gate is closed."""
    run = store.get_run(run_id)
    if run is None:
        raise UnknownRunError(f"cannot read the gate of run {run_id!r}: there is no such run")
    if run.gate_passed is None:
        raise StoreError(f"run {run_id!r} has no gate decision: record_run_gate did not run")
    return GateDecision(run.gate_passed, run.gate_reason or "(no reason was recorded)")


def decide(policy: GateSpec, run: RunRecord, *, expected_suites: int = 0) -> GateDecision:
    """The gate's decision on a stored run (``matcher.gate.evaluate`` on its verdict,
    expectation results and the overrides its trigger made)."""
    return evaluate(
        policy,
        run.verdict,
        expectations_passed(run),
        expected_suites=expected_suites,
        empty=empty_outputs(run.stats),
        overrides=run.overrides,
    )


def expectations_passed(run: RunRecord) -> bool | None:
    """All the run's expectation results succeeded (``None``: it has none)."""
    if not run.expectations:
        return None
    return all(result.success for result in run.expectations)


def closed_by_verdict_alone(
    policy: GateSpec, run: RunRecord, decision: GateDecision, *, expected_suites: int = 0
) -> bool:
    """Whether ``decision`` (closed) is closed by the run's verdict and nothing else: the
    verdict is divergent or noisy, and the same run with an equivalent verdict would pass
    (its expectations, outputs and overrides are fine). Only such a gate an approval opens."""
    if decision.passed or run.verdict not in APPROVABLE_VERDICTS:
        return False
    what_if = evaluate(
        policy,
        "equivalent",
        expectations_passed(run),
        expected_suites=expected_suites,
        empty=empty_outputs(run.stats),
        overrides=run.overrides,
    )
    return what_if.passed


def approval_reason(approval: ApprovalRecord, decision: GateDecision) -> str:
    """``approved by alice on 2026-11-28: fare fix (approval 3 of run R; verdict ...)``."""
    return (
        f"{APPROVED}{approval.actor} on {approval.at:%Y-%m-%d}: {approval.reason} "
        f"(approval {approval.approval_id} of run {approval.run_id}; {decision.reason})"
    )


def apply_approval(
    store: Store,
    policy: GateSpec,
    run: RunRecord,
    decision: GateDecision,
    *,
    expected_suites: int = 0,
) -> tuple[GateDecision, ApprovalRecord | None]:
    """``decision``, opened by the active approval that covers the run's divergences when
    the verdict alone closed it (``closed_by_verdict_alone``); the approval, if one did."""
    if not closed_by_verdict_alone(policy, run, decision, expected_suites=expected_suites):
        return decision, None
    approval = covering_approval(run, store.active_approvals(run.validation, run.candidate_version))
    if approval is None:
        return decision, None
    return GateDecision(True, approval_reason(approval, decision)), approval


@dataclass(frozen=True, slots=True)
class MaxAge:
    """How old a deciding verdict may be (``--max-age``, ``?max_age=``), as the caller
    wrote it (the reason quotes it) and as a duration; the spec's durations and bounds."""

    text: str
    duration: dt.timedelta

    @classmethod
    def parse(cls, text: str) -> MaxAge:
        """``30m``, ``6h``, ``1d``, ``2w``; a one-line ``ValueError`` otherwise."""
        return cls(text, parse_duration(text))


@dataclass(frozen=True, slots=True)
class GateStatus:
    """The gate of a validation (and candidate version), as ``parity gate`` reports it.

    ``state`` is one of ``OPEN``, ``CLOSED``, ``NO_VERDICT``, ``ERROR`` (the exit code
    follows from it); ``run`` is the newest attempt, the one that decided (``None`` when
    there is none); ``recorded`` is whether an open or closed decision is the one the
    pipeline stored (else it was evaluated now); ``suggestions`` are the known names
    nearest an unknown validation.
    """

    validation: str
    candidate_version: str | None
    state: str
    reason: str
    run: RunRecord | None = None
    recorded: bool = False
    max_age: str | None = None
    suggestions: tuple[str, ...] = ()
    #: the approval that opened a gate its verdict closed
    approval: ApprovalRecord | None = None
    #: today's spec the answer was bound to (``None``: not checked)
    current: CurrentSpec | None = None
    #: active approvals of the same version that cover other divergences than the run's
    other_approvals: tuple[ApprovalRecord, ...] = ()

    @classmethod
    def error(
        cls, validation: str, candidate_version: str | None, reason: str, **more: Any
    ) -> GateStatus:
        """No answer at all (exit 2): the reason says what is wrong."""
        return cls(validation, candidate_version, ERROR, reason, **more)

    @property
    def passed(self) -> bool | None:
        """``True`` open, ``False`` closed, ``None`` no usable verdict or an error."""
        return {OPEN: True, CLOSED: False}.get(self.state)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]

    def headline(self) -> str:
        """One line: the validation, the outcome, and why."""
        which = "" if self.candidate_version is None else f" (candidate {self.candidate_version})"
        word = WORDS[self.state]
        return printable(f"{self.validation}{which}: gate {word}: {self.reason}")

    def details(self) -> list[str]:
        """A few ``name: value`` lines about the run the answer rests on."""
        run = self.run
        if run is None:
            return []
        when = run.started_at if run.finished_at is None else run.finished_at
        finished = "started" if run.finished_at is None else "finished"
        lines = [f"run: {run.run_id} ({run.trigger}, {finished} {_iso(when)})"]
        versions = f"candidate {run.candidate_version or '-'}"
        lines.append(f"versions: {versions}, reference {run.reference_version or '-'}")
        if run.status != "completed":
            lines.append(f"status: {run.status}")
            return [printable(line) for line in lines]
        counts = ", ".join(f"{kind} {n}" for kind, n in run.counts.items() if n)
        lines.append(f"verdict: {run.verdict}" + (f" ({counts})" if counts else ""))
        if run.overrides:
            lines.append(f"overrides: {', '.join(run.overrides)} (the trigger's, not the spec's)")
        if run.noise and isinstance(run.noise.get("summary"), str):
            lines.append(f"noise: {run.noise['summary']}")
        failed = sum(not e.success for e in run.expectations)
        lines.append(f"expectations: {len(run.expectations) - failed} passed, {failed} failed")
        lines.extend(self._spec_lines())
        if self.state in (OPEN, CLOSED):
            how = "recorded by the pipeline" if self.recorded else "evaluated now (none recorded)"
            lines.append(f"decision: {how}")
        if self.approval is not None:
            a = self.approval
            lines.append(
                f"approval: {a.approval_id} by {a.actor} at {_iso(a.at)} "
                f"({describe_signature(a.divergences)})"
            )
        signature = describe_signature(divergence_signature(run))
        for other in self.other_approvals[:OTHER_APPROVALS]:
            lines.append(
                f"approval of run {other.run_id} covers other divergences "
                f"({describe_signature(other.divergences)}; this run: {signature})"
            )
        return [printable(line) for line in lines]

    def _spec_lines(self) -> list[str]:
        if self.current is None or self.run is None:
            return []
        matches = "today's" if self.spec_matches else f"today's is {short(self.current.spec_hash)}"
        return [f"spec: {short(self.run.spec_hash)} ({matches})"]

    @property
    def spec_matches(self) -> bool | None:
        """Whether the deciding run was made under today's spec (``None``: not checked)."""
        if self.current is None or self.run is None:
            return None
        return self.run.spec_hash == self.current.spec_hash

    def to_dict(self) -> dict[str, Any]:
        """The status as JSON-safe values (``parity gate --json``, the UI's API).
        ``newer_run`` is always null: the newest attempt decides (kept for readers)."""
        document: dict[str, Any] = {
            "validation": self.validation,
            "candidate_version": self.candidate_version,
            "state": self.state,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "recorded": self.recorded,
            "run": None if self.run is None else _run_document(self.run),
            "newer_run": None,
            "max_age": self.max_age,
            "suggestions": list(self.suggestions),
            "approval": None if self.approval is None else self.approval.to_dict(),
            "spec": {
                "hash": None if self.run is None else self.run.spec_hash,
                "current": None if self.current is None else self.current.spec_hash,
                "matches": self.spec_matches,
            },
        }
        return dict(json_safe(document))


def gate_status(
    store: Store,
    validation: str,
    candidate_version: str | None = None,
    *,
    max_age: MaxAge | None = None,
    now: dt.datetime | None = None,
    current: CurrentSpec | None = None,
) -> GateStatus:
    """The gate of ``validation`` (of ``candidate_version``): what its newest attempt says,
    bound to today's spec ``current`` when given (``None``: not checked)."""
    age_text = None if max_age is None else max_age.text
    newest = store.latest_run(validation, candidate_version, completed_only=False)
    run = None if newest is None else store.get_run(newest.run_id)
    if run is None:  # none, or expired between the two reads
        return _never_ran(store, validation, candidate_version, age_text, current)

    def status(state: str, reason: str, recorded: bool = False, **more: Any) -> GateStatus:
        return GateStatus(
            validation,
            candidate_version,
            state,
            reason,
            run,
            recorded,
            max_age=age_text,
            current=current,
            **more,
        )

    if run.status == "running":
        return status(NO_VERDICT, f"in progress: run {run.run_id} started {_iso(run.started_at)}")
    if run.status != "completed":
        return status(NO_VERDICT, f"newest attempt failed: {run.error or '(no error recorded)'}")
    unbound = None if current is None else _unbound(run, current)
    if unbound is not None:
        return status(NO_VERDICT, unbound)
    if max_age is not None and run.finished_at is not None:
        ago = (utc_now() if now is None else now) - run.finished_at
        if ago > max_age.duration:
            reason = f"stale: finished {_span(ago)} ago, older than --max-age {max_age.text}"
            return status(NO_VERDICT, reason)
    decision, recorded, approvable = _decision(run)
    if decision.passed:
        return status(OPEN, decision.reason, recorded)
    if not approvable:
        return status(CLOSED, decision.reason, recorded)
    approvals = store.active_approvals(run.validation, run.candidate_version)
    approval = covering_approval(run, approvals)
    if approval is not None:
        return status(OPEN, approval_reason(approval, decision), recorded, approval=approval)
    return status(CLOSED, decision.reason, recorded, other_approvals=tuple(approvals))


def _decision(run: RunRecord) -> tuple[GateDecision, bool, bool]:
    """The run's decision before approvals, whether the pipeline recorded it, and whether
    an approval may open it (closed by the verdict alone). A decision the pipeline opened
    by an approval is taken back to the policy's: the approval is checked again now (it may
    have been revoked). A recorded closed decision that says more than the policy (a task
    after the match failed) is never approvable."""
    policy, suites = stored_policy(run.spec)
    evaluated = decide(policy, run, expected_suites=suites)
    approvable = closed_by_verdict_alone(policy, run, evaluated, expected_suites=suites)
    if run.gate_passed is None:
        return evaluated, False, approvable
    reason = run.gate_reason or "(no reason was recorded)"
    if run.gate_passed and reason.startswith(APPROVED):
        return evaluated, True, approvable
    recorded = GateDecision(run.gate_passed, reason)
    return recorded, True, approvable and reason == evaluated.reason


def _unbound(run: RunRecord, current: CurrentSpec) -> str | None:
    """Why the completed ``run`` does not answer under today's spec, or ``None``: it does."""
    if run.spec_hash is None:
        return (
            f"recorded before spec binding: run {run.run_id} has no spec hash "
            f"(today's spec {short(current.spec_hash)}, {current.source}); run it again"
        )
    if run.spec_hash != current.spec_hash:
        return (
            f"made under another spec (hash {short(run.spec_hash)}, today's "
            f"{short(current.spec_hash)} in {current.source}); run it again"
        )
    if run.reference_version != current.reference_version:
        return (
            f"made against another reference version ({run.reference_version or '-'}, "
            f"today's {current.reference_version or '-'}); run it again"
        )
    return None


def stored_policy(spec: Any) -> tuple[GateSpec, int]:
    """The gate policy and the number of expectation suites in a run's spec document (the
    match job stores them); the default policy when the document has none."""
    if not isinstance(spec, Mapping):
        return GateSpec(), 0
    suites = spec.get("expectations")
    count = len(suites) if isinstance(suites, list) else 0
    gate = spec.get("gate")
    if not isinstance(gate, Mapping):
        return GateSpec(), count
    try:
        return GateSpec.from_document(gate), count
    except ValueError as exc:
        raise StoreError(f"the run's stored gate policy is invalid: {exc}") from exc


# -- helpers -------------------------------------------------------------------------------


def _never_ran(
    store: Store,
    validation: str,
    candidate_version: str | None,
    max_age: str | None,
    current: CurrentSpec | None = None,
) -> GateStatus:
    """No attempt to decide: "no usable verdict" for a validation the store knows (by any
    run, a properties run included), an error naming the nearest names for a typo."""
    known = store.validations()
    if validation in known:
        which = "any version" if candidate_version is None else f"version {candidate_version}"
        reason = f"no run for {which}"
        return GateStatus(
            validation, candidate_version, NO_VERDICT, reason, max_age=max_age, current=current
        )
    near = tuple(difflib.get_close_matches(validation, known, n=SUGGESTIONS))
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    reason = f"unknown validation {validation!r}: no run has that name{hint}"
    return GateStatus.error(
        validation, candidate_version, reason, max_age=max_age, suggestions=near
    )


def _span(delta: dt.timedelta) -> str:
    """A duration as its largest unit and the next one when not zero: ``200d``, ``3d 4h``,
    ``2h 5m``, ``45s``."""
    seconds = max(int(delta.total_seconds()), 0)
    amounts = []
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)):
        amounts.append((seconds // size, unit))
        seconds %= size
    first = next((i for i, (n, _) in enumerate(amounts) if n), len(amounts) - 1)
    shown = [amounts[first], *(a for a in amounts[first + 1 : first + 2] if a[0])]
    return " ".join(f"{n}{unit}" for n, unit in shown)


def _summary_document(run: RunSummary) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "status": run.status,
        "verdict": run.verdict,
        "trigger": run.trigger,
        "reference_version": run.reference_version,
        "candidate_version": run.candidate_version,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "gate_passed": run.gate_passed,
        "gate_reason": run.gate_reason,
        "overrides": list(run.overrides),
        "spec_hash": run.spec_hash,
    }


def _run_document(run: RunRecord) -> dict[str, Any]:
    return {
        **_summary_document(run),
        "error": run.error,
        "counts": dict(run.counts),
        "total_divergences": run.total_divergences,
        "expectations": {
            "total": len(run.expectations),
            "failed": sum(not e.success for e in run.expectations),
        },
        "noise": run.noise.get("summary") if isinstance(run.noise, Mapping) else None,
    }


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")
