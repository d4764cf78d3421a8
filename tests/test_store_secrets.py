"""Issue 29 item 8: no secret of a database URL reaches a message, in any URL form.

``user:pw@`` was masked already; a password in the query string (``?password=``, ``?pass=``,
``?pwd=``, ``?sslpassword=``, ``?secret=``, ``?token=``), percent-encoded, or inside another
parameter (``?options=-c password=...``) was printed verbatim, and so was a DSN's
``password=...`` in a driver's message. Checked on the functions
(``matcher.store.errors.masked``, ``describe``) and on real processes: ``parity history``
and ``jobs/match.py`` against a store that is down or refuses the URL, whose error lines are
what an Airflow task log keeps.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from matcher.store.errors import describe, masked

ROOT = Path(__file__).resolve().parents[1]
SECRET = "S3cretQueryPw"
#: every spelling of the secret that must not appear
SPELLINGS = (SECRET, "S3cret%51ueryPw", "S3cret@QueryPw", "S3cret%40QueryPw")
DOWN = "postgresql+psycopg://parity@127.0.0.1:1/parity"

URLS = [
    pytest.param(f"{DOWN}?password={SECRET}", id="password"),
    pytest.param(f"{DOWN}?pass={SECRET}", id="pass"),
    pytest.param(f"{DOWN}?pwd={SECRET}", id="pwd"),
    pytest.param(f"{DOWN}?sslmode=require&sslpassword={SECRET}", id="sslpassword"),
    pytest.param(f"{DOWN}?secret={SECRET}", id="secret"),
    pytest.param(f"{DOWN}?token={SECRET}", id="token"),
    pytest.param(f"{DOWN}?PASSWORD=S3cret%51ueryPw", id="percent-encoded"),
    pytest.param(f"{DOWN}?options=-c%20password%3D{SECRET}", id="inside-options"),
    pytest.param("postgresql+psycopg://parity:S3cret%40QueryPw@127.0.0.1:1/parity", id="userinfo"),
    pytest.param(f"postgresql+psycopg:///parity?host=127.0.0.1&port=1&password={SECRET}", id="dsn"),
    pytest.param(f"postgresql+psycopg://u@h:notaport/x?password={SECRET}", id="unparseable"),
    pytest.param(f"sqlite:////nonexistent/parity.db?token={SECRET}", id="sqlite"),
]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"{DOWN}?password={SECRET}", f"{DOWN}?password=***"),
        (f"{DOWN}?pwd={SECRET}&sslpassword=x%25y", f"{DOWN}?pwd=***&sslpassword=***"),
        (f"{DOWN}?sslmode=require&token={SECRET}", f"{DOWN}?sslmode=require&token=***"),
        (
            f"{DOWN}?options=-c%20password%3D{SECRET}",
            f"{DOWN}?options=-c+password%3D***",
        ),
        ("postgresql+psycopg://u:S3cret%40QueryPw@h/db", "postgresql+psycopg://u:***@h/db"),
        (
            f"sqlite:////tmp/p.db?mode=ro&api_key={SECRET}",
            "sqlite:////tmp/p.db?api_key=***&mode=ro",
        ),
        (
            "postgresql+psycopg://u:p@h/db?sslmode=require",
            "postgresql+psycopg://u:***@h/db?sslmode=require",
        ),
    ],
)
def test_masked_hides_every_secret_of_a_url(url: str, shown: str) -> None:
    assert masked(url) == shown


@pytest.mark.parametrize(
    ("message", "url", "shown"),
    [
        # a DSN echoed by the driver
        (
            f"invalid dsn: host=h port=1 user=u password={SECRET} dbname=d",
            f"{DOWN}?password={SECRET}",
            "ValueError: invalid dsn: host=h port=1 user=u password=*** dbname=d",
        ),
        (
            f"connection info: password='{SECRET} x' sslpassword={SECRET}",
            None,
            "ValueError: connection info: password=*** sslpassword=***",
        ),
        # the URL echoed, its password percent-encoded or not
        (
            "cannot parse postgresql://u:S3cret%40QueryPw@h/d nor S3cret@QueryPw",
            "postgresql://u:S3cret%40QueryPw@h/d",
            "ValueError: cannot parse postgresql://u:***@h/d nor ***",
        ),
        # a one-letter password is masked where it stands, not in every word
        (
            "OperationalError at port 5432",
            "postgresql://u:p@h/d",
            "ValueError: OperationalError at port 5432",
        ),
    ],
)
def test_describe_masks_secrets_in_driver_messages(
    message: str, url: str | None, shown: str
) -> None:
    assert describe(ValueError(message), url) == shown


def run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PARITY_DB_URL"}
    return subprocess.run(
        argv, cwd=cwd, env=environ, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("url", URLS)
def test_parity_history_never_prints_a_secret(url: str, tmp_path: Path) -> None:
    done = run(sys.executable, "-m", "parity.cli", "history", "--db", url, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("parity: error: ")
    assert not [s for s in SPELLINGS if s in done.stderr], line


SPEC = """\
name: secrets
output: {format: jsonl}
dependence: unordered
"""


@pytest.mark.parametrize("url", URLS)
def test_the_match_job_never_prints_a_secret(url: str, tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(SPEC)
    done = run(
        sys.executable,
        str(ROOT / "jobs" / "match.py"),
        *("--reference", str(tmp_path / "r"), "--candidate", str(tmp_path / "c")),
        *("--spec", str(tmp_path / "spec.yaml"), "--engine", "core", "--db", url),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    line = done.stderr.splitlines()[-1]  # SQLAlchemy warns of an unknown SQLite parameter
    assert line.startswith("match: error: ")
    assert not [s for s in SPELLINGS if s in done.stdout + done.stderr], line
