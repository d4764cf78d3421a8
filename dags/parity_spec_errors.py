"""Airflow import errors for Parity validation specs that do not load.

Airflow reports import errors per DAG file. ``parity_validations.py`` builds a DAG for
every spec that loads and leaves the others out, so that one bad spec cannot take the
other validations' DAGs down with it; this file raises one error naming each bad spec's
file and key (``dags/validations/x.yaml: noise.reference_runs: must be >= 1, got 0``),
which Airflow shows as this file's import error. It defines no DAG.
"""

from pathlib import Path

from parity.airflow.factory import raise_spec_errors

raise_spec_errors(Path(__file__).parent)
