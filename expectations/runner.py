"""Running expectation suites on Spark DataFrames with Great Expectations 1.x.

    results = run_expectations(
        {"candidate": candidate_df, "reference": reference_df},
        [(suite, "candidate"), (suite, "reference"), (derived, "candidate")],
        docs_dir=Path(report_dir) / DATA_DOCS_DIR,
    )
    store.record_expectations(run_id, results)

One ephemeral GX context per call (nothing is written but the Data Docs): a Spark data
source with one DataFrame asset per side, each read whole (``add_batch_definition_whole_
dataframe``); one validation definition per (suite, side), run by one Checkpoint per side
under the Parity run's id as GX's run name. Results come back as the store's
``ExpectationRecord`` values, in suite order: ``observed`` is GX's observed value, or the
unexpected counts for expectations about column values; ``details`` the rest of GX's result.

An expectation GX cannot build (unknown type, bad arguments) or cannot evaluate (an error
while computing it) is an error naming the suite file and the expectation, not a failed
expectation: a suite that checks nothing must not look like a passing one.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from expectations.suites import Suite
from matcher.errors import InputError, SpecError
from matcher.serialize import json_safe
from matcher.store import ExpectationRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SITE = "parity"
DATA_SOURCE = "parity"
BATCH = "whole_output"
#: GX's result format: observed values and a few unexpected values, no value counts
RESULT_FORMAT: Literal["BASIC"] = "BASIC"
#: result keys that summarise an expectation about column values
_SUMMARY_KEYS = ("element_count", "unexpected_count", "unexpected_percent", "missing_count")


def run_expectations(
    outputs: Mapping[str, DataFrame],
    plan: Sequence[tuple[Suite, str]],
    docs_dir: Path | None = None,
    run_name: str | None = None,
) -> list[ExpectationRecord]:
    """Run each ``(suite, side)`` of ``plan`` on ``outputs[side]``; write the Data Docs
    site (``index.html`` and its pages) into ``docs_dir`` when given.

    Each side's suites run as one GX Checkpoint named ``parity <side>``, under the run name
    ``run_name`` (the Parity run's id, its slashes as spaces): the Data Docs list each
    validation under the run that made it, not as ``__none__``."""
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier

    context = _context(docs_dir)
    source = context.data_sources.add_spark(DATA_SOURCE)
    batches = {
        side: source.add_dataframe_asset(side).add_batch_definition_whole_dataframe(BATCH)
        for side in dict.fromkeys(side for _, side in plan)
    }
    gx_suites: dict[str, Any] = {}
    definitions: dict[tuple[str, str], Any] = {}
    for suite, side in plan:
        if suite.name not in gx_suites:
            gx_suites[suite.name] = context.suites.add(_gx_suite(suite))
        definitions[(suite.name, side)] = context.validation_definitions.add(
            gx.ValidationDefinition(
                name=f"{suite.name} on {side}", data=batches[side], suite=gx_suites[suite.name]
            )
        )
    # GX files validations under the run name, and its store refuses a path separator in it
    gx_name = None if run_name is None else run_name.replace("/", " ").replace("\\", " ")
    run_id = RunIdentifier(run_name=gx_name)
    results: dict[tuple[str, str], Any] = {}
    for side in batches:
        checkpoint = context.checkpoints.add(
            gx.Checkpoint(
                name=f"parity {side}",
                validation_definitions=[d for (_, s), d in definitions.items() if s == side],
                result_format=RESULT_FORMAT,
            )
        )
        ran = checkpoint.run(batch_parameters={"dataframe": outputs[side]}, run_id=run_id)
        for validation in ran.run_results.values():
            results[(validation.suite_name, side)] = validation
    records: list[ExpectationRecord] = []
    for suite, side in plan:
        records.extend(_records(suite, side, gx_suites[suite.name], results[(suite.name, side)]))
    if docs_dir is not None:
        _build_docs(context, docs_dir)
    return records


def _context(docs_dir: Path | None) -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    sites = {}
    if docs_dir is not None:
        sites[SITE] = {
            "class_name": "SiteBuilder",
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(docs_dir),
            },
        }
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites=sites,
        # Progress bars would fill a Spark task's log with carriage returns.
        progress_bars=ProgressBarsConfig(globally=False),
        analytics_enabled=False,
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _gx_suite(suite: Suite) -> Any:
    """The GX suite, every expectation built first: ``ExpectationSuite`` itself would log and
    drop one it cannot build."""
    import great_expectations as gx
    from great_expectations.exceptions.exceptions import GreatExpectationsError
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    built = []
    for i, expectation in enumerate(suite.expectations):
        try:
            built.append(ExpectationConfiguration(**expectation.to_gx()).to_domain_obj())
        except (GreatExpectationsError, ValueError, TypeError) as exc:
            raise SpecError(
                f"{suite.source}: expectations[{i}] ({expectation.type}): {_problem(exc)}"
            ) from exc
    return gx.ExpectationSuite(name=suite.name, expectations=built)


def _problem(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic (v1, inside GX): name the first bad argument
        first = errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    message = getattr(exc, "message", None) or str(exc)
    return " ".join(str(message).split())


def _records(suite: Suite, side: str, gx_suite: Any, result: Any) -> list[ExpectationRecord]:
    order = {expectation.id: i for i, expectation in enumerate(gx_suite.expectations)}
    ranked = sorted(result.results, key=lambda r: order.get(r.expectation_config.id, len(order)))
    records = []
    for position, outcome in enumerate(ranked):
        config = outcome.expectation_config
        index = order.get(config.id, position)
        info = outcome.exception_info or {}
        if info.get("raised_exception"):
            message = " ".join(str(info.get("exception_message") or "").split()[:60])
            raise InputError(
                f"{suite.source}: expectations[{index}] ({config.type}): could not be evaluated "
                f"on the {side} output: {message or 'an unknown error'}"
            )
        details = dict(outcome.result or {})
        observed = (
            details.pop("observed_value")
            if "observed_value" in details
            else {k: details[k] for k in _SUMMARY_KEYS if k in details} or None
        )
        records.append(
            ExpectationRecord(
                suite=suite.name,
                side=side,
                expectation_type=config.type,
                success=bool(outcome.success),
                kwargs=json_safe({k: v for k, v in config.kwargs.items() if k != "batch_id"}),
                observed=json_safe(observed),
                details=json_safe(details) or None,
            )
        )
    return records


def _build_docs(context: Any, docs_dir: Path) -> None:
    # A retried run writes its site afresh: the first attempt's pages must not linger in it.
    if docs_dir.is_dir():
        shutil.rmtree(docs_dir)
    context.build_data_docs(site_names=[SITE])
    index = docs_dir / "index.html"
    if not index.is_file():
        raise InputError(f"{docs_dir}: Great Expectations wrote no Data Docs index.html")
