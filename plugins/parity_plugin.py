"""The Parity page in the Airflow UI: an Airflow 3 plugin.

Put this file and ``parity_ui/`` (with ``.airflowignore``) in Airflow's plugins folder
(``[core] plugins_folder``, default ``$AIRFLOW_HOME/plugins``) and restart the API server:

    AIRFLOW__CORE__PLUGINS_FOLDER=$PWD/plugins PARITY_DB_URL=sqlite:////path/parity.db \\
        airflow api-server

It adds:

* a FastAPI app at ``/parity`` (``parity_ui.app``): run history, trends, run reports, a
  JSON API and the gate (bound to today's spec in the dags folder), every route behind
  Airflow's authentication; a run's page approves or revokes its divergences for users
  allowed to trigger its DAG (``parity_ui.approvals``);
* "Parity" in the Airflow UI's navigation, showing ``/parity/`` inside the UI;
* a "Parity run" extra link on the ``match``, ``record``, ``check`` and ``gate`` task
  instances of Parity's DAGs, to that DAG run's run page;
* a listener (``parity_ui.notes``) that writes each finished Parity DAG run's note: the
  verdict, the counts, the gate, the approval that opened it, and the link (the scheduler
  loads it with the plugin).

The results store is the Airflow Connection ``parity_db`` (``PARITY_DB_CONN_ID``) when
there is one, else the one ``matcher.store.Store.open()`` finds: ``PARITY_DB_URL``, else
``parity.toml``'s ``[store] url``, else ``$PARITY_HOME/parity.db``.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from parity_ui import notes
from parity_ui.app import create_app
from parity_ui.links import MOUNT, URL_ROUTE, ParityRunLink


class ParityPlugin(AirflowPlugin):
    name = "parity"
    fastapi_apps = [{"app": create_app(), "url_prefix": MOUNT, "name": "Parity"}]  # noqa: RUF012
    external_views = [  # noqa: RUF012
        {
            "name": "Parity",
            # Relative: the UI resolves it against Airflow's base URL.
            "href": f"{MOUNT.lstrip('/')}/",
            "icon": f"{MOUNT.lstrip('/')}/static/icon.svg",
            "url_route": URL_ROUTE,
            "destination": "nav",
        }
    ]
    global_operator_extra_links = [ParityRunLink()]  # noqa: RUF012
    listeners = [notes]  # noqa: RUF012
