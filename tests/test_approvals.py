"""Approvals of intended changes (issue 30): the signature an approval accepts
(``matcher.approvals``), the append-only trail in the store (``Store.approve``, ``revoke``,
``approvals``, ``active_approvals``) on SQLite and PostgreSQL, and ``parity approve`` /
``parity revoke`` (one line, one JSON object, exit 0 or 2)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from matcher.approvals import covering_approval, describe_signature, divergence_signature
from matcher.schema import SchemaDiff, SchemaFinding
from matcher.store import (
    ApprovalRecord,
    ColumnStat,
    RunOutcome,
    RunRecord,
    RunStart,
    Store,
    StoredDivergence,
    StoreError,
)
from matcher.store.records import PROPERTIES, RECOVERY
from parity.cli import main

pytest_plugins = ["store_fixtures"]

UTC = dt.UTC
HOSTILE = "alice \x1b[31m<b>"


def divergent(
    store: Store,
    run_id: str,
    *,
    verdict: str = "divergent",
    counts: dict[str, int] | None = None,
    columns: dict[str, int] | None = None,
    candidate: str | None = "1.5.0",
    kind: str = "comparison",
) -> RunRecord:
    """A completed run of ``taxi`` with these divergences; as the store reads it back."""
    store.start_run(RunStart(run_id, "taxi", candidate_version=candidate, kind=kind))
    counts = {"loss": 2, "corruption": 3} if counts is None else counts
    columns = {"fare": 3} if columns is None else columns
    witness = StoredDivergence(0, "corruption", [7], 1, 1, {"fare": 1}, {"fare": 2}, ("tip",))
    outcome = RunOutcome(
        verdict,
        counts=counts,
        divergences=(witness,) if counts.get("corruption") else (),
        column_stats=tuple(ColumnStat(c, n) for c, n in columns.items()),
    )
    store.record_run(run_id, outcome)
    run = store.get_run(run_id)
    assert run is not None
    return run


# -- the signature ---------------------------------------------------------------------------


def test_the_signature_is_the_verdict_non_zero_counts_and_differing_columns(store: Store) -> None:
    run = divergent(store, "taxi/1", columns={"fare": 3, "km": 0, "city": 1})
    assert divergence_signature(run) == {
        "verdict": "divergent",
        "counts": {"corruption": 3, "loss": 2},
        "columns": ["city", "fare", "tip"],  # column stats with mismatches, and witnesses'
    }
    assert describe_signature(divergence_signature(run)) == (
        "divergent: corruption 3, loss 2; columns city, fare, tip"
    )


def test_a_divergent_schema_is_part_of_the_signature(store: Store) -> None:
    run = divergent(store, "taxi/1", counts={}, columns={})
    added = SchemaFinding("added", "vat", None, "double", divergent=True)
    order = SchemaFinding("order", None, ("a", "b"), ("b", "a"), divergent=False)
    changed = RunRecord(**{**_fields(run), "schema": SchemaDiff("compatible", (added, order))})
    assert divergence_signature(changed) == {
        "verdict": "divergent",
        "counts": {},
        "columns": [],
        "schema": ["added:vat"],
    }


def _fields(run: RunRecord) -> dict[str, Any]:
    return {name: getattr(run, name) for name in RunRecord.__dataclass_fields__}


def approval(
    approval_id: int, signature: dict[str, Any], *, action: str = "approve", **more: Any
) -> ApprovalRecord:
    fields: dict[str, Any] = {
        "approval_id": approval_id,
        "validation": "taxi",
        "candidate_version": "1.5.0",
        "run_id": "taxi/1",
        "action": action,
        "actor": "alice",
        "at": dt.datetime(2026, 11, 28, 5, approval_id, tzinfo=UTC),
        "reason": "intended",
        "divergences": signature,
        "revokes": None,
    }
    fields.update(more)
    return ApprovalRecord(**fields)


def test_covering_approval_needs_the_exact_signature_version_and_no_revocation(
    store: Store,
) -> None:
    run = divergent(store, "taxi/2")
    same = divergence_signature(run)
    one_more = {**same, "counts": {"corruption": 3, "loss": 3}}
    assert covering_approval(run, [approval(1, same), approval(2, same)]) == approval(2, same)
    assert covering_approval(run, [approval(1, one_more)]) is None
    assert covering_approval(run, [approval(1, same, candidate_version="1.4.0")]) is None
    assert covering_approval(run, [approval(1, same, validation="other")]) is None
    revoked = [approval(1, same), approval(2, same, action="revoke", revokes=1)]
    assert covering_approval(run, revoked) is None
    assert covering_approval(run, []) is None


# -- the store: approve, revoke, the trail ---------------------------------------------------


def test_approve_records_who_what_and_why(store: Store) -> None:
    run = divergent(store, "taxi/1")
    made = store.approve("taxi/1", actor=HOSTILE, reason="fare rounding fixed; NUL-free")
    assert (made.approval_id, made.action, made.actor, made.revokes) == (
        made.approval_id,
        "approve",
        HOSTILE,
        None,
    )
    assert (made.validation, made.candidate_version, made.run_id) == ("taxi", "1.5.0", "taxi/1")
    assert made.reason == "fare rounding fixed; NUL-free"
    assert dict(made.divergences) == divergence_signature(run)
    assert made.at.tzinfo is not None
    assert store.approvals() == [made]
    assert store.active_approvals("taxi", "1.5.0") == [made]
    assert store.active_approvals("taxi", "1.4.0") == []
    assert store.active_approvals("taxi", None) == []
    assert made.to_dict() == {
        "approval_id": made.approval_id,
        "validation": "taxi",
        "candidate_version": "1.5.0",
        "run_id": "taxi/1",
        "action": "approve",
        "actor": HOSTILE,
        "at": made.at.isoformat(),
        "reason": "fare rounding fixed; NUL-free",
        "divergences": {
            "verdict": "divergent",
            "counts": {"corruption": 3, "loss": 2},
            "columns": ["fare", "tip"],
        },
        "revokes": None,
    }


def test_revoke_ends_the_approval_and_keeps_both_rows(store: Store) -> None:
    divergent(store, "taxi/1")
    made = store.approve("taxi/1", actor="alice", reason="intended")
    ended = store.revoke("taxi/1", actor="bob", reason="not intended after all")
    assert (ended.action, ended.actor, ended.revokes, ended.run_id) == (
        "revoke",
        "bob",
        made.approval_id,
        "taxi/1",
    )
    assert ended.divergences == made.divergences
    assert store.active_approvals("taxi", "1.5.0") == []
    assert store.approvals(run_id="taxi/1") == [made, ended]  # oldest first, never deleted
    with pytest.raises(StoreError, match=r"^cannot revoke the approval of run taxi/1: it has"):
        store.revoke("taxi/1", actor="bob", reason="again")
    again = store.approve("taxi/1", actor="carol", reason="intended, really")
    assert store.active_approvals("taxi", "1.5.0") == [again]
    assert [a.action for a in store.approvals(validation="taxi")] == [
        "approve",
        "revoke",
        "approve",
    ]


def test_active_approvals_are_newest_first_and_filtered(store: Store) -> None:
    divergent(store, "taxi/1")
    divergent(store, "taxi/2", counts={"loss": 1}, columns={})
    divergent(store, "taxi/3", candidate="1.6.0")
    first = store.approve("taxi/1", actor="alice", reason="a")
    second = store.approve("taxi/2", actor="alice", reason="b")
    other = store.approve("taxi/3", actor="alice", reason="c")
    assert store.active_approvals("taxi", "1.5.0") == [second, first]
    assert store.approvals(candidate_version="1.6.0") == [other]
    assert store.approvals(validation="nope") == []


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "cannot approve run taxi/9: there is no such run"),
        ("running", "cannot approve run taxi/9: it is running, not completed"),
        ("failed", "cannot approve run taxi/9: it is failed, not completed"),
        (
            "equivalent",
            "cannot approve run taxi/9: its verdict is equivalent; only a divergent or noisy "
            "verdict is approved",
        ),
        ("recovery", "cannot approve run taxi/9: it is a recovery run, not a comparison"),
        ("properties", "cannot approve run taxi/9: it is a properties run, not a comparison"),
    ],
)
def test_approve_refuses_what_it_cannot_accept(store: Store, setup: str, message: str) -> None:
    if setup == "running":
        store.start_run(RunStart("taxi/9", "taxi"))
    elif setup == "failed":
        store.mark_failed("taxi/9", "boom", start=RunStart("taxi/9", "taxi"))
    elif setup == "equivalent":
        divergent(store, "taxi/9", verdict="equivalent", counts={}, columns={})
    elif setup in ("recovery", "properties"):
        kind = RECOVERY if setup == "recovery" else PROPERTIES
        store.start_run(RunStart("taxi/9", "taxi", kind=kind))
        store.record_run("taxi/9", RunOutcome(None if kind == PROPERTIES else "divergent"))
    with pytest.raises(StoreError) as raised:
        store.approve("taxi/9", actor="alice", reason="x")
    assert str(raised.value) == message
    assert store.approvals() == []


def test_a_noisy_verdict_may_be_approved(store: Store) -> None:
    run = divergent(store, "taxi/1", verdict="noisy", counts={"loss": 1}, columns={})
    made = store.approve("taxi/1", actor="alice", reason="the reference is noisy here")
    assert (
        dict(made.divergences)
        == divergence_signature(run)
        == {
            "verdict": "noisy",
            "counts": {"loss": 1},
            "columns": [],
        }
    )


def test_the_same_signature_is_approved_once_until_revoked(store: Store) -> None:
    divergent(store, "taxi/1")
    made = store.approve("taxi/1", actor="alice", reason="intended")
    with pytest.raises(StoreError) as raised:
        store.approve("taxi/1", actor="bob", reason="me too")
    assert str(raised.value) == (
        f"cannot approve run taxi/1: already approved by alice on "
        f"{made.at.isoformat(timespec='minutes')} (approval {made.approval_id}, divergent: "
        "corruption 3, loss 2; columns fare, tip)"
    )
    # A retried run (same id) that diverges otherwise needs, and gets, an approval of its own.
    divergent(store, "taxi/1", counts={"loss": 5}, columns={})
    retried = store.approve("taxi/1", actor="bob", reason="the retry's")
    assert store.active_approvals("taxi", "1.5.0") == [retried, made]
    assert store.revoke("taxi/1", actor="bob", reason="x").revokes == retried.approval_id


@pytest.mark.parametrize(
    ("actor", "reason", "message"),
    [
        ("", "why", "cannot approve run taxi/1: name who decides (an empty name was given)"),
        ("alice", " \n", "cannot approve run taxi/1: give a reason (an empty reason was given)"),
        ("a" * 251, "why", "approval actor: 251 characters, more than the store keeps (250)"),
        ("alice", "NUL \x00", "approval reason: contains a NUL byte, which the store cannot keep"),
    ],
)
def test_a_name_and_a_reason_are_required(
    store: Store, actor: str, reason: str, message: str
) -> None:
    divergent(store, "taxi/1")
    with pytest.raises(StoreError) as raised:
        store.approve("taxi/1", actor=actor, reason=reason)
    assert str(raised.value) == message


# -- parity approve / parity revoke ----------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_parity_approve_and_revoke_print_one_line(
    store: Store, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    divergent(store, "taxi/1")
    code, out, err = cli(
        capsys, "approve", "taxi/1", "--reason", "fare fix", "--by", HOSTILE, "--db", db_url
    )
    (made,) = store.approvals()
    assert (code, err) == (0, "")
    assert out == (
        "approved run taxi/1 (taxi, candidate 1.5.0) by alice \\x1b[31m<b>: divergent: "
        f"corruption 3, loss 2; columns fare, tip (approval {made.approval_id})\n"
    )
    code, out, err = cli(capsys, "revoke", "taxi/1", "--reason", "no", "--db", db_url, "--json")
    ended = store.approvals()[-1]
    assert (code, err) == (0, "")
    assert json.loads(out) == ended.to_dict()
    assert ended.actor  # the operating system's user, without --by


def test_parity_approve_json_and_errors(
    store: Store, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    divergent(store, "taxi/1")
    code, out, err = cli(
        capsys, "approve", "taxi/1", "--reason", "r", "--by", "al", "--json", "--db", db_url
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == store.approvals()[0].to_dict()
    code, out, err = cli(capsys, "approve", "taxi/404", "--reason", "r", "--db", db_url)
    assert (code, out) == (2, "")
    assert err == "parity: error: cannot approve run taxi/404: there is no such run\n"
    code, out, err = cli(capsys, "revoke", "taxi/404", "--reason", "r", "--json", "--db", db_url)
    assert (code, err) == (2, "")
    assert json.loads(out) == {
        "action": "revoke",
        "run_id": "taxi/404",
        "error": "cannot revoke the approval of run taxi/404: it has no active approval",
    }
    code, out, err = cli(capsys, "approve", "taxi/1", "--db", db_url)  # no --reason
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith("the following arguments are required: --reason")


def test_without_a_user_name_approve_asks_for_by(
    store: Store, db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    divergent(store, "taxi/1")

    def nobody() -> str:
        raise OSError("No username set in the environment")

    monkeypatch.setattr("getpass.getuser", nobody)  # a bare container: no user to be found
    code, out, err = cli(capsys, "approve", "taxi/1", "--reason", "r", "--db", db_url)
    assert (code, out, err) == (2, "", "parity: error: cannot tell who you are: give --by NAME\n")
