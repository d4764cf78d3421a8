"""Approvals on the Parity page, as Airflow serves it: the run page's form, the approve and
revoke endpoints behind Airflow's auth and the same-origin rule, and the approval shown in
the history, the run's page, the JSON API, the gate and the DAG run's note.

The app is Airflow's own API server app with the plugin (``test_plugin.client``), on a
store of this module's (``store_url`` here overrides ``test_plugin``'s). Tokens are real
JWTs of the Simple auth manager: ``alice`` has the role ``user`` (she may trigger DAGs),
``viewer`` may only read.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_plugin import PLUGINS, client, quoted, token  # noqa: F401

from matcher.gate import GateSpec
from matcher.store import ColumnStat, RunOutcome, RunStart, Store, StoredDivergence
from parity.views.gate import current_spec, decide

pytest_plugins = ("airflow_fixtures",)

pytestmark = [
    pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`"),
    pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning"),
]

UTC = dt.UTC
SCRIPT = '<script>alert("x")</script>'
HOSTILE_REASON = f"fare fix {SCRIPT} \x1b[2J [link](javascript:alert(1))"
DAG = "parity_taxi"
#: a divergent run per test (approvals are never deleted: each test approves its own)
FLOW, COVERED, SCRIPTED, REFUSED, EVIL, EQUIVALENT, NO_DAG = (
    f"{DAG}/manual__flow",
    f"{DAG}/manual__flow-again",
    f"{DAG}/manual__scripted",
    f"{DAG}/manual__refused",
    f"{DAG}/manual__evil",
    f"{DAG}/manual__equivalent",
    "cli-run-1",
)
ORIGIN = "http://testserver"  # the TestClient's host
REPO = Path(__file__).resolve().parents[1]
#: the gate's runs: today's spec of "taxi" is SPEC (reference v1), G1 was made under it
GATED = f"{DAG}/manual__gated"
#: a run whose DAG run is in Airflow's database (its note is written again on approval)
NOTED_DAG = "parity_approval_notes"
NOTED, KEPT = f"{NOTED_DAG}/manual__noted", f"{NOTED_DAG}/manual__kept"


def _at(day: int, second: int = 0) -> dt.datetime:
    return dt.datetime(2026, 2, day, 3, 0, second, tzinfo=UTC)


def today_spec(folder: Path, key: str = "key") -> Path:
    """A spec of validation ``taxi`` (a bundled one renamed), reference version v1."""
    text = (REPO / "dags" / "validations" / "firstn_arbitrary.yaml").read_text(encoding="utf-8")
    text = text.replace("name: firstn_arbitrary", "name: taxi")
    text = text.replace("version: sequential", "version: v1", 1)
    text = text.replace("key: [key]", f"key: [{key}]")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "taxi.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _divergent(
    store: Store,
    run_id: str,
    day: int,
    *,
    candidate: str = "v2",
    spec_hash: str | None = None,
    dag_id: str = DAG,
) -> None:
    dag_run = run_id.partition("/")[2] or None
    store.start_run(
        RunStart(
            run_id,
            "taxi",
            trigger="manual",
            reference_version="v1",
            candidate_version=candidate,
            started_at=_at(day),
            dag_id=dag_id if dag_run else None,
            dag_run_id=dag_run,
            spec_hash=spec_hash,
        )
    )
    event = {"taxi_id": "T1", "fare": 1.5}
    store.record_run(
        run_id,
        RunOutcome(
            "divergent",
            counts={"loss": 2, "corruption": 1},
            divergences=(
                StoredDivergence(
                    0, "corruption", "T1", 3, 3, event, {**event, "fare": 2.5}, ("fare",)
                ),
            ),
            column_stats=(ColumnStat("fare", 1),),
            finished_at=_at(day, 30),
        ),
    )
    if dag_run:  # the decision the pipeline's gate task records (the default policy)
        record = store.get_run(run_id)
        assert record is not None
        decision = decide(GateSpec(), record)
        store.set_gate(run_id, decision.passed, decision.reason)


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The store ``test_plugin.client`` serves (this module's runs)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('approvals') / 'parity.db'}"
    with Store.open(url) as store:
        _divergent(store, FLOW, 1, candidate="v-flow")
        _divergent(store, COVERED, 2, candidate="v-flow")
        _divergent(store, SCRIPTED, 3, candidate="v-scripted")
        _divergent(store, REFUSED, 4, candidate="v-refused")
        _divergent(store, EVIL, 5, candidate="v-evil")
        _divergent(store, NO_DAG, 6, candidate="v-cli")
        folder = tmp_path_factory.mktemp("validations")
        today = current_spec("taxi", str(today_spec(folder)))
        assert today is not None
        _divergent(store, GATED, 8, candidate="v-gate", spec_hash=today.spec_hash)
        _divergent(store, NOTED, 9, candidate="v-noted", dag_id=NOTED_DAG)
        _divergent(store, KEPT, 10, candidate="v-kept", dag_id=NOTED_DAG)
        store.start_run(RunStart(EQUIVALENT, "taxi", started_at=_at(7), dag_id=DAG))
        store.record_run(EQUIVALENT, RunOutcome("equivalent", finished_at=_at(7, 5)))
    return url


@pytest.fixture
def app(client: Any) -> Iterator[Any]:  # noqa: F811  (test_plugin's: Airflow's app)
    """Airflow's app with the plugin, its cookies cleared after each test."""
    yield client
    client.cookies.clear()


@pytest.fixture
def alice(app: Any) -> Any:
    """The app with alice's UI cookie (a user who may trigger DAGs)."""
    app.cookies.set("_token", token(role="user", username="alice"))
    return app


def page_of(run_id: str) -> str:
    return f"/parity/runs/{quoted(run_id)}"


def form_token(page: str) -> str:
    found = re.search(r'<input type="hidden" name="token" value="([0-9a-f]{64})">', page)
    assert found is not None, "no form on the page"
    return found.group(1)


def post(
    http: Any,
    run_id: str,
    action: str,
    *,
    reason: str = "intended: fare rounding fixed (JIRA-12)",
    token_value: str | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    data = {"reason": reason}
    if token_value is not None:
        data["token"] = token_value
    return http.post(
        f"{page_of(run_id)}/{action}",
        data=data,
        headers={"Origin": ORIGIN} if headers is None else headers,
        follow_redirects=False,
    )


def trail(store_url: str, run_id: str) -> list[tuple[str, str, str]]:
    with Store.open(store_url) as store:
        return [(a.action, a.actor, a.reason) for a in store.approvals(run_id=run_id)]


# -- an allowed user, through the page ---------------------------------------------------------


def test_an_allowed_user_approves_then_revokes_from_the_runs_page(
    alice: Any, store_url: str
) -> None:
    page = alice.get(page_of(FLOW)).text
    assert f'<form class="approve" method="post" action="{page_of(FLOW)}/approve">' in page
    assert 'class="revoke"' not in page
    answer = post(alice, FLOW, "approve", token_value=form_token(page))
    assert (answer.status_code, answer.headers["location"]) == (303, page_of(FLOW))
    assert trail(store_url, FLOW) == [
        ("approve", "alice", "intended: fare rounding fixed (JIRA-12)")
    ]

    page = alice.get(page_of(FLOW)).text
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert "Approval approved by alice" in text
    assert "intended: fare rounding fixed (JIRA-12)" in text
    assert "Accepted divergences: divergent: corruption 1, loss 2; columns fare" in text
    assert f'<form class="revoke" method="post" action="{page_of(FLOW)}/revoke">' in page
    assert 'class="approve"' not in page  # approved already

    # A later run of the same version with the same divergences is covered by it.
    covered = alice.get(page_of(COVERED)).text
    assert "covered by approval #" in covered and f"of run {FLOW}" in html.unescape(covered)
    history = alice.get("/parity/", params={"validation": "taxi"}).text
    assert cell_of_gate(history, FLOW) == "open approved #1"
    assert cell_of_gate(history, COVERED) == "open covered by #1"
    entries = {e["run_id"]: e for e in alice.get("/parity/api/runs").json()["runs"]}
    assert (entries[FLOW]["gate_now"], entries[FLOW]["approval"]["state"]) == ("open", "approved")
    assert entries[COVERED]["approval"]["approval"]["run_id"] == FLOW
    assert entries[EQUIVALENT]["approval"] is None
    document = alice.get(f"/parity/api/runs/{quoted(FLOW)}").json()
    assert document["approvals"]["approval"]["actor"] == "alice"

    answer = post(
        alice, FLOW, "revoke", reason="not intended after all", token_value=form_token(page)
    )
    assert answer.status_code == 303
    assert [row[:2] for row in trail(store_url, FLOW)] == [
        ("approve", "alice"),
        ("revoke", "alice"),
    ]
    page = alice.get(page_of(FLOW)).text
    assert "approval #1 revoked by alice" in html.unescape(page)
    assert f'action="{page_of(FLOW)}/approve"' in page  # it may be approved again
    history = alice.get("/parity/", params={"validation": "taxi"}).text
    assert cell_of_gate(history, FLOW) == "closed revoked #1"
    assert cell_of_gate(history, COVERED) == "closed"


def cell_of_gate(page: str, run_id: str) -> str:
    start = page.index(f'<tr data-run-id="{html.escape(run_id)}">')
    row = page[start : page.index("</tr>", start)]
    cell = re.search(r'<td class="gate [^"]*">(.*?)</td>', row, flags=re.DOTALL)
    assert cell is not None
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell.group(1))).split())


def test_a_script_with_a_bearer_token_needs_no_form_token(app: Any, store_url: str) -> None:
    bearer = {"Authorization": f"Bearer {token(role='user', username='ci-bot')}"}
    answer = post(app, SCRIPTED, "approve", headers=bearer)
    assert answer.status_code == 303
    assert trail(store_url, SCRIPTED)[0][:2] == ("approve", "ci-bot")


# -- who may not, and requests another origin may have made ---------------------------------


def test_a_read_only_user_sees_no_form_and_gets_403(app: Any, store_url: str) -> None:
    viewer = {"Authorization": f"Bearer {token()}"}
    page = app.get(page_of(REFUSED), headers=viewer).text
    assert "<form" not in page
    answer = post(app, REFUSED, "approve", headers={**viewer, "Origin": ORIGIN})
    assert answer.status_code == 403
    assert trail(store_url, REFUSED) == []


def test_no_token_is_401(app: Any, store_url: str) -> None:
    answer = post(app, REFUSED, "approve")
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, "Bearer")
    assert trail(store_url, REFUSED) == []


@pytest.mark.parametrize(
    ("headers", "with_token", "message"),
    [
        ({"Origin": "https://evil.example"}, True, "cross-origin request refused"),
        ({"Origin": "null"}, True, "cross-origin request refused"),  # a sandboxed page
        ({"Referer": "https://evil.example/x"}, True, "cross-origin request refused"),
        ({}, True, "cross-origin request refused: no Origin or Referer header"),
        (
            {"Origin": ORIGIN},
            False,
            "the form&#39;s token is missing or stale: reload the run&#39;s page",
        ),
        ({"Referer": f"{ORIGIN}/parity/"}, False, "the form&#39;s token is missing"),
    ],
)
def test_a_cross_origin_post_is_403(
    alice: Any, store_url: str, headers: dict[str, str], with_token: bool, message: str
) -> None:
    valid = form_token(alice.get(page_of(REFUSED)).text)
    answer = post(
        alice, REFUSED, "approve", headers=headers, token_value=valid if with_token else None
    )
    assert answer.status_code == 403
    assert message in answer.text
    assert trail(store_url, REFUSED) == []


def test_a_form_token_is_bound_to_its_user_and_run(alice: Any, store_url: str) -> None:
    others = form_token(alice.get(page_of(EVIL)).text)  # alice's token for another run
    assert post(alice, REFUSED, "approve", token_value=others).status_code == 403
    bob = {
        "Authorization": f"Bearer {token(role='user', username='bob')}",
        "Origin": "https://evil.example",
    }
    assert post(alice, REFUSED, "approve", headers=bob).status_code == 403  # bearer, foreign origin
    assert trail(store_url, REFUSED) == []


# -- bad input: one line, 400 -------------------------------------------------------------------


def test_bad_input_is_a_400_with_one_line(alice: Any, store_url: str) -> None:
    valid = form_token(alice.get(page_of(REFUSED)).text)
    empty = post(alice, REFUSED, "approve", reason="   ", token_value=valid)
    assert (empty.status_code, error_line(empty.text)) == (
        400,
        "reason: give a reason (it is required)",
    )
    revoke = post(alice, REFUSED, "revoke", token_value=valid)
    assert (revoke.status_code, error_line(revoke.text)) == (
        400,
        f"cannot revoke the approval of run {REFUSED}: it has no active approval",
    )
    equivalent = form_token_for(alice, EQUIVALENT)
    assert equivalent is None  # no form on an equivalent run's page
    refused = post(alice, EQUIVALENT, "approve", token_value="0" * 64)
    assert refused.status_code == 403  # a wrong token is refused before the store is asked
    assert post(alice, REFUSED, "delete", token_value=valid).status_code == 404
    assert post(alice, "nope/x", "approve", token_value=valid).status_code == 404
    assert trail(store_url, REFUSED) == []


def test_the_store_refuses_an_equivalent_run_in_one_line(app: Any) -> None:
    bearer = {"Authorization": f"Bearer {token(role='admin', username='root')}"}
    answer = post(app, EQUIVALENT, "approve", headers=bearer)
    assert answer.status_code == 400
    line = error_line(answer.text)
    assert line.startswith(f"cannot approve run {EQUIVALENT}: ") and "\n" not in line


def form_token_for(http: Any, run_id: str) -> str | None:
    found = re.search(r'name="token" value="([0-9a-f]{64})"', http.get(page_of(run_id)).text)
    return None if found is None else found.group(1)


def error_line(page: str) -> str:
    found = re.search(r'<p class="error">(.*?)</p>', page, flags=re.DOTALL)
    assert found is not None, page[:500]
    return html.unescape(found.group(1))


# -- hostile reasons ----------------------------------------------------------------------------


def test_a_hostile_reason_is_escaped_everywhere(alice: Any, store_url: str) -> None:
    valid = form_token(alice.get(page_of(EVIL)).text)
    assert post(alice, EVIL, "approve", reason=HOSTILE_REASON, token_value=valid).status_code == 303
    page = alice.get(page_of(EVIL)).text
    history = alice.get("/parity/").text
    for shown in (page, history):
        assert SCRIPT not in shown and "\x1b" not in shown
    assert "fare fix &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; \\x1b[2J" in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in history  # the marker's title


def test_a_run_without_a_dag_needs_the_right_to_trigger_every_dag(app: Any, store_url: str) -> None:
    """``cli-run-1`` names no DAG: the query string cannot name one for it."""
    user = {"Authorization": f"Bearer {token(role='user', username='carol')}"}
    answer = app.post(
        f"{page_of(NO_DAG)}/approve?dag_id={DAG}",
        data={"reason": "ok"},
        headers=user,
        follow_redirects=False,
    )
    assert answer.status_code == 303  # a "user" may trigger every DAG in the Simple manager
    assert trail(store_url, NO_DAG)[0][:2] == ("approve", "carol")


# -- the note -----------------------------------------------------------------------------------


def test_the_note_says_who_approved(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))
    from parity.views.approvals import run_approvals
    from parity_ui.notes import note_text

    with Store.open(store_url) as store:
        store.approve(COVERED, actor="dave <b>*x*</b>", reason="ok [x](javascript:1)\x1b[1m")
        record = store.get_run(COVERED)
        assert record is not None
        approvals = run_approvals(store, record)
    text = note_text(record, "/link", approvals)
    assert text.endswith(
        "; approved by dave \\<b\\>\\*x\\*\\</b\\>: ok \\[x\\]\\(javascript:1\\)\\\\x1b\\[1m "
        "(gate open). [Parity run](/link)"
    )


# -- the HTTP gate: bound to today's spec, opened by an approval ------------------------------


def test_the_gate_api_binds_to_todays_spec_and_names_the_approval(
    app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    admin = {"Authorization": f"Bearer {token(role='admin', username='erin')}"}
    gate = "/parity/api/gate/taxi?candidate=v-gate"
    keys = ("state", "exit_code", "approval")
    monkeypatch.setenv("PARITY_VALIDATIONS_DIR", str(tmp_path / "validations"))
    today_spec(tmp_path / "validations")
    closed = app.get(gate, headers=admin).json()
    assert {k: closed[k] for k in keys} == {"state": "closed", "exit_code": 1, "approval": None}
    assert closed["spec"]["matches"] is True
    assert closed["spec"]["hash"] == closed["spec"]["current"]

    assert post(app, GATED, "approve", headers=admin).status_code == 303
    opened = app.get(gate, headers=admin).json()
    assert (opened["state"], opened["exit_code"]) == ("open", 0)
    assert (opened["approval"]["actor"], opened["approval"]["run_id"]) == ("erin", GATED)

    today_spec(tmp_path / "validations", key="key, event_time")  # today's spec changed
    changed = app.get(gate, headers=admin).json()
    assert (changed["state"], changed["exit_code"], changed["spec"]["matches"]) == (
        "no_verdict",
        3,
        False,
    )
    assert changed["reason"].startswith("made under another spec")

    (tmp_path / "validations" / "taxi.yaml").write_text("name: [", encoding="utf-8")
    broken = app.get(gate, headers=admin)
    assert broken.status_code == 503
    assert {k: broken.json()[k] for k in ("state", "exit_code", "reason")} == {
        "state": "error",
        "exit_code": 2,
        "reason": "today's spec of validation 'taxi' does not load (see the log)",
    }
    assert str(tmp_path) not in broken.text  # the server's paths are logged, not shown
    assert any(str(tmp_path) in r.getMessage() for r in caplog.records)


# -- the DAG run's note, written again -----------------------------------------------------------


def add_dag_run(dag_id: str, run_id: str, note: str) -> None:
    """A finished DAG run with ``note`` in Airflow's database (its DAG and bundle too)."""
    from airflow.models.dag import DagModel
    from airflow.models.dagbundle import DagBundleModel
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState
    from airflow.utils.types import DagRunType

    with create_session() as session:
        if session.get(DagBundleModel, "parity-approval-tests") is None:
            session.add(DagBundleModel(name="parity-approval-tests"))
            session.flush()
        if session.get(DagModel, dag_id) is None:
            session.add(DagModel(dag_id=dag_id, bundle_name="parity-approval-tests"))
            session.flush()
        run = DagRun(
            dag_id=dag_id,
            run_id=run_id,
            run_type=DagRunType.MANUAL,
            state=DagRunState.FAILED,
            run_after=dt.datetime(2026, 2, 9, tzinfo=UTC),
        )
        session.add(run)
        session.flush()
        run.note = note


def dag_run_note(dag_id: str, run_id: str) -> str | None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        return None if run is None else run.note


@pytest.fixture
def noted_dag() -> Iterator[str]:
    """``NOTED_DAG`` in Airflow's database for one test, removed after it (the database is
    the test session's)."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    yield NOTED_DAG
    with create_session() as session:
        for run in session.scalars(select_runs(NOTED_DAG)):
            session.delete(run)  # with its note
        session.flush()
        session.execute(delete(DagModel).where(DagModel.dag_id == NOTED_DAG))


def select_runs(dag_id: str) -> Any:
    from airflow.models.dagrun import DagRun
    from sqlalchemy import select

    return select(DagRun).where(DagRun.dag_id == dag_id)


def test_approving_writes_parity_s_note_again_and_keeps_a_person_s(
    app: Any, noted_dag: str
) -> None:
    parity_note = "**Parity: divergent** (loss 2); gate closed: verdict divergent. [Parity run](x)"
    add_dag_run(NOTED_DAG, "manual__noted", parity_note)
    add_dag_run(NOTED_DAG, "manual__kept", "rerun after the outage")
    bearer = {"Authorization": f"Bearer {token(role='user', username='frank')}"}
    assert post(app, NOTED, "approve", reason="intended *fix*", headers=bearer).status_code == 303
    assert post(app, KEPT, "approve", reason="intended", headers=bearer).status_code == 303
    note = dag_run_note(NOTED_DAG, "manual__noted")
    assert note is not None and note.startswith("**Parity: divergent** (loss 2, ")
    assert "; approved by frank: intended \\*fix\\* (gate open). [Parity run](" in note
    assert note.endswith("/parity/runs/parity_approval_notes%2Fmanual__noted)")
    assert dag_run_note(NOTED_DAG, "manual__kept") == "rerun after the outage"
    assert post(app, NOTED, "revoke", reason="no", headers=bearer).status_code == 303
    note = dag_run_note(NOTED_DAG, "manual__noted")
    assert note is not None and "; approval #" in note and " revoked by frank: no. [Parity" in note
