"""The ``parity`` command: argparse entry points and what they print on a terminal.

    parity compare | gate | report | history | db upgrade | runs expire

``main`` (``parity.cli.main``) parses and dispatches, and turns every failure into exit 2
with one line; each subcommand lives in its own module (``compare``, ``gate``, ``report``,
``history``, ``store``) and reads through ``parity.views`` what the Parity page reads too.
"""

from parity.cli.main import main

__all__ = ["main"]
