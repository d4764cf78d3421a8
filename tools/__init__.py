"""Developer tools run from a checkout, not installed with Parity: ``python -m tools.demo``
(``make demo``) runs the bundled validations through Airflow.
"""
