"""The Parity page in the Airflow UI: the package behind ``plugins/parity_plugin.py``.

* ``app``: the FastAPI app (history, trends, run reports, JSON API), behind Airflow's auth;
* ``filters``: the history's query parameters;
* ``views``, ``trends``: what a page shows of a run, and the trend chart's layout;
* ``links``: URLs, and the "Parity run" extra link of the DAG's ``match`` task;
* ``approvals``: approving and revoking from a run's page (who may, the same-origin checks);
* ``notes``: the verdict and its approval on the DAG run's note;
* ``store``: the results store, from an Airflow Connection or the store's own settings.

Airflow puts the plugins folder on ``sys.path``, so this package imports as ``parity_ui``.
"""
