"""Testing an operator's properties (Xu, Hirzel, Rothermel & Wu, "Testing properties of
dataflow program operators", ASE 2013), translated to Spark.

    parity properties MODULE:FUNCTION --sample SAMPLE [--key COL ...] [--shape ...]

Given an operator and a sample of its input, generate tests and look for *evidence* of six
properties: non-determinism, selectivity, blocking, statefulness, non-commutativity and
partition-interference. Evidence is a concrete, shrunk input and the outputs that differ;
no evidence means the property *potentially* does not hold.

=================  ==================================================================
module             what it holds
=================  ==================================================================
``elements``       a test's elements (items and punctuations), output values, runs
``samples``        the sample file: rows, columns, value types
``operators``      loading ``module:function`` as one of the shapes, running a test
``frames``         the DataFrame shapes on one local SparkSession
``frame_jobs``     many runs of a DataFrame operator in one Spark job, each on its input
``generation``     random, pool, pairwise, mutation, reuse; the evidence file
``checking``       what every check shares: its context, its result, its steps
``properties``     the six checks (Table I of the paper): the first three
``state_checks``   statefulness, non-commutativity, partition-interference
``steps``          checks as coroutines asking for runs; the driver answering many at once
``deadline``       the time budget
``shrinking``      delta debugging of evidence down to a minimal input
``runner``         Algorithm 1, the testing order of Fig. 4, hybrid, the time budget
``outcomes``       each property's outcome and the report
``suggest``        the spec sections (dependence, equality, noise) the properties imply
=================  ==================================================================
"""
