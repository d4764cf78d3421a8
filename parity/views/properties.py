"""A properties run (kind ``properties``, ``parity properties``) as the report shows it, and
the spec lines a stored one contradicts.

A properties run keeps, in its statistics, the command's JSON report under ``properties``
(``parity.properties.outcomes.Report.to_dict``: per property ``applicable``, ``found``,
``evidence``, ``tests``, ``seconds``, and ``class``, ``key``, ``inferred``...), and the spec
sections the findings imply (``parity.properties.suggest``) as text (``suggested_spec``)
and as values (``suggested``: ``dependence``, ``equality``, ``noise``). It has no verdict:
it judges no candidate, its findings are its properties.

The properties are shown in the document's own order: the runner writes them in the order of
``parity.properties.properties.PROPERTIES``, the one list of their names, and the store's
JSON columns keep an object's keys in order. That list is not imported here: its module
runs operators on Spark, which this package must not import (the ``views`` import contract;
the plugin reads through it).

``spec_warnings`` is what ``parity compare`` and the DAG's ``properties`` task print: for each
operator of the spec's ``properties:`` with a stored run, one line when the spec's
``dependence`` lets the outputs reorder more than the operator's properties allow, or its
``noise`` runs the reference once although the operator was found non-deterministic. A spec
stricter than the suggestion (``ordered`` for a commutative operator) is not contradicted:
it may report divergences that do not matter, never miss one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from matcher.serialize import json_safe
from parity.views.printable import printable

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported by whoever opens it
    from matcher.spec import Spec
    from matcher.store import RunRecord, Store

#: what evidence makes definite, and what its absence leaves possible
WORDS = {
    "nondeterminism": ("definitely non-deterministic", "potentially deterministic"),
    "blocking": ("potentially blocking", "potentially non-blocking"),
    "statefulness": ("definitely stateful", "potentially stateless"),
    "non_commutativity": ("definitely non-commutative", "potentially commutative"),
    "partition_interference": (
        "definitely partition-interfering",
        "potentially partition-isolated",
    ),
}
#: how much reordering a dependence form lets through: a higher rank keeps more order
RANK = {"unordered": 0, "key": 1, "ordered": 2}
#: stored runs looked at per validation name when finding an operator's latest
LOOKBACK = 50


def properties_document(record: RunRecord) -> dict[str, Any] | None:
    """The run's report as ``parity properties --json`` printed it (``None``: not a
    properties run, or one that failed before it had a report)."""
    from matcher.store.records import PROPERTIES

    if record.kind != PROPERTIES or not isinstance(record.stats, Mapping):
        return None
    document = record.stats.get("properties")
    return dict(json_safe(document)) if isinstance(document, Mapping) else None


def property_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per property: its name, what was found, the evidence input (shrunk), and
    the selectivity class, key and test counts where they apply."""
    rows = []
    for name, outcome in _outcomes(document):
        evidence = outcome.get("evidence")
        # an inferred property's evidence is another's (blocking's for statefulness)
        shown: Mapping[str, Any] = (
            evidence if isinstance(evidence, Mapping) and "inferred" not in outcome else {}
        )
        rows.append(
            {
                "name": name,
                "found": outcome.get("found"),
                "state": describe(name, outcome),
                "class": outcome.get("class"),
                "key": outcome.get("key"),
                "tests": outcome.get("tests"),
                "seconds": outcome.get("seconds"),
                "evidence": _compact(shown["input"]) if "input" in shown else None,
                "shrunk_from": shown.get("shrunk_from"),
                "minimal": shown.get("minimal"),
            }
        )
    return rows


def describe(name: str, outcome: Mapping[str, Any]) -> str:
    """``definitely stateful``, ``potentially commutative``, ``not applicable: ...``; a
    property whose tests the time budget cut short says so (``partial: ...``)."""
    if outcome.get("applicable") is False:
        return f"not applicable: {outcome.get('reason')}"
    if "undetermined" in outcome:
        return f"undetermined: {outcome['undetermined']}"
    if "inferred" in outcome:
        word = "stateful" if outcome.get("found") else "commutative / partition-isolated"
        return f"{word} (inferred: {outcome['inferred']})"
    partial = f" (partial: {outcome['partial']})" if "partial" in outcome else ""
    if name == "selectivity":
        kind = outcome.get("class")
        return f"{'definitely' if kind == 'prolific' else 'potentially'} {kind}{partial}"
    yes, no = WORDS.get(name, (f"{name} found", f"{name} not found"))
    return (yes if outcome.get("found") else no) + partial


def _compact(value: Any) -> str:
    return json.dumps(json_safe(value), ensure_ascii=False, separators=(", ", ": "))


# -- the spec against a stored run -----------------------------------------------------------


def latest_property_run(store: Store, operator: str, names: Sequence[str]) -> RunRecord | None:
    """The newest completed properties run of ``operator`` stored under one of ``names``
    (the spec's validation name, the operator's own)."""
    from matcher.store.records import PROPERTIES

    found: list[tuple[Any, str]] = []
    for name in dict.fromkeys(names):
        for run in store.list_runs(validation=name, status="completed", limit=LOOKBACK):
            if run.kind == PROPERTIES:
                found.append((run.finished_at or run.started_at, run.run_id))
    for _, run_id in sorted(found, reverse=True):
        record = store.get_run(run_id)
        document = None if record is None else properties_document(record)
        if document is not None and document.get("operator") == operator:
            return record
    return None


def spec_warnings(spec: Spec, store: Store) -> list[str]:
    """One warning line per operator of the spec's ``properties:`` whose latest stored run
    the spec contradicts (none for an operator never tested)."""
    lines = []
    for entry in spec.properties:
        record = latest_property_run(store, entry.operator, (spec.name, entry.operator))
        if record is None:
            continue
        changes = contradictions(spec, record)
        if changes:
            lines.append(  # a run id is stored text: shown, never acted on, by a terminal
                printable(
                    f"parity: warning: {spec.source}: properties: {entry.operator}: run "
                    f"{record.run_id} {'; '.join(changes)}"
                )
            )
    return lines


def contradictions(spec: Spec, record: RunRecord) -> list[str]:
    """What to change in the spec so that it agrees with the stored run's suggestion
    (``parity properties --suggest-spec``), each with why; empty when it agrees."""
    stats = record.stats if isinstance(record.stats, Mapping) else {}
    suggested = stats.get("suggested")
    document = properties_document(record) or {}
    if not isinstance(suggested, Mapping):
        return []
    found = _found(document)
    changes = []
    noise = suggested.get("noise")
    runs = noise.get("reference_runs") if isinstance(noise, Mapping) else None
    if isinstance(runs, int) and runs > spec.noise.reference_runs:
        changes.append(
            f"found it non-deterministic, but noise.reference_runs is "
            f"{spec.noise.reference_runs}: set noise.reference_runs: {runs}"
        )
    wanted = _dependence(suggested.get("dependence"))
    if wanted is not None and _looser(spec, wanted):
        form, key = wanted
        shown = f"{{key: [{', '.join(key)}]}}" if form == "key" else form
        why = ", ".join(found) if found else "no property found"
        changes.append(
            f"found {why}, which needs at least dependence {shown}, but the spec's is "
            f"{_spec_dependence(spec)}: set dependence: {shown}"
        )
    return changes


def _outcomes(document: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each property's name and outcome, in the order the report lists them."""
    properties = document.get("properties")
    if not isinstance(properties, Mapping):
        return []
    return [
        (str(name), outcome) for name, outcome in properties.items() if isinstance(outcome, Mapping)
    ]


def _found(document: Mapping[str, Any]) -> list[str]:
    return [
        name.replace("_", "-")
        for name, outcome in _outcomes(document)
        if outcome.get("found") and name != "selectivity"
    ]


def _dependence(value: Any) -> tuple[str, tuple[str, ...]] | None:
    """The suggested dependence as ``(form, key)``: ``unordered``, ``ordered``, a key."""
    if value in ("unordered", "ordered"):
        return str(value), ()
    if isinstance(value, Mapping) and isinstance(value.get("key"), list):
        return "key", tuple(str(column) for column in value["key"])
    return None


def _looser(spec: Spec, wanted: tuple[str, tuple[str, ...]]) -> bool:
    """The spec's dependence keeps less order than ``wanted``: it could call outputs
    equivalent whose difference the operator's properties say matters. Forms that cannot be
    ranked (typed, punctuation, predicate) are the user's own reasoning: never flagged."""
    form = spec.dependence.form
    if form not in RANK:
        return False
    if RANK[form] != RANK[wanted[0]]:
        return RANK[form] < RANK[wanted[0]]
    if form != "key":
        return False
    # Same form: a key of the spec's that is not among the suggested one's columns splits
    # what must stay ordered into groups the matcher may interleave.
    return not set(spec.dependence.key or ()) <= set(wanted[1])


def _spec_dependence(spec: Spec) -> str:
    if spec.dependence.form == "key":
        return f"{{key: [{', '.join(spec.dependence.key or ())}]}}"
    return spec.dependence.form
