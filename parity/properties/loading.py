"""From the command's arguments to an operator to test and the plan to test it with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from matcher.errors import InputError
from parity.properties.elements import Test
from parity.properties.generation import (
    Domain,
    domain,
    evidence_path,
    load_evidence,
    source_constants,
)
from parity.properties.operators import (
    BLOCKING_LIMIT,
    SHAPES,
    Operator,
    detect_shape,
    import_target,
    process_of,
    stream_operator,
)
from parity.properties.samples import Sample, check_keys, read_sample


@dataclass(frozen=True, slots=True)
class Subject:
    """The operator under test, its input domains (one per port) and its samples."""

    operator: Operator
    domains: tuple[Domain, ...]
    samples: tuple[Sample, ...]


def load_subject(
    ref: str,
    samples: Sequence[str],
    keys: Sequence[str] = (),
    shape: str | None = None,
    blocking_limit: float = BLOCKING_LIMIT,
    session: Callable[[], SparkSession] | None = None,
) -> Subject:
    """Import the operator, read its sample(s), check the keys; errors are ``InputError``."""
    target = import_target(ref)
    chosen = shape or detect_shape(target)
    if chosen not in SHAPES:
        raise InputError(f"--shape {chosen}: expected one of {', '.join(SHAPES)}")
    read = tuple(read_sample(path) for path in samples)
    if chosen == "pair" and len(read) == 1:
        read = (read[0], read[0])  # both ports take rows of the one schema
    if chosen != "pair" and len(read) > 1:
        raise InputError("--sample-right is for --shape pair (a two-input operator)")
    for sample in read:
        check_keys(sample, keys)
    constants = source_constants(target)
    domains = tuple(domain(sample, constants) for sample in read)
    if chosen == "dataframe" or (chosen == "pair" and _is_frame_function(target)):
        from parity.properties.frames import FrameOperator, local_session, spark_schema

        spark = (session or local_session)()
        schemas = tuple(spark_schema(spark, sample) for sample in read)
        operator = FrameOperator(ref, chosen, target, spark, schemas)
        operator.warm_up()
        return Subject(operator, domains, read)
    return Subject(stream_operator(ref, target, chosen, blocking_limit), domains, read)


def _is_frame_function(target: object) -> bool:
    return process_of(target) is None


def reused_tests(
    directory: str | None,
    ref: str,
    domains: Sequence[Domain],
    warn: Callable[[str], None] | None = None,
) -> list[Test]:
    """The evidence inputs an earlier run kept for ``ref`` (``--technique reuse``); ``warn``
    hears of a file that is there but corrupt."""
    return load_evidence(evidence_path(directory, ref), domains, warn)
