"""The Parity page in a real Airflow, in a real browser.

Starts ``airflow api-server`` with ``plugins/`` on a temporary ``AIRFLOW_HOME`` and a
SQLite Parity store holding the five runs of ``test_plugin.seed``, signs in through the
Simple auth manager's login form in headless Chromium (Debian's ``chromium``, driven by
Playwright; ``playwright install`` is never used), and walks the page: the history table
inside the Airflow UI, the trends chart, a run's report, a DAG-run link, and the match
task's extra link; then approves a divergent run with the run page's form (Airflow's
cookie, this origin, the page's token) and sees the approval on the page and in the
history. Screenshots go to the test's tmp directory; with
``PARITY_UPDATE_SCREENSHOTS=1``, the history's also to ``docs/screenshots/`` (the README's):

    PARITY_UPDATE_SCREENSHOTS=1 .venv/bin/pytest tests/test_plugin_browser.py
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import expect
from test_plugin import JWT_SECRET, PLUGINS, R1, R2, R3, R4, R5, REPO, airflow_home, seed

from matcher.store import Store

# the session's migrated metadata database; Chromium
pytest_plugins = ("airflow_fixtures", "browser_fixtures")

AIRFLOW = Path(sys.executable).parent / "airflow"
SCREENSHOTS = REPO / "docs" / "screenshots"
PASSWORD = "parity-browser-test"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def api_server_environment(home: Path, store_url: str) -> dict[str, str]:
    """An Airflow API server with the plugin on ``home``; one user, admin, with a known
    password (the Simple auth manager reads it from its passwords file)."""
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": PASSWORD}), encoding="utf-8")
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS),
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__API_AUTH__JWT_SECRET": JWT_SECRET,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "PARITY_DB_URL": store_url,
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_serving(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    """Wait for the API server to answer (it imports Airflow and the plugin first)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"airflow api-server exited with {server.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    pytest.fail(f"airflow api-server did not answer within 180 s:\n{_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-4000:]


@pytest.fixture(scope="module")
def airflow_url(tmp_path_factory: pytest.TempPathFactory, airflow_db: Path) -> Iterator[str]:
    """An Airflow API server with the plugin, its Parity store seeded; its base URL."""
    work = tmp_path_factory.mktemp("browser")
    (work / "report").mkdir()
    store_url = f"sqlite:///{work / 'parity.db'}"
    with Store.open(store_url) as store:
        seed(store, work / "report")
    home = airflow_home(tmp_path_factory, "airflow-browser", airflow_db)
    environment = api_server_environment(home, store_url)
    port = _free_port()
    log = work / "api-server.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [
                str(AIRFLOW),
                "api-server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            env={**os.environ, **environment},
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url, server, log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _screenshot(page: Any, directory: Path, name: str, *, readme: bool = False) -> Path:
    path = directory / name
    page.screenshot(path=str(path))
    assert path.stat().st_size > 0
    if readme and os.environ.get("PARITY_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SCREENSHOTS / name)
    return path


def test_pages_need_a_login(airflow_url: str) -> None:
    for path in ("/parity/", "/parity/api/runs"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{airflow_url}{path}", timeout=30)
        refused.value.close()
        assert refused.value.code == 401


def test_the_parity_page_in_the_airflow_ui(airflow_url: str, browser: Any, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        # Sign in with the Simple auth manager's form; it comes back to the Parity entry.
        page.goto(f"{airflow_url}/auth/login?next={quote(airflow_url + '/plugin/parity')}")
        page.fill('input[name="username"]', "admin")
        page.fill('input[name="password"]', PASSWORD)
        page.click('button[type="submit"]')
        page.wait_for_url(f"{airflow_url}/plugin/parity")

        # The navigation entry, and the history inside the UI's iframe.
        frame = page.frame_locator('iframe[title="Parity"]')
        rows = frame.locator("table#runs tbody tr")
        rows.first.wait_for()
        assert page.get_by_role("link", name="Parity").count() == 1
        assert rows.count() == 5
        assert frame.locator(f'tr[data-run-id="{R2}"] .verdict').inner_text() == "divergent"
        # Hostile values are text, not markup: they read back exactly.
        hostile = rows.nth(2)
        assert hostile.get_attribute("data-run-id") == R4
        assert hostile.locator("td").nth(1).inner_text() == 'evil<script>alert("x")</script>'
        assert frame.locator("script:not([src])").count() == 0

        # The filter form, in the browser: one validation's runs (the README's picture).
        frame.locator('select[name="validation"]').select_option("taxi_distance")
        frame.get_by_role("button", name="Filter").click()
        expect(rows).to_have_count(4)
        assert [rows.nth(i).get_attribute("data-run-id") for i in range(4)] == [R5, R3, R2, R1]
        page.wait_for_url(f"{airflow_url}/plugin/parity/parity/?validation=taxi_distance*")
        _screenshot(page, tmp_path, "parity-history.png", readme=True)

        # Trends: one server-drawn chart per validation.
        frame.get_by_role("link", name="Trends").click()
        charts = frame.locator("svg.chart")
        charts.first.wait_for()
        assert charts.count() == 2
        frame.locator('select[name="validation"]').select_option("taxi_distance")
        frame.get_by_role("button", name="Show").click()
        expect(charts).to_have_count(1)
        taxi = frame.locator('section[data-validation="taxi_distance"]')
        assert taxi.locator("svg.chart a.slot").count() == 3
        assert taxi.locator("svg.chart rect").count() == 3
        _screenshot(page, tmp_path, "parity-trends.png")

        # Into a run: the report, and the UI's address follows the iframe.
        frame.get_by_role("link", name="History").click()
        frame.locator(f'tr[data-run-id="{R2}"] a.run').click()
        page.wait_for_url(f"{airflow_url}/plugin/parity/parity/runs/{quote(R2, safe='')}")
        # the outer page follows the iframe's address and may load it again: wait, as a user does
        expect(frame.locator("h1")).to_have_text("taxi_distance divergent")
        expect(frame.get_by_role("link", name="Airflow DAG run")).to_have_count(1)
        _screenshot(page, tmp_path, "parity-run.png")

        # A DAG-run link opens in the Airflow UI around the page, not inside its iframe.
        frame.get_by_role("link", name="Airflow DAG run").click()
        dag_run = "/dags/parity__taxi/runs/scheduled__2026-01-02T00%3A00%3A00%2B00%3A00"
        page.wait_for_url(f"{airflow_url}{dag_run}")
        expect(page.locator('iframe[title="Parity"]')).to_have_count(0)

        # The match task's extra link: the run page inside the UI.
        page.goto(f"{airflow_url}/plugin/parity/parity/runs/{quote(R2, safe='')}")
        frame = page.frame_locator('iframe[title="Parity"]')
        heading = frame.locator("h1")
        heading.wait_for()
        assert heading.inner_text() == "taxi_distance divergent"
    finally:
        context.close()


def _sign_in(page: Any, airflow_url: str, next_path: str) -> None:
    page.goto(f"{airflow_url}/auth/login?next={quote(airflow_url + next_path)}")
    page.fill('input[name="username"]', "admin")
    page.fill('input[name="password"]', PASSWORD)
    page.click('button[type="submit"]')
    page.wait_for_url(f"{airflow_url}{next_path}")


def test_approving_a_run_from_its_page(airflow_url: str, browser: Any, tmp_path: Path) -> None:
    """The form's round trip in the browser: POST with the UI's cookie from this origin,
    303 back to the run's page, which shows who approved and why; the history marks it."""
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    # R3: noisy, no expectations: an approval of its divergences opens its gate
    run_page = f"/plugin/parity/parity/runs/{quote(R3, safe='')}"
    try:
        _sign_in(page, airflow_url, run_page)
        frame = page.frame_locator('iframe[title="Parity"]')
        form = frame.locator("form.approve")
        form.wait_for()
        assert frame.locator("form.revoke").count() == 0
        form.locator('input[name="reason"]').fill("intended: fare <b>rounding</b> fixed")
        form.get_by_role("button", name="Approve").click()
        state = frame.locator("p.approval-state")
        expect(state).to_contain_text("approved by admin")
        assert "intended: fare <b>rounding</b> fixed" in state.inner_text()  # text, not markup
        expect(frame.locator("form.revoke")).to_have_count(1)
        expect(frame.locator("table.approval-trail tr.approval-approved")).to_have_count(1)
        _screenshot(page, tmp_path, "parity-approval.png")

        frame.get_by_role("link", name="History").click()
        marker = frame.locator(f'tr[data-run-id="{R3}"] td.gate .approval')
        expect(marker).to_have_text("approved #1")
        assert frame.locator(f'tr[data-run-id="{R3}"] td.gate').inner_text() == "open approved #1"
    finally:
        context.close()
