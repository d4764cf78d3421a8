"""What each spec key means, in the words a spec's writer needs: the prose of the generated
spec reference (``docs/reference/spec.md``). Keys, types and defaults come from the schema;
``render_spec_page`` refuses a key without an entry here, or an entry for no key."""

from __future__ import annotations

INTRO = """
One YAML file per pipeline under test. Everything is checked when the file is loaded:
unknown keys, wrong types, `module:function` references (imported then), and whether the
equality is compatible with the dependence. A problem is one line naming the file, the key
and the problem:

```text
{errors}
```

Where a list of column names is expected, a single name is accepted too
(`key: taxi_id` is `key: [taxi_id]`). Numbers like `1e-9` are read as numbers (YAML 1.2).

`parity compare` reads `name`, `output`, `dependence`, `equality` and `schema`; the other
sections are the Airflow pipeline's (a spec in `dags/validations/` is a validation the
pipeline runs, see [Running on Airflow](../how-to/airflow.md)), and `parity compare`
ignores them. Paths are relative to the repository root (the directory holding `dags/`) or
absolute; URLs (`hdfs://`, `s3a://`, `local:`) go to `spark-submit` as they are. The forms
of `dependence`, the rules of `equality` and the schema modes are explained with examples
in [Dependence, equality and schemas](dependence-equality.md).

The design sketch, in full, is a valid spec:

```yaml
name: taxi_distance
reference:  {application: jobs/examples/taxi.py, args: [--variant, sequential]}
candidate:  {application: jobs/examples/taxi.py, args: [--variant, parallel]}
input:      {path: data/replay/taxi, format: parquet, slice: {column: event_time, window: 1d}}
output:     {format: parquet, order_by: [seq]}
dependence: {key: [taxi_id]}
equality:   {ignore: [emitted_at], tolerance: {distance_km: {abs: 1.0e-9}}}
expectations: [expectations/taxi_output.json]
noise:      {reference_runs: 2}
schedule:   "@daily"
```
""".replace(
    "{errors}",
    "\n".join(
        (
            "parity: error: spec.yaml: dependence.key: unknown column 'taxi' in reference "
            "out/ref.jsonl (output columns: taxi_id, seq, lat, lon, distance_km, emitted_at)",
            "parity: error: spec.yaml: equality.ignore: equality ignores column 'taxi_id', "
            "which the dependence reads: events it calls equal could differ in their "
            "dependences",
            "parity: error: spec.yaml: line 4, column 1: YAML syntax error: duplicate key "
            "'equality'",
        )
    ),
)

#: prose under a section's heading, before its table
SECTIONS = {
    "reference": (
        "`candidate` takes the same keys for the version under test, and `application` "
        "for a recovery validation's one streaming job (with `recovery`)."
    ),
    "input.slice": (
        "Which rows a run replays: an ad-hoc run's `window_start`/`window_end` parameters, "
        "else the spec's fixed `start`/`end`, else the run's data interval, else (no "
        "`column`) the whole capture. A run with a time column but no window at all (a "
        "manual run of a DAG without a schedule) is refused before any job starts. An empty "
        "slice is an error, not an equivalent pair of empty outputs."
    ),
    "output": (
        "With `order_by`, the core engine sorts each output in memory before comparing; the "
        "Spark engine ranks each key's events by the `order_by` values (ties in file order) "
        "and sorts whole outputs only when a divergence needs positions. Without it, both are "
        "streamed and memory follows the unmatched events only."
    ),
    "dependence": (
        "Give exactly one form: `unordered`, `ordered`, `key`, `typed`, `punctuation` or "
        "`predicate` (`dependence: unordered` and `dependence: ordered` are short for "
        "`{unordered: true}` and `{ordered: true}`). See "
        "[Dependence](dependence-equality.md#dependence)."
    ),
    "equality": (
        "See [Equality](dependence-equality.md#equality) for what exact means on each kind "
        "of value and how a tolerance pairs events."
    ),
    "expectations": (
        "A list of suite files (or one path) is short for `{suites: [...]}`. See "
        "[Data-quality expectations](expectations.md)."
    ),
    "recovery": "See [Recovery validation](../how-to/recovery.md).",
    "properties": "See [Property testing](../how-to/properties.md).",
    "gate": "See [Noise and the gate](../explanation/noise.md#gate).",
}

_APPLICATION = {
    "application": "the `.py` or `.jar` `spark-submit` runs: a path or an artifact URL",
    "main_class": "a JAR's main class (`--class`)",
    "py_files": "`--py-files` (`.py`, `.zip`, `.egg`)",
    "jars": "`--jars`",
    "args": (
        "its arguments (numbers and booleans become strings); `{input}`, `{output}` and "
        "`{run_dir}` become the slice directory, this application's output directory and the "
        "run's workspace (`{checkpoint}`, a recovery application's checkpoint). Give `{input}` "
        "and `{output}` both or neither: with neither, `--input SLICE --output OUT` is "
        "appended. `{{` and `}}` are literal braces"
    ),
    "conf": "Spark configuration (keys start with `spark.`; values become strings)",
    "version": (
        'a label stored with every run (quote numbers: `"2.1"`); `parity gate --candidate` '
        "selects by it"
    ),
}

MEANINGS: dict[str, str] = {
    "name": (
        "the validation's name, shown in reports: letters, digits, `_`, `-`, `.`; default: "
        "the file name without extension"
    ),
    "reference": "the reference Spark application (**required** by the pipeline)",
    "candidate": "the candidate Spark application (**required** by the pipeline)",
    "application": "a recovery validation's one streaming application, instead of the pair",
    **{f"reference.{k}": v for k, v in _APPLICATION.items()},
    **{f"candidate.{k}": f"as `reference.{k}`, for the candidate" for k in _APPLICATION},
    **{f"application.{k}": f"as `reference.{k}`" for k in _APPLICATION},
    "recovery": "makes the spec a recovery validation: the application under seeded kills",
    "recovery.crashes": "SIGKILLs per run",
    "recovery.kill": (
        "`driver`: the spark-submit's whole process tree; `executor`: a standalone cluster's "
        "executors"
    ),
    "recovery.seed": "where the kills land: the same seed, the same plan",
    "recovery.check": (
        "`windows`: the sequence-window validator; `differential`: the matcher against an "
        "uninterrupted run, under the spec's dependence and equality"
    ),
    "recovery.expected": "`check: windows`: every key must reach this value",
    "recovery.at_least_once": (
        "`check: windows`: accept replays (a sink that only claims at-least-once)"
    ),
    "recovery.timeout": "seconds for each run of the job, restarts included",
    "recovery.master": "the Spark master of the runs (`kill: executor` needs `spark://`)",
    "input": "the replayed production input both versions read",
    "input.path": "the production capture: a file or a directory of part files",
    "input.format": (
        "the capture's format (default: from the file names); the slice is written in the "
        "same format"
    ),
    "input.slice": "which part of the capture a run replays (default: the whole capture)",
    "input.slice.column": (
        "the time column: a timestamp, a date, an ISO 8601 string or seconds since the epoch "
        "(times without a zone are UTC)"
    ),
    "input.slice.window": (
        "the window's length, a number and `s`, `m`, `h`, `d` or `w` (`1d`): with `start` (or "
        "`end`) it fixes the other end; with neither, a scheduled run's data interval is this "
        "long and chooses the slice: `[run time − window, run time)`"  # noqa: RUF001
    ),
    "input.slice.start": (
        "with `end`, a fixed window `[start, end)` that every run replays (a golden slice), "
        "as `2024-05-01T00:00:00Z`; needs `column`"
    ),
    "input.slice.end": "the end of the fixed window (exclusive); needs `column`",
    "input.slice.sample": (
        "keep this fraction of keys: a row stays when `xxhash64(key columns) mod 10⁶ < x · "
        "10⁶`. The same keys on every run, whole key histories, and nested (a 10 % sample's "
        "keys are in the 20 % sample)"
    ),
    "input.slice.key": (
        "the input columns the sample hashes (default: `dependence.key`; required for a sample "
        "when the dependence has no key)"
    ),
    "input.slice.files": (
        "how many files the slice is written as, in stream order (a streaming candidate reads "
        "one per micro-batch)"
    ),
    "output": "how to read both outputs",
    "output.format": "the format of both outputs (default: from each file's extension)",
    "output.order_by": (
        "sort each output by these columns (ascending, nulls first) before comparing; none: "
        "files in name order, rows in file order"
    ),
    "output.schema": (
        "CSV only: the columns' types as a Spark DDL column list, `day DATE, total DOUBLE` "
        "(default: inferred as Spark infers them); a value not of its declared type is an "
        "error (exit 2) naming the file, line and column"
    ),
    "output.differences": (
        "write every difference (kind, key, positions, both events) into the run's report "
        "folder as `differences.parquet`, for `parity report RUN --differences PATH`; on "
        "Spark, for a dependence by key"
    ),
    "dependence": "which events must keep their order",
    "dependence.unordered": "no event keeps its order (a multiset)",
    "dependence.ordered": "every event keeps its order (a sequence)",
    "dependence.key": "events with the same key keep their order",
    "dependence.barrier": (
        "barrier events, dependent with every event (end-of-day, end-of-file markers); with "
        "`key`, `ordered` or `unordered`"
    ),
    "dependence.barrier.column": "the column that marks a barrier (with `equals`)",
    "dependence.barrier.equals": "the value (or values, `[EOD, EOM]`) that make an event a barrier",
    "dependence.barrier.function": "instead of `column`/`equals`: a test `fn(event) -> bool`",
    "dependence.barrier.columns": "the columns `function` reads",
    "dependence.typed": "event types and a dependence graph between them",
    "dependence.typed.classify": (
        "how an event's type is found: a column name, or `{function: 'module:fn', columns: "
        "[...]}` returning it"
    ),
    "dependence.typed.classify.column": "the column holding an event's type",
    "dependence.typed.classify.function": (
        "instead of `column`: a function of the event returning its type"
    ),
    "dependence.typed.classify.columns": "the columns `function` reads",
    "dependence.typed.types": "each type's key columns (`null`: no key)",
    "dependence.typed.edges": (
        "each `[A, B]` makes every `A` depend on every `B`, and `[A, B, same_key]` only on "
        'those with the same key; `"*"` stands for every type; `[A, A]` orders the `A` '
        "events among themselves (per key when `A` is keyed)"
    ),
    "dependence.punctuation": "a punctuation event depends on every event of an earlier timestamp",
    "dependence.punctuation.column": "the column that marks a punctuation (with `equals`)",
    "dependence.punctuation.equals": "the value (or values) that make an event a punctuation",
    "dependence.punctuation.function": "instead of `column`/`equals`: a test `fn(event) -> bool`",
    "dependence.punctuation.columns": "the columns `function` reads",
    "dependence.punctuation.timestamp": "the time column",
    "dependence.predicate": "a symmetric `fn(x, y) -> bool`: whatever it says",
    "dependence.columns": (
        "the columns the predicate reads, so that the equality can be checked against them "
        "(without it, you vouch for compatibility)"
    ),
    "equality": "when two events count as equal (default: exact, NaN equals NaN)",
    "equality.ignore": "columns never compared",
    "equality.tolerance": (
        "per column, numbers `a`, `b` are equal when `abs(a-b) <= abs` or `<= rel * "
        "max(abs(a), abs(b))`; on an array, map or struct column, every number inside it, at "
        "any depth; `{abs: 0, rel: 0}` is exact"
    ),
    "equality.tolerance.COLUMN.abs": "the absolute tolerance",
    "equality.tolerance.COLUMN.rel": "the relative tolerance",
    "equality.normalize": (
        'per column (or `"*"`: every string column), applied in order to strings before comparing'
    ),
    "equality.nan_equal": "NaN equals NaN",
    "equality.function": (
        "`fn(a, b) -> bool` replaces all of the above (and cannot be combined with them)"
    ),
    "expectations": ("data-quality checks on the outputs (default: derived expectations only)"),
    "expectations.suites": "Great Expectations suite files (JSON)",
    "expectations.sides": "the outputs the suites run on",
    "expectations.derived": (
        "expectations from the reference output's profile, run on the candidate"
    ),
    "expectations.derived.enabled": "check the candidate against the reference output's profile",
    "expectations.derived.row_count_tolerance": "allowed relative difference in row count",
    "expectations.derived.key_count_tolerance": (
        "allowed relative difference in distinct values per key column"
    ),
    "expectations.derived.range_tolerance": (
        "numeric ranges widened by this fraction of the reference's range"
    ),
    "expectations.derived.null_fraction_tolerance": (
        "allowed rise in each column's fraction of nulls"
    ),
    "expectations.derived.ignore": "columns the derived expectations leave out",
    "noise": "reference reruns: a reference that disagrees with itself makes a verdict noisy",
    "noise.reference_runs": (
        "`2` runs the reference a second time (`rerun_reference`) to measure its own noise, "
        "see [Noise](../explanation/noise.md)"
    ),
    "noise.conf": (
        "laid over the reference's `conf` for the rerun: other partition counts, no adaptive "
        "coalescing (which would merge a small shuffle back into one partition). It must "
        "change something"
    ),
    "noise.args": "appended to the reference's arguments for the rerun (`[--partitions, 3]`)",
    "schedule": (
        'when Airflow runs the validation (UTC): a cron expression (5 fields, `"0 2 * * *"`) '
        "or `@hourly`, `@daily`, `@weekly`, `@monthly`, `@quarterly`, `@yearly`; none: ad hoc "
        "runs only"
    ),
    "gate": "what opens the deploy gate",
    "gate.require": "the verdict that opens the gate",
    "gate.allow_noisy": "whether a `noisy` verdict opens the gate",
    "gate.expectations": "whether failed expectations close the gate",
    "gate.empty": (
        "whether a run whose reference and candidate outputs were both empty opens the gate: "
        "equivalent, but nothing was compared, and a release whose job wrote nothing is "
        "suspect"
    ),
    "gate.on_closed": (
        "what a closed gate does in Airflow: `fail` fails the `gate` task (one log line: "
        "verdict, counts, the run's page; no traceback, no retry) and the DAG run (a deploy "
        "pipeline that gates on the DAG run stops); `warn` skips the `gate` task, so the DAG "
        "run succeeds and the verdict is on its note and the Parity page. A job that failed "
        "fails the DAG run either way"
    ),
    "gate.allow_overrides": (
        "whether a run whose trigger overrode `equality` or `dependence` with a section other "
        "than the spec's may open the gate: by default such a run is stored with its "
        "overrides and closes the gate, so permission to trigger is not permission to loosen "
        "the verdict"
    ),
    "airflow": "how the validation's DAG runs on Airflow",
    "airflow.max_active_runs": (
        "runs of the validation's DAG at once, see [Concurrency](../how-to/airflow.md#concurrency)"
    ),
    "airflow.pool": "the Airflow pool of its Spark tasks",
    "airflow.task_timeout": "each Spark task's `execution_timeout`, a duration (`45m`, `2h`, `1d`)",
    "airflow.spark_conf": (
        "Spark settings of Parity's own jobs (slice, match, expectations), as `--conf` (the "
        "slice keeps its UTC session zone)"
    ),
    "airflow.match_conf": (
        "laid over `spark_conf` for the match job alone, the one to tune on real data "
        "(`spark.executor.memory`, `spark.sql.shuffle.partitions`)"
    ),
    "airflow.conn_id": (
        "the Spark connection this validation's jobs are submitted with (default: "
        "`PARITY_SPARK_CONN_ID`, else `spark_default`)"
    ),
    "properties": "operators to re-test for their properties on each scheduled run",
    "properties[].operator": "the operator",
    "properties[].sample": "a sample of its input, relative to the repository root",
    "properties[].sample_right": "a two-input operator's second input",
    "properties[].key": "the key it may be partition-isolated by",
    "properties[].shape": "the operator's shape (default: found from the operator)",
    "properties[].technique": (
        "`random`, `pool`, `pairwise`, `mutation`, `reuse`, `hybrid` or "
        "`BASE[+mutation][+reuse]`; `reuse` replays the evidence inputs kept by earlier runs "
        "first"
    ),
    "properties[].budget": "the test budget",
    "properties[].seed": "the generator's seed",
    "schema": "how schema differences weigh",
    "schema.mode": (
        "`strict`: every finding is divergent; `compatible`: added, removed and "
        "not-widening retyped columns are, the rest is listed; `ignore`: nothing is listed. "
        "See [Schemas](dependence-equality.md#schemas-schemamode)"
    ),
}
