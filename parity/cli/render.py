"""What ``parity compare`` prints: a verdict for a person, or one JSON object for a program.

The human form answers, in order: equivalent or not; how many divergences of each kind;
how much was read and held; then the first witnesses as side-by-side tables, so that the
reader sees *which* event went wrong and *how* without opening the outputs.

The JSON form is ``Verdict.to_dict()`` plus the paths and spec name, made strictly valid
JSON: datetimes become ISO strings, ``Decimal`` a string (no precision lost), bytes base64,
NaN and infinities the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

Names, paths, versions, errors and values come from users and their data: ``printable`` is
the one escape every command uses before text reaches a terminal (``parity compare``,
``report``, ``history``, ``gate``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from matcher.equality import Equality
from matcher.serialize import json_safe
from matcher.verdict import Verdict
from parity.views.printable import printable
from parity.views.verdict_text import describe_equality, show, verdict_lines

__all__ = ["Comparison", "describe_equality", "render_json", "render_text", "show"]


@dataclass(frozen=True, slots=True)
class Comparison:
    """What was compared: the names a report shows beside the verdict."""

    spec_name: str
    spec_file: str
    reference: str
    candidate: str
    dependence: str
    equality: Equality


def render_text(comparison: Comparison, verdict: Verdict) -> str:
    """The human report, ending in a newline."""
    c = comparison
    lines = [
        f"parity compare: {c.spec_name}",
        f"  reference   {c.reference}",
        f"  candidate   {c.candidate}",
        f"  dependence  {c.dependence}",
        f"  equality    {describe_equality(c.equality)}",
        "",
        *verdict_lines(verdict, c.equality, more="raise --limit to see their witnesses"),
    ]
    return "".join(printable(line) + "\n" for line in lines)


def render_json(comparison: Comparison, verdict: Verdict) -> str:
    """One JSON object (strictly valid JSON), ending in a newline."""
    document = {
        "verdict": verdict.status,
        "spec": comparison.spec_name,
        "spec_file": comparison.spec_file,
        "reference": comparison.reference,
        "candidate": comparison.candidate,
        **verdict.to_dict(),
    }
    return json.dumps(json_safe(document), allow_nan=False, ensure_ascii=False) + "\n"
