"""Data-quality expectations beside the verdict: Great Expectations 1.x suites, and
expectations derived from the reference output's profile, run on a Spark DataFrame.

    from expectations.runner import run_expectations   # imports great_expectations

``suites`` reads a spec's suite files, ``derived`` profiles the reference and derives
expectations from it, ``runner`` runs them with GX and returns the store's records. Nothing
here knows Airflow or the ``parity`` command: the expectations job
(``jobs/check_expectations.py``) runs them, and the DAG's operator submits that job.
"""
