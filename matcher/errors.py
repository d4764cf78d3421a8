"""Every error Parity raises on purpose.

The tree::

    ParityError                    base of everything below; never raised itself
    ├── SpecError                  the validation spec is malformed (file, key, problem)
    │   ├── IncompatibleEqualityError
    │   │                          the equality ignores or loosens a column the dependence reads
    │   └── UserCodeError          a spec's module:function ended the process (sys.exit),
    │                              raised KeyboardInterrupt, or returned the wrong type
    ├── InputError                 an output cannot be read as a stream (missing file, bad row,
    │                              non-UTF-8, unknown format, missing column)
    ├── OutputPathError            a path a command was asked to write is not safe to replace
    │                              (a symlink, device, FIFO, folder, hard-linked file)
    ├── MatcherError               the matcher was used wrongly (unknown side, push after finish)
    ├── ConfigurationError         the deployment's setting is unusable (PARITY_WORKSPACE, ...)
    └── StoreError                 the results database failed (matcher.store.errors; the
        └── UnknownRunError        message masks passwords); a run id that was never started

A divergence between two streams is *not* an error: it is a ``Verdict`` with witnesses.
Exceptions are for things that went wrong. Third-party errors are translated at the boundary
(``raise InputError(...) from exc``) so that callers handle one tree.
"""

from __future__ import annotations


class ParityError(Exception):
    """Base class of every error Parity raises on purpose; its message is one line for a user."""


class SpecError(ParityError):
    """The validation spec is malformed: an unknown key, a wrong type, an unimportable function.

    The message names the file, the key and the problem, e.g.
    ``spec.yaml: dependence.key: expected a list of column names, got 3``.
    """


class IncompatibleEqualityError(SpecError):
    """The equality would make two events equal that the dependence tells apart.

    DiffStream requires ``x ≡ x2 and x D y ⇒ x2 D y``; an equality that ignores, tolerates or
    normalises a column that the dependence reads breaks it, and the verdict would be unsound.
    """


class UserCodeError(SpecError):
    """A spec's ``module:function`` did something no result can come from: it called
    ``sys.exit()``, raised ``KeyboardInterrupt`` (not a real Ctrl-C) or ``GeneratorExit``, or
    returned a value of the wrong type (an equality function or a dependence predicate must
    return a bool). Raised by ``matcher.user_code.UserFunction``, which names the function."""


class InputError(ParityError):
    """An output cannot be read as a stream: missing path, unknown format, malformed row,
    non-UTF-8 bytes, or a column that the spec needs is absent."""


class OutputPathError(ParityError):
    """A path given to write (``--html PATH``, ``--json-out``, ``--report-dir``) holds
    something other than a regular file with one link, or cannot be written: nothing is
    written and nothing there is followed or replaced (``matcher.files.output_paths``)."""


class MatcherError(ParityError):
    """The matcher was driven wrongly: an unknown side, or a push after ``finish()``."""


class ConfigurationError(ParityError):
    """A setting of the deployment (an environment variable such as ``PARITY_WORKSPACE``) is
    unusable; the message names the setting and what it accepts."""
