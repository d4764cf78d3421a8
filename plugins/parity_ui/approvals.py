"""Approve or revoke a run's divergences from its page: who may, and the checks a POST passes.

    POST /parity/runs/{run_id}/approve    form: reason=..., token=...
    POST /parity/runs/{run_id}/revoke     form: reason=..., token=...

Airflow's auth manager decides who may: a user allowed to trigger the run's DAG
(``requires_access_dag("POST", DagAccessEntity.RUN)`` for the DAG named by the run's record
and its id ``<dag_id>/<dag_run_id>``, ``matcher.store.run_ids``); a run made by no DAG run
(``parity compare`` on a laptop) needs the right to trigger every DAG. The approval is
recorded under the authenticated user's name (``BaseUser.get_name``), never a name the
request gives.

The Airflow UI authenticates the browser with a cookie, which a page of another origin can
make the browser send (a sibling host of the same site, since the cookie is ``SameSite=lax``).
So a POST is refused (403) unless it comes from this origin: its ``Origin`` header (else its
``Referer``) must name this host (or the host of ``[api] base_url``), and, when the cookie
authenticates it, the form must carry the token the run's page gave (``form_token``: an
HMAC of the user and the run under Airflow's ``[api] secret_key``). ``Origin: null`` (a
sandboxed page such as a run's Data Docs, which the candidate under test wrote) is
refused. A script with a bearer token is not a browser riding a cookie: it needs neither,
but a foreign ``Origin`` is refused all the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import HTTPException, Request

from matcher.store import RunRecord, Store, StoreError
from matcher.store.run_ids import dag_run_of
from parity.views.approvals import APPROVABLE, APPROVED, RunApprovals, run_approvals
from parity_ui import notes

#: the actions of the two routes, as the store names them
ACTIONS = ("approve", "revoke")
#: the longest reason the page accepts (the store keeps any text; a page need not)
MAX_REASON = 2000
_PURPOSE = b"parity-approval"


def dag_ids(record: RunRecord) -> tuple[str | None, ...]:
    """The DAGs whose trigger right an approval of ``record`` needs: the DAG stored with the
    run and the one its id names (the same, for a pipeline's run); ``(None,)``: every DAG."""
    named = dag_run_of(record.run_id)
    found = {name for name in (record.dag_id, named[0] if named else None) if name}
    return tuple(sorted(found)) or (None,)


def may_trigger(user: Any, record: RunRecord) -> bool:
    """Whether ``user`` may trigger every DAG ``dag_ids`` names (the form is shown then)."""
    from airflow.api_fastapi.app import get_auth_manager

    manager = get_auth_manager()
    return all(
        manager.is_authorized_dag(
            method="POST",
            access_entity=DagAccessEntity.RUN,
            details=_details(dag_id),
            user=user,
        )
        for dag_id in dag_ids(record)
    )


def require_trigger(request: Request, user: Any, record: RunRecord) -> None:
    """403 unless ``user`` may trigger the run's DAGs (Airflow's own check, by DAG id)."""
    for dag_id in dag_ids(record):
        if dag_id is None:
            # Not requires_access_dag(param_dag_id=None): it would read the DAG id from the
            # query string, which the caller chooses.
            if not may_trigger(user, record):
                raise HTTPException(403, "Forbidden")
            continue
        requires_access_dag("POST", DagAccessEntity.RUN, param_dag_id=dag_id)(request, user)


def _details(dag_id: str | None) -> DagDetails:
    if dag_id is None:
        return DagDetails(id=None)
    from airflow.models.dag import DagModel

    return DagDetails(id=dag_id, team_name=DagModel.get_team_name(dag_id))


def form_token(user_name: str, run_id: str) -> str:
    """The hidden field of the run's forms: bound to the user and the run, unguessable
    without Airflow's secret key."""
    message = b"\0".join((_PURPOSE, user_name.encode(), run_id.encode()))
    return hmac.new(_secret(), message, hashlib.sha256).hexdigest()


@cache
def _secret() -> bytes:
    from airflow.api_fastapi.auth.tokens import get_signing_key

    # The API server's own key (generated once per process when the config has none).
    return get_signing_key("api", "secret_key").encode()


def check_origin(request: Request, *, user_name: str, run_id: str, token: str | None) -> None:
    """403 for a POST another origin may have made (see the module docstring)."""
    origin = request.headers.get("origin")
    source = origin if origin is not None else request.headers.get("referer")
    if source is not None and not _same_origin(request, source):
        raise HTTPException(403, "cross-origin request refused")
    if _bearer(request):
        return
    if source is None:
        raise HTTPException(403, "cross-origin request refused: no Origin or Referer header")
    expected = form_token(user_name, run_id)
    if token is None or not hmac.compare_digest(token, expected):
        raise HTTPException(403, "the form's token is missing or stale: reload the run's page")


def _same_origin(request: Request, source: str) -> bool:
    """``source`` (an Origin or Referer) names the host this request was sent to, or the
    host of Airflow's ``[api] base_url`` (a proxy in front of Airflow may send another
    ``Host``). The scheme is not compared: a proxy that ends TLS makes an https page an
    http request."""
    try:
        netloc = urlsplit(source).netloc.lower()
    except ValueError:
        return False
    return bool(netloc) and netloc in _own_hosts(request)


def _own_hosts(request: Request) -> set[str]:
    from airflow.configuration import conf

    hosts = {str(request.headers.get("host", "")).lower()}
    base_url = conf.get("api", "base_url", fallback="") or ""
    with contextlib.suppress(ValueError):  # a base_url that is not a URL names no host
        hosts.add(urlsplit(base_url).netloc.lower())
    return hosts - {""}


def _bearer(request: Request) -> bool:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(credentials.strip())


async def record_action(
    request: Request, record: RunRecord, action: str, store: Store, user: Any
) -> None:
    """``action`` (approve, revoke) on ``record`` for ``user``, after every check: 403 who
    may not or a request from elsewhere, 400 bad input or a refusal of the store (one
    line), 503 a store that is down; then the DAG run's note says it (``notes``)."""
    require_trigger(request, user, record)
    form = await request.form()
    token = form.get("token")
    name = user.get_name()
    check_origin(
        request,
        user_name=name,
        run_id=record.run_id,
        token=token if isinstance(token, str) else None,
    )
    reason = parse_reason(form)
    act = store.approve if action == "approve" else store.revoke
    try:
        act(record.run_id, actor=name, reason=reason)
    except StoreError as exc:
        if exc.__cause__ is not None:  # the database failed: the app's 503 handler logs it
            raise
        raise HTTPException(400, str(exc)) from None  # refused: not approvable, none active...
    notes.rewrite_note(record, run_approvals(store, record))


def approval_form(
    record: RunRecord, approvals: RunApprovals, run_page: str, user: Any
) -> dict[str, Any] | None:
    """The run page's form (``parity.views.report.render_report_html``), for a user who may
    trigger the run's DAG: the approve button for a completed divergent or noisy comparison
    with no active approval made on it, the revoke button while one is active."""
    approvable = record.kind == "comparison" and record.status == "completed"
    approvable = approvable and record.verdict in APPROVABLE
    revocable = approvals.state == APPROVED
    if not (approvable or revocable) or not may_trigger(user, record):
        return None
    return {
        "approve": f"{run_page}/approve" if approvable and not revocable else None,
        "revoke": f"{run_page}/revoke" if revocable else None,
        "token": form_token(user.get_name(), record.run_id),
    }


def parse_reason(form: Any) -> str:
    """The form's ``reason``: one line of text, required; a 400 (one line) otherwise."""
    value = form.get("reason")
    if not isinstance(value, str) or not value.strip():
        raise HTTPException(400, "reason: give a reason (it is required)")
    if "\0" in value:
        raise HTTPException(400, "reason: contains a NUL byte")
    if len(value) > MAX_REASON:
        raise HTTPException(400, f"reason: longer than {MAX_REASON} characters")
    return value.strip()
