"""The operator under test, named ``module:function``, as one of three shapes.

``stream``
    A per-item operator, run in this process:

    * an object with ``process(item) -> iterable`` and an optional ``flush() -> iterable``
      (the punctuation hook: the end of a window or of a micro-batch), or a class or
      zero-argument factory returning one (a fresh instance per run, as each Spark task
      deserialises its own copy; a module-level instance is deep-copied per run);
    * a ``mapPartitions`` function ``f(rows) -> iterator`` (a generator over its
      partition's rows, e.g. ``jobs.examples.taxi:track``): an output belongs to the firing
      of the last row the function had pulled when it yielded it, and what it yields after
      the rows run out belongs to the punctuation (the partition's end). A test with
      several windows runs the function once per window, as Spark does per partition.

    Items are ``pyspark.sql.Row`` objects, as ``mapPartitions`` hands them (``row.col`` and
    ``row["col"]``). Every output is one data item.
``pair``
    A two-input operator: an object with ``process(port, item)`` (ports 0 and 1; optional
    ``flush()`` or ``flush(port)``), each call run under the blocking time limit; or a
    function ``f(left, right) -> DataFrame`` on two DataFrames (``frames``).
``dataframe``
    A transformation ``f(df) -> DataFrame`` run on a local SparkSession (``frames``).

Without ``--shape``: an object or class with ``process`` is ``stream`` (``pair`` when
``process`` takes a port too), a generator function is ``stream``, a function of two
arguments is ``pair`` and any other function ``dataframe``.

Whatever the operator raises while it runs a test (``SystemExit`` and ``KeyboardInterrupt``
too) or returns that its shape does not allow (``process`` returning ``None`` or ``42``
instead of an iterable of outputs, a function returning something that is not a
DataFrame) is ``OperatorError``: the run's error, never a property's evidence nor its
absence. A check that read an operator's crash as "no difference" would call a broken
operator deterministic, stateless and isolated, and suggest the loosest spec.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pyspark.sql import Row

from matcher.errors import InputError, ParityError
from matcher.user_code import Interrupted
from parity.properties.deadline import Deadline
from parity.properties.elements import Element, Run, freeze

SHAPES = ("dataframe", "stream", "pair")
#: the paper's blockingTimeLimit (two seconds: one was too short for its operators)
BLOCKING_LIMIT = 2.0


@dataclass(frozen=True, slots=True)
class Physical:
    """How a test is run, apart from its input: what non-determinism varies. ``delays`` are
    seconds slept before each element (streams); ``partitions`` and ``shuffle_partitions``
    lay a DataFrame out (``partitions`` 1 keeps the input's order in one partition)."""

    partitions: int = 1
    shuffle_partitions: int = 2
    delays: tuple[float, ...] = ()

    def describe(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "partitions": self.partitions,
            "shuffle_partitions": self.shuffle_partitions,
        }
        if any(self.delays):
            shown["delays_seconds"] = [round(d, 3) for d in self.delays]
        return shown


CANONICAL = Physical()
#: how much of an exception's text an error line quotes
QUOTED = 300


class OperatorError(ParityError):
    """The operator under test raised, or returned what its shape does not allow, while it
    ran a test: the message names the operator, the exception and the test."""


def operator_error(ref: str, problem: str, where: str) -> OperatorError:
    """``OperatorError`` on one line: ``REF: the operator PROBLEM (WHERE)``."""
    text = " ".join(f"{ref}: the operator {problem} ({where})".split())
    return OperatorError(text)


def raised(exc: BaseException) -> str:
    """An exception as the error line shows it: ``raised Type: text`` (text cut short), or
    ``called sys.exit(CODE)``. A ``KeyboardInterrupt`` after a real Ctrl-C is raised again:
    the user stopped the command (exit 130), the operator did not fail
    (``matcher.user_code.Interrupted``)."""
    if isinstance(exc, Interrupted):
        raise exc
    if isinstance(exc, SystemExit):
        return f"called sys.exit({'' if exc.code is None else repr(exc.code)})"
    text = " ".join(str(exc).split())
    if len(text) > QUOTED:
        text = text[:QUOTED] + "..."
    return f"raised {type(exc).__name__}" + (f": {text}" if text else "")


def outputs_of(result: Any) -> tuple[Any, ...]:
    """A firing's return value as its frozen outputs: an iterable (a list, a tuple, a
    generator), never ``None``, a number, a string or a mapping (which iterate as
    characters or keys: not the outputs their author meant)."""
    if (
        result is None
        or isinstance(result, str | bytes | Mapping)
        or not isinstance(result, Iterable)
    ):
        raise _WrongReturn(f"returned {type(result).__name__}, not an iterable of outputs")
    return tuple(freeze(o) for o in result)


class _WrongReturn(Exception):
    """What ``outputs_of`` raises: told apart from the operator's own exceptions."""


class Operator(Protocol):
    """The one-method contract every shape keeps: run a test, get its outputs."""

    @property
    def ref(self) -> str: ...
    @property
    def shape(self) -> str: ...
    @property
    def ports(self) -> int: ...
    @property
    def punctuates(self) -> bool: ...
    @property
    def fires(self) -> bool: ...
    @property
    def target(self) -> Any: ...

    def run(self, test: Sequence[Element], physical: Physical = CANONICAL) -> Run: ...

    def run_batch(
        self, requests: Sequence[tuple[Sequence[Element], Physical]], deadline: Deadline
    ) -> list[Run]:
        """Every request's run, in order (``steps``); ``OutOfTime`` past the deadline."""
        ...


def run_each(
    operator: Operator,
    requests: Sequence[tuple[Sequence[Element], Physical]],
    deadline: Deadline,
) -> list[Run]:
    """``run_batch`` for an operator run in this process: one run after the other, the
    deadline looked at before each."""
    runs = []
    for test, physical in requests:
        deadline.check()
        runs.append(operator.run(test, physical))
    return runs


def import_target(ref: str) -> Any:
    """Import ``module:attribute`` (also from the current directory); one-line errors."""
    module_name, sep, attribute = ref.partition(":")
    if not sep or not module_name or not attribute:
        raise InputError(f"{ref}: expected MODULE:FUNCTION (e.g. jobs.examples.taxi:track)")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # SystemExit at import time too: never the command's exit
        raise InputError(f"{ref}: cannot import module {module_name!r}: {raised(exc)}") from exc
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise InputError(f"{ref}: module {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    return target


def detect_shape(target: Any) -> str:
    process = process_of(target)
    if process is not None:
        return "pair" if _arity(process) >= 2 else "stream"
    if not callable(target):
        raise InputError("the operator is neither callable nor has a process() method")
    if inspect.isgeneratorfunction(target):
        return "stream"
    return "pair" if _arity(target) == 2 else "dataframe"


def stream_operator(ref: str, target: Any, shape: str, blocking_limit: float) -> Operator:
    """The ``stream`` shape or the object form of ``pair`` (``frames`` has the others)."""
    process = process_of(target)
    if process is not None:
        ports = 2 if _arity(process) >= 2 else 1
        if shape == "pair" and ports != 2:
            raise InputError(f"{ref}: --shape pair needs process(port, item)")
        if shape == "stream" and ports != 1:
            raise InputError(f"{ref}: process() takes a port: use --shape pair")
        return ObjectOperator(ref, shape, target, ports, blocking_limit)
    if shape == "pair":
        raise InputError(f"{ref}: a pair object needs process(port, item)")
    if not callable(target) or _arity(target) < 1:
        raise InputError(f"{ref}: a stream operator needs process(item) or f(rows)")
    return PartitionOperator(ref, target)


@dataclass(frozen=True, slots=True)
class ObjectOperator:
    """An object with ``process`` (and maybe ``flush``), one fresh instance per run."""

    ref: str
    shape: str
    target: Any
    ports: int
    blocking_limit: float = BLOCKING_LIMIT
    fires: bool = True

    @property
    def punctuates(self) -> bool:
        return callable(getattr(self._sample_instance(), "flush", None))

    def _sample_instance(self) -> Any:
        return self.fresh() if _is_factory(self.target) else self.target

    def fresh(self) -> Any:
        """A new instance for a run: the factory's product, or a deep copy."""
        try:
            if _is_factory(self.target):
                return self.target()
            return copy.deepcopy(self.target)
        except BaseException as exc:
            raise operator_error(self.ref, raised(exc), "making a fresh instance") from exc

    def run(self, test: Sequence[Element], physical: Physical = CANONICAL) -> Run:
        instance = self.fresh()
        firings: list[tuple[Any, ...]] = []
        timed = self.ports == 2
        for position, element in enumerate(test):
            _delay(physical, position)
            call = _firing(instance, element, self.ports)
            if timed:
                done, outputs, error = _timed(call, self.blocking_limit)
                if not done:
                    return _run(firings, stalled_at=position)
            else:
                outputs, error = _untimed(call)
            if error is not None:
                what = "flush()" if element.is_punctuation else "process()"
                where = f"{what} at element {position + 1} of a generated test of {len(test)}"
                problem = str(error) if isinstance(error, _WrongReturn) else raised(error)
                raise operator_error(self.ref, problem, where) from error
            firings.append(outputs)
        return _run(firings)

    def run_batch(
        self, requests: Sequence[tuple[Sequence[Element], Physical]], deadline: Deadline
    ) -> list[Run]:
        return run_each(self, requests, deadline)


@dataclass(frozen=True, slots=True)
class PartitionOperator:
    """A ``mapPartitions`` function; every window (up to a punctuation) is one partition."""

    ref: str
    target: Callable[[Iterable[Any]], Iterable[Any]]
    shape: str = "stream"
    ports: int = 1
    punctuates: bool = True
    fires: bool = True

    def run(self, test: Sequence[Element], physical: Physical = CANONICAL) -> Run:
        firings: list[tuple[Any, ...]] = []
        window: list[tuple[int, Element]] = []
        for position, element in enumerate(test):
            if element.is_punctuation:
                outputs, end = self._partition(window, physical, len(test))
                firings.extend(outputs)
                firings.append(end)
                window = []
            else:
                window.append((position, element))
        if window:  # a partition always ends: its end outputs go with its last item
            outputs, end = self._partition(window, physical, len(test))
            outputs[-1] = outputs[-1] + end
            firings.extend(outputs)
        return _run(firings)

    def run_batch(
        self, requests: Sequence[tuple[Sequence[Element], Physical]], deadline: Deadline
    ) -> list[Run]:
        return run_each(self, requests, deadline)

    def _partition(
        self, window: list[tuple[int, Element]], physical: Physical, length: int
    ) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]]:
        per_item: list[list[Any]] = [[] for _ in window]
        end: list[Any] = []
        pulled = 0

        def rows() -> Iterator[Any]:
            nonlocal pulled
            for position, element in window:
                _delay(physical, position)
                pulled += 1
                yield _row(element)
            pulled += 1

        where = f"a partition of {len(window)} rows of a generated test of {length}"
        try:
            result = self.target(rows())
        except BaseException as exc:
            raise operator_error(self.ref, raised(exc), where) from exc
        if (
            result is None
            or isinstance(result, str | bytes | Mapping)
            or not isinstance(result, Iterable)
        ):
            problem = f"returned {type(result).__name__}, not an iterator of outputs"
            raise operator_error(self.ref, problem, where)
        try:
            for output in result:
                target = end if pulled > len(window) else per_item[max(pulled - 1, 0)]
                target.append(freeze(output))
        except BaseException as exc:
            raise operator_error(self.ref, raised(exc), where) from exc
        return [tuple(o) for o in per_item], tuple(end)


def _firing(instance: Any, element: Element, ports: int) -> Callable[[], Any]:
    if element.item is None:
        flush = getattr(instance, "flush", None)
        if flush is None:
            return lambda: ()
        if ports == 2 and _arity(flush) >= 1:
            return lambda: flush(element.port)
        return lambda: flush()
    row = _row(element)
    if ports == 2:
        return lambda: instance.process(element.port, row)
    return lambda: instance.process(row)


def _untimed(call: Callable[[], Any]) -> tuple[tuple[Any, ...], BaseException | None]:
    """The firing's outputs, or what it raised: anything, ``SystemExit`` included (on a
    thread of its own it would otherwise end the thread without a word, read as a stall)."""
    try:
        return outputs_of(call()), None
    except BaseException as exc:
        return (), exc


def _timed(
    call: Callable[[], Any], limit: float
) -> tuple[bool, tuple[Any, ...], BaseException | None]:
    """Run one firing on a daemon thread; not done within ``limit`` seconds is a stall (the
    paper checks that the Controller's submit returns within blockingTimeLimit). A stalled
    thread is left to finish or wait on its own: it cannot be interrupted."""
    box: list[tuple[tuple[Any, ...], BaseException | None]] = []
    thread = threading.Thread(target=lambda: box.append(_untimed(call)), daemon=True)
    thread.start()
    thread.join(limit)
    if not box:
        return False, (), None
    return True, box[0][0], box[0][1]


def _run(firings: list[tuple[Any, ...]], stalled_at: int | None = None) -> Run:
    output = tuple(o for firing in firings for o in firing)
    return Run(output=output, firings=tuple(firings), stalled_at=stalled_at)


def _delay(physical: Physical, position: int) -> None:
    if position < len(physical.delays) and physical.delays[position] > 0:
        time.sleep(physical.delays[position])


def _row(element: Element) -> Any:
    assert element.item is not None
    return Row(**dict(element.item))


def process_of(target: Any) -> Any:
    """The ``process`` method of the target, of its class, or of what its factory makes."""
    if inspect.isclass(target) or hasattr(target, "process"):
        return getattr(target, "process", None)
    if callable(target) and not inspect.isgeneratorfunction(target) and _arity(target) == 0:
        try:
            product = target()
        except BaseException as exc:
            raise InputError(f"the operator's factory {raised(exc)}") from exc
        return getattr(product, "process", None)
    return None


def _is_factory(target: Any) -> bool:
    if inspect.isclass(target):
        return True
    return callable(target) and not hasattr(target, "process") and _arity(target) == 0


def _arity(function: Any) -> int:
    """Required positional parameters (``self`` not counted for bound methods)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return 1
    return sum(
        1
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is p.empty
        and p.name != "self"
    )
