"""The Parity page's FastAPI app: run history, trends, run reports and a JSON API.

``plugins/parity_plugin.py`` mounts it in the Airflow API server at ``/parity``:

    GET /parity/                           history: ?validation= &verdict= &trigger=
                                           &since=YYYY-MM-DD &until=YYYY-MM-DD &limit= &offset=
    GET /parity/trends                     trends per validation: ?validation= &runs=N
    GET /parity/runs/{run_id}              the run's report (``parity.views.report``)
    GET /parity/runs/{run_id}/data-docs/…  the run's Great Expectations Data Docs
    GET /parity/api/runs                   the history as JSON (same filters)
    GET /parity/api/runs/{run_id}          the run's report document
    GET /parity/api/trends                 the trends as JSON: ?validation= &runs=N
    GET /parity/api/validations            every validation with a run
    GET /parity/api/gate/{validation}      the gate: ?candidate=VERSION &max_age=DURATION
                                           (``parity gate --json``'s document; 404 for an
                                           unknown validation, 503 for a store that is down)
    GET /parity/static/{name}              the page's CSS, script and icon
    POST /parity/runs/{run_id}/approve     approve the run's divergences: form reason=, token=
    POST /parity/runs/{run_id}/revoke      revoke its approval (``parity_ui.approvals``)

Every route depends on Airflow's own authorization check for reading DAG runs
(``requires_access_dag("GET", DagAccessEntity.RUN)``), which authenticates the caller with
Airflow's ``get_user``: the JWT in an ``Authorization: Bearer`` header, else the Airflow
UI's ``_token`` cookie (which the browser sends to the iframe, same origin). No token:
401; an invalid one or a user who may not read DAG runs: 403. A run id holds a ``/``; it
is percent-encoded in links and matched as a path here. Approving or revoking needs more:
the right to trigger the run's DAG, and a request from this origin (``parity_ui.approvals``);
then the browser goes back to the run's page (303), whose Approval section shows the trail.

The gate (``/api/gate/``) is bound to today's spec: the validation's spec file in the dags
folder (``parity.views.gate.current_spec``), so a verdict made under another spec or
reference version is no usable verdict, as ``parity gate`` says.

Every value read from the URL is checked before it is used (``parity_ui.filters``): a bad
one is a 400 naming it, an unknown run a 404, never a 5xx. A store that is down is a 503
that does not show the store's URL (it is logged). Data Docs files are served only from
inside the run's report folder, without following any link (``parity_ui.datadocs``).

The store is ``Store.open(store_url)``; when no URL is given, the Airflow Connection
``parity_db`` (``PARITY_DB_CONN_ID``) when there is one, else ``PARITY_DB_URL``,
``parity.toml`` or ``~/.parity/parity.db``; it is opened at the first request, so that a
store that is down does not keep Airflow from loading the plugin (``parity_ui.store``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cache
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from markupsafe import Markup
from starlette.exceptions import HTTPException as StarletteHTTPException

from matcher import uris
from matcher.errors import SpecError
from matcher.store import DATA_DOCS_DIR, RunRecord, Store, StoreError
from parity.views.approvals import history_approvals, run_approvals
from parity.views.gate import ERROR, GateStatus, MaxAge, current_spec, gate_status
from parity.views.report import DATA_DOCS_LINK, render_report_html, report_document
from parity_ui import approvals as approving
from parity_ui.datadocs import open_data_docs_file
from parity_ui.filters import (
    MAX_TREND_RUNS,
    TRIGGERS,
    VERDICTS,
    FilterError,
    RunFilter,
    optional_text,
    parse_run_filter,
    parse_trend_runs,
    path_text,
)
from parity_ui.links import MOUNT
from parity_ui.store import LazyStore, StoreDep, lifespan, store_of
from parity_ui.trends import KINDS, TrendPoint, layout_chart, trend_points
from parity_ui.views import Roots, history_row, run_entry

HERE = Path(__file__).parent
STATIC = {
    "parity.css": "text/css; charset=utf-8",
    "parity.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
_DATA_DOCS = f"/{DATA_DOCS_DIR.replace('_', '-')}/"
# Data Docs pages come from the run's folder, which the candidate under test can write: they
# run in a sandbox (an origin of their own, no access to Airflow's cookies or storage).
_DATA_DOCS_HEADERS = {
    "Content-Security-Policy": "sandbox allow-scripts allow-popups",
    "X-Content-Type-Options": "nosniff",
}
_log = logging.getLogger(__name__)


def create_app(store_url: str | None = None) -> FastAPI:
    """The app, reading the store at ``store_url`` (``None``: the store's own precedence)."""
    app = FastAPI(
        title="Parity",
        dependencies=[Depends(requires_access_dag("GET", DagAccessEntity.RUN))],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.parity_store = LazyStore(store_url)

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return _error(request, exc.status_code, str(exc.detail))

    @app.exception_handler(FilterError)
    def filter_error(request: Request, exc: FilterError) -> Response:
        return _error(request, 400, str(exc))

    @app.exception_handler(StoreError)
    def store_error(request: Request, exc: StoreError) -> Response:
        _log.error("the Parity results store failed: %s", exc)
        return _error(request, 503, "the Parity results store is unavailable (see the log)")

    @app.get("/", response_class=HTMLResponse)
    def history(request: Request, store: StoreDep) -> HTMLResponse:
        wanted = parse_run_filter(request.query_params)
        roots = _roots(request)
        runs = store.list_runs(**wanted.store_arguments())
        approvals = history_approvals(store, runs)
        return _page(
            request,
            "history.html.j2",
            page="history",
            filter=wanted,
            validations=store.validations(),
            verdicts=VERDICTS,
            triggers=TRIGGERS,
            rows=[history_row(run, roots, approvals.get(run.run_id)) for run in runs],
            first=wanted.offset + 1 if runs else 0,
            last=wanted.offset + len(runs),
            newer_href=_page_href(roots, wanted, wanted.offset - wanted.limit)
            if wanted.offset > 0
            else None,
            older_href=_page_href(roots, wanted, wanted.offset + wanted.limit)
            if len(runs) == wanted.limit
            else None,
            api_href=_href(f"{roots.plugin}/api/runs", wanted.query()),
        )

    @app.get("/trends", response_class=HTMLResponse)
    def trends(request: Request, store: StoreDep) -> HTMLResponse:
        selected = optional_text(request.query_params, "validation")
        runs = parse_trend_runs(request.query_params)
        roots = _roots(request)
        validations = store.validations()
        shown = [selected] if selected is not None else validations
        charts = [
            {
                "validation": name,
                "gate": _todays_gate(request, name)[0].to_dict(),
                "chart": layout_chart(_trend(store, name, runs), roots),
            }
            for name in shown
        ]
        return _page(
            request,
            "trends.html.j2",
            page="trends",
            validations=validations,
            selected=selected,
            runs=runs,
            max_runs=MAX_TREND_RUNS,
            kinds=KINDS,
            verdicts=VERDICTS,
            trends=charts,
        )

    @app.get("/runs/{path:path}")
    def run_page(request: Request, path: str, store: StoreDep, user: GetUserDep) -> Response:
        run_id, docs, file = path.partition(_DATA_DOCS)
        record = _get_run(store, run_id)
        if docs:
            return _data_docs_file(record, path_text("data docs path", file))
        roots = _roots(request)
        approvals = run_approvals(store, record)
        page = render_report_html(
            record,
            links=_report_links(record, roots),
            approvals=approvals,
            approval_form=approving.approval_form(
                record, approvals, roots.run(record.run_id), user
            ),
        )
        script = Markup('<script src="{}/static/parity.js" defer></script>').format(roots.plugin)
        return HTMLResponse(page.replace("</head>", f"{script}\n</head>", 1))

    @app.get("/api/runs")
    def api_runs(request: Request, store: StoreDep) -> dict[str, Any]:
        wanted = parse_run_filter(request.query_params)
        roots = _roots(request)
        runs = store.list_runs(**wanted.store_arguments())
        approvals = history_approvals(store, runs)
        entries = [run_entry(run, roots, approvals.get(run.run_id)) for run in runs]
        return {"filters": wanted.as_dict(), "runs": entries}

    @app.get("/api/runs/{run_id:path}")
    def api_run(request: Request, run_id: str, store: StoreDep) -> dict[str, Any]:
        record = _get_run(store, run_id)
        document = report_document(record, run_approvals(store, record))
        return {**document, "links": _report_links(record, _roots(request))}

    @app.get("/api/trends")
    def api_trends(request: Request, store: StoreDep) -> dict[str, Any]:
        selected = optional_text(request.query_params, "validation")
        runs = parse_trend_runs(request.query_params)
        names = [selected] if selected is not None else store.validations()
        return {
            "runs": runs,
            "validations": [
                {
                    "validation": name,
                    "points": [point.as_dict() for point in _trend(store, name, runs)],
                }
                for name in names
            ],
        }

    @app.get("/api/validations")
    def api_validations(store: StoreDep) -> dict[str, Any]:
        return {"validations": store.validations()}

    @app.get("/api/gate/{validation}")
    def api_gate(request: Request, validation: str) -> JSONResponse:
        """``parity gate --json``'s document, whatever the outcome (its ``exit_code``)."""
        name = path_text("validation", validation)
        candidate = optional_text(request.query_params, "candidate")
        age = optional_text(request.query_params, "max_age")
        try:
            max_age = None if age is None else MaxAge.parse(age)
        except ValueError as exc:
            raise FilterError(f"max_age: {exc}") from None
        status, code = _todays_gate(request, name, candidate, max_age, age)
        return JSONResponse(status.to_dict(), status_code=code)

    @app.post("/runs/{run_id:path}/{action}")
    async def approval(
        request: Request, run_id: str, action: str, store: StoreDep, user: GetUserDep
    ) -> Response:
        """Approve or revoke, then back to the run's page (``parity_ui.approvals``)."""
        if action not in approving.ACTIONS:
            raise HTTPException(404, f"no action {action!r}: approve or revoke")
        record = _get_run(store, run_id)
        await approving.record_action(request, record, action, store, user)
        return RedirectResponse(_roots(request).run(record.run_id), status_code=303)

    @app.get("/static/{name}")
    def static(name: str) -> FileResponse:
        if name not in STATIC:
            raise HTTPException(404, f"no static file {name!r}")
        return FileResponse(HERE / "static" / name, media_type=STATIC[name])

    return app


def _trend(store: Store, name: str, runs: int) -> list[TrendPoint]:
    """The trend of ``name``'s latest ``runs`` runs, each gate as the history shows it."""
    listed = store.list_runs(validation=name, limit=runs)
    return trend_points(listed, history_approvals(store, listed))


def _todays_gate(
    request: Request,
    name: str,
    candidate: str | None = None,
    max_age: MaxAge | None = None,
    age: str | None = None,
) -> tuple[GateStatus, int]:
    """The gate of ``name`` bound to today's spec (``current_spec``: the dags folder's
    validations), and the HTTP status of its document: 404 for an unknown validation or one
    without a spec in the deployment, 503 when the store or today's spec cannot be read
    (logged: the messages name the store's host and the server's paths)."""
    try:
        current = current_spec(name)
        status = gate_status(store_of(request), name, candidate, max_age=max_age, current=current)
        if current is None and status.state != ERROR:  # as ``parity gate``: never unbound
            reason = (
                f"no spec for validation {name!r} in this deployment's validations folder: "
                "its verdicts cannot be bound to today's spec"
            )
            status = GateStatus.error(name, candidate, reason, max_age=age)
        return status, 404 if status.state == ERROR else 200
    except StoreError as exc:
        _log.error("the Parity results store failed: %s", exc)
        reason = "the Parity results store is unavailable (see the log)"
    except (SpecError, OSError) as exc:
        _log.error("today's spec of validation %r does not load: %s", name, exc)
        reason = f"today's spec of validation {name!r} does not load (see the log)"
    return GateStatus.error(name, candidate, reason, max_age=age), 503


def _roots(request: Request) -> Roots:
    """The plugin's and Airflow's URL roots, from where the app is mounted."""
    plugin = str(request.scope.get("root_path", "")).rstrip("/")
    airflow = plugin.removesuffix(MOUNT) if plugin.endswith(MOUNT) else ""
    return Roots(plugin=plugin, airflow=airflow)


def _get_run(store: Store, run_id: str) -> RunRecord:
    record = store.get_run(path_text("run id", run_id))
    if record is None:
        raise HTTPException(404, f"no run {run_id!r} in the results store")
    return record


def _report_links(record: RunRecord, roots: Roots) -> dict[str, str]:
    links = {"History": f"{roots.plugin}/", "Trends": f"{roots.plugin}/trends"}
    dag_run = roots.dag_run(record)
    if dag_run is not None:
        links["Airflow DAG run"] = dag_run
    links["JSON"] = roots.run_api(record.run_id)
    if record.report_path is not None and record.expectations and _served(record.report_path):
        links[DATA_DOCS_LINK] = f"{roots.run(record.run_id)}{_DATA_DOCS}index.html"
    return links


def _served(report_path: str) -> bool:
    """Data Docs are served from a local report folder; one on shared storage (``s3a://``,
    ``hdfs://``) is named, not linked, and its results are in Parity's own report."""
    return uris.local_path(report_path) is not None


def _data_docs_file(record: RunRecord, file: str) -> StreamingResponse:
    """A file of the run's Data Docs site, never one outside it (``parity_ui.datadocs``)."""
    if record.report_path is None:
        raise HTTPException(404, f"run {record.run_id!r} has no report folder")
    opened = open_data_docs_file(record.report_path, file)
    if opened is None:
        raise HTTPException(404, f"no Data Docs file {file!r} for run {record.run_id!r}")
    return StreamingResponse(
        opened.chunks(), media_type=opened.media_type, headers=_DATA_DOCS_HEADERS
    )


def _href(path: str, query: Mapping[str, str]) -> str:
    return f"{path}?{urlencode(query)}" if query else path


def _page_href(roots: Roots, wanted: RunFilter, offset: int) -> str:
    return _href(f"{roots.plugin}/", wanted.query(offset=max(offset, 0)))


def _error(request: Request, status: int, message: str) -> Response:
    """JSON ``{"detail": message}`` under ``/api/``, else a page; the same status."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    roots = _roots(request)
    if request.url.path.startswith(f"{roots.plugin}/api/"):
        return JSONResponse({"detail": message}, status_code=status, headers=headers)
    login = _login_url(str(request.url.path)) if status in (401, 403) else None
    response = _page(
        request,
        "error.html.j2",
        page="error",
        status=status,
        reason=HTTPStatus(status).phrase,
        message=message,
        login_href=login,
    )
    response.status_code = status
    if headers:
        response.headers.update(headers)
    return response


def _login_url(next_path: str) -> str | None:
    """The auth manager's login page, coming back to ``next_path``."""
    from airflow.api_fastapi.app import get_auth_manager

    try:
        return get_auth_manager().get_url_login(next_url=next_path)
    except RuntimeError:  # no auth manager initialised: nowhere to log in
        return None


def _page(request: Request, template: str, **context: Any) -> HTMLResponse:
    html = _templates().get_template(template).render(plugin=_roots(request).plugin, **context)
    return HTMLResponse(html)


@cache
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every {{ }} is escaped; no template uses |safe
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
