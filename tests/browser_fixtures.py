"""The headless browser the page tests drive: Debian's Chromium (``/usr/bin/chromium``),
launched by Playwright (``playwright install`` is never used; ``make install`` and the CI
install the package, ``tools/ensure_chromium.sh``). A missing browser fails the test, never
skips it.

    pytest_plugins = ("browser_fixtures",)

    def test_a_page(browser: Browser) -> None:
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium "
            "(apt-get install -y --no-install-recommends chromium); the browser test is "
            "never skipped.",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
