"""What the approvals trail says about a run, in the words every view uses: ``parity
history``, ``parity report``, the Parity page and the DAG run's note.

An approval (``Store.approve``) accepts the divergences of one run (its signature: verdict,
counts per kind, differing columns; ``matcher.approvals``); it opens the gate of that
candidate version while a run shows the same divergences, until it is revoked. Nothing is
ever deleted: a revoke is a row of its own. A run is then

    approved   an approval made on it is active
    revoked    an approval made on it was revoked (and none made since is active)
    covered    no approval was made on it, but an active one of its version covers it

    from parity.views.approvals import run_approvals
    approvals = run_approvals(store, record)          # RunApprovals
    approvals.state, approvals.opens_gate              # ('approved', True)
    describe_approval(approvals.approval)              # 'approved by alice 2026-01-02 ...'

Every text here is made printable (``parity.views.printable``); pages escape it again.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from parity.views.printable import printable

if TYPE_CHECKING:  # the store is imported when a command runs
    from matcher.store import ApprovalRecord, RunRecord, RunSummary, Store

APPROVED, REVOKED, COVERED = "approved", "revoked", "covered"
#: the verdicts an approval may accept (``Store.approve`` refuses any other)
APPROVABLE = ("divergent", "noisy")


@dataclass(frozen=True, slots=True)
class RunApprovals:
    """The approvals of one run: ``trail`` every row made on it (approvals and revokes,
    oldest first), ``approval`` the one that decides its state (``None``: none), ``revoke``
    the row that ended it when the state is ``revoked``."""

    run_id: str
    trail: tuple[ApprovalRecord, ...] = ()
    state: str | None = None
    approval: ApprovalRecord | None = None
    revoke: ApprovalRecord | None = None

    @property
    def opens_gate(self) -> bool:
        """An active approval covers the run's divergences."""
        return self.state in (APPROVED, COVERED)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``state``, the deciding ``approval`` and ``revoke``, the ``trail``."""
        return {
            "state": self.state,
            "opens_gate": self.opens_gate,
            "approval": None if self.approval is None else self.approval.to_dict(),
            "revoke": None if self.revoke is None else self.revoke.to_dict(),
            "trail": [row.to_dict() for row in self.trail],
        }


def state_of(
    run_id: str, trail: Sequence[ApprovalRecord], covering: ApprovalRecord | None = None
) -> RunApprovals:
    """The run's state from the rows made on it (oldest first) and the active approval of
    its version that covers it (``matcher.approvals.covering_approval``), if any."""
    rows = tuple(sorted(trail, key=lambda row: row.approval_id))
    ended = {row.revokes: row for row in rows if row.action == "revoke"}
    approvals = [row for row in rows if row.action == "approve"]
    active = [row for row in approvals if row.approval_id not in ended]
    if active:
        return RunApprovals(run_id, rows, APPROVED, active[-1])
    if covering is not None:
        return RunApprovals(run_id, rows, COVERED, covering)
    if approvals:
        last = approvals[-1]
        return RunApprovals(run_id, rows, REVOKED, last, ended[last.approval_id])
    return RunApprovals(run_id, rows)


def run_approvals(store: Store, record: RunRecord) -> RunApprovals:
    """The approvals of one stored run (two reads of the store)."""
    from matcher.approvals import covering_approval

    trail = store.approvals(run_id=record.run_id)
    covering = None
    if _approvable(record):
        active = store.active_approvals(record.validation, record.candidate_version)
        found = covering_approval(record, active)
        covering = found if found is not None and found.run_id != record.run_id else None
    return state_of(record.run_id, trail, covering)


def history_approvals(store: Store, runs: Sequence[RunSummary]) -> dict[str, RunApprovals]:
    """The approvals of the listed runs, by run id: one read of the trail, and the run's
    record only for a run that an active approval of its version may cover."""
    from matcher.approvals import covering_approval

    if not runs:
        return {}
    names = {run.validation for run in runs}
    rows = [r for name in sorted(names) for r in store.approvals(validation=name)]
    by_run = group_by_run(rows)
    active = _active_by_version(rows)
    found: dict[str, RunApprovals] = {}
    for run in runs:
        covering = None
        candidates = active.get((run.validation, run.candidate_version), [])
        if _approvable(run) and candidates and run.run_id not in by_run:
            record = store.get_run(run.run_id)
            covering = None if record is None else covering_approval(record, candidates)
        state = state_of(run.run_id, by_run.get(run.run_id, ()), covering)
        if state.state is not None:
            found[run.run_id] = state
    return found


def group_by_run(rows: Iterable[ApprovalRecord]) -> dict[str, list[ApprovalRecord]]:
    grouped: dict[str, list[ApprovalRecord]] = defaultdict(list)
    for row in rows:
        grouped[row.run_id].append(row)
    return dict(grouped)


def _active_by_version(
    rows: Sequence[ApprovalRecord],
) -> dict[tuple[str, str | None], list[ApprovalRecord]]:
    """The approvals not revoked, newest first, per (validation, candidate version)."""
    ended = {row.revokes for row in rows if row.action == "revoke"}
    active: dict[tuple[str, str | None], list[ApprovalRecord]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: -r.approval_id):
        if row.action == "approve" and row.approval_id not in ended:
            active[(row.validation, row.candidate_version)].append(row)
    return dict(active)


def _approvable(run: RunSummary) -> bool:
    return run.status == "completed" and run.verdict in APPROVABLE


# -- words ----------------------------------------------------------------------------------


def when(at: dt.datetime) -> str:
    """``2026-01-02 03:00 UTC``."""
    return f"{at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"


def describe_signature(signature: Mapping[str, Any]) -> str:
    """``divergent: loss 2, corruption 1; columns fare``: what an approval accepted."""
    from matcher.approvals import describe_signature as describe

    return printable(describe(signature))


def describe_row(row: ApprovalRecord) -> str:
    """One line of the trail: ``#3 approved by alice 2026-01-02 03:00 UTC: why [what]``."""
    if row.action == "revoke":
        head = f"#{row.approval_id} revoked #{row.revokes} by {row.actor} {when(row.at)}"
    else:
        head = f"#{row.approval_id} approved by {row.actor} {when(row.at)}"
    what = describe_signature(row.divergences)
    return printable(f"{head}: {' '.join(row.reason.split())} [{what}]")


def marker(approvals: RunApprovals | None) -> str:
    """The history's short cell: ``approved #3``, ``revoked #3``, ``covered by #3``, ``-``."""
    if approvals is None or approvals.state is None or approvals.approval is None:
        return "-"
    number = approvals.approval.approval_id
    if approvals.state == COVERED:
        return f"covered by #{number}"
    return f"{approvals.state} #{number}"


def describe_state(approvals: RunApprovals) -> str:
    """One line about the run's state: who approved (or revoked), when, why."""
    approval = approvals.approval
    if approvals.state is None or approval is None:
        return "not approved"
    reason = " ".join(approval.reason.split())
    if approvals.state == APPROVED:
        text = f"approved by {approval.actor} {when(approval.at)}: {reason}"
    elif approvals.state == COVERED:
        text = (
            f"covered by approval #{approval.approval_id} of run {approval.run_id} "
            f"(by {approval.actor} {when(approval.at)}: {reason})"
        )
    else:
        revoke = approvals.revoke
        by = "" if revoke is None else f" by {revoke.actor} {when(revoke.at)}"
        why = "" if revoke is None else f": {' '.join(revoke.reason.split())}"
        text = f"approval #{approval.approval_id} revoked{by}{why}"
    return printable(text)
