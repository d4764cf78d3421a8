"""A divergent run's page leads with what a release manager needs (``parity.views.headline``):
in a real headless Chromium at 1600x1000, the match rates, the counts and a line per
differing column are on the first screen, above a hundred witnesses. The numbers those
lines give equal an independent computation on the same outputs (pandas), whichever
engine decided the run. The text report (``parity report RUN``) leads the same way and
shows the first witness of each pattern."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from playwright.sync_api import Browser
from pyspark.sql import SparkSession

from matcher import compare
from matcher.dependence import by_key
from matcher.profile import value_text
from matcher.serialize import json_safe
from matcher.spark import compare_dataframes, read_stream
from matcher.spark import screen as screen_module
from matcher.store import RunOutcome, RunRecord, RunStart, Store
from matcher.verdict import Verdict
from parity.cli import main
from parity.views.headline import headline

pytest_plugins = ("tests.spark_fixtures", "browser_fixtures")

ROWS, KEYS = 1_000, 50
#: keys that lose their last event; the others have their values altered
LOSING = range(5)


T0 = dt.datetime(2024, 5, 1, 6, 0)
SCHEMA = "k long, seq long, at timestamp, amount double, label string, flag boolean"


def reference_rows() -> list[dict[str, Any]]:
    """An event a minute; ``amount`` null in every 40th."""
    return [
        {
            "k": i % KEYS,
            "seq": i,
            "at": T0 + dt.timedelta(minutes=i),
            "amount": None if i % 40 == 7 else i * 1.25,
            "label": f"L{i % 7}",
            "flag": i % 3 == 0,
        }
        for i in range(ROWS)
    ]


def candidate_rows() -> list[dict[str, Any]]:
    """Losses in ``LOSING`` keys (each key's last event); elsewhere ``amount`` altered in
    every third row (by 0.5 to 2), made null in some, filled where it was null in half of
    those, ``label`` in every tenth, ``flag`` in every 25th."""
    last = {row["k"]: row["seq"] for row in reference_rows()}
    out = []
    for row in reference_rows():
        i, k = row["seq"], row["k"]
        if k in LOSING:
            if i != last[k]:
                out.append(row)
            continue
        changed = dict(row)
        if row["amount"] is None:
            changed["amount"] = 1.0 if i % 80 == 7 else None
        elif i % 3 == 0:
            changed["amount"] = row["amount"] + 0.5 + (i % 7) * 0.25
        elif i % 50 == 1:
            changed["amount"] = None
        if i % 10 == 0:
            changed["label"] = "changed"
        if i % 25 == 0:
            changed["flag"] = not row["flag"]
        out.append(changed)
    return out


COMPARED = ("amount", "label", "flag")


def joined_outputs() -> pd.DataFrame:
    """The two outputs joined on (k, seq), in pandas: each reference event beside the
    candidate event Parity pairs it with."""
    ref, cand = pd.DataFrame(reference_rows()), pd.DataFrame(candidate_rows())
    return ref.merge(cand, on=["k", "seq"], suffixes=("_r", "_c"))


def differs(joined: pd.DataFrame, column: str) -> pd.Series:
    r, c = joined[f"{column}_r"], joined[f"{column}_c"]
    return ~((r == c) | (r.isna() & c.isna()))


def pandas_differences() -> tuple[dict[str, int], int]:
    """Per column, how many paired events differ, and how many pairs: computed apart from
    Parity, by joining the two outputs on (k, seq)."""
    joined = joined_outputs()
    differ = {c: int(differs(joined, c).sum()) for c in COMPARED}
    return {c: n for c, n in differ.items() if n}, len(joined)


def _python(series: pd.Series) -> list[Any]:
    return [None if pd.isna(v) else v for v in series.astype(object).tolist()]


def pandas_profile(column: str) -> dict[str, Any]:
    """What ``matcher.profile`` stores for ``column``, computed apart from it: pandas for
    the pairs, nulls and differences; Python's ``statistics``-free sums (``math.fsum``)."""
    joined = joined_outputs()
    pairs = joined[differs(joined, column)]
    r, c = pairs[f"{column}_r"], pairs[f"{column}_c"]
    numeric_kind = pd.api.types.is_float_dtype(r) and pd.api.types.is_float_dtype(c)
    both = r.notna() & c.notna() if numeric_kind else pd.Series(False, index=r.index)
    d = (c - r)[both] if numeric_kind else pd.Series(dtype=float)
    rel = (d.abs() / r[both].abs())[r[both] != 0] if numeric_kind else d

    def moments(values: pd.Series) -> dict[str, Any] | None:
        if values.empty:
            return None
        return {
            "n": len(values),
            "min": float(values.min()),
            "max": float(values.max()),
            "mean": math.fsum(values.tolist()) / len(values),
        }

    numeric = None
    if len(d):
        numeric = {
            "pairs": len(d),
            "diff": moments(d),
            "abs_diff": moments(d.abs()),
            "rel_diff": moments(rel),
        }
    others = pairs[~both]
    changes = Counter(
        f"{value_text(a)} \u2192 {value_text(b)}"
        for a, b in zip(_python(others[f"{column}_r"]), _python(others[f"{column}_c"]), strict=True)
    )
    top = sorted(changes.items(), key=lambda item: (-item[1], item[0]))
    times = Counter(t.isoformat(timespec="seconds") for t in pairs["at_r"].tolist())
    return {
        "pairs": len(pairs),
        "nulls_gained": int((r.notna() & c.isna()).sum()),
        "nulls_lost": int((r.isna() & c.notna()).sum()),
        "numeric": numeric,
        "transitions": {
            "top": [{"change": text, "n": n} for text, n in top[:10]],
            "distinct": len(changes),
            "exact": True,
        },
        "over_time": {"unit": "second", "counts": dict(sorted(times.items()))},
    }


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
        spark.createDataFrame(rows, SCHEMA).repartition(3).write.parquet(str(tmp_path / side))
    streams = [
        read_stream(spark, str(tmp_path / side), format="parquet", order_by=["seq"])
        for side in ("ref", "cand")
    ]
    verdict = compare_dataframes(*streams, by_key("k"), limit=100)
    return stored(tmp_path, verdict, "spark")


@pytest.fixture(params=["core", "spark", "spark-chains"])
def run(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, RunRecord]:
    """A stored run of the pair, by the core, by Spark (its exact path at this size), and
    by Spark's path for large differences (chains explained on digests by executors)."""
    if request.param == "core":
        return on_core(tmp_path)
    if request.param == "spark-chains":
        monkeypatch.setattr(screen_module, "EXACT_LIMIT", 0)
    return on_spark(tmp_path, request.getfixturevalue("spark"))


@pytest.mark.parametrize("column", COMPARED)
def test_the_column_profile_equals_pandas_on_both_engines(
    run: tuple[str, RunRecord], column: str
) -> None:
    _, record = run
    stored = {c.column: c.extra for c in record.column_stats}
    assert json_safe(stored[column]) == json_safe(pandas_profile(column))


def test_the_profile_is_over_every_difference_not_the_witnesses_kept(
    run: tuple[str, RunRecord],
) -> None:
    _, record = run
    amount = next(c for c in record.column_stats if c.column == "amount")
    assert amount.extra is not None and amount.extra["pairs"] == amount.mismatches
    assert amount.mismatches > sum("amount" in d.columns for d in record.divergences)


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
    detail = head["columns"][0]["detail"]
    assert detail is not None and detail.startswith("by +0.5 to +2 (mean +")
    assert out[out.index(f"  {head['columns'][0]['text']}") + 1] == f"    {detail}"
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
        assert lines == [
            line["text"] + (f": {line['detail']}" if line["detail"] else "")
            for line in head["columns"]
        ]
        # the profile's table, a row per differing column, with a chart where there is time
        profile = page.locator("table.profile tr").all_inner_texts()
        assert len(profile) == 1 + len(head["columns"])
        assert page.locator("table.profile svg.chart").count() == len(head["columns"])
        # a hundred witnesses below, by pattern: one open example each, the rest folded
        assert len(record.divergences) == 100
        patterns = page.locator("h3.pattern").all_inner_texts()
        assert len(patterns) == len(head["patterns"])
        open_examples = page.locator("section.witness:visible").count()
        assert open_examples == len(head["patterns"])
        page.screenshot(path=str(tmp_path / "first-screen.png"))
    finally:
        page.close()
