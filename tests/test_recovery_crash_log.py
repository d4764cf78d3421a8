"""Issue 29 item 10: a recovery run's stored crash log is untrusted input. Values of the wrong
type (a string where seconds are, a list where a count is, a kill that is not a mapping, a
log that is not one) are listed as invalid and not shown: ``parity report`` (text, JSON,
HTML) and the plugin's run page render the run, never an internal error or a 500."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from test_plugin import client, report_dir, store_url, viewer  # noqa: F401 (fixtures)

from matcher.store import RunOutcome, RunStart, Store
from matcher.store.records import RECOVERY
from parity.cli import main
from parity.views.crash_log import valid_crash
from parity.views.report import render_report_html, report_document

pytest_plugins = ("airflow_fixtures", "store_fixtures")
pytestmark = [
    pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`"),
    pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning"),
]

GOOD = {
    "number": 2, "target": "driver", "planned": "between", "phase": "between", "at": 4.5,
    "batch": 1, "committed": 2, "killed": 3, "attempt": 1, "missed": 0, "recovered_in": 2.25,
}  # fmt: skip
WRONG_TYPES = {
    "planned": "3",
    "injected": [1],
    "recovered": {"a": 1},
    "attempts": 1.5,
    "batches": True,
    "seconds": "x",
    "crashes": [
        {"number": "one", "target": 5, "planned": 7, "phase": ["x"], "at": "soon",
         "batch": "b", "committed": None, "killed": "k", "attempt": {}, "missed": "many",
         "recovered_in": "fast"},
        "not a crash",
        3,
        {**GOOD, "at": "4.5"},
        {**GOOD, "recovered_in": -1},
        GOOD,
    ],
}  # fmt: skip
#: name → (crash log, what is listed invalid)
LOGS: dict[str, tuple[Any, list[str]]] = {
    "types": (
        WRONG_TYPES,
        [
            *("crashes[0]", "crashes[1]", "crashes[2]", "crashes[3]", "crashes[4]"),
            *("planned", "injected", "recovered", "attempts", "batches", "seconds"),
        ],
    ),
    "crashes-not-a-list": ({"planned": 1, "injected": 1, "crashes": 5}, ["crashes"]),
    "log-not-a-mapping": ("crashes", ["crash log"]),
    "settings-not-a-mapping": ({"planned": 1, "injected": 1, "crashes": [GOOD]}, ["settings"]),
}


def _store(url: str) -> None:
    with Store.open(url) as store:
        for name, (log, _) in LOGS.items():
            run_id = f"bad-log-{name}"
            settings: Any = "kill" if name == "settings-not-a-mapping" else {"kill": "driver"}
            stats: dict[str, Any] = {"check": "windows", "crashes": log}
            store.start_run(
                RunStart(run_id, "detector", kind=RECOVERY, spec={"recovery": settings})
            )
            store.record_run(
                run_id, RunOutcome(verdict="equivalent", counts={}, divergences=(), stats=stats)
            )


def _note(invalid: list[str]) -> str:
    return f"the stored crash log has values of the wrong type, not shown: {', '.join(invalid)}"


@pytest.mark.parametrize("name", list(LOGS))
def test_the_report_shows_what_it_can(
    name: str, sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store(sqlite_url)
    run_id = f"bad-log-{name}"
    invalid = LOGS[name][1]
    assert main(["report", run_id, "--db", sqlite_url]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert f"  note: {_note(invalid)}\n" in out
    assert main(["report", run_id, "--db", sqlite_url, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["recovery"]["invalid"] == invalid
    kept = [c["number"] for c in document["recovery"]["crashes"]]
    assert kept == ([] if name in ("crashes-not-a-list", "log-not-a-mapping") else [2])
    html_path = tmp_path / "report.html"
    assert main(["report", run_id, "--db", sqlite_url, "--html", str(html_path)]) == 0
    capsys.readouterr()
    assert f'<p class="bad">T{_note(invalid)[1:]}.</p>' in html_path.read_text(encoding="utf-8")


def test_the_numbers_of_a_valid_log_are_kept(sqlite_url: str) -> None:
    _store(sqlite_url)
    with Store.open_readonly(sqlite_url) as store:
        record = store.get_run("bad-log-types")
    assert record is not None
    view = report_document(record)["recovery"]
    assert view["crashes"] == [{**GOOD, "where": "between batches"}]
    assert (view["planned"], view["injected"], view["check"]) == (None, None, "windows")
    assert "<td>driver</td>" in render_report_html(record)


@pytest.mark.parametrize(
    "entry",
    [
        None,
        [],
        {k: v for k, v in GOOD.items() if k != "at"},
        {**GOOD, "number": True},
        {**GOOD, "at": float("nan")},
        {**GOOD, "at": float("inf")},
        {**GOOD, "batch": -1},
        {**GOOD, "target": "x" * 5000},
    ],
)
def test_a_kill_with_a_wrong_value_is_skipped(entry: Any) -> None:
    assert valid_crash(entry) is None


def test_the_plugin_page_of_a_run_with_a_bad_crash_log(
    client: Any,  # noqa: F811
    viewer: dict[str, str],  # noqa: F811
    store_url: str,  # noqa: F811
) -> None:
    _store(store_url)
    for name, (_, invalid) in LOGS.items():
        run_id = quote(f"bad-log-{name}", safe="")
        page = client.get(f"/parity/runs/{run_id}", headers=viewer)
        assert page.status_code == 200, page.text[:2000]
        assert f'<p class="bad">T{_note(invalid)[1:]}.</p>' in page.text
        api = client.get(f"/parity/api/runs/{run_id}", headers=viewer)
        assert api.status_code == 200
        assert api.json()["recovery"]["invalid"] == invalid
