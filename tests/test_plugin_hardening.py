"""The Parity page against a hostile caller and a hostile run folder, on SQLite and PostgreSQL.

* Data Docs: a run's report folder is written by the run, and the candidate under test can
  write into it. Links planted at every level (``data_docs -> /``, a subfolder, the file), a
  link that stays inside (refused too: no link is followed), a hard link, a FIFO, a folder,
  ``..`` raw and percent-encoded, absolute paths and NUL bytes: each gives 404 (400 for a
  NUL), never the file and never a 5xx.
* Query and path values: every parameter each route reads, with values the store cannot
  take (a NUL byte, a number past 64 bits, the last day of the calendar), gives a 400
  naming it, never a 5xx and never the store's URL or a path of the server.
* The JSON API gives each run's schema findings as ``parity report --json`` does.

Each test runs the plugin's app (``parity_ui.app.create_app``) on a store of its own, behind
Airflow's real authorization (the Airflow app of ``test_plugin``, whose auth manager signs
the viewer's token).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from markupsafe import escape
from test_plugin import PLUGINS, client, report_dir, store_url, viewer  # noqa: F401

from matcher.schema import SchemaDiff, SchemaFinding
from matcher.store import RunOutcome, RunStart, Store

pytest_plugins = ("airflow_fixtures", "store_fixtures")

pytestmark = [
    pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`"),
    pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning"),
]

UTC = dt.UTC
DOCS = "taxi/docs"  # a report folder with links planted inside its Data Docs
ROOTED = "taxi/rooted"  # data_docs -> /
LINKED = "taxi/linked"  # data_docs -> a folder beside it, inside the report folder
SCHEMA_RUN = "taxi/schema"
FILE_URI = "taxi/file-uri"  # the docs folder, named by a file:// URI (PARITY_WORKSPACE)
REMOTE = "taxi/remote"  # a workspace on an object store: named, never served
SECRET = "SECRET-PASSWORDS"
SCHEMA = SchemaDiff(
    mode="strict",
    findings=(SchemaFinding("removed", 'tip<script>"', "double", None, True),),
)
SCHEMA_JSON = {
    "mode": "strict",
    "divergent": True,
    "findings": [
        {
            "kind": "removed",
            "column": 'tip<script>"',
            "reference": "double",
            "candidate": None,
            "divergent": True,
            "widening": False,
            "compared_as": None,
            "inferred": False,
            "explanation": "column 'tip<script>\"' (double) is missing from the candidate",
        }
    ],
}


@dataclass(frozen=True, slots=True)
class Site:
    """The plugin's app on a seeded store, and what must never show in an answer."""

    client: Any
    headers: dict[str, str]
    secrets: tuple[str, ...]

    def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        response = self.client.get(path, params=params, headers=self.headers)
        leaked = [s for s in self.secrets if s in response.text]
        assert leaked == [], f"{path} {params} shows {leaked}"
        return response


def plant(tmp_path: Path) -> dict[str, Path]:
    """Three report folders and a secret outside them (``SECRET``)."""
    outside = tmp_path / "outside"
    (outside / "etc").mkdir(parents=True)
    (outside / "passwords.json").write_text(SECRET, encoding="utf-8")
    (outside / "etc" / "passwd").write_text(SECRET, encoding="utf-8")

    docs = tmp_path / "docs"
    site = docs / "data_docs"
    (site / "sub").mkdir(parents=True)
    (site / "index.html").write_text("<p>index</p>", encoding="utf-8")
    (site / "sub" / "page.html").write_text("page", encoding="utf-8")
    (docs / "secret.txt").write_text(SECRET, encoding="utf-8")
    (site / "etc").symlink_to(outside / "etc")  # a subfolder that leads out
    (site / "passwd").symlink_to(outside / "passwords.json")  # a file that leads out
    (site / "sub" / "passwd").symlink_to(outside / "passwords.json")
    (site / "again.html").symlink_to("index.html")  # stays inside: refused all the same
    (site / "up").symlink_to("..")  # inside the report folder, outside its Data Docs
    os.link(outside / "passwords.json", site / "hard.txt")
    os.mkfifo(site / "fifo")

    rooted = tmp_path / "rooted"
    rooted.mkdir()
    (rooted / "data_docs").symlink_to("/")

    linked = tmp_path / "linked"
    (linked / "real").mkdir(parents=True)
    (linked / "real" / "index.html").write_text("linked", encoding="utf-8")
    (linked / "data_docs").symlink_to(linked / "real")
    return {"docs": docs, "rooted": rooted, "linked": linked, "outside": outside}


def seed(store: Store, folders: dict[str, Path]) -> None:
    at = dt.datetime(2026, 1, 1, 3, tzinfo=UTC)
    reports = {
        DOCS: str(folders["docs"]),
        ROOTED: str(folders["rooted"]),
        LINKED: str(folders["linked"]),
        FILE_URI: f"file://{folders['docs']}",
        REMOTE: "s3a://bucket/runs/parity_taxi/r/report",
    }
    for run_id, report_path in reports.items():
        store.start_run(RunStart(run_id, "taxi", started_at=at))
        outcome = RunOutcome("equivalent", finished_at=at, report_path=report_path)
        store.record_run(run_id, outcome)
    store.start_run(RunStart(SCHEMA_RUN, "taxi", started_at=at + dt.timedelta(hours=1)))
    store.record_run(SCHEMA_RUN, RunOutcome("divergent", finished_at=at, schema=SCHEMA))


@pytest.fixture
def site(
    db_url: str,
    tmp_path: Path,
    client: Any,  # noqa: F811  (the Airflow app: its auth manager checks the token)
    viewer: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Site]:
    monkeypatch.syspath_prepend(str(PLUGINS))
    from fastapi.testclient import TestClient

    from parity_ui.app import create_app

    folders = plant(tmp_path)
    with Store.open(db_url) as store:
        seed(store, folders)
    secrets = (SECRET, str(tmp_path), db_url, "sqlite:", "postgresql")
    with TestClient(create_app(db_url), raise_server_exceptions=False) as app_client:
        yield Site(app_client, viewer, secrets)


def docs(run_id: str, file: str) -> str:
    return f"/runs/{quote(run_id, safe='')}/data-docs/{file}"


# -- Data Docs ------------------------------------------------------------------------------


def test_the_data_docs_are_served_sandboxed(site: Site) -> None:
    index = site.get(docs(DOCS, "index.html"))
    assert (index.status_code, index.text) == (200, "<p>index</p>")
    assert index.headers["content-type"] == "text/html; charset=utf-8"
    assert index.headers["content-security-policy"] == "sandbox allow-scripts allow-popups"
    assert index.headers["x-content-type-options"] == "nosniff"
    assert site.get(docs(DOCS, "sub/page.html")).text == "page"


def test_data_docs_are_served_from_a_file_uri_workspace_and_not_from_a_store(site: Site) -> None:
    assert site.get(docs(FILE_URI, "index.html")).text == "<p>index</p>"
    assert site.get(docs(FILE_URI, "passwd")).status_code == 404  # the same sandbox
    assert site.get(docs(REMOTE, "index.html")).status_code == 404


REFUSED = [
    "etc/passwd",  # a subfolder linked out
    "passwd",  # the file linked out
    "sub/passwd",  # a file linked out, in a real subfolder
    "again.html",  # a link that stays inside
    "up/secret.txt",  # a link to the report folder
    "hard.txt",  # a hard link to a file outside
    "fifo",
    "sub",
    "sub/",
    "",
    "nope.html",
    "%2e%2e/secret.txt",
    "%2E%2E%2Fsecret.txt",
    "..%2F..%2Foutside%2Fpasswords.json",
    "sub/%2e%2e/%2e%2e/secret.txt",
    "/etc/passwd",
    "//etc/passwd",
    "a" * 5000,
]


@pytest.mark.parametrize("file", REFUSED)
def test_a_data_docs_path_that_leaves_the_site_is_404(site: Site, file: str) -> None:
    response = site.get(docs(DOCS, file))
    assert response.status_code == 404
    assert '<p class="error">no Data Docs file ' in response.text


def test_a_linked_data_docs_folder_is_404(site: Site, tmp_path: Path) -> None:
    secret = str(tmp_path / "outside" / "passwords.json").lstrip("/")
    for path in (docs(ROOTED, secret), docs(ROOTED, "etc/passwd"), docs(LINKED, "index.html")):
        assert site.get(path).status_code == 404


@pytest.mark.parametrize("file", ["index.html%00", "%00", "sub%00/page.html", "%2e%2e/%00"])
def test_a_nul_in_a_data_docs_path_is_400(site: Site, file: str) -> None:
    response = site.get(docs(DOCS, file))
    assert response.status_code == 400
    assert '<p class="error">data docs path: contains a NUL byte</p>' in response.text


def raw_get(app: Any, raw_path: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """One GET with ``raw_path`` exactly (an HTTP client would remove its ``..``), sent to
    the ASGI app as a server passes it: ``path`` percent-decoded, ``raw_path`` as sent."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 50000),
        "root_path": "",
        "path": unquote(raw_path.decode()),
        "raw_path": raw_path,
        "query_string": b"",
        "headers": [(b"host", b"testserver")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


@pytest.mark.parametrize(
    "file", ["../secret.txt", "sub/../../secret.txt", "../../outside/passwords.json"]
)
def test_a_raw_dot_dot_is_404(site: Site, file: str) -> None:
    path = f"/runs/{quote(DOCS, safe='')}/data-docs/{file}".encode()
    status, body = raw_get(site.client.app, path, site.headers)
    assert status == 404
    assert SECRET.encode() not in body


# -- bad values in the query and the path ----------------------------------------------------

NUL = "\x00"
TOO_BIG = "99999999999999999999999"
HISTORY_QUERIES = [
    *[({name: f"a{NUL}b"}, f"{name}: contains a NUL byte") for name in ("validation", "trigger")],
    *[
        ({name: NUL}, f"{name}: contains a NUL byte")
        for name in ("verdict", "since", "until", "limit", "offset")
    ],
    (
        {"offset": TOO_BIG},
        f"offset: expected a whole number 0 to 9223372036854775807, got '{TOO_BIG}'",
    ),
    (
        {"offset": str(2**63)},
        f"offset: expected a whole number 0 to 9223372036854775807, got '{2**63}'",
    ),
    ({"offset": "1_0"}, "offset: expected a whole number 0 to 9223372036854775807, got '1_0'"),
    ({"offset": " 5"}, "offset: expected a whole number 0 to 9223372036854775807, got ' 5'"),
    ({"limit": TOO_BIG}, f"limit: expected a whole number 1 to 500, got '{TOO_BIG}'"),
    ({"limit": "\uff15"}, "limit: expected a whole number 1 to 500, got '\uff15'"),
    ({"since": "99999-01-01"}, "since: expected a date YYYY-MM-DD, got '99999-01-01'"),
    ({"until": "2026-13-01"}, "until: expected a date YYYY-MM-DD, got '2026-13-01'"),
    ({"validation": "v" * 251}, "validation: longer than 250 characters"),
]
TREND_QUERIES = [
    ({"validation": NUL}, "validation: contains a NUL byte"),
    ({"runs": NUL}, "runs: contains a NUL byte"),
    ({"runs": TOO_BIG}, f"runs: expected a whole number 2 to 200, got '{TOO_BIG}'"),
    ({"runs": "\uff15"}, "runs: expected a whole number 2 to 200, got '\uff15'"),
]
BAD_REQUESTS = [
    *[(route, q, m) for route in ("/", "/api/runs") for q, m in HISTORY_QUERIES],
    *[(route, q, m) for route in ("/trends", "/api/trends") for q, m in TREND_QUERIES],
    ("/api/gate/taxi", {"candidate": f"v{NUL}"}, "candidate: contains a NUL byte"),
    ("/api/gate/ta%00xi", {}, "validation: contains a NUL byte"),
    ("/api/gate/taxi", {"max_age": f"1d{NUL}"}, "max_age: contains a NUL byte"),
    (
        "/api/gate/taxi",
        {"max_age": "1y"},
        "max_age: expected a duration such as 30m, 6h, 1d or 2w, got '1y'",
    ),
    (
        "/api/gate/taxi",
        {"max_age": "9" * 40 + "w"},
        f"max_age: at most 3650d (ten years), got '{'9' * 40}w'",
    ),
    ("/runs/taxi%00docs", {}, "run id: contains a NUL byte"),
    ("/api/runs/taxi%00docs", {}, "run id: contains a NUL byte"),
]


def assert_bad_request(response: Any, path: str, message: str) -> None:
    assert response.status_code == 400, response.text[:500]
    if path.startswith("/api/"):
        assert response.json() == {"detail": message}
    else:
        assert f'<p class="error">{escape(message)}</p>' in response.text


@pytest.mark.parametrize(("path", "query", "message"), BAD_REQUESTS)
def test_a_bad_value_is_a_400_naming_it(
    site: Site, path: str, query: dict[str, str], message: str
) -> None:
    assert_bad_request(site.get(path, query), path, message)


EDGE_QUERIES = [
    {"until": "9999-12-31"},
    {"since": "9999-12-31"},
    {"since": "0001-01-01", "until": "0001-01-01"},
    {"offset": str(2**63 - 1)},
]


@pytest.mark.parametrize("path", ["/", "/api/runs"])
@pytest.mark.parametrize("query", EDGE_QUERIES)
def test_the_calendars_and_integers_ends_are_answered(
    site: Site, path: str, query: dict[str, str]
) -> None:
    assert site.get(path, query).status_code == 200


def test_the_last_day_includes_every_run(site: Site) -> None:
    runs = site.get("/api/runs", {"until": "9999-12-31"}).json()["runs"]
    assert {run["run_id"] for run in runs} == {SCHEMA_RUN, LINKED, ROOTED, DOCS, FILE_URI, REMOTE}


# -- the JSON API's schema findings ---------------------------------------------------------


def test_the_api_gives_each_runs_schema_as_the_report_does(site: Site) -> None:
    runs = site.get("/api/runs").json()["runs"]
    assert {run["run_id"]: run["schema"] for run in runs} == {
        SCHEMA_RUN: SCHEMA_JSON,
        LINKED: None,
        ROOTED: None,
        DOCS: None,
        FILE_URI: None,
        REMOTE: None,
    }
    assert site.get(f"/api/runs/{quote(SCHEMA_RUN, safe='')}").json()["schema"] == SCHEMA_JSON
