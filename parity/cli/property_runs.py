"""A ``parity properties`` report stored as a run of kind ``properties``.

The run has no verdict (``matcher.store.RunOutcome``): it judges no candidate, its findings
are its properties. Its statistics keep:

* ``properties``: the report exactly as ``parity properties --json`` prints it;
* ``suggested_spec``: the spec sections the findings imply (``--suggest-spec``'s text), and
  ``suggested``: the same parsed (``dependence``, ``equality``, ``noise``), which
  ``parity.views.properties.spec_warnings`` holds a spec's sections against;
* ``found``: the names of the properties found.

Its name (``validation``) is the operator's ``module:function``, or the spec's validation
name when the DAG of a spec with ``properties:`` re-tests it. The run is written when the
testing is over, started and recorded by ``Store.running`` (a failure while recording marks
it failed): never half written. Here and not in ``parity.properties``, which may not import
the store.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from matcher.store import RunOutcome, RunStart, Store, database_url
from matcher.store.records import PROPERTIES
from matcher.store.run_ids import adhoc_run_id
from parity.properties.runner import Report
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


def property_start(
    report: Report, storage: Storage, samples: Sequence[str], *, run_id: str
) -> RunStart:
    """The run as it begins: named after the operator (or the spec), its samples as its
    slice, how it was tested as its spec document."""
    return RunStart(
        run_id=run_id,
        validation=storage.validation or report.operator,
        trigger=storage.trigger,
        kind=PROPERTIES,
        started_at=storage.started_at,
        slice={"sample": samples[0], **({"sample_right": samples[1]} if samples[1:] else {})},
        spec={
            "file": storage.spec_file,
            "operator": report.operator,
            "shape": report.shape,
            "technique": report.technique,
            "budget": report.budget,
            "seed": report.seed,
            "key": list(report.keys),
        },
        dag_id=storage.dag_id,
        dag_run_id=storage.dag_run_id,
        engine="spark" if report.shape == "dataframe" else "core",
    )


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
    outcome = property_outcome(report, suggest_spec(report, output_columns))
    with Store.open(storage.url()) as store, store.running(start):
        store.record_run(run_id, outcome)
    return run_id
