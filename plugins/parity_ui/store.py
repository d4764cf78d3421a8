"""The Parity page's results store: opened at the first request, shared by every request.

    app.state.parity_store = LazyStore(url)     # create_app
    def route(store: StoreDep) -> ...           # a route's store

``url`` ``None``: the Airflow Connection ``parity_db`` (``PARITY_DB_CONN_ID``;
``parity.airflow.connections.results_db_url``) when Airflow has one, else the store's own
precedence (``PARITY_DB_URL``, ``parity.toml``, ``~/.parity/parity.db``). Opening it at the
first request keeps a store that is down from keeping Airflow from loading the plugin.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, FastAPI, Request

from matcher.store import Store, StoreError
from matcher.store.errors import redact


class LazyStore:
    """The store, opened (and migrated) at first use, then shared by every request."""

    def __init__(self, url: str | None) -> None:
        self._url = url
        self._store: Store | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Store:
        with self._lock:
            if self._store is None:
                self._store = Store.open(self._url or _connection_url())
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Close the store's connections when the app stops (when it runs on its own; a mounted
    app has no lifespan of its own, and the server's exit closes them)."""
    yield
    app.state.parity_store.close()


def _connection_url() -> str | None:
    """The Airflow Connection's database (``None``: none; the store's own precedence)."""
    from parity.airflow.connections import results_conn_id, results_db_url

    try:
        return results_db_url()
    except StoreError:
        raise
    except Exception as exc:  # a secrets backend that fails: the page says 503, the log why
        reason = redact(f"{type(exc).__name__}: {exc}")
        raise StoreError(
            f"cannot read the Airflow connection {results_conn_id()}: {reason}"
        ) from exc


def store_of(request: Request) -> Store:
    lazy: LazyStore = request.app.state.parity_store
    return lazy()


StoreDep = Annotated[Store, Depends(store_of)]
