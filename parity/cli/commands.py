"""The ``parity`` subcommands: where each lives and its line in ``parity --help``.

Kept apart from the subcommands' modules so that ``parity --help``, ``parity --version`` and
a usage error import none of them: a subcommand's module (and the store, SQLAlchemy, Alembic,
PySpark it needs) is imported only when that subcommand runs.
"""

from __future__ import annotations

#: subcommand -> (module, the function that adds its parser to the subparsers)
COMMANDS: dict[str, tuple[str, str]] = {
    "compare": ("parity.cli.compare", "add_compare_parser"),
    "gate": ("parity.cli.gate", "add_gate_command"),
    "run": ("parity.cli.run", "add_run_command"),
    "report": ("parity.cli.report", "add_report_parser"),
    "history": ("parity.cli.history", "add_history_parser"),
    "recovery": ("parity.cli.recovery", "add_recovery_parser"),
    "db": ("parity.cli.store", "add_store_commands"),
    "runs": ("parity.cli.store", "add_store_commands"),
    "windows": ("parity.cli.windows", "add_windows_parser"),
    "properties": ("parity.cli.properties", "add_properties_parser"),
    "approve": ("parity.cli.approve", "add_approve_commands"),
    "revoke": ("parity.cli.approve", "add_approve_commands"),
    "validate": ("parity.cli.validate", "add_validate_parser"),
    "list": ("parity.cli.listing", "add_list_parser"),
    "minimize": ("parity.cli.minimize", "add_minimize_parser"),
}

#: each subcommand's line in ``parity --help`` (its module's parser uses the same words)
SUMMARY: dict[str, str] = {
    "compare": "compare two outputs under a validation spec",
    "gate": "may a validation's candidate ship? the newest attempt decides (exit 0 1 3 2)",
    "run": "validate one build (via Airflow, or locally) and answer its gate (exit 0 1 3 2)",
    "report": "show one recorded run: summary, JSON, or a self-contained HTML page",
    "history": "list recorded runs, newest first",
    "recovery": "crash a streaming job with SIGKILL, restart it, check its output",
    "db": "the results database's schema",
    "runs": "look after the stored runs",
    "windows": "validate a sequence-window detector's output (Wallaroo's state check)",
    "properties": "test an operator for non-determinism, selectivity, blocking, statefulness, "
    "non-commutativity and partition-interference",
    "approve": "accept a run's divergences as intended, on record (opens its version's gate)",
    "revoke": "revoke the approval of a run's divergences",
    "validate": "check validation spec files as the DAG factory and the plan would (exit 0 or 2)",
    "list": "the validations of this deployment: schedule, last verdict and gate",
    "minimize": "shrink a divergent run's input to the few rows that still diverge, with a "
    "regression test",
}

#: exit code of any error (bad spec, unreadable output, bad usage, a bug): never 1
EXIT_ERROR = 2
