"""A ``parity properties`` report stored as a run of kind ``properties``.

The run has no verdict (``matcher.store.RunOutcome``): it judges no candidate, its findings
are its properties. Its statistics keep:

* ``properties``: the report exactly as ``parity properties --json`` prints it;
* ``suggested_spec``: the spec sections the findings imply (``--suggest-spec``'s text), and
  ``suggested``: the same parsed (``dependence``, ``equality``, ``noise``), which
  ``parity.views.properties.spec_warnings`` holds a spec's sections against;
* ``found``: the names of the properties found.

Its name (``validation``) is the operator's ``module:function``, or the spec's validation
name when the DAG of a spec with ``properties:`` re-tests it. The run is stored from before
its first test to its end (``PropertyRun``): the store is opened, the run id checked (one
that names a comparison or recovery run is refused: a properties run never replaces one)
and the record's lengths checked before the operator is loaded; it is started as
``running`` under a lease renewed by a heartbeat, so that a killed ``parity properties``
reads failed once the lease expires; any error while testing (the operator's own, an
interrupt) marks it failed; the outcome is recorded last. Here and not in
``parity.properties``, which may not import the store.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from matcher.errors import InputError
from matcher.store import Heartbeat, RunOutcome, RunStart, Store, database_url
from matcher.store.records import PROPERTIES
from matcher.store.run_ids import adhoc_run_id
from parity.properties.outcomes import Report
from parity.properties.suggest import suggest_spec


@dataclass(frozen=True, slots=True)
class Storage:
    """Where and under which names a report is stored (the command's options)."""

    db: str | None = None
    home: Path | None = None
    run_id: str | None = None
    validation: str | None = None
    trigger: str = "cli"
    dag_id: str | None = None
    dag_run_id: str | None = None
    spec_file: str | None = None
    #: when the testing began (the run's duration is the testing's, not the storing's)
    started_at: dt.datetime | None = None

    def url(self) -> str:
        """``--db``, else the store's own precedence with ``--home`` as ``PARITY_HOME``."""
        return database_url(self.db, home=self.home)


@dataclass(frozen=True, slots=True)
class Testing:
    """How an operator is tested: what the run's spec document records."""

    operator: str
    shape: str | None
    technique: str
    budget: int
    seed: int
    keys: tuple[str, ...]
    #: the time budget, seconds (None: none)
    budget_seconds: float | None = None

    @classmethod
    def of(cls, report: Report) -> Testing:
        return cls(
            report.operator,
            report.shape,
            report.technique,
            report.budget,
            report.seed,
            tuple(report.keys),
            report.budget_seconds,
        )


def property_start(
    report: Report, storage: Storage, samples: Sequence[str], *, run_id: str
) -> RunStart:
    """The run of ``report`` as it began (``testing_start``)."""
    return testing_start(Testing.of(report), storage, samples, run_id=run_id)


def testing_start(
    testing: Testing, storage: Storage, samples: Sequence[str], *, run_id: str
) -> RunStart:
    """The run as it begins: named after the operator (or the spec), its samples as its
    slice, how it is tested as its spec document. A value the store cannot keep (a run id
    or name too long for either database) is an ``InputError`` naming it, before any test."""
    try:
        return RunStart(
            run_id=run_id,
            validation=storage.validation or testing.operator,
            trigger=storage.trigger,
            kind=PROPERTIES,
            started_at=storage.started_at,
            slice={"sample": samples[0], **({"sample_right": samples[1]} if samples[1:] else {})},
            spec={
                "file": storage.spec_file,
                "operator": testing.operator,
                "shape": testing.shape,
                "technique": testing.technique,
                "budget": testing.budget,
                "budget_seconds": testing.budget_seconds,
                "seed": testing.seed,
                "key": list(testing.keys),
            },
            dag_id=storage.dag_id,
            dag_run_id=storage.dag_run_id,
            engine="spark" if testing.shape == "dataframe" else "core",
        )
    except ValueError as exc:  # the store's length checks (a ParityError already passes)
        raise InputError(f"cannot store the run: {' '.join(str(exc).split())}") from exc


def property_outcome(report: Report, suggested: str) -> RunOutcome:
    """The report as a stored outcome: no verdict, no divergences; the findings in the
    statistics (the module docstring lists them)."""
    document = json.loads(json.dumps(report.to_dict(), ensure_ascii=False, default=str))
    parsed = yaml.safe_load(suggested)
    return RunOutcome(
        verdict=None,
        stats={
            "properties": document,
            "found": [n for n, o in document["properties"].items() if o.get("found")],
            "suggested_spec": suggested,
            "suggested": parsed if isinstance(parsed, dict) else None,
            "seconds": document["seconds"],
        },
    )


def store_report(
    report: Report,
    storage: Storage,
    samples: Sequence[str],
    output_columns: Sequence[str] | None,
) -> str:
    """Store the report as a completed properties run; its run id."""
    run_id = storage.run_id or adhoc_run_id("properties")
    start = property_start(report, storage, samples, run_id=run_id)
    with PropertyRun.opened(storage, start) as run, run.running(start):
        run.record(report, output_columns)
    return run_id


@dataclass(frozen=True, slots=True)
class PropertyRun:
    """A properties run held in the store while its operator is tested (the module
    docstring); ``store`` None (``--no-store``): nothing is stored."""

    store: Store | None
    run_id: str

    @classmethod
    @contextmanager
    def opened(cls, storage: Storage | None, start: RunStart | None) -> Iterator[PropertyRun]:
        """Open the store and check ``start``'s run id may be a properties run's: the
        checks that must fail before any test runs. ``storage`` None: a run stored nowhere."""
        if storage is None or start is None:
            yield cls(None, "")
            return
        with Store.open(storage.url()) as store:
            store.check_run_id(start.run_id, PROPERTIES)
            yield cls(store, start.run_id)

    @contextmanager
    def running(self, start: RunStart | None) -> Iterator[None]:
        """The run started as ``running`` (``start``: with the shape the operator was loaded
        as) under a renewed lease; anything the block raises marks it failed."""
        if self.store is None or start is None:
            yield
            return
        with self.store.running(start), Heartbeat(self.store, self.run_id):
            yield

    def record(self, report: Report, output_columns: Sequence[str] | None) -> None:
        """Complete the run with the report (last, inside ``running``)."""
        if self.store is not None:
            outcome = property_outcome(report, suggest_spec(report, output_columns))
            self.store.record_run(self.run_id, outcome)
