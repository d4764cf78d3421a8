"""The approvals trail in the database: the queries and checks behind ``Store.approve``,
``Store.revoke``, ``Store.approvals`` and ``Store.active_approvals``.

    with store._transaction("cannot approve") as connection:
        record = approve(connection, run, actor="alice", reason="fare fix", now=utc_now())

Rows are only ever inserted (the table is the audit trail); an approval is active while no
revoke row names it. What an approval accepts is ``matcher.approvals.divergence_signature``
of the run, computed here, when it is made, from the run as stored.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, Connection, RowMapping, Select, exists, insert, select
from sqlalchemy.orm import aliased

from matcher.approvals import describe_signature, divergence_signature, same_signature
from matcher.serialize import json_safe
from matcher.store.errors import StoreError
from matcher.store.limits import NAME_LENGTH, check_text
from matcher.store.models import ApprovalRow
from matcher.store.records import (
    APPROVABLE_VERDICTS,
    APPROVE,
    COMPARISON,
    REVOKE,
    ApprovalRecord,
    RunRecord,
)


def check_words(action: str, actor: str, reason: str) -> None:
    """Refuse, in one line, an approval or revocation without a name or a reason."""
    if not actor.strip():
        raise StoreError(f"{action}: name who decides (an empty name was given)")
    if not reason.strip():
        raise StoreError(f"{action}: give a reason (an empty reason was given)")
    check_text("approval actor", actor, NAME_LENGTH)
    check_text("approval reason", reason)


def approve(
    connection: Connection,
    run_id: str,
    run: RunRecord | None,
    *,
    actor: str,
    reason: str,
    now: dt.datetime,
) -> ApprovalRecord:
    """Record the approval of ``run``'s divergences (``run``: as read in this transaction)."""
    action = f"cannot approve run {run_id}"
    if run is None:
        raise StoreError(f"{action}: there is no such run")
    if run.kind != COMPARISON:
        raise StoreError(f"{action}: it is a {run.kind} run, not a comparison")
    if run.status != "completed":
        raise StoreError(f"{action}: it is {run.status}, not completed")
    if run.verdict not in APPROVABLE_VERDICTS:
        raise StoreError(
            f"{action}: its verdict is {run.verdict}; only a divergent or noisy verdict is approved"
        )
    signature = divergence_signature(run)
    for active in _records(connection, active_query().where(ApprovalRow.run_id == run_id)):
        if same_signature(active.divergences, signature):
            raise StoreError(
                f"{action}: already approved by {active.actor} on {_day(active.at)} "
                f"(approval {active.approval_id}, {describe_signature(signature)})"
            )
    values = {
        "validation": run.validation,
        "candidate_version": run.candidate_version,
        "run_id": run_id,
        "action": APPROVE,
        "actor": actor,
        "at": now,
        "reason": reason,
        "divergences": json_safe(signature),
        "revokes": None,
    }
    return _insert(connection, values)


def revoke(
    connection: Connection, run_id: str, *, actor: str, reason: str, now: dt.datetime
) -> ApprovalRecord:
    """Record the revocation of the newest active approval made on run ``run_id``."""
    query = active_query().where(ApprovalRow.run_id == run_id)
    found = _records(connection, query.order_by(*newest_first()).limit(1))
    if not found:
        raise StoreError(f"cannot revoke the approval of run {run_id}: it has no active approval")
    approval = found[0]
    values = {
        "validation": approval.validation,
        "candidate_version": approval.candidate_version,
        "run_id": run_id,
        "action": REVOKE,
        "actor": actor,
        "at": now,
        "reason": reason,
        "divergences": json_safe(dict(approval.divergences)),
        "revokes": approval.approval_id,
    }
    return _insert(connection, values)


def all_query() -> Select[Any]:
    return select(ApprovalRow.__table__)


def active_query() -> Select[Any]:
    """Approvals no revoke row names."""
    revocation = aliased(ApprovalRow)
    revoked = exists().where(
        revocation.action == REVOKE, revocation.revokes == ApprovalRow.approval_id
    )
    return all_query().where(ApprovalRow.action == APPROVE, ~revoked)


def same_version(candidate_version: str | None) -> ColumnElement[bool]:
    if candidate_version is None:
        return ApprovalRow.candidate_version.is_(None)
    return ApprovalRow.candidate_version == candidate_version


def newest_first() -> tuple[ColumnElement[Any], ...]:
    return ApprovalRow.at.desc(), ApprovalRow.approval_id.desc()


def oldest_first() -> tuple[ColumnElement[Any], ...]:
    return ApprovalRow.at.asc(), ApprovalRow.approval_id.asc()


def read(connection: Connection, query: Select[Any]) -> list[ApprovalRecord]:
    return _records(connection, query)


def _records(connection: Connection, query: Select[Any]) -> list[ApprovalRecord]:
    return [record(row) for row in connection.execute(query).mappings()]


def record(row: RowMapping) -> ApprovalRecord:
    divergences = row["divergences"]
    return ApprovalRecord(
        approval_id=row["approval_id"],
        validation=row["validation"],
        candidate_version=row["candidate_version"],
        run_id=row["run_id"],
        action=row["action"],
        actor=row["actor"],
        at=row["at"],
        reason=row["reason"],
        # The store is untrusted input: a signature that is no mapping covers nothing.
        divergences=divergences if isinstance(divergences, Mapping) else {},
        revokes=row["revokes"],
    )


def _insert(connection: Connection, values: dict[str, Any]) -> ApprovalRecord:
    # RETURNING (SQLite 3.35+, PostgreSQL): the id the database gave, in the same statement.
    row = (
        connection.execute(insert(ApprovalRow).values(values).returning(ApprovalRow.__table__))
        .mappings()
        .one()
    )
    return record(row)


def _day(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="minutes")
