"""The Parity page in the Airflow UI: the package behind ``plugins/parity_plugin.py``.

* ``app``: the FastAPI app (history, trends, run reports, JSON API), behind Airflow's auth;
* ``filters``: the history's query parameters;
* ``views``, ``trends``: what a page shows of a run, and the trend chart's layout;
* ``links``: URLs, and the "Parity run" extra link of the DAG's ``match`` task.

Airflow puts the plugins folder on ``sys.path``, so this package imports as ``parity_ui``.
"""
