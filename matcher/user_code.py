"""The boundary around a spec's ``module:function``: nothing user code does is read as a result.

A spec's equality function, dependence predicate, barrier or punctuation test and type
classifier run inside the matcher, on the core and in Spark's Python workers. What such a
function raises that is not an ``Exception`` would otherwise pass every ``except Exception``
on its way out: ``sys.exit()`` ends ``parity compare`` with exit 0 and nothing printed,
``sys.exit(1)`` reads as *divergent*. A wrong return type is silently truthy or falsy:
``None`` from an equality function would make every pair differ. ``UserFunction`` wraps the
function where the matcher calls it and turns both into ``UserCodeError`` naming the
function, so the run ends in exit 2 and is stored failed. Exceptions pass unchanged: they
already reach ``matcher.spark.failures.known_failure``, which names the function from the
traceback.

A ``KeyboardInterrupt`` is the user's code's own unless the process received SIGINT while
the function ran: ``note_interrupts`` (installed by the command line and the jobs) counts
real signals, so a real Ctrl-C still stops the command as an interrupt.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from matcher.errors import UserCodeError

#: SIGINTs received since ``note_interrupts`` was installed
_interrupts = 0


def note_interrupts() -> None:
    """Count real SIGINTs (then interrupt as Python does), so that a ``KeyboardInterrupt``
    raised by a spec's function can be told from a real Ctrl-C. Only from the main thread,
    and only over Python's default handler (a host that installed its own keeps it)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_interrupt)


class Interrupted(KeyboardInterrupt):
    """The ``KeyboardInterrupt`` a real SIGINT raises once ``note_interrupts`` is installed:
    the user stopped the command. Code that catches what an operator raises (``parity
    properties``) tells it from one the operator raised itself by its class, with no state
    that outlives the command."""


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    global _interrupts
    _interrupts += 1
    raise Interrupted


def _is_bool(value: Any) -> bool:
    kind = type(value)
    # NumPy's booleans (a function over pandas or NumPy values returns them) are booleans too.
    return kind is bool or (kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"))


#: what each kind of function must return, as the error names it
RETURNS: dict[type, str] = {bool: "a bool (true or false)", str: "a type name (a string)"}


class UserFunction:
    """A spec's function as the matcher calls it: ``fn(*events)``, its result checked to be
    a ``returns`` (``bool``: a bool, NumPy's too; ``str``: a string), and a ``SystemExit``,
    ``KeyboardInterrupt`` (not a real SIGINT) or ``GeneratorExit`` it raises translated to
    ``UserCodeError``. A value rather than a closure, so that Spark pickles it by reference."""

    __slots__ = ("function", "name", "returns")

    def __init__(self, function: Callable[..., Any], name: str, returns: type = bool) -> None:
        self.function = function
        self.name = name
        self.returns = returns

    def __call__(self, *events: Any) -> Any:
        seen = _interrupts
        try:
            result = self.function(*events)
        except Exception:
            raise
        except KeyboardInterrupt as exc:
            if _interrupts != seen:  # a real Ctrl-C arrived while the function ran
                raise
            raise UserCodeError(
                f"the spec's function {self.name} raised KeyboardInterrupt"
            ) from exc
        except SystemExit as exc:
            code = "" if exc.code is None else repr(exc.code)
            raise UserCodeError(
                f"the spec's function {self.name} called sys.exit({code}): a spec's function "
                "must return a value, not end the process"
            ) from exc
        except BaseException as exc:  # GeneratorExit and the like: never a result either
            raise UserCodeError(
                f"the spec's function {self.name} raised {type(exc).__name__}"
            ) from exc
        if self.returns is bool:
            if not _is_bool(result):
                raise self._wrong_type(result)
            return bool(result)
        if not isinstance(result, self.returns):
            raise self._wrong_type(result)
        return result

    def _wrong_type(self, result: Any) -> UserCodeError:
        shown = repr(result)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return UserCodeError(
            f"the spec's function {self.name} returned {type(result).__name__} {shown}, "
            f"expected {RETURNS.get(self.returns, self.returns.__name__)}"
        )

    def __repr__(self) -> str:
        return self.name


def guarded(function: Any, returns: type = bool, name: str | None = None) -> Any:
    """``function`` wrapped as a ``UserFunction`` (named ``module:qualname`` unless ``name``
    says); values that are not user code (``None``, a column name, a test the spec wrote as
    data, an already wrapped function) are returned as they are."""
    if function is None or isinstance(function, str | UserFunction) or not callable(function):
        return function
    if type(function).__module__.startswith("matcher.") or type(function).__module__ == "operator":
        return function  # ColumnEquals, itemgetter: Parity's own, read as SQL by Spark
    if name is None:
        module = getattr(function, "__module__", None) or "?"
        name = f"{module}:{getattr(function, '__qualname__', type(function).__name__)}"
    return UserFunction(function, name, returns)
