"""Data-quality expectations beside the verdict: Great Expectations 1.x suites, and
expectations derived from the reference output's profile, run on a Spark DataFrame.

    from expectations.runner import run_expectations   # imports great_expectations

This module itself imports nothing heavy: the report (``parity.report``) reads the layout
constants below without loading Great Expectations.
"""

from __future__ import annotations

#: the Data Docs site, under a run's report folder (``Run.report_path``)
DATA_DOCS_DIR = "data_docs"

__all__ = ["DATA_DOCS_DIR"]
