"""A divergent run's page leads with what a release manager needs (``parity.views.headline``):
in a real headless Chromium at 1600x1000, the match rates, the counts and a line per
differing column are on the first screen, above a hundred witnesses. The numbers those
lines give equal an independent computation on the same outputs (pandas), whichever
engine decided the run. The text report (``parity report RUN``) leads the same way and
shows the first witness of each pattern."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from playwright.sync_api import Browser
from pyspark.sql import SparkSession

from matcher import compare
from matcher.dependence import by_key
from matcher.spark import compare_dataframes, read_stream
from matcher.store import RunOutcome, RunRecord, RunStart, Store
from matcher.verdict import Verdict
from parity.cli import main
from parity.views.headline import headline

pytest_plugins = ("tests.spark_fixtures", "browser_fixtures")

ROWS, KEYS = 1_000, 50
#: keys that lose their last event; the others have their values altered
LOSING = range(5)


def reference_rows() -> list[dict[str, Any]]:
    return [
        {"k": i % KEYS, "seq": i, "amount": i * 1.25, "label": f"L{i % 7}", "flag": i % 3 == 0}
        for i in range(ROWS)
    ]


def candidate_rows() -> list[dict[str, Any]]:
    """Losses in ``LOSING`` keys (each key's last event); elsewhere ``amount`` altered in
    every third row, ``label`` in every tenth, ``flag`` in every 25th."""
    last = {row["k"]: row["seq"] for row in reference_rows()}
    out = []
    for row in reference_rows():
        i, k = row["seq"], row["k"]
        if k in LOSING:
            if i != last[k]:
                out.append(row)
            continue
        changed = dict(row)
        if i % 3 == 0:
            changed["amount"] = row["amount"] + 0.5
        if i % 10 == 0:
            changed["label"] = "changed"
        if i % 25 == 0:
            changed["flag"] = not row["flag"]
        out.append(changed)
    return out


def pandas_differences() -> tuple[dict[str, int], int]:
    """Per column, how many paired events differ, and how many pairs: computed apart from
    Parity, by joining the two outputs on (k, seq)."""
    ref, cand = pd.DataFrame(reference_rows()), pd.DataFrame(candidate_rows())
    joined = ref.merge(cand, on=["k", "seq"], suffixes=("_r", "_c"))
    differ = {
        c: int((joined[f"{c}_r"] != joined[f"{c}_c"]).sum()) for c in ("amount", "label", "flag")
    }
    return {c: n for c, n in differ.items() if n}, len(joined)


def stored(tmp_path: Path, verdict: Verdict, engine: str) -> tuple[str, RunRecord]:
    url = f"sqlite:///{tmp_path / 'parity.db'}"
    with Store.open(url) as store:
        store.start_run(RunStart("first-screen", "taxi", trigger="adhoc", engine=engine))
        store.record_run("first-screen", RunOutcome.from_verdict(verdict))
        return url, store.get_run("first-screen")


def on_core(tmp_path: Path) -> tuple[str, RunRecord]:
    verdict = compare(reference_rows(), candidate_rows(), by_key("k"), limit=100)
    return stored(tmp_path, verdict, "core")


def on_spark(tmp_path: Path, spark: SparkSession) -> tuple[str, RunRecord]:
    for side, rows in (("ref", reference_rows()), ("cand", candidate_rows())):
        spark.createDataFrame(rows).repartition(3).write.parquet(str(tmp_path / side))
    streams = [
        read_stream(spark, str(tmp_path / side), format="parquet", order_by=["seq"])
        for side in ("ref", "cand")
    ]
    verdict = compare_dataframes(*streams, by_key("k"), limit=100)
    return stored(tmp_path, verdict, "spark")


@pytest.fixture(params=["core", "spark"])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, RunRecord]:
    if request.param == "core":
        return on_core(tmp_path)
    return on_spark(tmp_path, request.getfixturevalue("spark"))


def test_the_headline_equals_pandas_on_both_engines(run: tuple[str, RunRecord]) -> None:
    _, record = run
    head = headline(record)
    assert head is not None
    differ, pairs = pandas_differences()
    lost = len(LOSING)
    assert record.counts["loss"] == lost and record.counts["duplication"] == 0
    assert [(line["column"], line["mismatches"]) for line in head["columns"]] == sorted(
        differ.items(), key=lambda item: (-item[1], item[0])
    )
    assert pairs == ROWS - lost
    first = head["columns"][0]["text"]
    share = f"{differ['amount'] / pairs:.1%}"
    assert first == f"amount differs in {differ['amount']:,} of {pairs:,} paired events ({share})"
    corrupted = record.counts["corruption"]
    assert head["sides"][0] == {
        "side": "reference",
        "events": ROWS,
        "matched": ROWS - lost - corrupted,
        "rate": (ROWS - lost - corrupted) / ROWS,
    }


def test_the_text_report_leads_with_the_headline_and_shows_each_pattern(
    run: tuple[str, RunRecord], capsys: pytest.CaptureFixture[str]
) -> None:
    url, record = run
    assert main(["report", record.run_id, "--db", url]) == 0
    out = capsys.readouterr().out.splitlines()
    head = headline(record)
    assert head is not None
    assert out[1] == f"matched: {head['text']}"
    assert f"  {head['columns'][0]['text']}" in out
    patterns = [line for line in out if line.startswith("pattern: ")]
    assert any(line.startswith("pattern: corruption on amount: ") for line in patterns)
    assert any(line.startswith("  * amount ") for line in out)


@pytest.mark.slow
def test_the_first_screen_holds_the_headline_and_the_columns(
    run: tuple[str, RunRecord], tmp_path: Path, browser: Browser
) -> None:
    url, record = run
    page_path = tmp_path / "report.html"
    assert main(["report", record.run_id, "--html", str(page_path), "--db", url]) == 0
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        page.goto(page_path.as_uri())
        head = headline(record)
        assert head is not None
        for selector in (".headline", "h2:text('Divergences')", "ul.columns"):
            box = page.locator(selector).first.bounding_box()
            assert box is not None and box["y"] + box["height"] <= 1000, selector
        assert page.locator(".headline").inner_text() == head["text"]
        lines = page.locator("ul.columns li").all_inner_texts()
        assert lines == [line["text"] for line in head["columns"]]
        # a hundred witnesses below, by pattern: one open example each, the rest folded
        assert len(record.divergences) == 100
        patterns = page.locator("h3.pattern").all_inner_texts()
        assert len(patterns) == len(head["patterns"])
        open_examples = page.locator("section.witness:visible").count()
        assert open_examples == len(head["patterns"])
        page.screenshot(path=str(tmp_path / "first-screen.png"))
    finally:
        page.close()
