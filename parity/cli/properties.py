"""``parity properties``: test an operator for six properties (``parity.properties``).

    parity properties MODULE:FUNCTION --sample SAMPLE [--sample-right SAMPLE] [--key COL ...]
                      [--shape dataframe|stream|pair] [--technique T] [--budget N] [--seed S]
                      [--budget-seconds SECONDS] [--evidence-dir DIR]
                      [--blocking-limit SECONDS] [--json] [--suggest-spec]
                      [--db URL] [--home DIR] [--no-store] [--run-id ID] [--validation NAME]
                      [--progress | --no-progress]

SAMPLE (JSON lines, CSV or Parquet) is the operator's input; for ``--shape pair`` it is
port 0's (left) input and ``--sample-right`` port 1's (right; without it, both ports take
rows of SAMPLE's schema). The run is stored as kind ``properties`` (``parity.cli.property_runs``;
``--no-store``: not) from before its first test, its id printed on stderr as it starts and
when it is stored; on a terminal, stderr also shows which step runs and for how long
(``parity.cli.progress``: the operator's steps, and each property as its tests start,
``property 4 of 6: statefulness``). Exit 0 when it ran, whatever it found; 2 on bad input
(an option out of range, a store that cannot be opened, a run id of another kind of run,
a name too long for the store: all before any test) and when the operator fails a test
(raises, ``sys.exit()`` included, or returns what its shape does not allow: one line naming
it, the run stored failed, nothing suggested).

``--budget-seconds`` (default ``DEFAULT_BUDGET_SECONDS``; 0: none) bounds the testing's
time, as the paper's technique time limit does (``parity.properties.runner``): when it runs
out, testing stops with what was found. That is not an error: the exit code is 0 as for any
run, the properties found stand, and the report (text, ``--json``'s ``time_budget``, and
one warning line on stderr) says which properties were tested in full, which partially
(no evidence in the tests there was time for: "potentially", on fewer tests) and which not
at all (undetermined: the suggested spec keeps every event's place for them)::

    nondeterminism          potentially deterministic (30 tests, 0.01 s)
    statefulness            definitely stateful (1 test, 0.00 s)
      evidence: firings 0 and 2 of the same input differ
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import sys
from pathlib import Path
from typing import Any, TextIO

from matcher.arguments import MAX_COUNT, whole_number
from matcher.store.run_ids import adhoc_run_id
from parity.cli.commands import SUMMARY
from parity.cli.progress import Progress, add_progress_option
from parity.cli.property_runs import PropertyRun, Storage, Testing, testing_start
from parity.properties.generation import CHOICES, evidence_path, parse_technique, save_evidence
from parity.properties.loading import Subject, load_subject, reused_tests
from parity.properties.operators import BLOCKING_LIMIT, SHAPES
from parity.properties.outcomes import Outcome, Report
from parity.properties.properties import PROPERTIES, Context
from parity.properties.runner import Plan, check_operator, technique_label
from parity.properties.suggest import suggest_spec
from parity.views.history import TRIGGERS
from parity.views.properties import WORDS

EXIT_RAN = 0
DEFAULT_BUDGET = 30
#: the default time budget of the testing, seconds: a CI step's minute, about
DEFAULT_BUDGET_SECONDS = 60.0
#: the longest --budget-seconds: a day
MAX_BUDGET_SECONDS = 86400.0
#: the largest --budget: the spec's ``properties: budget`` bound (``matcher.spec_schema``);
#: hybrid runs 12 techniques, so up to 12,000 tests per property
MAX_BUDGET = 1000
#: the longest --blocking-limit: an hour per firing
MAX_BLOCKING_LIMIT = 3600.0


def add_properties_parser(commands: Any) -> None:
    """Register ``properties`` on the ``parity`` command's subparsers."""
    parser = commands.add_parser(
        "properties",
        help=SUMMARY["properties"],
        description="Generate tests for an operator (module:function) from a sample of its "
        "input and look for evidence of six properties (Xu, Hirzel et al.). Exit 0 when it "
        "ran, 2 on bad input.",
    )
    parser.add_argument("operator", metavar="MODULE:FUNCTION", help="the operator under test")
    parser.add_argument("--sample", required=True, metavar="SAMPLE", help="its input's sample")
    parser.add_argument("--sample-right", metavar="SAMPLE", help="port 1's sample (--shape pair)")
    parser.add_argument(
        "--key", action="append", default=[], metavar="COL", help="partitioning key column"
    )
    parser.add_argument("--shape", choices=SHAPES, help="the operator's shape (default: guessed)")
    parser.add_argument(
        "--technique",
        default="hybrid",
        metavar="T",
        help=f"{', '.join(CHOICES)}, or BASE+mutation+reuse (default hybrid)",
    )
    parser.add_argument(
        "--budget",
        type=whole_number(1, MAX_BUDGET),
        default=DEFAULT_BUDGET,
        metavar="N",
        help=f"tests per property and technique, 1 to {MAX_BUDGET} (default {DEFAULT_BUDGET})",
    )
    parser.add_argument(
        "--budget-seconds",
        type=budget_seconds,
        default=DEFAULT_BUDGET_SECONDS,
        metavar="SECONDS",
        help="stop testing after this long, with what was found (the report says what was "
        f"not tested); 0: no time budget (default {DEFAULT_BUDGET_SECONDS:g})",
    )
    parser.add_argument(
        "--seed", type=seed_number, default=0, metavar="S", help="randomness (default 0)"
    )
    parser.add_argument(
        "--evidence-dir",
        metavar="DIR",
        help="where evidence inputs are kept for reuse (default $PARITY_HOME/properties)",
    )
    parser.add_argument(
        "--blocking-limit",
        type=seconds_limit,
        default=BLOCKING_LIMIT,
        metavar="SECONDS",
        help=f"a firing that takes longer is blocked, more than 0 and at most "
        f"{MAX_BLOCKING_LIMIT:g} (default {BLOCKING_LIMIT})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    stored = parser.add_argument_group(
        "storing the run",
        "The run is stored (kind properties) and its id printed on stderr: parity history "
        "lists it, parity report RUN_ID shows it.",
    )
    stored.add_argument("--db", metavar="URL", help="results database (default: PARITY_DB_URL)")
    stored.add_argument(
        "--home",
        metavar="DIR",
        help="instead of $PARITY_HOME: the evidence files and the default database live here",
    )
    stored.add_argument("--no-store", action="store_true", help="do not store the run")
    stored.add_argument("--run-id", metavar="ID", help="the stored run's id (default: new)")
    stored.add_argument(
        "--validation", metavar="NAME", help="the stored run's name (default: the operator)"
    )
    stored.add_argument(
        "--trigger",
        choices=TRIGGERS,
        help="how it was started, as the stored run says (default cli)",
    )
    for option, what in (
        ("--dag-id", "the Airflow DAG that ran it"),
        ("--dag-run-id", "the Airflow DAG run"),
        ("--spec-file", "the spec whose properties: listed the operator"),
    ):
        stored.add_argument(option, metavar="TEXT", help=what)
    parser.add_argument(
        "--suggest-spec",
        action="store_true",
        help="print the dependence, equality and noise sections the properties imply",
    )
    add_progress_option(parser)
    parser.set_defaults(run=run_properties)


def seed_number(text: str) -> int:
    """``--seed``: a whole number, signed, within the store's 64-bit integers (it is kept in
    the run's spec document)."""
    digits = text[1:] if text[:1] == "-" else text
    value = int(text) if digits.isascii() and digits.isdigit() else None
    if value is None or not -MAX_COUNT <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {-MAX_COUNT} to {MAX_COUNT}, got {text!r}"
        )
    return value


def seconds_limit(text: str) -> float:
    """``--blocking-limit``: a finite number of seconds, more than 0 and at most
    ``MAX_BLOCKING_LIMIT`` (``nan`` compares false with everything, ``inf`` never stalls)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_BLOCKING_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds more than 0 and at most {MAX_BLOCKING_LIMIT:g}, "
            f"got {text!r}"
        )
    return value


def budget_seconds(text: str) -> float:
    """``--budget-seconds``: a finite number of seconds from 0 (no time budget) to
    ``MAX_BUDGET_SECONDS``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_BUDGET_SECONDS:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds from 0 (no time budget) to "
            f"{MAX_BUDGET_SECONDS:g}, got {text!r}"
        )
    return value


def run_properties(args: argparse.Namespace, out: TextIO) -> int:
    progress = Progress.start("properties", getattr(args, "progress", None))
    with progress.heartbeat():
        return _run_properties(args, out, progress)


def _run_properties(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Check the options and the store, load the operator, start the run, test, record.

    Everything that can refuse the run (an option, the store, the run id, a name too long
    for the store) does so before the operator is imported or tested."""
    started = dt.datetime.now(dt.UTC)
    techniques = parse_technique(args.technique)
    samples = [args.sample] + ([args.sample_right] if args.sample_right else [])
    testing = Testing(
        args.operator,
        args.shape,
        technique_label(techniques),
        args.budget,
        args.seed,
        tuple(args.key),
        _seconds(args),
    )
    storage = None if args.no_store else _storage(args, started)
    run_id = None if storage is None else storage.run_id or adhoc_run_id("properties")
    first = (
        None
        if storage is None or run_id is None
        else testing_start(testing, storage, samples, run_id=run_id)
    )
    with PropertyRun.opened(storage, first) as stored:
        progress.step(f"operator {args.operator}: loading it and its sample {', '.join(samples)}")
        subject = load_subject(args.operator, samples, args.key, args.shape, args.blocking_limit)
        start = None
        if storage is not None and run_id is not None:
            loaded = dataclasses.replace(testing, shape=subject.operator.shape)
            start = testing_start(loaded, storage, samples, run_id=run_id)
            print(f"properties: storing run {run_id} (parity report {run_id})", file=sys.stderr)
        with stored.running(start):
            report = _test(args, subject, techniques, progress)
            found = report.evidence_tests()
            if found:
                save_evidence(
                    evidence_path(_evidence_dir(args), args.operator), args.operator, found
                )
            if start is not None:
                progress.step("storing the run")
                stored.record(report, _output_columns(report))
    if run_id is not None:
        print(f"properties: stored run {run_id} (parity report {run_id})", file=sys.stderr)
    ran_out = time_budget_line(report)
    if ran_out is not None:
        _warn(ran_out)
    if args.json:
        document = report.to_dict()
        if args.suggest_spec:
            document["suggested_spec"] = suggest_spec(report, _output_columns(report))
        out.write(json.dumps(document, ensure_ascii=False, default=str) + "\n")
    else:
        out.write("".join(f"{line}\n" for line in render_text(report)))
        if args.suggest_spec:
            out.write("\n" + suggest_spec(report, _output_columns(report)))
    out.flush()
    return EXIT_RAN


def _warn(line: str) -> None:
    print(f"parity: warning: {line}", file=sys.stderr)


def _seconds(args: argparse.Namespace) -> float | None:
    """The time budget (``--budget-seconds 0``: none)."""
    return float(args.budget_seconds) if args.budget_seconds else None


def _evidence_dir(args: argparse.Namespace) -> str | None:
    if args.evidence_dir:
        return str(args.evidence_dir)
    return str(Path(args.home).expanduser() / "properties") if args.home else None


def _test(
    args: argparse.Namespace, subject: Subject, techniques: Any, progress: Progress
) -> Report:
    """Every property tested (``OperatorError`` when the operator fails a test)."""
    import random

    reused = reused_tests(_evidence_dir(args), args.operator, subject.domains, _warn)
    seconds = _seconds(args)
    plan = Plan(techniques, args.budget, args.seed, subject.domains, tuple(reused), seconds=seconds)
    context = Context(subject.operator, tuple(args.key), random.Random(args.seed))
    progress.step(
        f"operator {args.operator}: testing {len(PROPERTIES)} properties "
        f"({technique_label(techniques)}, budget {args.budget} tests each)"
    )

    def announce(name: str, index: int, total: int) -> None:
        progress.step(f"property {index} of {total}: {name}")

    report = check_operator(context, plan, technique_label(techniques), on_property=announce)
    progress.step(f"operator {args.operator}: tested in {report.seconds:.1f}s")
    return report


def _storage(args: argparse.Namespace, started: dt.datetime) -> Storage:
    return Storage(
        db=args.db,
        home=None if args.home is None else Path(args.home).expanduser(),
        run_id=args.run_id,
        validation=args.validation,
        trigger=args.trigger or "cli",
        dag_id=args.dag_id,
        dag_run_id=args.dag_run_id,
        spec_file=args.spec_file,
        started_at=started,
    )


def _output_columns(report: Report) -> list[str] | None:
    """The output's column names, from any evidence's outputs (None if never seen)."""
    for outcome in report.properties.values():
        for rows in _outputs_in(outcome.evidence):
            if rows and all(isinstance(r, dict) for r in rows):
                return list(rows[0])
    return None


def _outputs_in(evidence: Any) -> list[list[Any]]:
    if not isinstance(evidence, dict):
        return []
    found = [v for k, v in evidence.items() if k.startswith("output") and isinstance(v, list)]
    found += [r.get("output", []) for r in evidence.get("runs", []) if isinstance(r, dict)]
    found += [o for o in evidence.get("outputs", []) if isinstance(o, list)]
    return found


def render_text(report: Report) -> list[str]:
    keys = f", key {', '.join(report.keys)}" if report.keys else ""
    lines = [
        f"parity properties: {report.operator} ({report.shape}), technique {report.technique}, "
        f"budget {report.budget}, seed {report.seed}{keys}"
    ]
    for name in PROPERTIES:
        outcome = report.properties[name]
        lines.append(f"  {name:<24}{_verdict(outcome)}")
        if outcome.found and outcome.evidence is not None and "inferred" not in outcome.extra:
            shown = json.dumps(outcome.evidence.get("input"), default=str)
            lines.append(f"    evidence input: {shown}")
    ran_out = time_budget_line(report)
    if ran_out is not None:
        lines.append(ran_out)
    lines.append(f"({report.seconds:.1f} s)")
    return lines


def time_budget_line(report: Report) -> str | None:
    """One line when the time budget ran out: what it left tested in full, partially and
    not at all (None when every property got all its tests)."""
    budget = report.time_budget()
    if not budget["ran_out"]:
        return None
    parts = []
    for word, key in (
        ("tested in full", "full"),
        ("partially", "partial"),
        ("not tested", "untested"),
    ):
        if budget[key]:
            parts.append(f"{word}: {', '.join(budget[key])}")
    return (
        f"time budget of {report.budget_seconds:g} s ran out, testing stopped with what it "
        f"had found; {'; '.join(parts)}"
    )


def _verdict(outcome: Outcome) -> str:
    if not outcome.applicable:
        return f"not applicable: {outcome.extra.get('reason')}"
    if "undetermined" in outcome.extra:
        return f"undetermined: {outcome.extra['undetermined']}"
    if "inferred" in outcome.extra:
        word = "stateful" if outcome.found else "commutative / partition-isolated"
        return f"{word}: {outcome.extra['inferred']}"
    partial = f", partial: {outcome.extra['partial']}" if "partial" in outcome.extra else ""
    timing = (
        f"({outcome.tests} test{'s' if outcome.tests != 1 else ''}, "
        f"{outcome.seconds:.2f} s{partial})"
    )
    if outcome.name == "selectivity":
        certainty = "definitely" if outcome.extra.get("class") == "prolific" else "potentially"
        return f"{certainty} {outcome.extra.get('class')} {timing}"
    yes, no = WORDS[outcome.name]
    return f"{yes if outcome.found else no} {timing}"
