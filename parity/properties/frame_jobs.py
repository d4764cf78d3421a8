"""Many tests of a DataFrame operator in one Spark job, each on its own input.

A test of ``f(df)`` pays for a Spark job: planning, scheduling, code generation, the trip to
the JVM and back. Most of that is the same for every test, and a round of Algorithm 1 asks
for dozens of runs at once (``steps``). So the runs are put in one job, faithfully:

* each run builds its own input DataFrame from its own test's rows and calls ``f`` on it,
  exactly as a run on its own does; the operator never sees another test's rows (a union
  of *inputs* would be another input: a filter would pass, an aggregation would not);
* the *outputs* are tagged with the run's number (a string literal: Spark generates the
  same code for every branch, where an integer literal would be compiled into each; and
  ``spark.sql.codegen.useIdInClassName`` off, so that the branches' classes share a name)
  and unioned; one ``collect`` brings them back, split by the tag. Union branches are
  computed independently, each partition of a branch by its own task, with its own
  partition index (``rand``, ``monotonically_increasing_id`` see the same as alone:
  ``tests/test_properties_spark.py`` holds every run of a batch to its run alone);
* runs whose outputs have different schemas (a ``pivot`` on the test's values) go in
  separate jobs (a union would widen their types); runs asking for different
  ``spark.sql.shuffle.partitions`` too, when the job shuffles (the setting is read once
  per job, by its exchanges; a test's input in one partition needs none, even for an
  aggregation, and then they share one);
* a request made twice in one batch is run once;
* when a job fails, its runs are run one at a time, so that the error names the test.

The job runs in a job group of its own; a timer cancels it at the time budget's deadline
(``OutOfTime``), the running tasks interrupted.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from parity.properties.deadline import NO_DEADLINE, Deadline, OutOfTime
from parity.properties.elements import Element, Run, freeze, sorted_bag
from parity.properties.operators import Physical, operator_error, raised

if TYPE_CHECKING:
    from parity.properties.frames import FrameOperator

#: the column that tells the runs apart in a job's output
TAG = "__parity_run__"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
#: generated classes named without the stage's number: the branches share their code
CLASS_NAMES = "spark.sql.codegen.useIdInClassName"

Request = tuple[Sequence[Element], Physical]


def where(test: Sequence[Element]) -> str:
    """Where an operator's error happened, for its error line."""
    return f"on a generated test of {sum(1 for e in test if e.item)} rows"


def run_together(
    operator: FrameOperator, requests: Sequence[Request], deadline: Deadline
) -> list[Run]:
    """Every request's run, in order: a job per output schema (and per shuffle-partition
    setting where the job shuffles). A request made twice in one batch (two checks of a
    round asking for the same item alone) is run once: each asked for *a* run of that
    input, and gets one; a check's own re-runs come in later steps, never deduplicated."""
    distinct: dict[tuple[str, Physical], int] = {}
    unique: list[Request] = []
    for test, physical in requests:
        key = (repr(tuple(test)), physical)
        if key not in distinct:
            distinct[key] = len(unique)
            unique.append((test, physical))
    outputs: dict[int, DataFrame] = {}
    by_shuffle: dict[int, list[int]] = {}
    for index, (_, physical) in enumerate(unique):
        by_shuffle.setdefault(physical.shuffle_partitions, []).append(index)
    for shuffle, indices in by_shuffle.items():  # f called under its run's setting
        deadline.check()
        with settings(operator, {SHUFFLE_PARTITIONS: str(shuffle)}):
            for i in indices:
                deadline.check()
                outputs[i] = operator.output(*unique[i])
    by_schema: dict[str, list[int]] = {}
    for index, output in outputs.items():
        # a tag column of the operator's own: that run goes on its own
        shape = f"alone:{index}" if TAG in output.columns else output.schema.json()
        by_schema.setdefault(shape, []).append(index)
    runs: dict[int, Run] = {}
    for group in by_schema.values():
        deadline.check()
        jobs = {i: (unique[i][0], outputs[i]) for i in group}
        settings_used = {unique[i][1].shuffle_partitions for i in group}
        if len(settings_used) > 1:
            together = _tagged_union(jobs)
            if together is not None and not _shuffles(together):  # no setting read
                runs.update(_one_job(operator, jobs, deadline, together))
                continue
        for shuffle in sorted(settings_used):
            part = {i: job for i, job in jobs.items() if unique[i][1].shuffle_partitions == shuffle}
            with settings(operator, {SHUFFLE_PARTITIONS: str(shuffle)}):
                runs.update(_one_job(operator, part, deadline))
    return [runs[distinct[(repr(tuple(test)), physical)]] for test, physical in requests]


#: a node of a physical plan's tree string that shuffles (``spark.sql.shuffle.partitions``
#: is read only by these): ``Exchange``, ``BroadcastExchange``, ``ReusedExchange``
_EXCHANGE = re.compile(r"^[\s:|+\-]*(?:\*\(\d+\)\s+)?\w*Exchange\b", re.MULTILINE)


def _shuffles(frame: DataFrame) -> bool:
    """Whether the job has an exchange: only then does ``spark.sql.shuffle.partitions``
    change it. A test's input in one partition needs none even for an aggregation (one
    partition is already clustered by any key), so most jobs do not, and runs asking for
    different settings go in one job."""
    plan = str(frame._jdf.queryExecution().executedPlan().toString())
    return _EXCHANGE.search(plan) is not None


def assemble(partitions: Sequence[DataFrame]) -> DataFrame:
    """One partition per frame, in order (each coalesced to one, then unioned)."""
    frames = [p.coalesce(1) for p in partitions]
    whole = frames[0]
    for frame in frames[1:]:
        whole = whole.unionAll(frame)
    return whole


def _one_job(
    operator: FrameOperator,
    jobs: dict[int, tuple[Sequence[Element], DataFrame]],
    deadline: Deadline,
    together: DataFrame | None = None,
) -> dict[int, Run]:
    if len(jobs) == 1:
        return {i: _alone(operator, test, output, deadline) for i, (test, output) in jobs.items()}
    union = together if together is not None else _tagged_union(jobs)
    rows: list[Row] | None = None
    if union is not None:
        try:
            with settings(operator, {CLASS_NAMES: "false"}):
                rows = collect(operator, union, deadline)
        except OutOfTime:
            raise
        except BaseException as exc:  # which test failed? each on its own: its error names it
            raised(exc)  # a real Ctrl-C stops the command
    if rows is None:
        return {i: _alone(operator, test, output, deadline) for i, (test, output) in jobs.items()}
    found: dict[int, list[Any]] = {i: [] for i in jobs}
    for row in rows:
        found[int(row[0])].append(freeze(_as_dict(row)))
    return {i: Run(output=sorted_bag(values)) for i, values in found.items()}


def warm_up(operator: FrameOperator, frames: Sequence[DataFrame]) -> None:
    """One job of ``frames`` (the operator's inputs, not its outputs) as a round's."""
    _one_job(operator, {i: ((), frame) for i, frame in enumerate(frames)}, NO_DEADLINE)


def _tagged_union(jobs: dict[int, tuple[Sequence[Element], DataFrame]]) -> DataFrame | None:
    """The outputs, each row tagged with its run's number, in one DataFrame (None when Spark
    refuses the union: the runs then go one at a time)."""
    try:
        return _union([out.select(F.lit(str(i)).alias(TAG), "*") for i, (_, out) in jobs.items()])
    except Exception:
        return None


def _alone(
    operator: FrameOperator, test: Sequence[Element], output: DataFrame, deadline: Deadline
) -> Run:
    try:
        rows = collect(operator, output, deadline)
    except OutOfTime:
        raise
    except BaseException as exc:  # SystemExit too: the operator's error, not a property
        raise operator_error(operator.ref, raised(exc), where(test)) from exc
    return Run(output=sorted_bag(freeze(row.asDict(recursive=True)) for row in rows))


def _union(frames: list[DataFrame]) -> DataFrame:
    """A balanced tree of unions (a chain hundreds deep would strain the planner)."""
    while len(frames) > 1:
        paired = [a.unionAll(b) for a, b in zip(frames[::2], frames[1::2], strict=False)]
        frames = paired + frames[len(paired) * 2 :]
    return frames[0]


def _as_dict(row: Row) -> dict[str, Any]:
    """The row without its tag, as ``Row.asDict(recursive=True)`` gives it (a name that
    appears twice keeps its last value, as there)."""
    names = row.__fields__[1:]
    return dict(zip(names, (_plain(v) for v in tuple(row)[1:]), strict=True))


def _plain(value: Any) -> Any:
    if isinstance(value, Row):
        return value.asDict(recursive=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def collect(operator: FrameOperator, frame: DataFrame, deadline: Deadline) -> list[Row]:
    """``frame.collect()``, cancelled at the deadline (``OutOfTime``): the job runs in a job
    group of its own (the thread's own group put back after), which a timer cancels, its
    tasks interrupted. (Job tags do not reach a DataFrame's job in Spark 4.)"""
    remaining = deadline.remaining()
    if remaining is None:
        return frame.collect()
    if remaining <= 0:
        raise OutOfTime
    context = operator.spark.sparkContext
    group = f"parity-properties-{uuid.uuid4().hex}"
    fired = threading.Event()

    def cancel() -> None:
        fired.set()
        # and future jobs: the deadline may pass while the job is still being planned,
        # before it exists to be cancelled (PySpark does not wrap this one)
        context._jsc.sc().cancelJobGroupAndFutureJobs(group)

    before = {key: context.getLocalProperty(key) for key in _GROUP_PROPERTIES}
    context.setJobGroup(group, "parity properties: a round of tests", interruptOnCancel=True)
    timer = threading.Timer(remaining, cancel)
    timer.daemon = True
    timer.start()
    try:
        return frame.collect()
    except Exception as exc:
        if fired.is_set():
            raise OutOfTime from exc
        raise
    finally:
        timer.cancel()
        for key, value in before.items():
            context.setLocalProperty(key, value)  # type: ignore[arg-type]  # None: unset


#: what ``setJobGroup`` sets on the thread
_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


@contextmanager
def settings(operator: FrameOperator, values: dict[str, str]) -> Iterator[None]:
    """Session settings for a job, the shared session's own put back after."""
    conf = operator.spark.conf
    before: dict[str, str | None] = {key: conf.get(key, None) for key in values}
    for key, value in values.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)
