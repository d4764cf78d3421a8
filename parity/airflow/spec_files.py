"""Reading the validations folder's spec files for the DAG factory, and its error lines.

Only a regular file inside the folder (links followed) is read as a spec: a link to
``/etc/passwd`` would otherwise have its first lines quoted in an Airflow import error, and
a FIFO or ``/dev/zero`` named ``x.yaml`` would hang the DAG processor. Each error is one
bounded line with control characters escaped, as Airflow shows it verbatim.
"""

from __future__ import annotations

import stat
from pathlib import Path

from matcher.errors import SpecError

#: a spec is a page of YAML: a larger file in the validations folder is something else
MAX_SPEC_BYTES = 1 << 20
#: the longest reason an import error gives for one spec
MAX_REASON = 500


def read_spec_text(path: Path, directory: Path, shown: str) -> str:
    """The text of the spec file ``path`` in ``directory``: a regular file of at most
    ``MAX_SPEC_BYTES`` that is, links followed, inside ``directory``. Anything else is
    refused before a byte of it is read: a link to ``/etc/passwd`` would otherwise have its
    first lines quoted in an Airflow import error, and a FIFO or ``/dev/zero`` would hang
    the DAG processor."""
    real = path.resolve()
    if not real.is_relative_to(directory.resolve()):
        raise SpecError(
            f"{shown}: a link to a file outside the validations folder: copy the spec in"
        )
    status = real.stat()
    if not stat.S_ISREG(status.st_mode):
        raise SpecError(f"{shown}: not a regular file")
    if status.st_size > MAX_SPEC_BYTES:
        raise SpecError(f"{shown}: larger than {MAX_SPEC_BYTES >> 20} MiB: not a validation spec")
    return real.read_text(encoding="utf-8")


def one_line(text: str) -> str:
    """``text`` as one bounded line: whitespace runs become one space, other control
    characters are escaped (an ESC must not reach a terminal showing an import error)."""
    flat = " ".join(text.split())
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in flat)
    return shown if len(shown) <= MAX_REASON else shown[: MAX_REASON - 3] + "..."


def shown_path(path: Path, root: Path) -> str:
    """``path`` relative to the repository ``root`` (else absolute), by the file's own
    name, not its link's target: the error is about the file in the folder."""
    own = path.parent.resolve() / path.name
    try:
        return str(own.relative_to(root))
    except ValueError:
        return str(own)
