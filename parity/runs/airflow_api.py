"""A small client of Airflow 3's REST API (v2) and the Parity plugin's API, for ``parity run``.

    client = AirflowClient("http://airflow:8080", Credentials.from_env())
    dag = client.dag("parity_taxi_parallel")          # None: no such DAG
    run = client.trigger("parity_taxi_parallel", {"candidate_version": "1.5.0"})
    client.dag_run("parity_taxi_parallel", run["dag_run_id"])["state"]
    client.gate("taxi_parallel", "1.5.0")             # ``parity gate --json``'s document

Standard library only (``urllib``): no new dependency, and ``parity.runs`` imports the core
alone. Authentication: a bearer token (``PARITY_AIRFLOW_TOKEN``), else a user name and
password exchanged for one at ``POST {url}/auth/token`` (the Simple auth manager's login,
``{"username", "password"}`` -> ``{"access_token"}``), else none. A token is sent in the
``Authorization`` header only: it is never part of a URL, an error or ``repr``. Every
failure is one :class:`AirflowApiError` line naming the request and Airflow's own ``detail``.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from matcher.errors import ParityError

#: environment variables of the deployment's address and its credentials
URL_VARIABLE = "PARITY_AIRFLOW_URL"
TOKEN_VARIABLE = "PARITY_AIRFLOW_TOKEN"
USERNAME_VARIABLE = "PARITY_AIRFLOW_USERNAME"
PASSWORD_VARIABLE = "PARITY_AIRFLOW_PASSWORD"
API = "/api/v2"
#: a DAG run in one of these states is over
FINISHED_RUN_STATES = frozenset({"success", "failed"})
#: a task instance in one of these states will not run again in this DAG run (unless retried)
FINISHED_TASK_STATES = frozenset(
    {"success", "failed", "skipped", "upstream_failed", "removed", "up_for_retry"}
)
#: the longest part of Airflow's answer quoted in an error
MAX_DETAIL = 300


class AirflowApiError(ParityError):
    """Airflow could not be reached, refused the request, or answered something unexpected."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Credentials:
    """How to authenticate: a token, else a user name and password, else nothing."""

    token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Credentials:
        env = os.environ if env is None else env
        return cls(
            env.get(TOKEN_VARIABLE) or None,
            env.get(USERNAME_VARIABLE) or None,
            env.get(PASSWORD_VARIABLE) or None,
        )


def shown_url(url: str) -> str:
    """``url`` without any ``user:password@`` (what an error may quote)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def check_url(url: str) -> str:
    """The base URL of an Airflow deployment (``http(s)://host[:port][/prefix]``), without a
    trailing slash; a one-line ``ValueError`` for anything else."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {shown_url(url)!r}")
    if "@" in parts.netloc:
        raise ValueError(
            f"put no credentials in the URL ({shown_url(url)!r}): set {TOKEN_VARIABLE}, "
            f"or {USERNAME_VARIABLE} and {PASSWORD_VARIABLE}"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"a base URL takes no query or fragment: {shown_url(url)!r}")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


class AirflowClient:
    """Airflow's REST API and the Parity plugin's, at one deployment's base URL."""

    def __init__(self, url: str, credentials: Credentials, *, timeout: float = 30.0) -> None:
        self.url = check_url(url)
        self._credentials = credentials
        self._timeout = timeout
        self._token: str | None = credentials.token

    def __repr__(self) -> str:
        return f"AirflowClient({shown_url(self.url)!r})"

    # -- DAGs and DAG runs ---------------------------------------------------------------

    def dag(self, dag_id: str) -> dict[str, Any] | None:
        """The DAG's document (``is_paused`` among its keys); None when Airflow has none."""
        found = self._json("GET", f"{API}/dags/{_q(dag_id)}", missing_ok=True)
        return found if isinstance(found, dict) else None

    def dag_ids(self, prefix: str) -> list[str]:
        """The ids of the DAGs whose id starts with ``prefix`` (for suggestions)."""
        query = urllib.parse.urlencode({"dag_id_pattern": prefix, "limit": 1000})
        found = self._json("GET", f"{API}/dags?{query}") or {}
        ids = [d.get("dag_id") for d in found.get("dags", []) if isinstance(d, Mapping)]
        return sorted(i for i in ids if isinstance(i, str) and i.startswith(prefix))

    def unpause(self, dag_id: str) -> None:
        self._json("PATCH", f"{API}/dags/{_q(dag_id)}", {"is_paused": False})

    def trigger(self, dag_id: str, conf: Mapping[str, Any]) -> dict[str, Any]:
        """A new manual DAG run with ``conf`` (the DAG's params); its document."""
        body = {"logical_date": None, "conf": dict(conf)}
        run = self._json("POST", f"{API}/dags/{_q(dag_id)}/dagRuns", body)
        if not isinstance(run, dict) or not isinstance(run.get("dag_run_id"), str):
            raise AirflowApiError(f"triggering {dag_id}: Airflow's answer has no dag_run_id")
        return run

    def dag_run(self, dag_id: str, dag_run_id: str) -> dict[str, Any]:
        found = self._json("GET", f"{API}/dags/{_q(dag_id)}/dagRuns/{_q(dag_run_id)}")
        return found if isinstance(found, dict) else {}

    def task_instances(self, dag_id: str, dag_run_id: str) -> list[dict[str, Any]]:
        path = f"{API}/dags/{_q(dag_id)}/dagRuns/{_q(dag_run_id)}/taskInstances?limit=1000"
        found = self._json("GET", path) or {}
        return [t for t in found.get("task_instances", []) if isinstance(t, dict)]

    # -- the Parity plugin ----------------------------------------------------------------

    def parity_run(self, run_id: str) -> dict[str, Any] | None:
        """The stored run's report document (``parity report --json``); None: not stored."""
        found = self._json("GET", f"/parity/api/runs/{_q(run_id)}", missing_ok=True)
        return found if isinstance(found, dict) else None

    def gate(self, validation: str, candidate_version: str | None) -> dict[str, Any]:
        """``parity gate --json``'s document. The plugin answers it with 404 (an unknown
        validation) and 503 (its store is down) too: those are answers, not failures."""
        query = (
            ""
            if candidate_version is None
            else "?" + urllib.parse.urlencode({"candidate": candidate_version})
        )
        path = f"/parity/api/gate/{_q(validation)}{query}"
        found = self._json("GET", path, answers=(404, 503))
        if not isinstance(found, dict) or "state" not in found:
            raise AirflowApiError(f"GET {path}: not a gate document (is the Parity plugin there?)")
        return found

    # -- HTTP ---------------------------------------------------------------------------

    def _json(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        missing_ok: bool = False,
        answers: tuple[int, ...] = (),
    ) -> Any:
        """One request's JSON answer (None for a 404 when ``missing_ok``); a 401 gets a
        token from the credentials once and tries again."""
        status, payload = self._send(method, path, body)
        if status == 401 and self._can_log_in():
            self._token = self._log_in()
            status, payload = self._send(method, path, body)
        if status == 404 and missing_ok:
            return None
        if status >= 400 and status not in answers:
            raise AirflowApiError(f"{method} {path}: {_refusal(status, payload)}", status)
        try:
            return json.loads(payload) if payload else None
        except ValueError:
            raise AirflowApiError(f"{method} {path}: Airflow's answer is not JSON") from None

    def _can_log_in(self) -> bool:
        c = self._credentials
        return c.username is not None and c.password is not None and self._token is None

    def _log_in(self) -> str:
        c = self._credentials
        body = {"username": c.username, "password": c.password}
        status, payload = self._send("POST", "/auth/token", body, authenticate=False)
        if status >= 400:
            raise AirflowApiError(
                f"logging in to Airflow as {c.username!r}: {_refusal(status, payload)}", status
            )
        try:
            token = json.loads(payload).get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise AirflowApiError("logging in to Airflow: its answer has no access_token")
        return token

    def _send(
        self, method: str, path: str, body: Any, *, authenticate: bool = True
    ) -> tuple[int, bytes]:
        if self._token is None and authenticate and self._can_log_in():
            self._token = self._log_in()  # log in before the first request, not after a 401
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if authenticate and self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                return int(exc.code), exc.read()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AirflowApiError(
                f"cannot reach Airflow at {shown_url(self.url)}: {reason}"
            ) from None


def _q(segment: str) -> str:
    """One path segment, every reserved character escaped (run ids hold ``:`` and ``+``)."""
    return urllib.parse.quote(segment, safe="")


def _refusal(status: int, payload: bytes) -> str:
    """``HTTP 403: Forbidden`` with Airflow's ``detail`` when it gave one."""
    try:
        detail = json.loads(payload).get("detail")
    except (ValueError, AttributeError):
        detail = None
    if not isinstance(detail, str):
        detail = json.dumps(detail) if detail is not None else ""
    detail = " ".join(detail.split())[:MAX_DETAIL]
    hint = ""
    if status == 401:
        hint = f" (set {TOKEN_VARIABLE}, or {USERNAME_VARIABLE} and {PASSWORD_VARIABLE})"
    return f"HTTP {status}" + (f": {detail}" if detail else "") + hint
