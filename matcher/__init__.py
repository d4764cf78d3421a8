"""Parity's matcher: decide whether two output streams are equivalent up to the
reorderings a dependence relation allows (DiffStream), and explain every divergence.

    from matcher import compare
    from matcher.dependence import by_key
    verdict = compare(reference_events, candidate_events, dependence=by_key("taxi_id"))

Pure Python: no Spark, Airflow or Great Expectations here (an import contract checks it).
"""

from matcher.equality import Equality, Tolerance
from matcher.errors import (
    IncompatibleEqualityError,
    InputError,
    MatcherError,
    ParityError,
    SpecError,
)
from matcher.online import StreamMatcher, compare
from matcher.verdict import KINDS, Divergence, Verdict

__all__ = [
    "KINDS",
    "Divergence",
    "Equality",
    "IncompatibleEqualityError",
    "InputError",
    "MatcherError",
    "ParityError",
    "SpecError",
    "StreamMatcher",
    "Tolerance",
    "Verdict",
    "compare",
]
