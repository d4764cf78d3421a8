"""The repository: the one way Parity reads and writes the results database.

A job's life in the store::

    store = Store.open()                      # database_url(), migrated to the newest revision
    with store.running(RunStart(run_id, "taxi_distance", trigger="scheduled")):
        verdict = compare(...)
        store.record_run(run_id, RunOutcome.from_verdict(verdict))

``start_run`` (re)creates the run as ``running``; ``record_run`` writes the outcome and all its
evidence in one transaction; any exception inside ``running`` marks the run ``failed`` and
deletes its evidence, so a run is either complete or failed, never half-written. Every write
is keyed by ``run_id``: a retried task (same ``run_id``) replaces its previous attempt, and
processes starting the same run at once all succeed, the last one's attempt kept. A run id
names one kind of run: a start (or a failure with its start) of another kind under an
existing id is refused (``check_run_id``), so that a properties run cannot overwrite the
comparison a deploy gate rests on.

A running run holds a lease that its job renews (``heartbeat``, from a
``matcher.store.lease.Heartbeat`` thread); a job killed outright stops renewing it, and once it
expired readers show the run as failed, with the reason, without writing; ``expire_runs``
records that. Readers can open a store they cannot write (``Store.open_readonly``).

On SQLite, write transactions begin ``IMMEDIATE`` and so wait up to the busy timeout for
another writer (``matcher.store.engine``).

Methods take and return frozen records (``matcher.store.records``), never ORM objects, and
raise ``StoreError`` (with the URL's password masked) for anything the database refuses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from matcher.store import approval_store, rows
from matcher.store.config import database_url
from matcher.store.engine import WRITE_OPTION, create_store_engine, is_in_memory, sqlite_file
from matcher.store.errors import StoreError, UnknownRunError, describe, masked
from matcher.store.lease import lease_expired_reason, lease_seconds
from matcher.store.migrate import HEAD, current_revision, upgrade
from matcher.store.models import (
    ApprovalRow,
    ColumnStatRow,
    DivergenceRow,
    ExpectationResultRow,
    Run,
)
from matcher.store.records import (
    GATED_KINDS,
    ApprovalRecord,
    ExpectationRecord,
    ExpiredRun,
    RunOutcome,
    RunRecord,
    RunStart,
    RunSummary,
    require_aware,
    utc_now,
)

_CHILDREN = (DivergenceRow, ColumnStatRow, ExpectationResultRow)


class Store:
    """The results database at one URL. Cheap to construct: it connects on first use.

    SQLite and PostgreSQL are the supported backends (``matcher.store.engine``). PostgreSQL
    reads use ``REPEATABLE READ`` so that a run and its evidence come from one snapshot.
    """

    def __init__(self, url: str, *, readonly: bool = False) -> None:
        self._url = url
        self.url = masked(url)
        """The database URL with its password masked: safe to print."""
        try:
            self._engine = create_store_engine(url, readonly=readonly)
        except (ArgumentError, ImportError, ValueError) as exc:
            raise StoreError(f"cannot use database {self.url}: {describe(exc, url)}") from exc

    @classmethod
    def open(cls, url: str | None = None, *, migrate: bool = True) -> Store:
        """The store at ``database_url(url)``, migrated to the newest schema unless told not."""
        store = cls(database_url(url))
        if migrate:
            try:
                store.migrate()
            except BaseException:
                store.close()
                raise
        return store

    @classmethod
    def open_readonly(cls, url: str | None = None) -> Store:
        """The store at ``database_url(url)`` for reading only: never migrated, never written
        (a SQLite file is opened read-only), so that a read-only database or folder can be
        read. Refused, in one line, when the schema is not at this Parity's revision."""
        store = cls(database_url(url), readonly=True)
        try:
            store.check_revision()
        except BaseException:
            store.close()
            raise
        return store

    def check_revision(self) -> None:
        """Raise ``StoreError`` unless the schema is at this Parity's newest revision."""
        head = HEAD
        path = sqlite_file(self._url)
        if path is not None and not path.is_file():
            raise StoreError(
                f"there is no Parity results database at {self.url} (no such file): "
                "run `parity db upgrade` to create one"
            )
        with self._snapshot("cannot read the schema revision") as connection:
            current = current_revision(connection)
        if current is None:
            raise StoreError(
                f"there is no Parity results database at {self.url} (no schema): "
                "run `parity db upgrade` to create one"
            )
        if current != head:
            raise StoreError(
                f"the results database at {self.url} is at revision {current}, this Parity "
                f"needs {head}: run `parity db upgrade`"
            )

    def migrate(self) -> None:
        """Bring the schema to the newest revision (``alembic upgrade head``)."""
        if is_in_memory(self._url):
            # Another engine would open another, empty database: migrate on this one.
            with self._transaction("cannot migrate") as connection:
                upgrade(connection=connection)
        else:
            upgrade(self._url)

    def close(self) -> None:
        """Close the pooled connections; the store reconnects if used again."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    # -- writers ---------------------------------------------------------------------------

    def start_run(self, run: RunStart, *, lease: float | None = None) -> None:
        """Create the run as ``running``, replacing any previous attempt with this ``run_id``
        (its row and all its evidence, in the same transaction). ``lease``: seconds until
        readers show it failed unless renewed (default ``lease_seconds()``)."""
        now = utc_now()
        values = {
            **rows.NO_RESULTS,
            **rows.start_values(run),
            "status": "running",
            "started_at": run.started_at or now,
            "lease_expires_at": now + dt.timedelta(seconds=lease or lease_seconds()),
        }
        # A writer that does not state the overrides (or the spec hash) keeps the ones an
        # earlier start stored: the match job after the plan task.
        kept = [name for name in ("overrides", "spec_hash") if getattr(run, name) is None]
        replaced = _without(values, *kept)
        with self._transaction(f"cannot start run {run.run_id!r}") as connection:
            _upsert_run(connection, run.run_id, values, replaced, kind=run.kind)
            _delete_children(connection, run.run_id, *_CHILDREN)

    def check_run_id(self, run_id: str, kind: str) -> None:
        """Raise ``StoreError`` when a run ``run_id`` exists with another kind than ``kind``:
        a run id names one kind of run. What a command calls before its work, so that a
        clash is said before the work, not after it (``start_run`` refuses it too)."""
        with self._snapshot(f"cannot read run {run_id!r}") as connection:
            stored = connection.execute(
                select(Run.kind).where(Run.run_id == run_id)
            ).scalar_one_or_none()
        if stored is not None and stored != kind:
            raise StoreError(kind_clash(run_id, stored, kind))

    def heartbeat(self, run_id: str) -> bool:
        """Renew the lease of a running run (``matcher.store.lease``); ``False`` when the run
        is not running: completed, failed (``expire_runs`` too), or never started. A run whose
        lease lapsed but that no one recorded failed yet is renewed: its job was slow, not
        dead, and readers show it running again, as ``record_run`` would complete it."""
        lease = utc_now() + dt.timedelta(seconds=lease_seconds())
        with self._transaction(f"cannot renew the lease of run {run_id!r}") as connection:
            renewed = connection.execute(
                update(Run)
                .where(Run.run_id == run_id, Run.status == "running")
                .values(lease_expires_at=lease)
            )
            return renewed.rowcount > 0

    def expire_runs(self) -> list[ExpiredRun]:
        """Record as failed every running run whose lease expired (its job died without a
        word), with the reason readers already show; the runs it failed, by ``run_id``."""
        expired: list[ExpiredRun] = []
        with self._transaction("cannot expire runs") as connection:
            found = connection.execute(
                select(Run.run_id, Run.validation, Run.lease_expires_at)
                .where(rows.lease_expired(utc_now()))
                .order_by(Run.run_id)
                .with_for_update()
            ).all()
            for run_id, validation, lease in found:
                assert lease is not None  # selected for having expired
                reason = lease_expired_reason(lease)
                _update_run(connection, run_id, rows.failed_values(reason, lease))
                _delete_children(connection, run_id, *_CHILDREN)
                expired.append(ExpiredRun(run_id, validation, lease, reason))
        return expired

    def fail_if_running(self, run_id: str, error: str) -> bool:
        """Mark the run failed, like ``mark_failed``, only if it is still running: what a
        job's supervisor does when the job died (``False``: it ended on its own, or never
        started), so that the job's own outcome or error is never overwritten."""
        values = rows.failed_values(error, utc_now())
        with self._transaction(f"cannot mark run {run_id!r} failed") as connection:
            failed = connection.execute(
                update(Run).where(Run.run_id == run_id, Run.status == "running").values(values)
            )
            if failed.rowcount == 0:
                return False
            _delete_children(connection, run_id, *_CHILDREN)
            return True

    def record_run(self, run_id: str, outcome: RunOutcome) -> None:
        """Complete the run: verdict, counts, statistics and evidence, in one transaction.

        Divergences and column statistics replace the stored ones (and expectation results,
        when ``outcome.expectations`` is not ``None``), so recording twice never duplicates.
        """
        values = rows.outcome_values(outcome)
        values["finished_at"] = outcome.finished_at or utc_now()
        with self._transaction(f"cannot record run {run_id!r}") as connection:
            if not _update_run(connection, run_id, values):
                raise UnknownRunError(f"cannot record run {run_id!r}: it was never started")
            _delete_children(connection, run_id, DivergenceRow, ColumnStatRow)
            _insert(connection, DivergenceRow, rows.divergence_rows(run_id, outcome.divergences))
            _insert(connection, ColumnStatRow, rows.column_stat_rows(run_id, outcome.column_stats))
            if outcome.expectations is not None:
                _delete_children(connection, run_id, ExpectationResultRow)
                _insert(
                    connection,
                    ExpectationResultRow,
                    rows.expectation_rows(run_id, outcome.expectations),
                )

    def record_expectations(self, run_id: str, results: Sequence[ExpectationRecord]) -> None:
        """Replace the run's expectation results, in one transaction."""
        with self._transaction(f"cannot record expectations of run {run_id!r}") as connection:
            # Writing the row locks it: a concurrent start_run or mark_failed waits for us.
            if not _update_run(connection, run_id, {"run_id": run_id}):
                raise UnknownRunError(
                    f"cannot record expectations of run {run_id!r}: it was never started"
                )
            _delete_children(connection, run_id, ExpectationResultRow)
            _insert(connection, ExpectationResultRow, rows.expectation_rows(run_id, results))

    def set_gate(self, run_id: str, passed: bool, reason: str) -> None:
        """Store the gate's decision on a completed run (``matcher.gate.evaluate``), replacing
        any earlier one. A run that is running or failed has no verdict to gate: refused."""
        values = {"gate_passed": passed, "gate_reason": reason.replace("\x00", "\\x00")}
        action = f"cannot set the gate of run {run_id!r}"
        with self._transaction(action) as connection:
            updated = connection.execute(
                update(Run).where(Run.run_id == run_id, Run.status == "completed").values(values)
            )
            if updated.rowcount > 0:
                return
            status = connection.execute(
                select(Run.status).where(Run.run_id == run_id)
            ).scalar_one_or_none()
        if status is None:
            raise UnknownRunError(f"{action}: there is no such run")
        raise StoreError(f"{action}: it is {status}, not completed")

    def set_stat(self, run_id: str, name: str, value: Any) -> None:
        """Set one of a stored run's statistics (``stats[name]``), keeping the others: what a
        later step adds to a finished run (``parity minimize``'s result). The run's row is
        read and written in one transaction; an unknown run is an ``UnknownRunError``."""
        action = f"cannot update the statistics of run {run_id!r}"
        with self._transaction(action) as connection:
            if not _update_run(connection, run_id, {"run_id": run_id}):  # locks the row
                raise UnknownRunError(f"{action}: there is no such run")
            stats = connection.execute(
                select(Run.stats).where(Run.run_id == run_id)
            ).scalar_one_or_none()
            updated = {**(stats if isinstance(stats, dict) else {}), name: value}
            _update_run(connection, run_id, {"stats": updated})

    def mark_failed(self, run_id: str, error: str, *, start: RunStart | None = None) -> None:
        """Mark the run ``failed`` (verdict ``error``, gate closed) and delete its evidence.

        A run that was never started is created as failed, from ``start`` when given (else
        with validation ``"(unknown)"``): a task that died early still leaves a trace.
        """
        now = utc_now()
        values = rows.failed_values(error, now)
        run = start or RunStart(run_id, "(unknown)", trigger="unknown")
        started = {**rows.start_values(run), "started_at": run.started_at or now}
        kind = None if start is None else start.kind  # without a start: whatever it is
        with self._transaction(f"cannot mark run {run_id!r} failed") as connection:
            _upsert_run(connection, run_id, {**started, **values}, values, kind=kind)
            _delete_children(connection, run_id, *_CHILDREN)

    @contextmanager
    def running(self, run: RunStart) -> Iterator[None]:
        """Start the run; if the block raises anything, mark it failed and re-raise.

        Record the outcome last inside the block: an exception after ``record_run`` still
        marks the run failed and deletes what was recorded. A block that ends normally leaves
        the run as it made it (``completed`` if it recorded an outcome).
        """
        self.start_run(run)
        try:
            yield
        except BaseException as exc:
            try:
                self.mark_failed(run.run_id, one_line(exc), start=run)
            except StoreError as store_error:
                exc.add_note(f"and the run could not be marked failed: {store_error}")
            raise

    # -- readers ---------------------------------------------------------------------------

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run with its documents and evidence, or ``None`` when there is no such run."""
        with self._snapshot(f"cannot read run {run_id!r}") as connection:
            return _read_run(connection, run_id, utc_now())

    def list_runs(
        self,
        validation: str | None = None,
        verdict: str | None = None,
        trigger: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        limit: int = 100,
        offset: int = 0,
        *,
        status: str | None = None,
    ) -> list[RunSummary]:
        """Runs, newest first (by start time), filtered; ``since`` is inclusive, ``until``
        exclusive."""
        require_aware("since", since)
        require_aware("until", until)
        if limit < 0 or offset < 0:
            raise StoreError(f"limit and offset must be >= 0, got {limit} and {offset}")
        now = utc_now()
        query = rows.select_summaries()
        for column, wanted in (
            (Run.validation, validation),
            (rows.verdict_as_read(now), verdict),
            (Run.trigger, trigger),
            (rows.status_as_read(now), status),
        ):
            if wanted is not None:
                query = query.where(column == wanted)
        if since is not None:
            query = query.where(Run.started_at >= since)
        if until is not None:
            query = query.where(Run.started_at < until)
        query = query.order_by(Run.started_at.desc(), Run.run_id.desc())
        with self._snapshot("cannot list runs") as connection:
            found = connection.execute(query.limit(limit).offset(offset)).mappings()
            return [RunSummary(**rows.summary_fields(row, now)) for row in found]

    def latest_run(
        self,
        validation: str,
        candidate_version: str | None = None,
        completed_only: bool = True,
    ) -> RunSummary | None:
        """The validation's newest run (of ``candidate_version``, when given): the last to
        finish among completed runs, or the last to start when ``completed_only`` is off.

        Only runs a gate can rest on (``GATED_KINDS``): a properties run stored under the
        validation's name (its spec's ``properties:``) has no verdict and is never it."""
        now = utc_now()
        query = rows.select_summaries().where(
            Run.validation == validation, Run.kind.in_(GATED_KINDS)
        )
        if candidate_version is not None:
            query = query.where(Run.candidate_version == candidate_version)
        if completed_only:
            query = query.where(Run.status == "completed").order_by(Run.finished_at.desc())
        else:
            query = query.order_by(Run.started_at.desc())
        query = query.order_by(Run.run_id.desc()).limit(1)
        with self._snapshot(f"cannot read the latest run of {validation!r}") as connection:
            row = connection.execute(query).mappings().first()
        return None if row is None else RunSummary(**rows.summary_fields(row, now))

    def validations(self) -> list[str]:
        """Every validation name with at least one run, sorted."""
        query = select(Run.validation).distinct().order_by(Run.validation)
        with self._snapshot("cannot list validations") as connection:
            return list(connection.execute(query).scalars())

    # -- approvals (matcher.approvals; append-only) -------------------------------------------

    def approve(self, run_id: str, *, actor: str, reason: str) -> ApprovalRecord:
        """Record that ``actor`` accepts the divergences of the completed comparison
        ``run_id`` (its ``divergence_signature``), and why. Refused (``StoreError``, one
        line): no such run, not completed, not a comparison, a verdict other than
        divergent or noisy, an empty name or reason, an active approval of this run with
        the same signature."""
        approval_store.check_words(f"cannot approve run {run_id}", actor, reason)
        with self._transaction(f"cannot approve run {run_id!r}") as connection:
            # Lock the run: a concurrent approve of it waits, then sees this one.
            connection.execute(
                select(Run.run_id).where(Run.run_id == run_id).with_for_update()
            ).first()
            run = _read_run(connection, run_id, utc_now())
            return approval_store.approve(
                connection, run_id, run, actor=actor, reason=reason, now=utc_now()
            )

    def revoke(self, run_id: str, *, actor: str, reason: str) -> ApprovalRecord:
        """Record that ``actor`` revokes the active approval made on run ``run_id`` (the
        newest, if the run was approved again after a retry changed it); the approval
        stays in the trail. ``StoreError`` when the run has no active approval."""
        approval_store.check_words(f"cannot revoke the approval of run {run_id}", actor, reason)
        with self._transaction(f"cannot revoke the approval of run {run_id!r}") as connection:
            connection.execute(
                select(Run.run_id).where(Run.run_id == run_id).with_for_update()
            ).first()
            return approval_store.revoke(
                connection, run_id, actor=actor, reason=reason, now=utc_now()
            )

    def approvals(
        self,
        *,
        validation: str | None = None,
        candidate_version: str | None = None,
        run_id: str | None = None,
    ) -> list[ApprovalRecord]:
        """The trail (approvals and revocations), oldest first, filtered by what is given."""
        query = approval_store.all_query()
        for column, wanted in (
            (ApprovalRow.validation, validation),
            (ApprovalRow.candidate_version, candidate_version),
            (ApprovalRow.run_id, run_id),
        ):
            if wanted is not None:
                query = query.where(column == wanted)
        with self._snapshot("cannot read approvals") as connection:
            return approval_store.read(connection, query.order_by(*approval_store.oldest_first()))

    def active_approvals(
        self, validation: str, candidate_version: str | None
    ) -> list[ApprovalRecord]:
        """The approvals of ``validation``'s ``candidate_version`` (``None``: runs without
        one) that no revocation ended, newest first."""
        query = approval_store.active_query().where(
            ApprovalRow.validation == validation,
            approval_store.same_version(candidate_version),
        )
        with self._snapshot(f"cannot read the approvals of {validation!r}") as connection:
            return approval_store.read(connection, query.order_by(*approval_store.newest_first()))

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def _transaction(self, action: str) -> Iterator[Connection]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        try:
            with self._engine.connect() as connection:
                connection.execution_options(**{WRITE_OPTION: True})
                with connection.begin():
                    yield connection
        except SQLAlchemyError as exc:
            raise StoreError(f"{action}: {describe(exc, self._url)} ({self.url})") from exc

    @contextmanager
    def _snapshot(self, action: str) -> Iterator[Connection]:
        """One read transaction: every query in it sees the same committed state."""
        try:
            with self._engine.connect() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execution_options(isolation_level="REPEATABLE READ")
                with connection.begin():
                    yield connection
        except SQLAlchemyError as exc:
            raise StoreError(f"{action}: {describe(exc, self._url)} ({self.url})") from exc


def one_line(exc: BaseException) -> str:
    """``ValueError: bad row 3``: an exception as the one line a failed run keeps."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _read_run(connection: Connection, run_id: str, now: dt.datetime) -> RunRecord | None:
    """The run with its documents and evidence, read on ``connection``."""
    run = connection.execute(select(Run.__table__).where(Run.run_id == run_id)).first()
    if run is None:
        return None
    children = {
        table: connection.execute(
            select(table.__table__).where(table.run_id == run_id).order_by(order)
        )
        .mappings()
        .all()
        for table, order in (
            (DivergenceRow, DivergenceRow.ordinal),
            (ColumnStatRow, ColumnStatRow.column_name),
            (ExpectationResultRow, ExpectationResultRow.ordinal),
        )
    }
    document = run._mapping
    expectations = tuple(map(rows.expectation_record, children[ExpectationResultRow]))
    return RunRecord(
        **rows.summary_fields(document, now, expectations),
        spec=document["spec"],
        stats=document["stats"],
        noise=document["noise"],
        divergences=tuple(map(rows.divergence_record, children[DivergenceRow])),
        column_stats=tuple(map(rows.column_stat_record, children[ColumnStatRow])),
        expectations=expectations,
    )


def _update_run(connection: Connection, run_id: str, values: dict[str, Any]) -> bool:
    """Update the run's row; ``False`` when there is no such run."""
    result = connection.execute(update(Run).where(Run.run_id == run_id).values(values))
    return result.rowcount > 0


def _upsert_run(
    connection: Connection,
    run_id: str,
    values: dict[str, Any],
    on_conflict: dict[str, Any],
    *,
    kind: str | None,
) -> None:
    """Insert the run with ``values``, or, when it exists, set ``on_conflict`` on it: in one
    statement, so that processes creating the same run at once all succeed (the last wins)
    instead of all but one failing on the primary key. ``kind``: the existing run must be of
    this kind (else nothing is written and ``StoreError`` says so); ``None``: any kind."""
    dialect = connection.dialect.name
    if dialect not in _UPSERTS:
        raise StoreError(f"the results store runs on SQLite or PostgreSQL, not {dialect}")
    statement = _UPSERTS[dialect](Run).values(run_id=run_id, **values)
    same_kind = None if kind is None else Run.__table__.c.kind == kind
    # RETURNING, not the row count: psycopg gives -1 for an upsert's.
    written = connection.execute(
        statement.on_conflict_do_update(
            index_elements=[Run.run_id], set_=on_conflict, where=same_kind
        ).returning(Run.run_id)
    ).first()
    if written is None:
        stored = connection.execute(select(Run.kind).where(Run.run_id == run_id)).scalar_one()
        raise StoreError(kind_clash(run_id, stored, kind or stored))


def kind_clash(run_id: str, stored: str, kind: str) -> str:
    """Why a run of ``kind`` may not take the id of a stored run of another kind."""
    return f"run {run_id} is a {stored} run; a {kind} run cannot replace it"


def _without(values: dict[str, Any], *names: str) -> dict[str, Any]:
    return {key: value for key, value in values.items() if key not in names}


_UPSERTS: dict[str, Callable[..., Any]] = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}


def _delete_children(connection: Connection, run_id: str, *tables: type[Any]) -> None:
    for table in tables:
        connection.execute(delete(table).where(table.run_id == run_id))


def _insert(connection: Connection, table: type[Any], values: list[dict[str, Any]]) -> None:
    if values:
        connection.execute(insert(table), values)
