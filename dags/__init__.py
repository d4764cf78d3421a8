"""The dags folder: ``parity_validations.py`` builds one DAG per spec in ``validations/``, and
``parity_spec_errors.py`` raises one import error per spec that does not load. Both call
``parity.airflow.factory`` and nothing else. A package only so that the import contracts
can check them; the scheduler skips this file (it names no scheduler).
"""
