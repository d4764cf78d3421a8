"""The spec's verdict digest: a hash of the sections that decide a run's verdict and gate.

    from matcher.spec import load_spec
    from matcher.spec_digest import verdict_digest

    verdict_digest(load_spec("dags/validations/taxi.yaml"))   # 'c0ffee...' (sha256 hex)

Every run is stored with the digest of the spec it was made under (``RunStart.spec_hash``),
and the gate answers only from a run whose digest is today's (``parity.views.gate``): a
verdict made under a looser equality or another dependence says nothing about today's
rules (DESIGN.md, "The release loop").

In the digest: ``dependence`` (key, barriers, typed classify and graph, punctuation,
predicate), ``equality``, ``schema``, ``output`` (format, order), ``expectations``,
``noise`` (its reruns' configuration only when there are reruns), ``gate``, and a recovery
validation's ``recovery`` checks. Not in it: the name, description, schedule, ``airflow``,
``input`` and the applications (paths, arguments, configuration, versions): they say what
runs and where, and the candidate's version is checked on its own; a change of them does
not make an older verdict mean something else.

The digest is the sha256 of the canonical JSON (sorted keys, no spaces) of those sections
with their defaults filled in, so a spec that spells a default out hashes as one that does
not. ``module:function`` references count by name: their code is not read. Expectation
suites count by path, not content. ``DIGEST_VERSION`` is part of the hashed document, so
that changing what is hashed invalidates every stored hash at once, never silently.

Pure core: no Spark, Airflow or database.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matcher.spec import Spec

#: bumped whenever the hashed document changes shape or what a spec's verdict means
#: (2: ``output.schema``, and CSV/JSON values read typed, issue 31)
DIGEST_VERSION = 2
#: the recovery settings that decide its verdict (not its timeout or its Spark master)
_RECOVERY_KEYS = ("crashes", "kill", "seed", "check", "expected", "at_least_once")


def verdict_document(spec: Spec) -> dict[str, Any]:
    """The sections ``verdict_digest`` hashes, as JSON values."""
    noise = spec.noise.model_dump(mode="json")
    if spec.noise.reference_runs == 1:  # no rerun: its configuration decides nothing
        noise = {"reference_runs": 1}
    document: dict[str, Any] = {
        "digest": DIGEST_VERSION,
        "dependence": spec.dependence.model_dump(mode="json", exclude_none=True),
        "equality": spec.equality.model_dump(mode="json"),
        "schema": spec.schema.model_dump(mode="json"),
        "output": spec.output.model_dump(mode="json"),
        "expectations": spec.expectations.model_dump(mode="json"),
        "noise": noise,
        "gate": spec.gate.to_dict(),
    }
    if spec.recovery is not None:
        recovery = spec.recovery.model_dump(mode="json")
        document["recovery"] = {key: recovery[key] for key in _RECOVERY_KEYS}
    return document


def verdict_digest(spec: Spec) -> str:
    """The sha256 (hex, 64 characters) of ``verdict_document(spec)`` as canonical JSON."""
    canonical = json.dumps(
        verdict_document(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def short(digest: str | None) -> str:
    """A digest as people quote it: its first 12 characters and an ellipsis."""
    return "(none)" if digest is None else f"{digest[:12]}…"
