"""Airflow DAGs for Parity: one DAG, ``parity_<name>``, per validation spec in
``dags/validations/<name>.yaml`` (or ``$PARITY_VALIDATIONS_DIR``).

Each DAG replays a slice of the production capture through the reference and the
candidate Spark applications, matches their outputs, records the verdict and fails its
``gate`` task when the spec's gate policy is not met. How the DAG is built:
``parity.airflow.factory``. A spec that does not load gets no DAG here; ``parity_spec_errors.py``
reports it as an import error.
"""

from pathlib import Path

from parity.airflow.factory import validation_dags

globals().update(validation_dags(Path(__file__).parent))
