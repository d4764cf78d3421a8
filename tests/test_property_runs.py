"""Property runs (kind ``properties``) in the store, the history, the report and the spec: what
``parity properties`` stores, how ``parity history`` and ``parity report`` show it (hostile
evidence escaped), the spec's ``properties:`` section, and the warning when a spec
contradicts a stored run. The testing itself: ``test_properties.py``; the DAG's task:
``test_property_dag.py``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from matcher.errors import SpecError
from matcher.spec import Spec, load_spec
from matcher.store import RunOutcome, RunRecord, RunStart, Store, StoreError
from matcher.store.records import PROPERTIES
from parity.cli import main
from parity.cli.property_runs import Storage, store_report
from parity.properties.outcomes import Outcome, Report
from parity.properties.properties import PROPERTIES as PROPERTY_NAMES
from parity.views.gate import gate_status
from parity.views.history import history_row
from parity.views.properties import properties_document, property_rows, spec_warnings
from parity.views.report import render_report_html, report_document

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
OPERATOR = "jobs.examples.taxi:track"
SAMPLE = "examples/properties/taxi.jsonl"
STARTED = dt.datetime(2026, 3, 1, 2, 0, 0, tzinfo=dt.UTC)
HOSTILE = "<script>alert(1)</script>\x1b[31mred"


def _item(taxi: str, lon: float) -> dict[str, Any]:
    return {"port": 0, "item": {"taxi_id": taxi, "t_us": 0, "lat": 0.0, "lon": lon}}


def taxi_report(taxi: str = "t1", *, nondeterministic: bool = False) -> Report:
    """What ``parity properties jobs.examples.taxi:track --key taxi_id`` finds (stateful,
    non-commutative, partition-isolated), by hand; or a non-deterministic operator's."""
    stateful = {"input": [_item(taxi, 0.0), _item(taxi, 0.0)], "shrunk_from": 5, "minimal": True}
    ordered = {"input": [_item(taxi, 0.0), _item(taxi, 1.0)], "shrunk_from": 3, "minimal": True}
    properties = {
        "nondeterminism": Outcome("nondeterminism", tests=10, seconds=0.5),
        "selectivity": Outcome("selectivity", tests=10, extra={"class": "one_to_one"}),
        "blocking": Outcome(
            "blocking",
            applicable=False,
            extra={"reason": "a one-input operator cannot block on another port"},
        ),
        "statefulness": Outcome("statefulness", found=True, evidence=stateful, tests=4),
        "non_commutativity": Outcome("non_commutativity", found=True, evidence=ordered, tests=2),
        "partition_interference": Outcome(
            "partition_interference", tests=10, extra={"key": ["taxi_id"]}
        ),
    }
    if nondeterministic:
        runs = {"input": [_item(taxi, 0.0)], "difference": {}, "shrunk_from": 1, "minimal": True}
        skip = {"undetermined": "non-deterministic: not tested"}
        properties["nondeterminism"] = Outcome("nondeterminism", found=True, evidence=runs, tests=1)
        for name in ("statefulness", "non_commutativity", "partition_interference"):
            properties[name] = Outcome(name, extra=skip)
    return Report(OPERATOR, "stream", "reuse", 10, 0, ("taxi_id",), properties, 1.25, 60.0)


def _store(url: str, report: Report, run_id: str = "p/1", validation: str | None = None) -> str:
    storage = Storage(db=url, run_id=run_id, validation=validation, started_at=STARTED)
    return store_report(report, storage, [SAMPLE], None)


def _record(url: str, run_id: str) -> RunRecord:
    with Store.open_readonly(url) as store:
        record = store.get_run(run_id)
    assert record is not None
    return record


# --- the store ------------------------------------------------------------------------------


def test_a_report_is_stored_as_a_properties_run_without_a_verdict(db_url: str) -> None:
    report = taxi_report()
    run_id = _store(db_url, report)
    record = _record(db_url, run_id)
    assert (record.kind, record.status, record.verdict) == (PROPERTIES, "completed", None)
    assert (record.validation, record.trigger, record.engine) == (OPERATOR, "cli", "core")
    assert (record.started_at, record.gate_passed, record.total_divergences) == (
        STARTED,
        None,
        0,
    )
    assert record.slice == {"sample": SAMPLE}
    assert record.spec == {
        "file": None,
        "operator": OPERATOR,
        "shape": "stream",
        "technique": "reuse",
        "budget": 10,
        "budget_seconds": 60.0,
        "seed": 0,
        "key": ["taxi_id"],
    }
    assert record.stats is not None
    assert record.stats["properties"] == json.loads(json.dumps(report.to_dict()))
    assert record.stats["found"] == ["statefulness", "non_commutativity"]
    assert record.stats["suggested"] == {
        "dependence": {"key": ["taxi_id"]},
        "equality": {},
        "noise": {"reference_runs": 1},
    }
    assert record.divergences == ()


def test_a_run_without_a_verdict_has_no_divergences() -> None:
    with pytest.raises(StoreError, match=r"^verdict: a run without a verdict has no divergences"):
        RunOutcome(verdict=None, counts={"loss": 1})


def test_the_gate_never_rests_on_a_properties_run(db_url: str) -> None:
    """Re-tested under the validation's name after its comparison, the properties run is
    still not the run the gate reads (it has no verdict)."""
    with Store.open(db_url) as store:
        store.start_run(RunStart("c/1", "taxi", started_at=STARTED))
        store.record_run(
            "c/1",
            RunOutcome("equivalent", finished_at=STARTED + dt.timedelta(minutes=1)),
        )
    _store(db_url, taxi_report(), run_id="p/1", validation="taxi")
    with Store.open_readonly(db_url) as store:
        latest = store.latest_run("taxi")
        status = gate_status(store, "taxi")
    assert latest is not None and latest.run_id == "c/1"
    assert status.run is not None and status.run.run_id == "c/1"
    assert status.passed is True


# --- history and report -------------------------------------------------------------------


def test_the_history_lists_a_properties_run(sqlite_url: str) -> None:
    run_id = _store(sqlite_url, taxi_report())
    with Store.open_readonly(sqlite_url) as store:
        (summary,) = store.list_runs()
    row = history_row(summary)
    assert row[1:] == (
        f"{OPERATOR} (properties)",
        "cli",
        "- -> -",
        f"sample={SAMPLE}",
        "completed",
        "-",
        "-",
        "-",  # the gate: a properties run has none
        row[9],  # the duration: from STARTED to when the test stored it
        run_id,
    )


def test_history_and_report_commands_show_a_properties_run(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = taxi_report()
    run_id = _store(sqlite_url, report)
    assert main(["history", "--db", sqlite_url]) == 0
    assert f"{OPERATOR} (properties)" in capsys.readouterr().out
    assert main(["report", run_id, "--db", sqlite_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"run {run_id}: {OPERATOR}, completed (gate not decided)"
    item = '{"port": 0, "item": {"taxi_id": "t1", "t_us": 0, "lat": 0.0, "lon": %s}}'
    assert lines[4:13] == [
        f"properties: {OPERATOR} (stream), technique reuse, budget 10, seed 0, key taxi_id",
        "  nondeterminism          potentially not  potentially deterministic, 10 tests",
        "  selectivity             potentially not  potentially one_to_one, 10 tests",
        "  blocking                -                not applicable: a one-input operator "
        "cannot block on another port",
        "  statefulness            found            definitely stateful, 4 tests",
        f"    evidence input (shrunk from 5): [{item % '0.0'}, {item % '0.0'}]",
        "  non_commutativity       found            definitely non-commutative, 2 tests",
        f"    evidence input (shrunk from 3): [{item % '0.0'}, {item % '1.0'}]",
        "  partition_interference  potentially not  potentially partition-isolated, key "
        "taxi_id, 10 tests",
    ]
    assert not any(line.startswith("counts:") for line in lines)
    assert main(["report", run_id, "--db", sqlite_url, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["kind"], document["verdict"]) == ("properties", None)
    assert document["properties"] == json.loads(json.dumps(report.to_dict()))
    assert document["recovery"] is None


def test_the_report_lists_the_properties_in_the_runner_s_order(db_url: str) -> None:
    """The views name no property themselves: the rows follow the stored document, which the
    runner writes in ``PROPERTIES``' order (whatever order its outcomes were decided in) and
    the store reads back in that order."""
    report = taxi_report()
    shuffled = dataclasses.replace(
        report, properties=dict(reversed(list(report.properties.items())))
    )
    document = properties_document(_record(db_url, _store(db_url, shuffled)))
    assert document is not None
    assert [row["name"] for row in property_rows(document)] == list(PROPERTY_NAMES)


def test_the_html_report_has_a_properties_section(sqlite_url: str) -> None:
    record = _record(sqlite_url, _store(sqlite_url, taxi_report()))
    html = render_report_html(record)
    assert "<h2>Properties</h2>" in html
    assert "<h2>Divergences</h2>" not in html  # it compared nothing
    assert html.count('<span class="bad">found</span>') == 2
    assert html.count('<span class="muted">potentially not</span>') == 3
    assert "definitely non-commutative" in html
    assert "(from 3 elements, minimal)" in html
    assert '<pre class="value"># Suggested by parity properties' in html


def test_a_comparison_report_has_no_properties_section(db_url: str) -> None:
    with Store.open(db_url) as store:
        store.start_run(RunStart("c/1", "taxi"))
        record = store.get_run("c/1")
    assert record is not None
    assert report_document(record)["properties"] is None
    assert "<h2>Properties</h2>" not in render_report_html(record)


def test_hostile_evidence_is_escaped_in_the_page_and_on_the_terminal(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _store(sqlite_url, taxi_report(HOSTILE), validation=f"v{HOSTILE}")
    html = render_report_html(_record(sqlite_url, run_id))
    assert "<script>" not in html and "\x1b" not in html
    # the validation (a stored name) escaped as text is, the evidence as JSON is
    assert "v&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31mred" in html
    assert "&#34;taxi_id&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt;\\u001b[31mred" in html
    assert main(["report", run_id, "--db", sqlite_url]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text
    assert '"taxi_id": "<script>alert(1)</script>\\u001b[31mred"' in text
    assert f"run {run_id}: v<script>alert(1)</script>\\x1b[31mred, completed" in text
    assert main(["history", "--db", sqlite_url]) == 0
    assert "\x1b" not in capsys.readouterr().out


# --- parity properties stores its run ---------------------------------------------------------


def _properties(*args: str) -> list[str]:
    return ["properties", OPERATOR, "--sample", str(ROOT / SAMPLE), "--key", "taxi_id", *args]


def test_the_command_stores_its_run_and_says_its_id(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fast = ["--technique", "random", "--budget", "2", "--evidence-dir", str(tmp_path)]
    assert main(_properties(*fast, "--json", "--db", sqlite_url)) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    with Store.open_readonly(sqlite_url) as store:
        (summary,) = store.list_runs()
    run_id = summary.run_id
    assert captured.err.splitlines() == [  # said as it starts, so a killed run is found
        f"properties: storing run {run_id} (parity report {run_id})",
        f"properties: stored run {run_id} (parity report {run_id})",
    ]
    assert run_id.startswith("properties-") and len(run_id) == len("properties-") + 12
    record = _record(sqlite_url, run_id)
    assert (record.kind, record.validation, record.verdict) == (PROPERTIES, OPERATOR, None)
    assert record.stats is not None and record.stats["properties"] == printed


def test_no_store_stores_nothing_and_bad_input_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'parity.db'}"
    fast = ["--technique", "random", "--budget", "1", "--evidence-dir", str(tmp_path)]
    assert main(_properties(*fast, "--db", url, "--no-store")) == 0
    assert capsys.readouterr().err == ""
    assert not (tmp_path / "parity.db").exists()
    bad = ["properties", OPERATOR, "--sample", str(tmp_path / "none.jsonl"), "--db", url]
    assert main(bad) == 2
    assert capsys.readouterr().err.startswith("parity: error: ")
    # the store is opened (and checked) before the sample is read, but holds no run
    with Store.open_readonly(url) as store:
        assert store.list_runs() == []


def test_home_holds_the_evidence_and_the_default_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PARITY_DB_URL", raising=False)
    monkeypatch.delenv("PARITY_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no parity.toml here
    home = tmp_path / "home"
    assert main(_properties("--budget", "2", "--home", str(home))) == 0
    run_id = capsys.readouterr().err.split()[3]
    assert _record(f"sqlite:///{home / 'parity.db'}", run_id).kind == PROPERTIES
    assert (home / "properties" / "jobs.examples.taxi_track.json").is_file()


# --- the spec -------------------------------------------------------------------------------

SPEC = f"""\
name: taxi
dependence: {{key: [taxi_id]}}
properties:
  - {{operator: {OPERATOR}, sample: {SAMPLE}, key: taxi_id}}
"""


def _spec(tmp_path: Path, text: str = SPEC) -> Spec:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path)


def test_the_properties_section_loads_with_reuse_first(tmp_path: Path) -> None:
    (entry,) = _spec(tmp_path).properties
    assert (entry.operator, entry.sample, entry.key) == (OPERATOR, SAMPLE, ("taxi_id",))
    assert (entry.technique, entry.budget, entry.seed, entry.shape) == ("reuse", 10, 0, None)
    assert _spec(tmp_path, "dependence: ordered\n").properties == ()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace(OPERATOR, "jobs.examples.taxi"),
            "FILE: properties[0].operator: expected 'module:function', got 'jobs.examples.taxi'",
        ),
        (
            lambda t: t + f"  - {{operator: {OPERATOR}, sample: other.jsonl}}\n",
            f"FILE: properties: {OPERATOR} is listed twice (one entry per operator)",
        ),
        (
            lambda t: t.replace("key: taxi_id", "technique: fast"),
            "FILE: properties[0].technique: expected random, pool, pairwise, mutation, reuse, "
            "hybrid or BASE[+mutation][+reuse], got 'fast'",
        ),
        (
            lambda t: t.replace("key: taxi_id", "budget: 0"),
            "FILE: properties[0].budget: must be >= 1, got 0",
        ),
        (
            lambda t: t.replace(f"sample: {SAMPLE}, ", ""),
            "FILE: properties[0].sample: required key is missing",
        ),
    ],
)
def test_a_bad_properties_section_is_one_line(tmp_path: Path, edit: Any, message: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(edit(SPEC), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).replace(str(path), "FILE") == message


# --- a spec against a stored run ----------------------------------------------------------


def _warnings(url: str, spec: Spec) -> list[str]:
    with Store.open_readonly(url) as store:
        return spec_warnings(spec, store)


def test_a_spec_that_agrees_gets_no_warning(db_url: str, tmp_path: Path) -> None:
    _store(db_url, taxi_report(), run_id="p/1", validation="taxi")
    assert _warnings(db_url, _spec(tmp_path)) == []
    ordered = _spec(tmp_path, SPEC.replace("{key: [taxi_id]}", "ordered"))
    assert _warnings(db_url, ordered) == []  # stricter than needed: never unsound


def test_a_spec_that_reorders_too_much_is_warned(db_url: str, tmp_path: Path) -> None:
    _store(db_url, taxi_report(), run_id="p/1")  # stored under the operator's name
    spec = _spec(tmp_path, SPEC.replace("{key: [taxi_id]}", "unordered"))
    assert _warnings(db_url, spec) == [
        f"parity: warning: {spec.source}: properties: {OPERATOR}: run p/1 found statefulness, "
        "non-commutativity, which needs at least dependence {key: [taxi_id]}, but the spec's is "
        "unordered: set dependence: {key: [taxi_id]}"
    ]
    finer = _spec(tmp_path, SPEC.replace("[taxi_id]}", "[taxi_id, t_us]}"))
    assert len(_warnings(db_url, finer)) == 1


def test_a_warning_shows_a_hostile_run_id_as_text(sqlite_url: str, tmp_path: Path) -> None:
    _store(sqlite_url, taxi_report(), run_id="p/\x1b[31mred")
    spec = _spec(tmp_path, SPEC.replace("{key: [taxi_id]}", "unordered"))
    (line,) = _warnings(sqlite_url, spec)
    assert "\x1b" not in line and ": run p/\\x1b[31mred found " in line


def test_a_non_deterministic_operator_needs_noise_runs(db_url: str, tmp_path: Path) -> None:
    _store(db_url, taxi_report(), run_id="p/old", validation="taxi")
    _store(db_url, taxi_report(nondeterministic=True), run_id="p/new", validation="taxi")
    spec = _spec(tmp_path)
    assert _warnings(db_url, spec) == [
        f"parity: warning: {spec.source}: properties: {OPERATOR}: run p/new found it "
        "non-deterministic, but noise.reference_runs is 1: set noise.reference_runs: 2; found "
        "nondeterminism, which needs at least dependence ordered, but the spec's is "
        "{key: [taxi_id]}: set dependence: ordered"
    ]


def test_an_operator_never_tested_and_other_operators_runs_give_no_warning(
    db_url: str, tmp_path: Path
) -> None:
    other = dataclasses.replace(taxi_report(nondeterministic=True), operator="jobs.other:f")
    _store(db_url, other, validation="taxi")
    assert _warnings(db_url, _spec(tmp_path)) == []


def test_compare_warns_before_comparing(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store(sqlite_url, taxi_report(), validation="taxi")
    output = tmp_path / "out.jsonl"
    output.write_text('{"taxi_id": "t1", "km": 1.0}\n', encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("{key: [taxi_id]}", "unordered"), encoding="utf-8")
    args = ["compare", str(output), str(output), "--spec", str(spec), "--db", sqlite_url]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"parity: warning: {spec}: properties: {OPERATOR}: run p/1 found ")
    assert err.endswith("set dependence: {key: [taxi_id]}\n") and err.count("\n") == 1
    spec.write_text(SPEC, encoding="utf-8")
    assert main(args) == 0
    assert capsys.readouterr().err == ""
    missing = ["compare", str(output), str(output), "--spec", str(spec), "--db"]
    assert main([*missing, f"sqlite:///{tmp_path / 'none.db'}"]) == 0  # no store: no warning
    assert capsys.readouterr().err == ""
