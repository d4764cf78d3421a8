"""Every error Parity raises on purpose.

The tree::

    ParityError                    base of everything below; never raised itself
    ├── SpecError                  the validation spec is malformed (file, key, problem)
    │   └── IncompatibleEqualityError
    │                              the equality ignores or loosens a column the dependence reads
    ├── InputError                 an output cannot be read as a stream (missing file, bad row,
    │                              non-UTF-8, unknown format, missing column)
    ├── MatcherError               the matcher was used wrongly (unknown side, push after finish)
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


class InputError(ParityError):
    """An output cannot be read as a stream: missing path, unknown format, malformed row,
    non-UTF-8 bytes, or a column that the spec needs is absent."""


class MatcherError(ParityError):
    """The matcher was driven wrongly: an unknown side, or a push after ``finish()``."""
