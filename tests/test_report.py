"""The run report (``parity.views.report``) and ``parity report``: the JSON document exactly, the
HTML page with hostile data escaped and no network reference, and the command's outputs."""

from __future__ import annotations

import datetime as dt
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from matcher.store import ExpectationRecord, RunOutcome, RunRecord, RunStart, Store
from matcher.verdict import Divergence, Verdict
from parity.cli import main
from parity.views.approvals import RunApprovals
from parity.views.report import render_report_html, report_document

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

UTC = dt.UTC
STARTED = dt.datetime(2026, 3, 1, 2, 0, 0, tzinfo=UTC)
FINISHED = dt.datetime(2026, 3, 1, 2, 3, 4, 500000, tzinfo=UTC)
SCRIPT = "<script>alert(1)</script>"
BREAKER = "\"'><img src=x onerror=alert(1)>"
HOSTILE = f"{SCRIPT}{BREAKER}"


def sample_outcome() -> RunOutcome:
    verdict = Verdict(
        equivalent=False,
        divergences=(
            Divergence(
                "corruption",
                "T1",
                3,
                3,
                {"taxi_id": "T1", "seq": 2, "km": 1.5},
                {"taxi_id": "T1", "seq": 2, "km": 1.75},
                columns=("km",),
            ),
            Divergence("loss", "T2", 7, 6, {"taxi_id": "T2", "seq": 0, "km": 0.0}, None),
        ),
        counts={"corruption": 1, "loss": 1},
        reference_count=10,
        candidate_count=9,
        matched_count=8,
        dependence="by_key(taxi_id)",
        column_mismatches={"km": 1},
    )
    return RunOutcome.from_verdict(
        verdict,
        verdict_name="divergent",
        noisy_keys=["T2"],
        stats={
            "reference": {"rows": 10, "keys": 2, "barriers": 0},
            "candidate": {"rows": 9, "keys": 2, "barriers": 0},
            "seconds": 2.5,
        },
        noise={
            "summary": "1 of 2 divergences are not explained by noise: corruption of km",
            "reference_runs": 2,
            "noisy_keys": [{"key": "T2", "order": False, "events": True}],
            "noisy_columns": [],
            "witnesses": [
                {"ordinal": 0, "explained_by": None},
                {"ordinal": 1, "explained_by": "events"},
            ],
        },
        finished_at=FINISHED,
        report_path="/runs/taxi/1/report",
        expectations=(
            ExpectationRecord(
                "taxi_output",
                "candidate",
                "expect_column_values_to_not_be_null",
                True,
                kwargs={"column": "taxi_id"},
                observed={"element_count": 9, "unexpected_count": 0},
            ),
            ExpectationRecord(
                "derived_from_reference",
                "candidate",
                "expect_table_row_count_to_be_between",
                False,
                kwargs={"min_value": 10, "max_value": 10},
                observed=9,
            ),
        ),
    )


@pytest.fixture
def sample(sqlite_url: str) -> RunRecord:
    with Store.open(sqlite_url) as store:
        store.start_run(
            RunStart(
                "parity__taxi/scheduled__2026-03-01",
                "taxi",
                trigger="scheduled",
                reference_version="v1",
                candidate_version="v2",
                started_at=STARTED,
                slice={"column": "event_time", "window": "1d"},
                spec={"name": "taxi"},
                dag_id="parity__taxi",
                dag_run_id="scheduled__2026-03-01",
                task_try=1,
                engine="spark",
            )
        )
        store.record_run("parity__taxi/scheduled__2026-03-01", sample_outcome())
        store.set_gate("parity__taxi/scheduled__2026-03-01", False, "verdict divergent")
        record = store.get_run("parity__taxi/scheduled__2026-03-01")
    assert record is not None
    return record


def test_report_document_is_exact(sample: RunRecord) -> None:
    document = report_document(sample)

    assert document == {
        "run_id": "parity__taxi/scheduled__2026-03-01",
        "validation": "taxi",
        "kind": "comparison",
        "trigger": "scheduled",
        "engine": "spark",
        "status": "completed",
        "verdict": "divergent",
        "gate_passed": False,
        "gate_reason": "verdict divergent",
        "error": None,
        "versions": {"reference": "v1", "candidate": "v2"},
        "slice": {"column": "event_time", "window": "1d"},
        "timings": {
            "started_at": "2026-03-01T02:00:00+00:00",
            "finished_at": "2026-03-01T02:03:04.500000+00:00",
            "duration_seconds": 184.5,
        },
        "headline": {
            "sides": [
                {"side": "reference", "events": 10, "matched": 8, "rate": 0.8},
                {"side": "candidate", "events": 9, "matched": 8, "rate": 8 / 9},
            ],
            "text": "8 of 10 reference events matched (80.0%), "
            "8 of 9 candidate events matched (88.9%)",
            "columns": [
                {
                    "column": "km",
                    "mismatches": 1,
                    "text": "km differs in 1 of 9 paired events (11.1%)",
                    "detail": None,
                }
            ],
            "patterns": [
                {
                    "kind": "corruption",
                    "columns": ["km"],
                    "count": 1,
                    "first": 0,
                    "text": "corruption on km",
                },
                {"kind": "loss", "columns": [], "count": 1, "first": 1, "text": "loss"},
            ],
        },
        "counts": {"loss": 1, "duplication": 0, "reordering": 0, "corruption": 1},
        "total_divergences": 2,
        "empty": False,
        "warnings": [],
        "noise": {
            "summary": "1 of 2 divergences are not explained by noise: corruption of km",
            "reference_runs": 2,
            "noisy_keys": [{"key": "T2", "order": False, "events": True}],
            "noisy_columns": [],
            "witnesses": [
                {"ordinal": 0, "explained_by": None},
                {"ordinal": 1, "explained_by": "events"},
            ],
            "explained_divergences": [1],
            "unexplained_divergences": [0],
        },
        "recovery": None,
        "properties": None,
        "sides": {
            "reference": {"rows": 10, "keys": 2, "barriers": 0},
            "candidate": {"rows": 9, "keys": 2, "barriers": 0},
        },
        "stats": {
            "reference_count": 10,
            "candidate_count": 9,
            "matched_count": 8,
            "peak_unmatched": 0,
            "detected_at": None,
            "dependence": "by_key(taxi_id)",
            "reference": {"rows": 10, "keys": 2, "barriers": 0},
            "candidate": {"rows": 9, "keys": 2, "barriers": 0},
            "seconds": 2.5,
        },
        "column_stats": [{"column": "km", "mismatches": 1, "extra": None}],
        "divergences": [
            {
                "ordinal": 0,
                "kind": "corruption",
                "key": "T1",
                "noisy": False,
                "explained_by": None,
                "reference_position": 3,
                "candidate_position": 3,
                "partner_reference_position": None,
                "partner_candidate_position": None,
                "columns": ["km"],
                "explanation": "reference event #3 became candidate event #3: km differ",
                "reference_event": {"taxi_id": "T1", "seq": 2, "km": 1.5},
                "candidate_event": {"taxi_id": "T1", "seq": 2, "km": 1.75},
                "diff": [
                    {"column": "taxi_id", "differs": False, "reference": "T1", "candidate": "T1"},
                    {"column": "seq", "differs": False, "reference": 2, "candidate": 2},
                    {"column": "km", "differs": True, "reference": 1.5, "candidate": 1.75},
                ],
            },
            {
                "ordinal": 1,
                "kind": "loss",
                "key": "T2",
                "noisy": True,
                "explained_by": "events",
                "reference_position": 7,
                "candidate_position": 6,
                "partner_reference_position": None,
                "partner_candidate_position": None,
                "columns": [],
                "explanation": (
                    "reference event #7 is missing from the candidate (expected near #6)"
                ),
                "reference_event": {"taxi_id": "T2", "seq": 0, "km": 0.0},
                "candidate_event": None,
                "diff": [
                    {"column": "taxi_id", "differs": False, "reference": "T2"},
                    {"column": "seq", "differs": False, "reference": 0},
                    {"column": "km", "differs": False, "reference": 0.0},
                ],
            },
        ],
        "expectations": {
            "passed": False,
            "total": 2,
            "failed": 1,
            "data_docs": "/runs/taxi/1/report/data_docs/index.html",
            "suites": [
                {
                    "suite": "taxi_output",
                    "side": "candidate",
                    "success": True,
                    "results": [
                        {
                            "expectation_type": "expect_column_values_to_not_be_null",
                            "kwargs": {"column": "taxi_id"},
                            "success": True,
                            "observed": {"element_count": 9, "unexpected_count": 0},
                            "details": None,
                        }
                    ],
                },
                {
                    "suite": "derived_from_reference",
                    "side": "candidate",
                    "success": False,
                    "results": [
                        {
                            "expectation_type": "expect_table_row_count_to_be_between",
                            "kwargs": {"min_value": 10, "max_value": 10},
                            "success": False,
                            "observed": 9,
                            "details": None,
                        }
                    ],
                },
            ],
        },
        "airflow": {
            "dag_id": "parity__taxi",
            "dag_run_id": "scheduled__2026-03-01",
            "task_try": 1,
        },
        "report_path": "/runs/taxi/1/report",
        "spec": {"name": "taxi"},
        "schema": None,
        "spec_hash": None,
        "approvals": None,
    }
    # Strict JSON, as `parity report --json` prints it.
    assert json.loads(json.dumps(document, allow_nan=False)) == document


class Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p", "span",
    "nav", "a", "table", "tr", "th", "td", "details", "summary", "section", "colgroup", "col",
    "pre", "ul", "li", "code",
}  # fmt: skip


def hostile_record(sqlite_url: str) -> RunRecord:
    """A run whose every data-bearing field carries both payloads."""
    event = {HOSTILE: HOSTILE, "id": 1, f"col {BREAKER}": SCRIPT}
    other = {**event, HOSTILE: f"{BREAKER} changed"}
    verdict = Verdict(
        equivalent=False,
        divergences=(
            Divergence("corruption", HOSTILE, 0, 0, event, other, columns=(HOSTILE,)),
            Divergence("duplication", [HOSTILE, 1], 1, 1, None, other),
        ),
        counts={"corruption": 1, "duplication": 1},
        dependence=HOSTILE,
        column_mismatches={HOSTILE: 1},
    )
    outcome = RunOutcome.from_verdict(
        verdict,
        stats={HOSTILE: HOSTILE, "reference": {HOSTILE: 1}, "candidate": {HOSTILE: 2}},
        noise={HOSTILE: [HOSTILE], "noisy_columns": [HOSTILE]},
        noisy_keys=[HOSTILE],
        report_path=f"/runs/{BREAKER}",
        expectations=(
            ExpectationRecord(
                HOSTILE,
                BREAKER,
                f"expect_{SCRIPT}",
                False,
                kwargs={"column": HOSTILE},
                observed=[HOSTILE],
                details={HOSTILE: HOSTILE},
            ),
        ),
    )
    with Store.open(sqlite_url) as store:
        store.start_run(
            RunStart(
                HOSTILE,
                HOSTILE,
                trigger=BREAKER,
                reference_version=HOSTILE,
                candidate_version=BREAKER,
                slice={HOSTILE: HOSTILE},
                spec={HOSTILE: HOSTILE},
                dag_id=HOSTILE,
                dag_run_id=BREAKER,
            )
        )
        store.record_run(HOSTILE, outcome)
        store.set_gate(HOSTILE, False, HOSTILE)
        minimized = {"rows_before": 9, "rows_after": 2, "runs": 3, "seconds": 1.0}
        for name in ("status", "reproduces", "input", "test"):
            minimized[name] = HOSTILE
        store.set_stat(HOSTILE, "minimized", minimized)
        record = store.get_run(HOSTILE)
    assert record is not None
    return record


def test_html_escapes_every_hostile_value(sqlite_url: str) -> None:
    record = hostile_record(sqlite_url)
    page = render_report_html(record, links={"Airflow DAG run": "/dags/x/runs/y"})
    found = parse(page)

    tags = {tag for tag, _ in found.tags}
    assert tags <= PAGE_TAGS
    assert "script" not in tags and "img" not in tags
    # No attribute was broken out of: every attribute name is one the template writes.
    attributes = {name for _, attrs in found.tags for name in attrs}
    assert attributes <= {"lang", "charset", "name", "content", "class", "href"}
    # The payloads are text on the page, whole, where the data put them.
    text = "".join(found.text)
    assert text.count(HOSTILE) >= 10
    assert repr(f"{BREAKER} changed") in text  # event values are shown as repr() shows them
    assert f"expect_{SCRIPT}" in text
    assert SCRIPT not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_html_has_no_network_reference(sample: RunRecord) -> None:
    page = render_report_html(sample, links={"Airflow DAG run": "https://airflow.example/dags/x"})
    found = parse(page)

    references = [
        attrs.get(name) for _, attrs in found.tags for name in ("src", "href") if name in attrs
    ]
    assert references == [
        "https://airflow.example/dags/x",
        "file:///runs/taxi/1/report/data_docs/index.html",  # a path made a file: URL
    ]
    assert not re.search(r"https?://(?!airflow\.example/dags/x\")", page)
    assert "@import" not in page and "url(" not in page
    assert {tag for tag, _ in found.tags} & {"script", "link", "img", "iframe"} == set()


def test_html_shows_the_run(sample: RunRecord) -> None:
    page = render_report_html(sample, links={"data_docs": "docs/index.html"})
    text = " ".join(" ".join(parse(page).text).split())

    for expected in (
        "taxi divergent",
        "gate closed (verdict divergent)",
        "Reference version v1 Candidate version v2",
        'Input slice {"column": "event_time", "window": "1d"}',
        "Started 2026-03-01 02:00:00 UTC Finished 2026-03-01 02:03:04 UTC Duration 3m 4.5s",
        "loss duplication reordering corruption total 1 0 0 1 2",
        "1 of 2 witnesses shown fall in noisy keys or columns",
        "1 of 2 divergences are not explained by noise: corruption of km",
        "reference_runs 2 noisy_keys 'T2' (events) noisy_columns none",
        "rows 10 9 keys 2 2 barriers 0 0",
        "8 of 10 reference events matched (80.0%), 8 of 9 candidate events matched (88.9%)",
        "What differs km differs in 1 of 9 paired events (11.1%)",
        "corruption on km · 1 of the 2 shown",
        "Divergence 1 of 2: corruption, key 'T1', reference #3, candidate #3",
        "≠ km 1.5 1.75",
        "Divergence 2 of 2: loss, key 'T2', reference #7, candidate near #6 noise: events",
        "seq 0 —",
        "1 of 2 expectations met. Great Expectations Data Docs",
        "derived_from_reference on the candidate output failed",
        'expect_table_row_count_to_be_between {"min_value": 10, "max_value": 10} failed 9',
    ):
        assert expected in text, expected
    assert 'href="docs/index.html"' in page
    assert '<tr class="differs">' in page


def test_report_command_json_html_and_summary(
    sample: RunRecord, sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = sample.run_id
    assert main(["report", run_id, "--json", "--db", sqlite_url]) == 0
    out, err = capsys.readouterr()
    no_approvals = RunApprovals(run_id)  # the command reads them: none
    assert (json.loads(out), err) == (report_document(sample, no_approvals), "")

    page = tmp_path / "pages" / "run.html"
    page.parent.mkdir()
    assert main(["report", run_id, "--html", str(page), "--db", sqlite_url]) == 0
    assert capsys.readouterr() == (f"wrote {page}\n", "")
    written = page.read_text(encoding="utf-8")
    docs = Path("/runs/taxi/1/report/data_docs/index.html")
    relative = Path(*[".."] * len(page.parent.parts[1:]), *docs.parts[1:]).as_posix()
    assert f'href="{relative}"' in written
    assert written == render_report_html(
        sample, links={"data_docs": relative}, approvals=no_approvals
    )
    assert [p.name for p in page.parent.iterdir()] == ["run.html"]  # no temporary file left

    assert main(["report", run_id, "--db", sqlite_url]) == 0
    assert capsys.readouterr().out == (
        "run parity__taxi/scheduled__2026-03-01: taxi, divergent (gate closed: verdict divergent)\n"
        "matched: 8 of 10 reference events matched (80.0%), "
        "8 of 9 candidate events matched (88.9%)\n"
        "versions: reference v1, candidate v2\n"
        'slice: {"column": "event_time", "window": "1d"}\n'
        "started 2026-03-01 02:00:00 UTC, finished 2026-03-01 02:03:04 UTC after 184.5s\n"
        "counts: loss 1, duplication 0, reordering 0, corruption 1 (2 total)\n"
        "  km differs in 1 of 9 paired events (11.1%)\n"
        "expectations: 1 of 2 met; Data Docs /runs/taxi/1/report/data_docs/index.html\n"
        "  failed: derived_from_reference (candidate) expect_table_row_count_to_be_between("
        "min_value=10, max_value=10): observed 9\n"
        "witnesses: all 2 divergences stored (parity report parity__taxi/scheduled__2026-03-01 "
        "--html PATH shows them all)\n"
        "\n"
        "pattern: corruption on km: 1 of the 2 stored\n"
        "divergence 1 of 2: corruption, key 'T1', reference #3, candidate #3\n"
        "  reference event #3 became candidate event #3: km differ\n"
        "    column  | reference | candidate\n"
        "    taxi_id | 'T1'      | 'T1'\n"
        "    seq     | 2         | 2\n"
        "  * km      | 1.5       | 1.75\n"
        "\n"
        "pattern: loss: 1 of the 2 stored\n"
        "divergence 2 of 2: loss, key 'T2', reference #7, candidate near #6\n"
        "  reference event #7 is missing from the candidate (expected near #6)\n"
        "    column  | reference | candidate\n"
        "    taxi_id | 'T2'      | -\n"
        "    seq     | 0         | -\n"
        "    km      | 0.0       | -\n"
    )


def test_report_of_an_unknown_run_is_one_line_exit_2(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(sqlite_url):  # a store exists, without that run (report never creates one)
        pass
    assert main(["report", "nope", "--db", sqlite_url]) == 2
    assert capsys.readouterr() == ("", f"parity: error: no run 'nope' in {sqlite_url}\n")


def test_a_running_run_without_evidence_renders(sqlite_url: str) -> None:
    with Store.open(sqlite_url) as store:
        store.start_run(RunStart("r1", "taxi", started_at=STARTED))
        record = store.get_run("r1")
    assert record is not None
    document: dict[str, Any] = report_document(record)
    assert (document["status"], document["noise"], document["sides"]) == ("running", None, {})
    assert document["expectations"] == {
        "passed": None,
        "total": 0,
        "failed": 0,
        "data_docs": None,
        "suites": [],
    }
    text = " ".join(" ".join(parse(render_report_html(record)).text).split())
    assert "taxi running" in text
    assert "No expectation results were recorded for this run." in text
    assert "Finished — Duration —" in text


# -- links: safe schemes only ------------------------------------------------------------------


def scheme_like_run(sqlite_url: str) -> RunRecord:
    """A run whose report folder is a relative path that reads as a URL scheme."""
    outcome = RunOutcome.from_verdict(
        Verdict(True, reference_count=1, candidate_count=1, matched_count=1),
        report_path="javascript:alert(1)",
        expectations=(ExpectationRecord("suite", "candidate", "expect_x", True),),
    )
    with Store.open(sqlite_url) as store:
        store.start_run(RunStart("run-js", "taxi"))
        store.record_run("run-js", outcome)
        record = store.get_run("run-js")
    assert record is not None
    return record


def hrefs(page: str) -> list[str | None]:
    return [attrs.get("href") for tag, attrs in parse(page).tags if tag == "a"]


def test_a_written_page_never_links_a_path_that_reads_as_a_scheme(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheme_like_run(sqlite_url)
    monkeypatch.chdir(tmp_path)  # the page beside the report folder: "javascript:alert(1)/..."
    assert main(["report", "run-js", "--html", "run.html", "--db", sqlite_url]) == 0
    written = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert [h for h in hrefs(written) if h and ":" in h.split("/")[0]] == []
    assert "javascript%3Aalert%281%29/data_docs/index.html" in hrefs(written)


def test_a_page_on_standard_output_links_the_path_as_a_path(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scheme_like_run(sqlite_url)
    assert main(["report", "run-js", "--html", "-", "--db", sqlite_url]) == 0
    assert hrefs(capsys.readouterr().out) == ["javascript%3Aalert%281%29/data_docs/index.html"]


def test_caller_links_of_other_schemes_are_text(sample: RunRecord) -> None:
    links = {
        "Airflow": "https://airflow.example/dags/x",
        "History": "/parity/",
        "Evil": "javascript:alert(1)",
        "Shouting": "JavaScript:alert(1)",
        "Tabbed": "java\tscript:alert(1)",
        "Padded": " javascript:alert(1)",
        "Inline": "data:text/html,<script>alert(1)</script>",
        "data_docs": "vbscript:msgbox(1)",
    }
    page = render_report_html(sample, links=links)
    assert hrefs(page) == ["https://airflow.example/dags/x", "/parity/"]
    text = "".join(parse(page).text)
    for shown in ("Evil: javascript:alert(1)", "Tabbed: java\tscript:alert(1)"):
        assert shown in text
    assert "Great Expectations Data Docs: vbscript:msgbox(1)" in text


def test_the_text_summary_names_each_failed_expectation_up_to_twenty(sample: RunRecord) -> None:
    import dataclasses

    from parity.cli.report_text import FAILED_SHOWN, render_summary

    hostile = "\x1b[31mred\u202e"
    failed = [
        ExpectationRecord(
            "sane",
            "candidate",
            "expect_column_values_to_not_be_null",
            False,
            {"column": f"c{i}", "result_format": "SUMMARY"},
            observed={"unexpected_count": i},
        )
        for i in range(FAILED_SHOWN + 5)
    ]
    failed[0] = dataclasses.replace(failed[0], kwargs={"column": hostile})
    passed = ExpectationRecord("sane", "candidate", "expect_column_to_exist", True, {"column": "x"})
    text = render_summary(dataclasses.replace(sample, expectations=(passed, *failed)))
    lines = [line for line in text.splitlines() if line.startswith(("  failed: ", "  ... and"))]
    assert len(lines) == FAILED_SHOWN + 1
    assert lines[1] == (
        '  failed: sane (candidate) expect_column_values_to_not_be_null(column="c1"): '
        'observed {"unexpected_count": 1}'
    )
    assert lines[-1] == "  ... and 5 more failed (--html shows all)"
    assert "\x1b" not in text and "\u202e" not in text  # a column name cannot drive the terminal


def test_the_page_leads_with_the_decision(sample: RunRecord) -> None:
    """Issue 16: the verdict, the counts and the expectations come before the witnesses (up
    to 100 of them), and the run's raw facts and noise tables after them."""
    page = render_report_html(sample)
    heads = re.findall(r"<h2>([^<]+)</h2>", page)
    assert heads.index("Divergences") < heads.index("Expectations") < heads.index("Witnesses")
    assert heads.index("Witnesses") < heads.index("Run") < heads.index("Spec")
    header = page[page.index("<header>") : page.index("</header>")]
    assert "candidate v2 against reference v1" in header


# -- approvals ------------------------------------------------------------------------------

WHEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


def test_the_report_shows_approvals_and_revokes(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Who accepted which divergences, when and why, the revoke, and the approval that
    decides now: in the summary, the JSON and the page; hostile names and reasons are text."""
    run_id = "parity__taxi/scheduled__2026-03-01"
    with Store.open(db_url) as store:
        store.start_run(
            RunStart(
                run_id, "taxi", candidate_version="v2", started_at=STARTED, dag_id="parity__taxi"
            )
        )
        store.record_run(run_id, sample_outcome())
        store.approve(run_id, actor="alice\x1b[31m", reason=f"fine {HOSTILE}")
        store.revoke(run_id, actor="bob", reason="not intended\nafter all")
        store.approve(run_id, actor="carol", reason="intended: km rounding (JIRA-7)")

    assert main(["report", run_id, "--db", db_url]) == 0
    out = WHEN.sub("<when>", capsys.readouterr().out)
    signature = "divergent: corruption 1, loss 1; columns km"
    assert (
        "approval: approved by carol <when>: intended: km rounding (JIRA-7)\n"
        f"  accepted: {signature} (opens the gate)\n"
        f"  #1 approved by alice\\x1b[31m <when>: fine {HOSTILE} [{signature}]\n"
        f"  #2 revoked #1 by bob <when>: not intended after all [{signature}]\n"
        f"  #3 approved by carol <when>: intended: km rounding (JIRA-7) [{signature}]\n"
    ) in out
    assert "\x1b" not in out

    assert main(["report", run_id, "--json", "--db", db_url]) == 0
    approvals = json.loads(capsys.readouterr().out)["approvals"]
    assert (approvals["state"], approvals["opens_gate"]) == ("approved", True)
    assert approvals["approval"]["actor"] == "carol"
    assert approvals["approval"]["divergences"] == {
        "verdict": "divergent",
        "counts": {"corruption": 1, "loss": 1},
        "columns": ["km"],
    }
    assert [(a["action"], a["actor"], a["revokes"]) for a in approvals["trail"]] == [
        ("approve", "alice\x1b[31m", None),
        ("revoke", "bob", 1),
        ("approve", "carol", None),
    ]

    assert main(["report", run_id, "--html", "-", "--db", db_url]) == 0
    page = capsys.readouterr().out
    assert SCRIPT not in page and "<img" not in page and "\x1b" not in page
    section = page[page.index("<h2>Approval</h2>") : page.index("<h2>Expectations</h2>")]
    text = WHEN.sub("<when>", " ".join(" ".join(parse(section).text).split()))
    assert text.startswith(
        "Approval approved by carol <when>: intended: km rounding (JIRA-7) "
        f"Accepted divergences: {signature} (the gate opens for candidate v2 while a run "
        "shows exactly these)"
    )
    assert f"fine {HOSTILE}" in text  # read back as text
    assert "alice\\x1b[31m" in text
    assert "<form" not in section  # the command's page has no form: only the Parity page's


def test_a_revoked_approval_is_said_in_the_summary(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = "taxi/1"
    with Store.open(sqlite_url) as store:
        store.start_run(RunStart(run_id, "taxi", started_at=STARTED))
        store.record_run(run_id, sample_outcome())
        store.approve(run_id, actor="alice", reason="ok")
        store.revoke(run_id, actor="bob", reason="no")
    assert main(["report", run_id, "--db", sqlite_url]) == 0
    out = WHEN.sub("<when>", capsys.readouterr().out)
    assert "approval: approval #1 revoked by bob <when>: no\n" in out
    assert "  accepted: divergent: corruption 1, loss 1; columns km\n" in out  # no longer opens
