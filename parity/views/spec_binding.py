"""Today's spec of a validation, as the gate binds verdicts to it.

    current = current_spec("taxi_distance")             # or current_spec(name, "spec.yaml")
    current.spec_hash, current.reference_version, current.source

A verdict answers "may it ship?" only if its run was made under today's spec (the digest
of the sections that decide the verdict, ``matcher.spec_digest``) against today's
reference version (DESIGN.md, "The release loop"). Today's spec is found as the DAGs find
it (``parity.airflow.factory.validations_dir``):

1. ``--spec FILE`` (``spec_file``), when given;
2. else the validations folder: ``PARITY_VALIDATIONS_DIR``, else
   ``$AIRFLOW__CORE__DAGS_FOLDER/validations``, else ``./dags/validations``; in it the file
   ``<name>.yaml`` (or ``.yml``), else the one spec there whose ``name:`` is the validation.

``None``: no spec of that name there; ``SpecError``: the file found (or given) does not
load, or is the spec of another validation.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from matcher.errors import SpecError
from matcher.spec_digest import verdict_digest

if TYPE_CHECKING:
    from matcher.spec import Spec

#: a spec is a page of YAML: a larger file in the validations folder is something else
MAX_SPEC_BYTES = 1 << 20
VALIDATIONS_VARIABLE = "PARITY_VALIDATIONS_DIR"
DAGS_FOLDER_VARIABLE = "AIRFLOW__CORE__DAGS_FOLDER"
#: the folder of specs when neither variable is set: a checkout's own
DEFAULT_VALIDATIONS = Path("dags") / "validations"


@dataclass(frozen=True, slots=True)
class CurrentSpec:
    """What a verdict must have been made under to count today: the spec's verdict digest,
    its reference's version, and the file they come from (for messages)."""

    spec_hash: str
    reference_version: str | None
    source: str

    @classmethod
    def of(cls, spec: Spec) -> CurrentSpec:
        version = None if spec.reference is None else spec.reference.version
        return cls(verdict_digest(spec), version, spec.source)


def validations_folder() -> tuple[Path, str]:
    """The folder today's specs are in, and how it was chosen (for a message)."""
    named = os.environ.get(VALIDATIONS_VARIABLE)
    if named:
        return Path(named).expanduser(), VALIDATIONS_VARIABLE
    dags = os.environ.get(DAGS_FOLDER_VARIABLE)
    if dags:
        return Path(dags).expanduser() / "validations", f"{DAGS_FOLDER_VARIABLE}/validations"
    return DEFAULT_VALIDATIONS, "the default"


def current_spec(validation: str, spec_file: str | None = None) -> CurrentSpec | None:
    """Today's spec of ``validation`` (see the module's docstring), ``None`` when none is
    found in the validations folder."""
    # Here, not at import: a gate that finds no run (or no spec) never loads pydantic.
    from matcher.spec import load_spec, parse_spec, parse_yaml

    if spec_file is not None:
        spec = load_spec(spec_file)
        if spec.name != validation:
            raise SpecError(
                f"{spec_file}: the spec of validation {spec.name!r}, not {validation!r}"
            )
        return CurrentSpec.of(spec)
    folder, _ = validations_folder()
    path = _spec_path(folder, validation)
    if path is None:
        return None
    text = read_spec_text(path, folder, str(path))
    spec = parse_spec(parse_yaml(text, str(path)), str(path), base_dir=path.parent)
    if spec.name != validation:
        raise SpecError(f"{path}: the spec of validation {spec.name!r}, not {validation!r}")
    return CurrentSpec.of(spec)


def where_looked(validation: str) -> str:
    """One line saying where ``current_spec`` looked, for the error when it found nothing."""
    folder, chosen = validations_folder()
    return (
        f"no spec for validation {validation!r} in {folder} ({chosen}): give its file "
        "with --spec FILE (or set PARITY_VALIDATIONS_DIR)"
    )


def _spec_path(folder: Path, validation: str) -> Path | None:
    """``<validation>.yaml``/``.yml`` in ``folder``, else the spec file there whose
    ``name:`` is ``validation`` (a file that does not parse is not it)."""
    from matcher.spec import parse_yaml

    if not folder.is_dir():
        return None
    for suffix in (".yaml", ".yml"):
        path = folder / f"{validation}{suffix}"
        if path.is_file():
            return path
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            data = parse_yaml(read_spec_text(path, folder, str(path)), str(path))
        except (SpecError, OSError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and data.get("name") == validation:
            return path
    return None


def read_spec_text(path: Path, folder: Path, shown: str) -> str:
    """The text of the spec file ``path`` in ``folder``, read as the DAG factory reads it
    (``parity.airflow.spec_files``, which the views may not import): a regular file of at
    most ``MAX_SPEC_BYTES`` that is, links followed, inside ``folder``. A link to
    ``/etc/passwd`` would otherwise be quoted in an error, a FIFO would hang the gate."""
    real = path.resolve()
    if not real.is_relative_to(folder.resolve()):
        raise SpecError(f"{shown}: a link to a file outside the validations folder")
    status = real.stat()
    if not stat.S_ISREG(status.st_mode):
        raise SpecError(f"{shown}: not a regular file")
    if status.st_size > MAX_SPEC_BYTES:
        raise SpecError(f"{shown}: larger than {MAX_SPEC_BYTES >> 20} MiB: not a validation spec")
    return real.read_text(encoding="utf-8")
