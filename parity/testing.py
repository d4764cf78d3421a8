"""Parity's verdict as a pytest assertion.

    from parity.testing import assert_equivalent

    def test_the_new_job_keeps_each_taxis_order(spark):
        assert_equivalent(
            reference_job(spark, trips), candidate_job(spark, trips),
            dependence={"key": ["taxi_id"]},
            equality={"tolerance": {"fare": {"rel": 1e-9}}},
        )

chispa's ``assert_df_equality`` and ``pyspark.testing.assertDataFrameEqual`` compare rows
in one order, or in any order. ``assert_equivalent`` compares them up to the reorderings a
dependence relation allows: the events of one key keep their order, different keys
interleave freely. Tolerances, ignored and normalised columns are declared as a spec
declares them. On failure, the message is ``parity compare``'s report: the counts by
kind, the corrupted columns, and the first witnesses as side-by-side tables.

* ``reference``, ``candidate``: two Spark DataFrames, compared on Spark
  (``matcher.spark``: rows in partition order, or ``order_by``). Two outputs on disk (paths:
  a file, or a folder of part files as Spark writes them), read as ``parity compare`` reads
  them, in the spec's ``output.format`` (``spec=`` is then required: it says how to read
  them). Otherwise each is a list of rows (mappings or Spark ``Row`` objects), a pandas
  DataFrame, or a Spark DataFrame (then collected), compared by the core matcher
  (``matcher.compare``), rows in list order.
* ``spec``: a spec file's path, a loaded ``Spec``, or a mapping in the spec's form. Its
  dependence, equality, ``output.order_by`` and ``schema.mode`` apply.
* Or ``dependence``: a ``matcher.dependence`` relation, or what a spec's ``dependence:``
  section holds (``{"key": ["taxi_id"]}``, ``"ordered"``, ``"unordered"``). Then
  ``equality``: a ``matcher.Equality`` or what a spec's ``equality:`` section holds, and
  ``order_by`` for Spark DataFrames.
* ``limit``: how many witnesses the message shows (default 5).

A spec that is wrong (an unknown key, a column the rows lack) raises ``SpecError``, not
``AssertionError``: the test is set up wrong, and the one line says where.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from matcher.dependence import Dependence
from matcher.equality import Equality
from matcher.online import compare
from matcher.spec import Spec, load_spec, parse_spec
from matcher.verdict import Verdict
from parity.views.printable import printable
from parity.views.verdict_text import describe_equality, verdict_lines

__all__ = ["assert_equivalent"]

SOURCE = "assert_equivalent"
DEFAULT_LIMIT = 5


def assert_equivalent(
    reference: Any,
    candidate: Any,
    *,
    spec: str | Path | Spec | Mapping[str, Any] | None = None,
    dependence: Dependence | Mapping[str, Any] | str | None = None,
    equality: Equality | Mapping[str, Any] | None = None,
    order_by: Sequence[str] | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Verdict:
    """Fail with Parity's report unless ``candidate`` is equivalent to ``reference``
    (see the module docstring); the verdict otherwise."""
    setup = _Setup.of(spec, dependence, equality, order_by)
    if _is_spark(reference) and _is_spark(candidate):
        verdict = _on_spark(reference, candidate, setup, limit)
    elif isinstance(reference, str | PathLike) or isinstance(candidate, str | PathLike):
        verdict = _on_disk(reference, candidate, setup, limit)
    else:
        rows = _rows(reference), _rows(candidate)
        if setup.spec is not None:
            _check_columns(setup.spec, _columns(rows[0]), _columns(rows[1]))
        verdict = compare(rows[0], rows[1], setup.dependence, setup.equality, limit=limit)
    if not verdict.equivalent:
        raise AssertionError(failure_message(verdict, setup.dependence, setup.equality))
    return verdict


def failure_message(verdict: Verdict, dependence: Dependence, equality: Equality) -> str:
    """What ``assert_equivalent`` says when it fails: one line, then the text report."""
    lines = [
        f"the candidate is not equivalent to the reference under {dependence.describe()}, "
        f"equality {describe_equality(equality)}",
        *verdict_lines(verdict, equality, more="pass a higher limit= to see their witnesses"),
    ]
    return "\n".join(printable(line) for line in lines)


class _Setup:
    """The dependence, equality and order the comparison runs under, and the spec they
    came from (to check the columns it names)."""

    def __init__(
        self, spec: Spec | None, dependence: Dependence, equality: Equality, order_by: list[str]
    ) -> None:
        self.spec = spec
        self.dependence = dependence
        self.equality = equality
        self.order_by = order_by

    @classmethod
    def of(
        cls,
        spec: str | Path | Spec | Mapping[str, Any] | None,
        dependence: Dependence | Mapping[str, Any] | str | None,
        equality: Equality | Mapping[str, Any] | None,
        order_by: Sequence[str] | None,
    ) -> _Setup:
        if spec is not None:
            if dependence is not None or equality is not None:
                raise TypeError(f"{SOURCE}: give spec= or dependence=/equality=, not both")
            loaded = _spec(spec)
            order = list(order_by or loaded.output.order_by)
            return cls(loaded, loaded.build_dependence(), loaded.build_equality(), order)
        if dependence is None:
            raise TypeError(f"{SOURCE}: give spec= or dependence= (a key, ordered, unordered)")
        document: dict[str, Any] = {}
        if isinstance(dependence, Mapping | str):
            document["dependence"] = dependence if isinstance(dependence, str) else dict(dependence)
        if isinstance(equality, Mapping):
            document["equality"] = dict(equality)
        parsed = parse_spec({"dependence": {"unordered": True}, **document}, SOURCE)
        built = dependence if isinstance(dependence, Dependence) else parsed.build_dependence()
        same = equality if isinstance(equality, Equality) else parsed.build_equality()
        same.check_compatible(built.columns)
        return cls(parsed if document else None, built, same, list(order_by or ()))


def _spec(spec: str | Path | Spec | Mapping[str, Any]) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, Mapping):
        return parse_spec(dict(spec), SOURCE)
    return load_spec(spec)


def _is_spark(frame: Any) -> bool:
    """A Spark DataFrame (classic or Connect), told without importing pyspark."""
    return type(frame).__name__ == "DataFrame" and type(frame).__module__.startswith("pyspark.")


def _on_spark(reference: Any, candidate: Any, setup: _Setup, limit: int) -> Verdict:
    from matcher.spark import compare_dataframes, read_stream  # only with Spark DataFrames

    spark = reference.sparkSession
    order = setup.order_by or None
    streams = [read_stream(spark, frame, order_by=order) for frame in (reference, candidate)]
    if setup.spec is not None:
        names = [[c for c in s.columns if not c.startswith("__")] for s in streams]
        _check_columns(setup.spec, names[0], names[1])
    mode = (setup.spec or parse_spec({"dependence": "unordered"}, SOURCE)).schema.mode
    return compare_dataframes(
        streams[0], streams[1], setup.dependence, setup.equality, limit=limit, schema_mode=mode
    )


def _on_disk(reference: Any, candidate: Any, setup: _Setup, limit: int) -> Verdict:
    from matcher.files.compare import compare_files  # only with outputs on disk

    if not (isinstance(reference, str | PathLike) and isinstance(candidate, str | PathLike)):
        raise TypeError(f"{SOURCE}: give two outputs on disk, or two sets of rows, not one of each")
    if setup.spec is None:
        raise TypeError(f"{SOURCE}: outputs on disk need spec=, which says how to read them")
    return compare_files(setup.spec, str(reference), str(candidate), limit)


def _rows(data: Any) -> list[dict[str, Any]]:
    """Rows as dicts, in order: from a list of mappings or Spark ``Row`` objects, a pandas
    DataFrame or a Spark DataFrame."""
    if _is_spark(data):
        return [row.asDict(recursive=True) for row in data.collect()]
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # pandas
        return [dict(row) for row in data.to_dict("records")]
    if isinstance(data, Mapping) or not isinstance(data, Iterable):
        raise TypeError(f"{SOURCE}: expected rows, a pandas or a Spark DataFrame, not {data!r}")
    return [_row(row) for row in data]


def _row(row: Any) -> dict[str, Any]:
    if hasattr(row, "asDict"):  # pyspark.sql.Row
        return dict(row.asDict(recursive=True))
    if isinstance(row, Mapping):
        return dict(row)
    raise TypeError(f"{SOURCE}: a row is a mapping or a Spark Row, not {row!r}")


def _check_columns(spec: Spec, reference: list[str], candidate: list[str]) -> None:
    """Fail when the spec names a column the rows lack (``Spec.check_columns``)."""
    spec.check_columns(reference, where="the reference", other=candidate)
    spec.check_columns(candidate, where="the candidate", other=reference)


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(name for row in rows for name in row))
