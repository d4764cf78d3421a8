"""The Parity page's FastAPI app, as Airflow serves it: every route, the auth rule, the
filters, escaping of hostile data, and the plugin's registration.

The app is Airflow's own API server app (``airflow.api_fastapi.app.create_app``) on the
test session's Airflow home and migrated metadata database (``airflow_fixtures``; Airflow
checks every token against its revoked-token table), loading ``plugins/`` as its plugins
folder. Tokens are real JWTs from the Simple auth manager. The Parity store is a SQLite
file with five runs, hostile values among them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import re
import sqlite3
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from markupsafe import escape

from matcher.store import (
    ColumnStat,
    ExpectationRecord,
    RunOutcome,
    RunStart,
    Store,
    StoredDivergence,
)

pytest_plugins = ("airflow_fixtures",)  # the session's AIRFLOW_HOME and metadata database

REPO = Path(__file__).resolve().parents[1]
PLUGINS = REPO / "plugins"

pytestmark = [
    # starlette.testclient (imported by Airflow's execution API through svcs) warns that it
    # prefers httpx2; Airflow's .airflowignore reader uses a deprecated pathspec pattern.
    pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`"),
    pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning"),
]

# -- data: five runs, hostile values among them --------------------------------------------

UTC = dt.UTC
SCRIPT = '<script>alert("x")</script>'
QUOTES = '" onmouseover="alert(1)" x=\'><img src=x onerror=alert(2)>'
HOSTILE = f"{SCRIPT}{QUOTES}"
EVIL_VALIDATION = f"evil{SCRIPT}"
EVIL_COLUMN = f"col{QUOTES}"

R1 = "parity__taxi/scheduled__2026-01-01T00:00:00+00:00"
R2 = "parity__taxi/scheduled__2026-01-02T00:00:00+00:00"
R3 = "parity__taxi/manual__2026-01-03T10:00:00+00:00"
R4 = f"cli-{HOSTILE}"
R5 = "parity__taxi/scheduled__2026-01-04T00:00:00+00:00"


def _at(day: int, hour: int, second: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, day, hour, 0, second, tzinfo=UTC)


#: today's spec of taxi_distance (the deployment's validations folder): the HTTP gate binds
#: verdicts to it (its digest and reference version), so the seeded runs carry its digest
TAXI_SPEC = (
    "name: taxi_distance\nreference: {application: ref.py, version: v1.4.0}\n"
    "dependence: {key: [id]}\n"
)


def _spec_hash() -> str:
    from matcher.spec import parse_spec, parse_yaml
    from matcher.spec_digest import verdict_digest

    return verdict_digest(parse_spec(parse_yaml(TAXI_SPEC, "taxi_distance.yaml")))


def _start(run_id: str, started: dt.datetime, **fields: Any) -> RunStart:
    dag_run_id = run_id.partition("/")[2]
    defaults: dict[str, Any] = {
        "validation": "taxi_distance",
        "spec_hash": _spec_hash(),
        "trigger": "scheduled",
        "reference_version": "v1.4.0",
        "candidate_version": "v1.5.0",
        "slice": {"column": "event_time", "window": "1d"},
        "spec": {"name": "taxi_distance"},
        "dag_id": "parity__taxi",
        "dag_run_id": dag_run_id,
        "task_try": 1,
        "engine": "spark",
    }
    defaults.update(fields)
    return RunStart(run_id, started_at=started, **defaults)


def _expectations(*successes: bool) -> tuple[ExpectationRecord, ...]:
    return tuple(
        ExpectationRecord("taxi_output", "candidate", "expect_column_values_to_not_be_null", ok)
        for ok in successes
    )


DATA_DOCS_INDEX = "<html><body>Data Docs of run 1</body></html>"


def seed(store: Store, report_dir: Path) -> None:
    """R1 equivalent (with Data Docs in ``report_dir``), R2 divergent (hostile values and
    column names in its witnesses), R3 ad-hoc noisy, R4 a failed CLI run with hostile
    validation, versions, slice and error, R5 still running."""
    (report_dir / "data_docs" / "validations").mkdir(parents=True)
    (report_dir / "data_docs" / "index.html").write_text(DATA_DOCS_INDEX, encoding="utf-8")
    (report_dir / "data_docs" / "validations" / "v.html").write_text("v", encoding="utf-8")
    (report_dir / "secret.txt").write_text("not Data Docs", encoding="utf-8")
    store.start_run(_start(R1, _at(1, 3)))
    store.record_run(
        R1,
        RunOutcome(
            "equivalent",
            finished_at=_at(1, 3, 35),
            expectations=_expectations(True, True),
            report_path=str(report_dir),
        ),
    )
    store.set_gate(R1, True, "verdict equivalent; expectations passed")

    store.start_run(_start(R2, _at(2, 3)))
    event = {"taxi_id": "T1", EVIL_COLUMN: HOSTILE, "fare": 1.5}
    store.record_run(
        R2,
        RunOutcome(
            "divergent",
            counts={"loss": 2, "corruption": 1},
            divergences=(
                StoredDivergence(
                    0, "corruption", HOSTILE, 3, 3, event, {**event, "fare": 2.5}, ("fare",)
                ),
                StoredDivergence(1, "loss", "T2", 5, None, {"taxi_id": "T2", EVIL_COLUMN: 1}, None),
            ),
            column_stats=(ColumnStat("fare", 1), ColumnStat(EVIL_COLUMN, 1)),
            finished_at=_at(2, 3, 50),
            expectations=_expectations(True, False),
        ),
    )
    store.set_gate(R2, False, "verdict divergent (the gate requires equivalent)")

    store.start_run(_start(R3, _at(3, 10), trigger="adhoc", candidate_version="v1.6.0-rc1"))
    store.record_run(
        R3,
        RunOutcome(
            "noisy",
            counts={"reordering": 1},
            divergences=(
                StoredDivergence(0, "reordering", "T3", 4, 6, {"taxi_id": "T3"}, {"taxi_id": "T3"}),
            ),
            finished_at=_at(3, 10, 5),
        ),
    )
    store.set_gate(R3, False, "verdict noisy (gate.allow_noisy is false)")

    store.start_run(
        _start(
            R4,
            _at(2, 12),
            validation=EVIL_VALIDATION,
            trigger="manual",
            reference_version=QUOTES,
            candidate_version=SCRIPT,
            slice={"column": "event_time", "window": HOSTILE},
            dag_id=None,
            dag_run_id=None,
        )
    )
    store.mark_failed(R4, f"ValueError: bad row {HOSTILE}")

    # R5 stays running whatever the tests' pace: a lease of a day, not the default two
    # minutes after which a run that stopped beating reads as failed (matcher.store.lease)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PARITY_RUN_LEASE_SECONDS", str(24 * 3600))
        store.start_run(_start(R5, _at(4, 3)))


# -- Airflow: a temporary home, its database, the API server app ----------------------------

JWT_SECRET = "parity-plugin-tests-" + "0123456789abcdef" * 4


def airflow_home(factory: pytest.TempPathFactory, name: str, airflow_db: Path) -> Path:
    """A fresh ``AIRFLOW_HOME`` holding a copy of the session's migrated database (SQLite's
    backup API: the in-process Airflow may still hold pages in its write-ahead log)."""
    home = factory.mktemp(name)
    with (
        contextlib.closing(sqlite3.connect(airflow_db)) as source,
        contextlib.closing(sqlite3.connect(home / "airflow.db")) as copy,
    ):
        source.backup(copy)
    return home


def _reload_plugins() -> None:
    """Make Airflow read its plugins folder again (from the current environment)."""
    from airflow import plugins_manager, settings

    settings.configure_vars()
    settings.prepare_syspath_for_config_and_plugins()
    for cached in (
        plugins_manager._get_plugins,
        plugins_manager._get_ui_plugins,
        plugins_manager.get_fastapi_plugins,
        plugins_manager._get_extra_operators_links_plugins,
    ):
        cached.cache_clear()


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("report")


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory, report_dir: Path) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('parity') / 'parity.db'}"
    with Store.open(url) as store:
        seed(store, report_dir)
    return url


@pytest.fixture(scope="module")
def client(
    tmp_path_factory: pytest.TempPathFactory, store_url: str, airflow_db: Path
) -> Iterator[Any]:
    """A TestClient on Airflow's API server app with the plugin loaded."""
    settings_dir = tmp_path_factory.mktemp("airflow-settings")
    validations = tmp_path_factory.mktemp("validations")
    (validations / "taxi_distance.yaml").write_text(TAXI_SPEC, encoding="utf-8")
    environment = {
        "PARITY_VALIDATIONS_DIR": str(validations),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS),
        "AIRFLOW__API_AUTH__JWT_SECRET": JWT_SECRET,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "viewer:viewer",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(settings_dir / "passwords.json"),
        "PARITY_DB_URL": store_url,
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Using `httpx`", DeprecationWarning)
            from airflow.api_fastapi.app import create_app, purge_cached_app
            from fastapi.testclient import TestClient

        _reload_plugins()
        purge_cached_app()
        app = create_app("core")
        with TestClient(app) as test_client:
            yield test_client
        purge_cached_app()
    _reload_plugins()


def token(role: str | None = "viewer", username: str = "viewer") -> str:
    """A real JWT from the Simple auth manager, as its login endpoint issues them."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=username, role=role))


@pytest.fixture(scope="module")
def viewer(client: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {token()}"}


def get(client: Any, headers: dict[str, str], path: str, status: int = 200) -> Any:
    response = client.get(path, headers=headers)
    assert response.status_code == status, response.text[:2000]
    return response


def run_ids_on_page(page: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(r'<tr data-run-id="([^"]*)">', page)]


def quoted(run_id: str) -> str:
    from urllib.parse import quote

    return quote(run_id, safe="")


ROUTES = [
    "/parity/",
    "/parity/trends",
    f"/parity/runs/{quoted(R2)}",
    "/parity/api/runs",
    f"/parity/api/runs/{quoted(R2)}",
    "/parity/api/trends",
    "/parity/api/validations",
    "/parity/api/gate/taxi_distance",
    "/parity/static/parity.css",
]


# -- the auth rule ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_answers_401_without_a_token(client: Any, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    if "/api/" in path:
        assert response.json() == {"detail": "Not authenticated"}
    else:
        assert "<h1>401 Unauthorized</h1>" in response.text
        assert 'href="/auth/login?next=%2Fparity%2F' in response.text


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_answers_a_viewer(client: Any, viewer: dict[str, str], path: str) -> None:
    get(client, viewer, path)


@pytest.mark.parametrize("path", ["/parity/", "/parity/api/runs"])
def test_the_ui_cookie_authenticates(client: Any, path: str) -> None:
    client.cookies.set("_token", token())
    try:
        assert client.get(path).status_code == 200
    finally:
        client.cookies.clear()


def test_an_invalid_token_is_refused(client: Any) -> None:
    response = client.get("/parity/api/runs", headers={"Authorization": "Bearer not-a-jwt"})
    assert (response.status_code, response.json()) == (403, {"detail": "Invalid JWT token"})


def test_a_user_without_a_role_may_not_read_runs(client: Any) -> None:
    headers = {"Authorization": f"Bearer {token(role=None, username='nobody')}"}
    response = client.get("/parity/api/runs", headers=headers)
    assert (response.status_code, response.json()) == (403, {"detail": "Forbidden"})
    assert client.get("/parity/", headers=headers).status_code == 403


# -- the history: rows and filters ----------------------------------------------------------


def row_cells(page: str, run_id: str) -> list[str]:
    """The text of each cell of the run's row."""
    attribute = escape(run_id)  # as Jinja2 writes it
    start = page.index(f'<tr data-run-id="{attribute}">')
    row = page[start : page.index("</tr>", start)]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.DOTALL)
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells]


def test_history_lists_every_run_newest_first(client: Any, viewer: dict[str, str]) -> None:
    page = get(client, viewer, "/parity/").text
    assert run_ids_on_page(page) == [R5, R3, R4, R2, R1]
    assert row_cells(page, R2) == [
        "2026-01-02 03:00 UTC",
        "taxi_distance",
        "scheduled",
        "v1.4.0 → v1.5.0",
        "column=event_time window=1d",
        "divergent",
        "loss 2, corr 1",
        "FAILED 1/2",
        "closed",
        "50s",
        "scheduled__2026-01-02T00:00:00+00:00",
    ]
    assert row_cells(page, R3)[2:] == [
        "ad-hoc",
        "v1.4.0 → v1.6.0-rc1",
        "column=event_time window=1d",
        "noisy",
        "reord 1",
        "-",
        "closed",
        "5s",
        "manual__2026-01-03T10:00:00+00:00",
    ]
    assert row_cells(page, R5)[5:] == ["running", "0", "-", "-", "-", R5.partition("/")[2]]
    # the gate is coloured as the verdict is: closed red, open green (parity.css)
    assert '<td class="gate gate-closed">closed</td>' in page
    assert '<td class="gate gate-open">open</td>' in page
    assert row_cells(page, R1)[5:8] == ["equivalent", "0", "met 2/2"]
    assert row_cells(page, R4)[1:6] == [
        EVIL_VALIDATION,
        "manual",
        f"{QUOTES} → {SCRIPT}",
        f"column=event_time window={HOSTILE}",
        "error",
    ]
    assert row_cells(page, R4)[-1] == "-"  # a CLI run has no DAG run


def test_history_links_each_run_and_its_dag_run(client: Any, viewer: dict[str, str]) -> None:
    page = get(client, viewer, "/parity/").text
    dag_run = "scheduled__2026-01-02T00%3A00%3A00%2B00%3A00"
    assert f'<a class="run" href="/parity/runs/parity__taxi%2F{dag_run}">' in page
    assert f'<a class="dag-run" href="/dags/parity__taxi/runs/{dag_run}">' in page


FILTERS = [
    ({"verdict": "divergent"}, [R2]),
    ({"trigger": "adhoc"}, [R3]),
    ({"trigger": "manual"}, [R4]),
    ({"validation": "taxi_distance"}, [R5, R3, R2, R1]),
    ({"validation": EVIL_VALIDATION}, [R4]),
    ({"validation": "taxi_distance", "verdict": "equivalent", "trigger": "scheduled"}, [R1]),
    ({"since": "2026-01-02", "until": "2026-01-02"}, [R4, R2]),
    ({"since": "2026-01-03"}, [R5, R3]),
    ({"until": "2026-01-01"}, [R1]),
    (
        {"verdict": "", "trigger": "", "validation": "", "since": "", "until": ""},
        [R5, R3, R4, R2, R1],
    ),
    ({"limit": "2", "offset": "1"}, [R3, R4]),
    ({"offset": "5"}, []),
    ({"verdict": "noisy", "trigger": "scheduled"}, []),
]


@pytest.mark.parametrize(("query", "expected"), FILTERS)
def test_history_filters_the_page_and_the_api_alike(
    client: Any, viewer: dict[str, str], query: dict[str, str], expected: list[str]
) -> None:
    page = client.get("/parity/", params=query, headers=viewer)
    api = client.get("/parity/api/runs", params=query, headers=viewer)
    assert (page.status_code, api.status_code) == (200, 200)
    assert run_ids_on_page(page.text) == expected
    assert [run["run_id"] for run in api.json()["runs"]] == expected


def test_the_form_shows_the_filter_in_use(client: Any, viewer: dict[str, str]) -> None:
    query = {
        "verdict": "divergent",
        "trigger": "adhoc",
        "since": "2026-01-02",
        "until": "2026-01-03",
    }
    page = client.get("/parity/", params=query, headers=viewer).text
    assert '<option value="divergent" selected>divergent</option>' in page
    assert '<option value="adhoc" selected>ad-hoc</option>' in page
    assert '<input type="date" name="since" value="2026-01-02">' in page
    assert '<input type="date" name="until" value="2026-01-03">' in page
    assert "No runs match these filters." in page


def test_the_api_echoes_its_filters(client: Any, viewer: dict[str, str]) -> None:
    query = {"validation": "taxi_distance", "since": "2026-01-02", "limit": "3"}
    document = client.get("/parity/api/runs", params=query, headers=viewer).json()
    assert document["filters"] == {
        "validation": "taxi_distance",
        "verdict": None,
        "trigger": None,
        "since": "2026-01-02",
        "until": None,
        "limit": 3,
        "offset": 0,
    }
    assert document["runs"][0]["links"] == {
        "page": "/parity/runs/parity__taxi%2Fscheduled__2026-01-04T00%3A00%3A00%2B00%3A00",
        "report": "/parity/api/runs/parity__taxi%2Fscheduled__2026-01-04T00%3A00%3A00%2B00%3A00",
        "dag_run": "/dags/parity__taxi/runs/scheduled__2026-01-04T00%3A00%3A00%2B00%3A00",
    }


def test_the_history_pages_through_the_runs(client: Any, viewer: dict[str, str]) -> None:
    first = client.get("/parity/", params={"limit": "2"}, headers=viewer).text
    assert '<a href="/parity/?limit=2&amp;offset=2">older →</a>' in first
    assert "newer" not in first
    middle = client.get("/parity/", params={"limit": "2", "offset": "2"}, headers=viewer).text
    assert '<a href="/parity/?limit=2">← newer</a>' in middle
    assert '<a href="/parity/?limit=2&amp;offset=4">older →</a>' in middle
    assert "<span>runs 3-4</span>" in middle
    last = client.get("/parity/", params={"limit": "2", "offset": "4"}, headers=viewer).text
    assert run_ids_on_page(last) == [R1]
    assert "older" not in last


BAD_FILTERS = [
    ({"verdict": "bad"}, "verdict: expected one of equivalent, divergent, noisy, error, got 'bad'"),
    ({"since": "yesterday"}, "since: expected a date YYYY-MM-DD, got 'yesterday'"),
    (
        {"since": "2026-01-03", "until": "2026-01-02"},
        "until: 2026-01-02 is before since 2026-01-03",
    ),
    ({"limit": "0"}, "limit: expected a whole number 1 to 500, got '0'"),
    ({"limit": "501"}, "limit: expected a whole number 1 to 500, got '501'"),
    ({"offset": "-1"}, "offset: expected a whole number 0 to 9223372036854775807, got '-1'"),
    ({"limit": "ten"}, "limit: expected a whole number 1 to 500, got 'ten'"),
    ({"validation": "a\x00b"}, "validation: contains a NUL byte"),
    (
        {"offset": "99999999999999999999999"},
        "offset: expected a whole number 0 to 9223372036854775807, got '99999999999999999999999'",
    ),
]


@pytest.mark.parametrize(("query", "message"), BAD_FILTERS)
def test_a_bad_filter_is_a_400_naming_it(
    client: Any, viewer: dict[str, str], query: dict[str, str], message: str
) -> None:
    api = client.get("/parity/api/runs", params=query, headers=viewer)
    assert (api.status_code, api.json()) == (400, {"detail": message})
    page = client.get("/parity/", params=query, headers=viewer)
    assert page.status_code == 400
    assert f'<p class="error">{escape(message)}</p>' in page.text


# -- escaping -------------------------------------------------------------------------------

RAW = [SCRIPT, "<img", 'onmouseover="', "x='>", "<script>alert"]


def escaped_pages(client: Any, viewer: dict[str, str]) -> dict[str, str]:
    return {
        path: get(client, viewer, path).text
        for path in (
            "/parity/",
            "/parity/trends",
            f"/parity/trends?validation={quoted(EVIL_VALIDATION)}",
            f"/parity/runs/{quoted(R2)}",
            f"/parity/runs/{quoted(R4)}",
        )
    }


def test_hostile_values_are_escaped_on_every_page(client: Any, viewer: dict[str, str]) -> None:
    for path, page in escaped_pages(client, viewer).items():
        found = [raw for raw in RAW if raw in page]
        assert found == [], f"{path} has unescaped {found}"
    pages = escaped_pages(client, viewer)
    evil = "evil&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
    assert f"<td>{evil}</td>" in pages["/parity/"]
    assert f"<h2>{evil}</h2>" in pages["/parity/trends"]
    column = "col&#34; onmouseover=&#34;alert(1)&#34; x=&#39;&gt;&lt;img src=x onerror=alert(2)&gt;"
    assert f'<td class="value">{column}</td>' in pages[f"/parity/runs/{quoted(R2)}"]
    # Attributes round-trip: the browser reads back exactly the stored run id.
    assert R4 in run_ids_on_page(pages["/parity/"])


def test_unknown_pages_and_runs_are_404(client: Any, viewer: dict[str, str]) -> None:
    page = get(client, viewer, f"/parity/runs/{quoted('nope' + SCRIPT)}", 404).text
    unknown = "&#39;nope&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39;"
    assert f'<p class="error">no run {unknown} in the results store</p>' in page
    api = get(client, viewer, "/parity/api/runs/nope", 404)
    assert api.json() == {"detail": "no run 'nope' in the results store"}
    assert get(client, viewer, "/parity/static/secret.txt", 404).status_code == 404


# -- trends ---------------------------------------------------------------------------------


def test_trends_api_gives_each_validations_finished_runs_oldest_first(
    client: Any, viewer: dict[str, str]
) -> None:
    document = get(client, viewer, "/parity/api/trends?validation=taxi_distance").json()
    assert document == {
        "runs": 30,
        "validations": [
            {
                "validation": "taxi_distance",
                "points": [
                    {
                        "run_id": R1,
                        "started_at": "2026-01-01T03:00:00+00:00",
                        "verdict": "equivalent",
                        "counts": {"loss": 0, "duplication": 0, "reordering": 0, "corruption": 0},
                        "total_divergences": 0,
                        "gate_passed": True,
                        "gate": "open",
                    },
                    {
                        "run_id": R2,
                        "started_at": "2026-01-02T03:00:00+00:00",
                        "verdict": "divergent",
                        "counts": {"loss": 2, "duplication": 0, "reordering": 0, "corruption": 1},
                        "total_divergences": 3,
                        "gate_passed": False,
                        "gate": "closed",
                    },
                    {
                        "run_id": R3,
                        "started_at": "2026-01-03T10:00:00+00:00",
                        "verdict": "noisy",
                        "counts": {"loss": 0, "duplication": 0, "reordering": 1, "corruption": 0},
                        "total_divergences": 1,
                        "gate_passed": False,
                        "gate": "closed",
                    },
                ],
            }
        ],
    }
    every = get(client, viewer, "/parity/api/trends?runs=2").json()
    assert [
        (v["validation"], [p["run_id"] for p in v["points"]]) for v in every["validations"]
    ] == [
        (EVIL_VALIDATION, [R4]),
        ("taxi_distance", [R3]),  # the latest two runs are R5 (running) and R3
    ]
    bad = client.get("/parity/api/trends?runs=1", headers=viewer)
    assert (bad.status_code, bad.json()) == (
        400,
        {"detail": "runs: expected a whole number 2 to 200, got '1'"},
    )


def test_trends_page_draws_one_chart_per_validation(client: Any, viewer: dict[str, str]) -> None:
    page = get(client, viewer, "/parity/trends").text
    assert page.count('<svg class="chart" role="img"') == 2
    taxi = page[page.index('<section class="trend" data-validation="taxi_distance">') :]
    assert taxi.count('<a class="slot"') == 3
    assert re.findall(r'<circle class="verdict-(\w+)"', taxi) == [
        "equivalent",
        "divergent",
        "noisy",
    ]
    # R2: 2 losses under 1 corruption, on a scale of 0 to 5 over 144 px.
    assert '<rect class="kind-loss" x="378.0" y="98.4" width="40.0" height="57.6"></rect>' in taxi
    assert (
        '<rect class="kind-corruption" x="378.0" y="69.6" width="40.0" height="28.8"></rect>'
        in taxi
    )
    assert (
        "<title>2026-01-02 03:00 UTC: divergent, divergences loss 2, corr 1, gate closed</title>"
        in taxi
    )
    assert (
        '<p class="gate gate-no-verdict">gate no usable verdict: in progress: run '
        f"{R5} started 2026-01-04T03:00:00+00:00</p>" in taxi  # the newest attempt decides
    )


def test_nice_ceiling_rounds_up_to_1_2_5(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))
    from parity_ui.trends import nice_ceiling

    values = [0, 1, 2, 3, 5, 7, 10, 11, 20, 21, 999, 1001]
    assert [nice_ceiling(v) for v in values] == [1, 1, 2, 5, 5, 10, 10, 20, 20, 50, 1000, 2000]


# -- the gate -------------------------------------------------------------------------------


def test_gate_api_answers_per_validation_and_candidate(client: Any, viewer: dict[str, str]) -> None:
    """``parity gate --json``'s document: the newest attempt decides, whatever it is."""
    keys = ("state", "passed", "exit_code", "reason", "recorded")
    latest = get(client, viewer, "/parity/api/gate/taxi_distance").json()
    assert {k: latest[k] for k in keys} == {
        "state": "no_verdict",
        "passed": None,
        "exit_code": 3,
        "reason": f"in progress: run {R5} started 2026-01-04T03:00:00+00:00",
        "recorded": False,
    }
    assert (latest["run"]["run_id"], latest["newer_run"]) == (R5, None)
    candidate = get(client, viewer, "/parity/api/gate/taxi_distance?candidate=v1.6.0-rc1").json()
    assert {k: candidate[k] for k in ("candidate_version", *keys)} == {
        "candidate_version": "v1.6.0-rc1",
        "state": "closed",
        "passed": False,
        "exit_code": 1,
        "reason": "verdict noisy (gate.allow_noisy is false)",
        "recorded": True,
    }
    assert candidate["run"]["run_id"] == R3
    path = "/parity/api/gate/taxi_distance?candidate=v1.6.0-rc1&max_age=1d"
    stale = get(client, viewer, path).json()  # R3 finished on 2026-01-03
    assert (stale["state"], stale["exit_code"], stale["max_age"]) == ("no_verdict", 3, "1d")
    assert stale["reason"].startswith("stale: finished ")
    assert stale["reason"].endswith(" ago, older than --max-age 1d")
    bad = client.get("/parity/api/gate/taxi_distance?max_age=1y", headers=viewer)
    assert (bad.status_code, bad.json()) == (
        400,
        {"detail": "max_age: expected a duration such as 30m, 6h, 1d or 2w, got '1y'"},
    )
    unknown = get(client, viewer, "/parity/api/gate/taxi_distanse?candidate=v9", 404).json()
    assert {k: unknown[k] for k in ("state", "exit_code", "reason", "suggestions")} == {
        "state": "error",
        "exit_code": 2,
        "reason": "unknown validation 'taxi_distanse': no run has that name; "
        "did you mean taxi_distance?",
        "suggestions": ["taxi_distance"],
    }


# -- run detail -----------------------------------------------------------------------------


def test_run_page_is_the_report_with_links(client: Any, viewer: dict[str, str]) -> None:
    page = get(client, viewer, f"/parity/runs/{quoted(R2)}").text
    assert page.count('<script src="/parity/static/parity.js" defer></script>') == 1
    assert '<a href="/parity/">History</a>' in page
    assert (
        '<a href="/dags/parity__taxi/runs/scheduled__2026-01-02T00%3A00%3A00%2B00%3A00">'
        "Airflow DAG run</a>" in page
    )
    document = get(client, viewer, f"/parity/api/runs/{quoted(R2)}").json()
    assert (document["run_id"], document["verdict"], document["counts"]) == (
        R2,
        "divergent",
        {"loss": 2, "duplication": 0, "reordering": 0, "corruption": 1},
    )
    assert document["links"]["JSON"] == f"/parity/api/runs/{quoted(R2)}"


def test_run_page_serves_the_runs_data_docs(
    client: Any, viewer: dict[str, str], report_dir: Path
) -> None:
    docs = f"/parity/runs/{quoted(R1)}/data-docs/"
    page = get(client, viewer, f"/parity/runs/{quoted(R1)}").text
    assert f'href="{docs}index.html"' in page
    index = get(client, viewer, f"{docs}index.html")
    assert (index.text, index.headers["content-type"]) == (
        DATA_DOCS_INDEX,
        "text/html; charset=utf-8",
    )
    assert get(client, viewer, f"{docs}validations/v.html").text == "v"
    escape_attempt = get(client, viewer, f"{docs}..%2F..%2Fsecret.txt", 404)
    assert "no Data Docs file &#39;../../secret.txt&#39;" in escape_attempt.text
    assert get(client, viewer, f"/parity/runs/{quoted(R3)}/data-docs/index.html", 404)


# -- the plugin as Airflow loads it ------------------------------------------------------------


def test_airflow_loads_exactly_the_parity_plugin(client: Any, viewer: dict[str, str]) -> None:
    document = get(client, viewer, "/api/v2/plugins").json()
    assert [p["name"] for p in document["plugins"]] == ["parity"]
    plugin = document["plugins"][0]
    assert plugin["external_views"] == [
        {
            "name": "Parity",
            "href": "parity/",
            "icon": "parity/static/icon.svg",
            "icon_dark_mode": None,
            "url_route": "parity",
            "category": None,
            "nav_top_level": False,
            "destination": "nav",
        }
    ]
    assert plugin["fastapi_apps"] == [
        {"app": "fastapi.applications.FastAPI", "url_prefix": "/parity", "name": "Parity"}
    ]
    assert plugin["global_operator_extra_links"] == ["<parity_ui.links.ParityRunLink object>"]
    errors = get(client, viewer, "/api/v2/plugins/importErrors").json()
    assert errors == {"import_errors": [], "total_entries": 0}


def test_the_match_task_links_to_its_run_page_inside_the_airflow_ui(client: Any) -> None:
    """The global extra link, as the API server computes it for a task instance (the
    operator is not used: the link depends on the task instance's key only)."""
    from airflow.models.taskinstancekey import TaskInstanceKey

    from parity_ui.links import ParityRunLink

    link = ParityRunLink()
    dag_run_id = "scheduled__2026-01-02T00:00:00+00:00"

    def url(task_id: str, dag_id: str = "parity__taxi") -> str:
        key: Any = TaskInstanceKey(dag_id, task_id, dag_run_id, 1, -1)
        return str(link.get_link(cast(Any, None), ti_key=key))

    assert link.name == "Parity run"
    run_page = f"/plugin/parity/parity/runs/parity__taxi%2F{quoted(dag_run_id)}"
    assert run_page == (
        "/plugin/parity/parity/runs/parity__taxi%2Fscheduled__2026-01-02T00%3A00%3A00%2B00%3A00"
    )
    linked = ("match", "compare.match", "record", "gate", "check")
    assert [url(t) for t in linked] == [run_page] * 5
    assert [url(t) for t in ("run_candidate", "plan", "matchmaker")] == ["", "", ""]
    assert url("match", dag_id="etl_daily") == ""  # another DAG's match task: no link


def test_a_store_that_is_down_is_a_503_logged_but_not_shown(
    client: Any,
    viewer: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))
    from fastapi.testclient import TestClient

    from parity_ui.app import create_app

    down = create_app("postgresql+psycopg://parity:s3cret@127.0.0.1:1/parity")
    with TestClient(down) as standalone:
        api = standalone.get("/api/runs", headers=viewer)
        page = standalone.get("/", headers=viewer)
        gate = standalone.get("/api/gate/taxi", params={"max_age": "1d"}, headers=viewer)
    assert (api.status_code, page.status_code, gate.status_code) == (503, 503, 503)
    message = "the Parity results store is unavailable (see the log)"
    assert api.json() == {"detail": message}
    assert {k: gate.json()[k] for k in ("validation", "state", "exit_code", "reason")} == {
        "validation": "taxi",
        "state": "error",
        "exit_code": 2,
        "reason": message,  # the gate's document, whatever the outcome
    }
    assert f'<p class="error">{message}</p>' in page.text
    assert "127.0.0.1" not in page.text
    logged = [r.getMessage() for r in caplog.records if r.name == "parity_ui.app"]
    assert len(logged) == 3
    assert all("postgresql+psycopg://parity:***@127.0.0.1:1/parity" in line for line in logged)
    assert "s3cret" not in "".join(logged)


# -- a properties run -----------------------------------------------------------------------


def test_a_properties_run_on_the_parity_page(
    client: Any, viewer: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Listed as ``NAME (properties)`` with no divergence counts, its page the report's
    Properties section (hostile evidence escaped), its JSON the report under
    ``properties``; it is no point of its validation's trend (it has no verdict)."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    from fastapi.testclient import TestClient
    from test_property_runs import HOSTILE as EVIL
    from test_property_runs import SAMPLE, taxi_report

    from parity.cli.property_runs import Storage, store_report
    from parity_ui.app import create_app

    url = f"sqlite:///{tmp_path / 'parity.db'}"
    with Store.open(url) as store:
        store.start_run(_start("taxi/1", _at(1, 3), validation="taxi"))
        store.record_run("taxi/1", RunOutcome("equivalent", finished_at=_at(1, 3, 5)))
    report = taxi_report(EVIL)
    store_report(report, Storage(db=url, run_id="taxi/p", validation="taxi"), [SAMPLE], None)
    with TestClient(create_app(url)) as standalone:
        history = standalone.get("/", headers=viewer).text
        page = standalone.get("/runs/taxi%2Fp", headers=viewer).text
        document = standalone.get("/api/runs/taxi%2Fp", headers=viewer).json()
        trends = standalone.get("/trends?validation=taxi", headers=viewer).text
    assert run_ids_on_page(history) == ["taxi/p", "taxi/1"]
    assert "<td>taxi (properties)</td>" in history
    assert "<h2>Properties</h2>" in page and "definitely non-commutative" in page
    assert "<script>alert" not in page and "\x1b" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\u001b[31mred" in page
    assert (document["kind"], document["verdict"]) == ("properties", None)
    assert document["properties"]["properties"]["statefulness"]["found"] is True
    assert "taxi%2F1" in trends and "taxi%2Fp" not in trends
