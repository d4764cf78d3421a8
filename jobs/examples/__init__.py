"""The bundled example pipelines: real PySpark applications, each in a reference and one or
more candidate versions, with a deterministic generator of its "production capture".

* ``taxi``: per-taxi running distance (DiffStream's first motivating example);
* ``topics``: the topic of each document of a word stream cut by end-of-file markers (the
  second motivating example);
* ``reducers``: the five MapReduce reducer patterns of DiffStream's case study.

``python -m jobs.examples.generate`` writes the captures to ``data/captures/``; the
validation specs in ``dags/validations/`` pair the versions on them.
"""
