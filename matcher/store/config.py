"""Where the results database is: one function, ``database_url()``.

Precedence, first match wins:

1. the ``explicit`` argument (``parity --db URL``, ``Store.open(url)``);
2. the ``PARITY_DB_URL`` environment variable;
3. a TOML config file: the one ``PARITY_CONFIG`` names (it must exist), else ``./parity.toml``
   in the current directory when present; its ``[store] url = "..."`` key, when set;
4. the embedded default, a SQLite file: ``sqlite:///$PARITY_HOME/parity.db``, where
   ``PARITY_HOME`` defaults to ``~/.parity`` (the directory is created).

An empty environment variable counts as unset. Any SQLAlchemy URL works; SQLite and
PostgreSQL (``postgresql+psycopg://user:password@host:5432/parity``) are the tested ones.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from matcher.store.errors import StoreError

URL_VARIABLE = "PARITY_DB_URL"
CONFIG_VARIABLE = "PARITY_CONFIG"
HOME_VARIABLE = "PARITY_HOME"
CONFIG_FILE = "parity.toml"
DEFAULT_HOME = "~/.parity"
DATABASE_FILE = "parity.db"
#: the Great Expectations Data Docs site, under a run's report folder (``RunRecord.report_path``)
DATA_DOCS_DIR = "data_docs"


def database_url(explicit: str | None = None, *, home: Path | None = None) -> str:
    """The results database's SQLAlchemy URL, by the precedence in this module's docstring;
    ``home`` replaces ``PARITY_HOME`` for the embedded default (a command's ``--home``)."""
    if explicit:
        return explicit
    from_env = os.environ.get(URL_VARIABLE)
    if from_env:
        return from_env
    from_file = _url_from_config_file()
    if from_file:
        return from_file
    return default_url(home)


def default_url(home: Path | None = None) -> str:
    """The embedded SQLite database under ``home``, else ``PARITY_HOME`` (default
    ``~/.parity``)."""
    home = (home or Path(os.environ.get(HOME_VARIABLE) or DEFAULT_HOME)).expanduser()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the Parity home directory {home}: {exc}") from exc
    return f"sqlite:///{home.resolve() / DATABASE_FILE}"


def _url_from_config_file() -> str | None:
    named = os.environ.get(CONFIG_VARIABLE)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise StoreError(f"{CONFIG_VARIABLE}={named}: no such config file")
    else:
        path = Path(CONFIG_FILE)
        if not path.is_file():
            return None
    return _read_store_url(path)


def _read_store_url(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise StoreError(f"{path}: cannot read the config file: {exc}") from exc
    store = document.get("store")
    if store is None:
        return None
    if not isinstance(store, Mapping):
        raise StoreError(f"{path}: store: expected a table, got {type(store).__name__}")
    url = store.get("url")
    if url is None:
        return None
    if not isinstance(url, str) or not url:
        raise StoreError(f"{path}: store.url: expected a non-empty string, got {url!r}")
    return url
