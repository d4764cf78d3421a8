"""Issue 29 item 9: ``PARITY_WORKSPACE`` is an absolute path, ``file:///...`` or a URI of
shared storage with a bucket or host; anything else is one line naming the variable, before a
run writes anywhere (it used to become a relative folder of the worker's current directory).
The DAG's plan task refusing it is in ``tests/test_adhoc_overrides.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from matcher.errors import ConfigurationError, ParityError
from matcher.uris import check_root
from parity.airflow.plan import WORKSPACE_VARIABLE, workspace_root_of

HOME = Path("/h")
EXPECTED = (
    "expected an absolute path, file:///PATH, or s3a://, s3://, gs://, hdfs://, abfss:// "
    "with a bucket or host"
)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("javascript:x", "'javascript:x' is not an absolute path"),
        ("file:", "'file:' is not an absolute path"),
        ("s3a://", "'s3a://' names no bucket or host"),
        ("s3a:///bucketless/dir", "'s3a:///bucketless/dir' names no bucket or host"),
        ("hdfs:///user/parity", "'hdfs:///user/parity' names no bucket or host"),
        ("file://host/DIR", "'file://host/DIR' is not a local file:/// URI"),
        ("file://relative", "'file://relative' is not a local file:/// URI"),
        ("-rf", "'-rf' is not an absolute path"),
        ("runs", "'runs' is not an absolute path"),
        ("./runs", "'./runs' is not an absolute path"),
        ("ftp://host/runs", "'ftp://host/runs' has an unknown scheme 'ftp'"),
        ("javascript://x/y", "'javascript://x/y' has an unknown scheme 'javascript'"),
        ("/runs\n/x", "'/runs\\n/x' holds a control character"),
    ],
)
def test_a_malformed_workspace_is_one_line_naming_the_variable(value: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        workspace_root_of(HOME, {WORKSPACE_VARIABLE: value})
    assert str(raised.value) == f"PARITY_WORKSPACE: {problem}: {EXPECTED}"
    assert isinstance(raised.value, ParityError)


@pytest.mark.parametrize(
    ("value", "root"),
    [
        ("/srv/parity/runs", "/srv/parity/runs"),
        (" /srv/parity/runs ", "/srv/parity/runs"),
        ("~/runs", str(Path("~/runs").expanduser())),
        ("file:///srv/parity", "file:///srv/parity"),
        ("file://localhost/srv/parity", "file://localhost/srv/parity"),
        ("s3a://bucket/parity", "s3a://bucket/parity"),
        ("s3://bucket", "s3://bucket"),
        ("gs://bucket/runs", "gs://bucket/runs"),
        ("hdfs://nn:8020/parity", "hdfs://nn:8020/parity"),
        (
            "abfss://runs@account.dfs.core.windows.net/p",
            "abfss://runs@account.dfs.core.windows.net/p",
        ),
    ],
)
def test_usable_workspaces_are_kept(value: str, root: str) -> None:
    assert workspace_root_of(HOME, {WORKSPACE_VARIABLE: value}) == root


def test_unset_or_blank_is_the_homes_runs_folder() -> None:
    assert workspace_root_of(HOME, {}) == "/h/runs"
    assert workspace_root_of(HOME, {WORKSPACE_VARIABLE: "  "}) == "/h/runs"


def test_check_root_is_pure() -> None:
    with pytest.raises(ValueError, match=r"^'x' is not an absolute path: "):
        check_root("x")
