"""Parity's command line and file adapters: ``parity compare`` reads two outputs, loads a
validation spec and asks the matcher (``matcher``) for a verdict.

The matcher is the library; this package is the thin layer that reads files and prints.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("parity")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
