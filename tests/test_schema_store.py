"""Schema findings kept with a run: the store round trip (SQLite and PostgreSQL), the
migration that adds them, and what ``parity report`` (summary, JSON, HTML) shows of them,
hostile column names escaped; plus the spec key ``schema.mode`` and the noise rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from markupsafe import escape
from sqlalchemy import Engine, inspect

from matcher.errors import SpecError
from matcher.noise import Noise, explain
from matcher.schema import SchemaDiff, SchemaFinding, judge
from matcher.spec import parse_spec
from matcher.store import RunOutcome, RunStart, Store, upgrade
from matcher.store.migrate import alembic_config, current_revision
from matcher.verdict import Divergence, Verdict
from parity.cli.report_text import render_summary
from parity.views.report import render_report_html, report_document

pytest.register_assert_rewrite("store_fixtures")
pytest_plugins = ["store_fixtures"]

HOSTILE = "<script>alert(1)</script>\"'>"
DIFF = SchemaDiff(
    "compatible",
    (
        SchemaFinding("removed", HOSTILE, "int", None, True),
        SchemaFinding("retyped", "v", "int", "bigint", False, True, "bigint"),
        SchemaFinding("order", None, ("k", HOSTILE), (HOSTILE, "k"), False),
    ),
)


def record_schema_run(store: Store, run_id: str, schema: SchemaDiff | None) -> None:
    verdict = Verdict(True) if schema is None else judge(Verdict(True), schema)
    store.start_run(RunStart(run_id, "taxi"))
    store.record_run(run_id, RunOutcome.from_verdict(verdict))


def test_schema_findings_round_trip(store: Store) -> None:
    record_schema_run(store, "with-schema", DIFF)
    record_schema_run(store, "without", None)
    stored = store.get_run("with-schema")
    assert stored is not None
    assert (stored.verdict, stored.total_divergences, stored.schema) == ("divergent", 0, DIFF)
    plain = store.get_run("without")
    assert plain is not None
    assert (plain.verdict, plain.schema) == ("equivalent", None)
    # a failed attempt of the same run forgets them
    store.mark_failed("with-schema", "boom")
    failed = store.get_run("with-schema")
    assert failed is not None
    assert failed.schema is None


def test_the_migration_adds_and_removes_the_column(db_url: str, engine: Engine) -> None:
    upgrade(db_url)
    columns = {c["name"] for c in inspect(engine).get_columns("runs")}
    assert "schema_diff" in columns
    command.downgrade(alembic_config(db_url), "0002")
    assert "schema_diff" not in {c["name"] for c in inspect(engine).get_columns("runs")}
    with engine.connect() as connection:
        assert current_revision(connection) == "0002"
    upgrade(db_url)
    with Store.open(db_url) as store:
        record_schema_run(store, "again", DIFF)
        again = store.get_run("again")
    assert again is not None
    assert again.schema == DIFF


def test_the_report_shows_the_findings_escaped(sqlite_url: str) -> None:
    with Store.open(sqlite_url) as store:
        record_schema_run(store, "r", DIFF)
        record = store.get_run("r")
    assert record is not None
    assert report_document(record)["schema"] == DIFF.to_dict()
    page = render_report_html(record)
    assert HOSTILE not in page
    assert "<script>" not in page
    escaped = str(escape(HOSTILE))
    assert f'<td class="value">{escaped}</td>' in page
    assert "the run is divergent by its schema" in page
    assert f'<td class="value">k, {escaped}</td>' in page
    lines = render_summary(record).splitlines()
    assert lines[1] == "matched: both outputs are empty"
    assert lines[5:10] == [
        "counts: loss 0, duplication 0, reordering 0, corruption 0 (0 total)",
        "warning: both outputs are empty: there was no output to compare",
        "schema: 3 differences (1 divergent) under schema.mode compatible",
        f"  divergent removed     column {HOSTILE!r} (int) is missing from the candidate",
        "  listed    retyped     column 'v' changed type int -> bigint (widening; values "
        "compared as bigint)",
    ]


def test_the_spec_key(tmp_path: Path) -> None:
    assert parse_spec({"dependence": "ordered"}).schema.mode == "compatible"
    assert parse_spec({"dependence": "ordered", "schema": {"mode": "strict"}}).schema.mode == (
        "strict"
    )
    with pytest.raises(SpecError) as info:
        parse_spec({"dependence": "ordered", "schema": {"mode": "loose"}}, "s.yaml")
    assert str(info.value) == (
        "s.yaml: schema.mode: expected 'strict', 'compatible' or 'ignore', got 'loose'"
    )


def test_an_ignored_column_may_be_missing_from_one_output() -> None:
    spec = parse_spec({"dependence": {"key": "k"}, "equality": {"ignore": "seq"}}, "s.yaml")
    spec.check_columns(["k", "v"], where="candidate c", other=["k", "seq", "v"])
    with pytest.raises(SpecError, match=r"equality\.ignore: unknown column 'seq'"):
        spec.check_columns(["k", "v"], where="candidate c", other=["k", "v"])


def test_noise_never_explains_a_divergent_schema() -> None:
    loss = Divergence("loss", 1, 0, 0, {"k": 1}, None)
    noise = Noise.measure([Verdict(False, (loss,), {"loss": 1})])
    verdict = judge(Verdict(False, (loss,), {"loss": 1}), DIFF)
    assert explain(noise, verdict).verdict == "divergent"
    listed = SchemaDiff("compatible", DIFF.findings[1:])
    assert explain(noise, judge(Verdict(False, (loss,), {"loss": 1}), listed)).verdict == "noisy"


def test_the_history_lists_the_schema_findings(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "plugins"))
    from parity_ui.views import Roots, history_row

    with Store.open(sqlite_url) as store:
        record_schema_run(store, "with-schema", DIFF)
        record_schema_run(store, "without", None)
        runs = {run.run_id: run for run in store.list_runs()}
    assert runs["with-schema"].schema == DIFF
    assert runs["without"].schema is None
    roots = Roots("/parity", "")
    assert history_row(runs["with-schema"], roots).schema == "schema: 3 differences (1 divergent)"
    assert history_row(runs["without"], roots).schema is None
