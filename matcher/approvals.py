"""Approvals of intended changes: which divergences of a run someone accepted, and whether
an approval covers a newer run.

    signature = divergence_signature(run)      # {"verdict": "divergent", "counts": {...},
                                               #  "columns": ["fare"]}
    store.approve(run.run_id, actor="alice", reason="fare rounding fixed (JIRA-12)")
    approval = covering_approval(newest_run, store.active_approvals("taxi", "1.5.0"))

A release that deliberately changes the output (a bug fix, a new column) is divergent by
design. An approval records who accepted *which* divergences: the run's verdict, its
non-zero counts per kind, the columns that differ (and, when the schemas differed in a
way that made the verdict divergent, those findings). It covers a run of the same
validation and candidate version with exactly that signature and no other: a new run that
diverges differently (one more lost event, another column) needs a new approval
(DESIGN.md, "The release loop"). Approvals are never deleted: a revocation is a row of its
own (``matcher.store.records.ApprovalRecord``).

Pure core: no database, Spark or Airflow; the store (``Store.approve``) and the gate
(``parity.views.gate``) call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the store imports this module: its records only for the type checker
    from matcher.store.records import ApprovalRecord, RunRecord


def divergence_signature(run: RunRecord) -> dict[str, Any]:
    """What an approval of ``run`` accepts: ``{"verdict", "counts": {kind: n} (non-zero,
    by kind), "columns": [sorted columns that differ]}``, plus ``"schema"`` (the divergent
    schema findings as ``kind:column``, sorted) when the schemas made it divergent. The
    columns are those of the run's column statistics and stored witnesses."""
    counts = {kind: int(n) for kind, n in sorted(run.counts.items()) if n}
    columns: set[str] = set()
    for stat in run.column_stats:
        if stat.mismatches:
            columns.add(str(stat.column))
    for divergence in run.divergences:
        columns.update(str(column) for column in divergence.columns)
    signature: dict[str, Any] = {
        "verdict": run.verdict,
        "counts": counts,
        "columns": sorted(columns),
    }
    schema = run.schema
    if schema is not None and schema.divergent:
        signature["schema"] = sorted(
            f"{finding.kind}:{finding.column or ''}"
            for finding in schema.findings
            if finding.divergent
        )
    return signature


def same_signature(approved: Mapping[str, Any], signature: Mapping[str, Any]) -> bool:
    """Whether a stored signature (JSON read back from the store) is ``signature``."""
    return bool(_plain(approved) == _plain(signature))


def covering_approval(run: RunRecord, approvals: Iterable[ApprovalRecord]) -> ApprovalRecord | None:
    """The newest approval among ``approvals`` that covers ``run``: an ``approve`` not
    revoked (by a revoke among ``approvals``), of the run's validation and candidate
    version, whose signature is exactly the run's. ``None``: none covers it."""
    records = list(approvals)
    revoked = {a.revokes for a in records if a.action == "revoke"}
    signature = divergence_signature(run)
    covering = [
        a
        for a in records
        if a.action == "approve"
        and a.approval_id not in revoked
        and a.validation == run.validation
        and a.candidate_version == run.candidate_version
        and same_signature(a.divergences, signature)
    ]
    return max(covering, key=lambda a: (a.at, a.approval_id), default=None)


def describe_signature(signature: Mapping[str, Any]) -> str:
    """``divergent: loss 2, corruption 3; columns fare, tip``: a signature in one line."""
    counts = signature.get("counts")
    parts = []
    if isinstance(counts, Mapping) and counts:
        parts.append(", ".join(f"{kind} {n}" for kind, n in counts.items()))
    columns = signature.get("columns")
    if isinstance(columns, list) and columns:
        parts.append(f"columns {', '.join(map(str, columns))}")
    schema = signature.get("schema")
    if isinstance(schema, list) and schema:
        parts.append(f"schema {', '.join(map(str, schema))}")
    return f"{signature.get('verdict')}: {'; '.join(parts) or 'no divergences counted'}"


def _plain(value: Any) -> Any:
    """JSON-like values compared as JSON: mappings as dicts, sequences as lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
