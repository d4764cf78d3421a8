"""A run's Spark jobs as values, shared by the DAGs (``parity.airflow``) and the command line
(``parity.recovery``): ``submits`` builds the slice job's and the applications' command
lines. No Airflow and no Spark here.
"""
