"""The schema of the validation spec: pydantic models of every section, as the YAML says it.

The models are the typed boundary: frozen, unknown keys forbidden, single names accepted
where a list is expected (``key: taxi_id``). ``validate_document`` turns pydantic's
``ValidationError`` into one ``SpecError`` line, ``FILE: dotted.key: problem``, because the
person reading it is fixing a YAML file, not debugging Python. ``matcher.spec`` loads files
and builds matcher objects from these values.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from string import Formatter
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from matcher.ddl import parse_ddl
from matcher.errors import SpecError
from matcher.formats import Format
from matcher.gate import GateSpec
from matcher.spec_bounds import MAX_INT, MAX_NAME, check_instant, check_plain_name
from matcher.spec_bounds import parse_duration as parse_duration
from matcher.spec_problems import first_problem, show

DEPENDENCE_FORMS = ("unordered", "ordered", "key", "typed", "punctuation", "predicate")
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: What an application's args may name: the slice, its output directory, the run workspace.
PLACEHOLDERS = ("input", "output", "run_dir", "checkpoint")
#: The reference rerun's default Spark configuration (over the reference's own): other
#: partition counts, and no adaptive coalescing, which would merge small shuffles back to one
#: partition and hide a partitioning-dependent result.
RERUN_CONF = {
    "spark.sql.shuffle.partitions": "7",
    "spark.default.parallelism": "7",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
}
#: Airflow's cron presets that are cron expressions (``@once`` and ``@continuous`` are not).
SCHEDULE_PRESETS = ("@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly")
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,?#-]+$")


def _listify(value: Any) -> Any:
    """A single name stands for a one-item list: ``key: taxi_id`` is ``key: [taxi_id]``."""
    return [value] if isinstance(value, str) else value


def _text(value: Any) -> Any:
    # Spark arguments and conf values are strings; YAML reads 8 and true as number and bool.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, (int, float)) else value


def _scalars(value: Any) -> Any:
    """``equals`` is a value or a list of values, each a string, number or boolean."""
    values = value if isinstance(value, list) else [value]
    for item in values:
        if not isinstance(item, str | int | float | bool):
            raise ValueError(f"expected strings, numbers or booleans, got {show(item)}")
    return values


def _ref(value: str) -> str:
    if not _REF.match(value):
        raise ValueError(f"expected 'module:function', got {value!r}")
    return value


def _bounded(value: str) -> str:
    if len(value) > MAX_NAME:
        raise ValueError(f"at most {MAX_NAME} characters, got {len(value)}")
    return value


Name = Annotated[str, Field(min_length=1)]
Columns = Annotated[tuple[Name, ...], BeforeValidator(_listify), Field(min_length=1)]
Text = Annotated[str, BeforeValidator(_text)]
Ref = Annotated[str, AfterValidator(_ref)]
Normalisation = Literal["trim", "lower", "upper", "casefold"]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def spark_keys(conf: dict[str, str]) -> dict[str, str]:
    """A Spark configuration whose every key Spark reads (``spark.``) and is one plain
    word: a key with a space or a line break is no key Spark has, only a typo or a trick."""
    for key in conf:
        if not key.startswith("spark."):
            raise ValueError(f"{key!r}: Spark ignores configuration keys not starting 'spark.'")
        check_plain_name(key, "a Spark configuration key")
    return conf


class ApplicationSpec(_Section):
    """A Spark application the pipeline submits: the file (or artifact URL), its arguments
    with ``{input}``/``{output}``/``{run_dir}`` placeholders, and its Spark configuration."""

    application: Name
    main_class: Name | None = None
    py_files: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    jars: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    args: tuple[Text, ...] = ()
    conf: dict[str, Text] = {}
    #: the label the verdict is stored under (``parity gate --candidate``)
    version: Annotated[str, AfterValidator(_bounded)] | None = None

    @field_validator("args")
    @classmethod
    def _placeholders(cls, args: tuple[str, ...]) -> tuple[str, ...]:
        used: set[str] = set()
        for arg in args:
            used |= placeholders(arg)
        if len(used & {"input", "output"}) == 1:
            given, missing = ("input", "output") if "input" in used else ("output", "input")
            raise ValueError(
                f"{{{given}}} is used but {{{missing}}} is not: give both placeholders, or "
                "neither (then --input SLICE --output OUT are appended)"
            )
        return args

    @field_validator("conf")
    @classmethod
    def _spark_keys(cls, conf: dict[str, str]) -> dict[str, str]:
        return spark_keys(conf)

    @model_validator(mode="after")
    def _main_class_needs_a_jar(self) -> ApplicationSpec:
        if self.main_class is not None and not self.application.lower().endswith(".jar"):
            raise ValueError(f"'main_class' is for a JAR application, not {self.application!r}")
        return self


def placeholders(arg: str) -> set[str]:
    """The ``{name}`` placeholders in an application argument (``{{``/``}}`` are braces)."""
    try:
        parsed = list(Formatter().parse(arg))
    except ValueError as exc:
        raise ValueError(f"{arg!r}: {exc} (write {{{{ and }}}} for literal braces)") from None
    names = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conversion:
            known = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
            raise ValueError(
                f"{arg!r}: unknown placeholder {{{name}}} (known: {known}; write {{{{ and }}}} "
                "for literal braces)"
            )
        names.add(name)
    return names


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ValueError(
            f"give a time zone, as in {value.isoformat()}Z or {value.isoformat()}+02:00"
        )
    return value


Instant = Annotated[dt.datetime, AfterValidator(_aware), AfterValidator(check_instant)]
#: a seed or a count: what any store column and any ``--seed`` argument holds
Seed = Annotated[int, Field(ge=0, le=MAX_INT)]


class SliceSpec(_Section):
    """Which part of the capture a run replays: rows whose ``column`` falls in a time window
    (fixed by ``start``/``end``, else the run's data interval, ``window`` long), optionally
    thinned to a stable fraction of keys, written as ``files`` ordered files."""

    column: Name | None = None
    window: str | None = None
    start: Instant | None = None
    end: Instant | None = None
    sample: Annotated[float, Field(gt=0, le=1)] | None = None
    key: Columns | None = None
    files: Annotated[int, Field(ge=1, le=10_000)] = 4

    @field_validator("window")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)  # the form and the bound (matcher.spec_bounds)
        return value

    @model_validator(mode="after")
    def _window_needs_column(self) -> SliceSpec:
        if self.window is not None and self.column is None:
            raise ValueError("a window needs the time column it applies to ('column')")
        if (self.start is not None or self.end is not None) and self.column is None:
            raise ValueError("'start' and 'end' need the time column they apply to ('column')")
        if self.start is not None and self.end is not None:
            if self.window is not None:
                raise ValueError("give two of 'start', 'end' and 'window', not all three")
            if self.start >= self.end:
                raise ValueError(
                    f"'start' ({self.start.isoformat()}) must be before 'end' "
                    f"({self.end.isoformat()})"
                )
        elif (self.start is None) != (self.end is None) and self.window is None:
            given = "start" if self.start is not None else "end"
            raise ValueError(f"'{given}' needs 'window' (or both 'start' and 'end')")
        if self.key is not None and self.sample is None:
            raise ValueError("'key' names the columns a sample hashes: it needs 'sample'")
        return self

    def fixed_window(self) -> tuple[dt.datetime, dt.datetime] | None:
        """The window ``start``/``end`` (and ``window``) fix, or ``None``: the run's data
        interval chooses."""
        length = None if self.window is None else parse_duration(self.window)
        if self.start is not None and self.end is not None:
            return self.start, self.end
        if self.start is not None and length is not None:
            return self.start, self.start + length
        if self.end is not None and length is not None:
            return self.end - length, self.end
        return None


class InputSpec(_Section):
    """The replayed production input both versions read (used by the Airflow pipeline)."""

    path: Name
    format: Format | None = None
    slice: SliceSpec | None = None


class OutputSpec(_Section):
    """How to read both outputs: their format, the columns that give their order when
    file and row order do not (an output written by many tasks), and, for CSV, the
    columns' types (``schema``: a Spark DDL column list, ``day DATE, total DOUBLE``,
    ``matcher.ddl``; without it they are inferred as Spark infers them); ``differences``:
    whether the match job writes every difference into the run's report folder, for
    ``parity report RUN --differences PATH`` (``matcher.files.differences``)."""

    format: Format | None = None
    order_by: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    differences: bool = False
    # "schema" would shadow pydantic's BaseModel.schema(): the YAML key is the alias.
    schema_: str | None = Field(default=None, alias="schema")

    @field_validator("schema_")
    @classmethod
    def _ddl(cls, value: str | None) -> str | None:
        if value is not None:
            parse_ddl(value)  # its ValueError names the column
        return value

    @model_validator(mode="after")
    def _csv_only(self) -> OutputSpec:
        if self.schema_ is not None and self.format not in (None, "csv"):
            raise ValueError(
                f"schema declares a CSV output's column types; format is {self.format} "
                "(JSON and Parquet outputs carry their own)"
            )
        return self

    def declared_columns(self) -> tuple[tuple[str, str], ...] | None:
        """The columns ``schema`` declares, as ``(name, type)``; ``None``: not declared."""
        return None if self.schema_ is None else parse_ddl(self.schema_)


class NoiseSpec(_Section):
    """Reference reruns: a reference that disagrees with itself makes a verdict noisy. The
    rerun is the reference with ``conf`` laid over its Spark configuration (by default other
    partition counts, so that partitioning-dependent results show) and ``args`` appended."""

    reference_runs: Annotated[int, Field(ge=1, le=2)] = 1
    conf: dict[str, Text] = dict(RERUN_CONF)
    args: tuple[Text, ...] = ()

    @field_validator("conf")
    @classmethod
    def _spark_keys(cls, conf: dict[str, str]) -> dict[str, str]:
        return spark_keys(conf)


class RecoverySpec(_Section):
    """A recovery validation (``parity recovery``): the ``application`` is a streaming job run
    under ``crashes`` seeded SIGKILLs (``kill``: its driver's process tree, or a standalone
    cluster's executors) and restarted from its checkpoint until it finishes; ``check`` says
    how its output is judged: ``windows``, the sequence-window validator (the detector
    application; every key must reach ``expected``), or ``differential``, the matcher against
    an uninterrupted run under the spec's dependence and equality."""

    crashes: Annotated[int, Field(ge=1, le=100)] = 5
    kill: Literal["driver", "executor"] = "driver"
    seed: Seed = 1
    check: Literal["windows", "differential"] = "differential"
    expected: Annotated[int, Field(ge=1, le=MAX_INT)] | None = None
    at_least_once: bool = False
    #: seconds for each run of the job (the crashed one with all its restarts)
    timeout: Annotated[int, Field(ge=10, le=86_400)] = 900
    #: the Spark master of the runs; ``kill: executor`` needs a standalone cluster (spark://)
    master: Name | None = None

    @model_validator(mode="after")
    def _consistent(self) -> RecoverySpec:
        if self.check != "windows" and (self.expected is not None or self.at_least_once):
            raise ValueError("'expected' and 'at_least_once' are for check: windows")
        if self.kill == "executor" and not (self.master or "").startswith("spark://"):
            raise ValueError(
                "kill: executor needs a standalone cluster: set master to its spark:// URL"
            )
        return self


#: what ``parity properties --technique`` takes (``parity.properties.generation``)
_TECHNIQUE = re.compile(r"^(hybrid|mutation|reuse|(random|pool|pairwise)(\+mutation)?(\+reuse)?)$")


class PropertyTestSpec(_Section):
    """An operator to re-test on each scheduled run (``parity properties``): its
    ``module:function``, a sample of its input (relative to the repository root), the key it
    may be partition-isolated by, and the test budget. The default technique is ``reuse``:
    the evidence inputs kept by earlier runs are replayed first (the paper's reuse)."""

    operator: Ref
    sample: Name
    sample_right: Name | None = None
    key: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    shape: Literal["dataframe", "stream", "pair"] | None = None
    technique: str = "reuse"
    budget: Annotated[int, Field(ge=1, le=1000)] = 10
    seed: Seed = 0

    @field_validator("technique")
    @classmethod
    def _technique(cls, value: str) -> str:
        if not _TECHNIQUE.match(value):
            raise ValueError(
                "expected random, pool, pairwise, mutation, reuse, hybrid or "
                f"BASE[+mutation][+reuse], got {value!r}"
            )
        return value


def _distinct_operators(value: tuple[PropertyTestSpec, ...]) -> tuple[PropertyTestSpec, ...]:
    seen: set[str] = set()
    for entry in value:
        if entry.operator in seen:
            raise ValueError(f"{entry.operator} is listed twice (one entry per operator)")
        seen.add(entry.operator)
    return value


class AirflowSpec(_Section):
    """How the validation's DAG runs on Airflow: how many of its runs at once, the pool its
    Spark tasks take a slot of, and how long each Spark task may run (``execution_timeout``;
    a recovery DAG's crashed run gets at least its ``recovery.timeout`` and five minutes)."""

    max_active_runs: Annotated[int, Field(ge=1, le=64)] = 1
    pool: Name = "parity_spark"
    task_timeout: str = "2h"
    #: Spark settings of Parity's own jobs (slice, match, expectations), as ``--conf``
    spark_conf: dict[str, Text] = {}
    #: laid over ``spark_conf`` for the match job: the one a user tunes on real data
    match_conf: dict[str, Text] = {}
    #: the Airflow connection its Spark tasks submit to; ``None``: the deployment's
    #: ``PARITY_SPARK_CONN_ID`` (default ``spark_default``)
    conn_id: Name | None = None

    @field_validator("spark_conf", "match_conf")
    @classmethod
    def _spark_keys(cls, conf: dict[str, str]) -> dict[str, str]:
        return spark_keys(conf)

    @field_validator("pool")
    @classmethod
    def _pool(cls, value: str) -> str:
        # Airflow 3.3 takes any text up to 256 characters as a pool's name; a spec's pool is
        # created by an operator on the command line, so a plain word is the useful rule.
        return check_plain_name(value, "a pool name")

    @field_validator("conn_id")
    @classmethod
    def _conn_id(cls, value: str | None) -> str | None:
        return None if value is None else check_plain_name(value, "a connection id")

    @field_validator("task_timeout")
    @classmethod
    def _timeout(cls, value: str) -> str:
        parse_duration(value)  # the form and the bound (matcher.spec_bounds)
        return value

    def execution_timeout(self) -> dt.timedelta:
        return parse_duration(self.task_timeout)


class EventTestSpec(_Section):
    """Recognises events: ``column`` equal to one of ``equals``, or ``function(event)``."""

    column: Name | None = None
    equals: Annotated[tuple[Any, ...], BeforeValidator(_scalars)] | None = None
    function: Ref | None = None
    columns: Annotated[tuple[Name, ...], BeforeValidator(_listify)] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> EventTestSpec:
        by_column = self.column is not None or self.equals is not None
        if by_column == (self.function is not None):
            raise ValueError("give either 'column' and 'equals', or 'function'")
        if by_column and (self.column is None or self.equals is None):
            raise ValueError("'column' and 'equals' go together")
        if by_column and self.columns is not None:
            raise ValueError("'columns' describes a 'function'; with 'column' it is implied")
        return self


class BarrierSpec(EventTestSpec):
    """Barrier events: dependent with every event (end-of-day, end-of-file markers)."""


class PunctuationSpec(EventTestSpec):
    """Punctuation events and the timestamp column they are ordered against."""

    timestamp: Name


class ClassifySpec(_Section):
    """How a typed dependence finds an event's type: a column, or a function."""

    column: Name | None = None
    function: Ref | None = None
    columns: Annotated[tuple[Name, ...], BeforeValidator(_listify)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_column(cls, value: Any) -> Any:
        return {"column": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_way(self) -> ClassifySpec:
        if (self.column is None) == (self.function is None):
            raise ValueError("give a column name or {function: 'module:function'}")
        return self


class TypedSpec(_Section):
    """Event types, their key columns (``None``: unkeyed) and the dependence graph."""

    classify: ClassifySpec
    types: dict[Name, Columns | None]
    edges: tuple[tuple[Name, ...], ...] = ()


class DependenceSpec(_Section):
    """Exactly one form, plus ``barrier`` (with key/ordered/unordered) or ``columns``
    (what a predicate reads)."""

    unordered: bool = False
    ordered: bool = False
    key: Columns | None = None
    barrier: BarrierSpec | None = None
    typed: TypedSpec | None = None
    punctuation: PunctuationSpec | None = None
    predicate: Ref | None = None
    columns: Annotated[tuple[Name, ...], BeforeValidator(_listify)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_word(cls, value: Any) -> Any:
        if isinstance(value, str) and value in ("unordered", "ordered"):
            return {value: True}
        if not isinstance(value, Mapping):
            raise ValueError(f"expected 'unordered', 'ordered' or a mapping, got {show(value)}")
        return value

    @model_validator(mode="after")
    def _one_form(self) -> DependenceSpec:
        given = [name for name in DEPENDENCE_FORMS if getattr(self, name) not in (None, False)]
        if len(given) != 1:
            got = " and ".join(given) or "none"
            raise ValueError(f"give exactly one of {', '.join(DEPENDENCE_FORMS)}; got {got}")
        if self.barrier is not None and given[0] not in ("unordered", "ordered", "key"):
            raise ValueError(f"'barrier' combines with key, ordered or unordered, not {given[0]}")
        if self.columns is not None and given[0] != "predicate":
            raise ValueError("'columns' names what a predicate reads; it needs 'predicate'")
        return self

    @property
    def form(self) -> str:
        return next(name for name in DEPENDENCE_FORMS if getattr(self, name) not in (None, False))


class ToleranceSpec(_Section):
    """Numeric closeness; the matcher's ``Tolerance`` checks it again, this reports where."""

    abs: NonNegative = 0.0
    rel: NonNegative = 0.0


class EqualitySpec(_Section):
    """When two events count as equal; a ``function`` replaces the column rules."""

    ignore: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    tolerance: dict[Name, ToleranceSpec] = {}
    normalize: dict[Name, Annotated[tuple[Normalisation, ...], BeforeValidator(_listify)]] = {}
    nan_equal: bool = True
    function: Ref | None = None

    @model_validator(mode="after")
    def _function_alone(self) -> EqualitySpec:
        if self.function is not None and (self.ignore or self.tolerance or self.normalize):
            raise ValueError("'function' replaces ignore, tolerance and normalize: give one")
        return self


class SchemaSpec(_Section):
    """How schema differences weigh (``matcher.schema``): ``strict`` every one is
    divergent; ``compatible`` added, removed and not-widening retyped columns are, the rest
    is listed; ``ignore`` nothing is listed."""

    mode: Literal["strict", "compatible", "ignore"] = "compatible"


class DerivedExpectationsSpec(_Section):
    """Expectations computed from the reference output's profile and run on the candidate's:
    row count, key columns non-null / unique / distinct count, numeric ranges and null
    fractions, each within its tolerance (fractions: 0.01 is 1%)."""

    enabled: bool = True
    row_count_tolerance: NonNegative = 0.01
    key_count_tolerance: NonNegative = 0.01
    range_tolerance: NonNegative = 0.0
    null_fraction_tolerance: NonNegative = 0.01
    ignore: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()


Side = Literal["candidate", "reference"]


class ExpectationsSpec(_Section):
    """Great Expectations suites (JSON files) to run on the outputs, and derived expectations.

    A list (or one path) is the suites alone: ``expectations: [expectations/suites/a.json]``.
    """

    suites: Annotated[tuple[Name, ...], BeforeValidator(_listify)] = ()
    sides: Annotated[tuple[Side, ...], BeforeValidator(_listify), Field(min_length=1)] = (
        "candidate",
    )
    derived: DerivedExpectationsSpec = DerivedExpectationsSpec()

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        if isinstance(value, str | list | tuple):
            return {"suites": value}
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a list of suite files or a mapping, got {show(value)}")
        return value

    @field_validator("sides")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"a side is listed twice: {', '.join(value)}")
        return value


class SpecDocument(_Section):
    """The whole file, as validated; ``Spec`` adds where it came from and its functions."""

    name: str | None = None
    reference: ApplicationSpec | None = None
    candidate: ApplicationSpec | None = None
    #: a recovery validation's one streaming application (with ``recovery``)
    application: ApplicationSpec | None = None
    recovery: RecoverySpec | None = None
    input: InputSpec | None = None
    output: OutputSpec = OutputSpec()
    dependence: DependenceSpec
    equality: EqualitySpec = EqualitySpec()
    expectations: ExpectationsSpec = ExpectationsSpec()
    noise: NoiseSpec = NoiseSpec()
    schedule: Name | None = None
    gate: GateSpec = GateSpec()
    airflow: AirflowSpec = AirflowSpec()
    #: operators to re-test for their properties on each scheduled run
    properties: Annotated[tuple[PropertyTestSpec, ...], AfterValidator(_distinct_operators)] = ()
    # "schema" would shadow pydantic's BaseModel.schema(): the YAML key is the alias.
    schema_: SchemaSpec = Field(default=SchemaSpec(), alias="schema")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError(f"use letters, digits, '_', '-' and '.', got {value!r}")
        if value is not None and len(value) > MAX_NAME:
            raise ValueError(f"at most {MAX_NAME} characters, got {len(value)}")
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        if value is None or value in SCHEDULE_PRESETS:
            return value
        fields = value.split()
        if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
            raise ValueError(
                f"expected a cron expression (5 fields, as '0 2 * * *') or one of "
                f"{', '.join(SCHEDULE_PRESETS)}, got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _pipeline(self) -> SpecDocument:
        # Checks across sections: the message names its key (the location is the document).
        chosen = self.input.slice if self.input is not None else None
        sampled = chosen is not None and chosen.sample is not None and chosen.key is None
        if sampled and self.dependence.key is None:
            raise ValueError(
                "input.slice.key: a sample hashes key columns: name them (the dependence "
                "has no key to default to)"
            )
        if (self.application is None) != (self.recovery is None):
            given, missing = ("application", "recovery")
            if self.application is None:
                given, missing = missing, given
            raise ValueError(f"{missing}: a recovery validation needs both {given} and {missing}")
        if self.application is not None:
            if self.reference is not None or self.candidate is not None:
                raise ValueError(
                    "application: a recovery validation runs one application; it has no "
                    "reference or candidate"
                )
            used: set[str] = set()
            for arg in self.application.args:
                used |= placeholders(arg)
            if "checkpoint" not in used:
                raise ValueError(
                    "application.args: a streaming job recovers from its checkpoint: pass "
                    "its location as {checkpoint} (the run fills it in)"
                )
        if self.reference is not None and self.noise.reference_runs > 1:
            rerun = {**self.reference.conf, **self.noise.conf}
            if rerun == self.reference.conf and not self.noise.args:
                raise ValueError(
                    "noise.conf: the rerun would repeat the reference exactly; give Spark "
                    "configuration (or noise.args) that differs from the reference's"
                )
        return self


def validate_document(data: Any, source: str) -> SpecDocument:
    """Validate parsed YAML; the first problem becomes a ``SpecError`` naming ``source``."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        # The kind, not the value: a file that is no spec (a symlink to a system file) must
        # not have its contents quoted into a log or an Airflow import error.
        kind = (
            "a list" if isinstance(data, list) else "text" if isinstance(data, str) else "a value"
        )
        raise SpecError(
            f"{source}: not a validation spec: expected a mapping of sections, got {kind}"
        )
    try:
        return SpecDocument.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{source}: {first_problem(exc, SpecDocument)}") from exc
