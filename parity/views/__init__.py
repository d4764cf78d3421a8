"""Read-side models of the results store, shared by the ``parity`` command and the Parity
page in Airflow: ``history`` (rows of recorded runs), ``report`` (a run's report, as a
document and as HTML), ``gate`` (a validation's deploy gate) and ``printable`` (the escape
every shown text goes through). They import the core and the store; never Spark, never
Airflow (an import contract checks it).
"""
