"""Recovery validation (Wallaroo): a streaming job killed with SIGKILL and restarted from its
checkpoint must produce the output it would have produced uncrashed.

``crashes`` runs a job under seeded kills (the driver's whole process tree, or a standalone
cluster's executors) until it finishes, and logs every kill. The checks that follow read the
output: the sequence-window validator (``matcher.windows``) for the detector application,
or the matcher against an uninterrupted run of the same job (the differential form). No
Spark and no Airflow here: the command line and the DAG both drive it.
"""
