"""The validation DAGs: ``factory`` builds one DAG per spec, ``plan`` fixes a run's slice,
jobs and workspace before any Spark job starts, ``submits`` builds the spark-submit lines,
``operators`` submits them, ``tasks`` holds the trigger form and the match task's failure
callback, and ``gate`` records the gate after the match. The only package that imports
Airflow; the DAG files (``dags/``) call ``factory`` and nothing else.
"""
