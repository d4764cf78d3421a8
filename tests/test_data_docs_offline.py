"""Issue 16: a run's expectation results can be read offline.

Great Expectations' Data Docs load Bootstrap, bootstrap-table, jQuery and Vega from public
CDNs (GX ships only its own CSS, fonts and images), and their index lists the validations
with bootstrap-table: offline it is unstyled and empty. None of those libraries is on this
machine to vendor, so the run's report (``parity report --html``) shows every result
itself: suite, side, each expectation with its arguments, met or failed, the observed value,
the unexpected counts and GX's sample of unexpected values; and links the Data Docs beside.

One real run: expectations on Spark (``local[2]``, the shared session) through
``expectations.runner.run_expectations``, the results stored, the report written by the
CLI, then opened in headless Chromium (Debian's) with every request that is not a
``file:`` URL aborted and recorded. The results must be *visible* (rendered text), and no
request may have left the machine. A data value is hostile markup that would fetch from
the network if it were ever rendered as HTML.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route
from pyspark.sql import SparkSession

from expectations.runner import run_expectations
from expectations.suites import parse_suite
from matcher.store import DATA_DOCS_DIR, RunOutcome, RunStart, Store
from matcher.verdict import Verdict
from parity.cli import main

pytest_plugins = ("tests.spark_fixtures", "store_fixtures", "browser_fixtures")
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]

RUN_ID = "parity__taxi/adhoc__offline"
# Rendered as HTML, this would request an image from the network (and run a script).
HOSTILE = '<img src="https://evil.example/x.png" onerror="alert(1)">'
SUITE = {
    "name": "sane",
    "expectations": [
        {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "taxi_id"}},
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {"column": "km", "min_value": 0, "max_value": 100},
        },
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "taxi_id", "value_set": ["T1", "T2"]},
        },
        {
            "type": "expect_table_row_count_to_be_between",
            "kwargs": {"min_value": 1, "max_value": 10},
        },
    ],
}


@pytest.fixture
def offline(browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    """A page whose every request but a ``file:`` one is aborted; the aborted URLs are
    recorded in the list."""
    context = browser.new_context(offline=True)
    page = context.new_page()
    left: list[str] = []

    def route(request_route: Route) -> None:
        url = request_route.request.url
        if url.startswith("file:"):
            request_route.continue_()
        else:
            left.append(url)
            request_route.abort()

    page.route("**/*", route)
    try:
        yield page, left
    finally:
        context.close()


@pytest.fixture(scope="module")
def written(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The run's report folder (with GX's Data Docs) and its report page."""
    root = tmp_path_factory.mktemp("offline")
    report_dir = root / "report"
    output = spark.createDataFrame(
        [("T1", 1.5), (None, 2.0), ("T2", 1000.0), (HOSTILE, 3.0)], "taxi_id string, km double"
    )
    results = run_expectations(
        {"candidate": output},
        [(parse_suite(SUITE, "sane.json", "sane.json"), "candidate")],
        docs_dir=report_dir / DATA_DOCS_DIR,
        run_name=RUN_ID,
    )
    url = f"sqlite:///{root / 'parity.db'}"
    with Store.open(url) as store:
        store.start_run(RunStart(RUN_ID, "taxi", trigger="adhoc", engine="spark"))
        store.record_run(
            RUN_ID,
            RunOutcome.from_verdict(
                Verdict(
                    equivalent=True,
                    divergences=(),
                    counts={},
                    reference_count=4,
                    candidate_count=4,
                    matched_count=4,
                ),
                report_path=str(report_dir),
            ),
        )
        store.record_expectations(RUN_ID, results)
    page = report_dir / "report.html"
    assert main(["report", RUN_ID, "--html", str(page), "--db", url]) == 0
    return {"report": page, "docs": report_dir / DATA_DOCS_DIR / "index.html"}


def test_the_report_shows_every_expectation_result_offline(
    offline: tuple[Page, list[str]], written: dict[str, Path]
) -> None:
    page, left = offline
    page.goto(written["report"].as_uri())
    page.wait_for_load_state("load")
    text = " ".join(page.locator("body").inner_text().split())

    for expected in (
        "failed 1 of 4 expectations met.",
        "sane on the candidate output failed",
        'expect_column_values_to_not_be_null {"column": "taxi_id"} failed '
        "1 of 4 unexpected (25%) null",
        'expect_column_values_to_be_between {"column": "km", "min_value": 0.0, '
        '"max_value": 100.0} failed 1 of 4 unexpected (25%) 1000.0',
        'expect_column_values_to_be_in_set {"column": "taxi_id", "value_set": ["T1", "T2"]} '
        f"failed 1 of 3 unexpected (33.3%); 1 missing, not checked {HOSTILE!r}",
        'expect_table_row_count_to_be_between {"min_value": 1, "max_value": 10} met 4 —',
    ):
        assert expected in text, (expected, text)
    table = page.locator("table.expectations")
    assert table.count() == 1 and table.is_visible()
    assert page.locator("table.expectations tr.differs").count() == 3
    # The hostile value is text: no image element, and nothing fetched it.
    assert page.locator("img").count() == 0
    assert left == []


def test_the_report_links_the_data_docs_gx_wrote(
    offline: tuple[Page, list[str]], written: dict[str, Path]
) -> None:
    page, left = offline
    page.goto(written["report"].as_uri())
    link = page.get_by_role("link", name="Great Expectations Data Docs")
    assert link.get_attribute("href") == f"{DATA_DOCS_DIR}/index.html"
    assert written["docs"].is_file()
    assert "the results below need no network" in page.locator("body").inner_text()
    assert left == []


def test_gx_data_docs_alone_are_empty_offline(
    offline: tuple[Page, list[str]], written: dict[str, Path]
) -> None:
    """Why the report renders the results itself: GX's index, offline, lists nothing and
    reaches for its CDNs. (If this fails, GX ships its assets: its pages may do offline.)"""
    page, left = offline
    page.goto(written["docs"].as_uri())
    page.wait_for_load_state("load")

    assert "sane" not in page.locator("body").inner_text()
    assert "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css" in left
