"""Generate the topics example: words of documents, with an end-of-file marker per input
file, written as CSV.

    python examples/topics/generate.py

The job under test reads input files one at a time; each file holds a few documents, and
the job emits every word of every document (``kind=word``, ``doc``, ``pos``, ``word``),
then one ``kind=EOF`` row for the file. Its consumer (a topic model updated per file) needs
each document's words in order and everything of a file before that file's EOF, but does
not care how documents interleave. Hence the spec's dependence:
``{key: [doc], barrier: {column: kind, equals: EOF}}``.

* ``reference.csv``: documents one after the other within each file.
* ``candidate_ok/``: a Spark-style output directory (two part files, ``_SUCCESS``) whose
  documents interleave within each file: equivalent.
* ``candidate_bug.csv``: the last word of ``d2`` is emitted after file ``a.txt``'s EOF
  (a late event crossing a barrier), and a word of ``d5`` is misspelt: divergent.

Deterministic, so the committed files are exactly what this script writes.
"""

from __future__ import annotations

import csv
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLUMNS = ("kind", "file", "doc", "pos", "word")
FILES = {
    "a.txt": {"d1": "streams of events arrive", "d2": "order matters per key"},
    "b.txt": {"d3": "equal events may swap", "d4": "barriers cut the stream"},
    "c.txt": {"d5": "the reference is the truth", "d6": "divergence needs a witness"},
}
Row = dict[str, str]


def _words(file: str, doc: str) -> list[Row]:
    text = FILES[file][doc]
    return [
        {"kind": "word", "file": file, "doc": doc, "pos": str(pos), "word": word}
        for pos, word in enumerate(text.split())
    ]


def _eof(file: str) -> Row:
    return {"kind": "EOF", "file": file, "doc": "", "pos": "", "word": ""}


def reference() -> list[Row]:
    rows: list[Row] = []
    for file, docs in FILES.items():
        for doc in docs:
            rows.extend(_words(file, doc))
        rows.append(_eof(file))
    return rows


def candidate_ok() -> list[list[Row]]:
    """Documents of each file interleaved word by word; files a and b in the first part
    file, c in the second (how Spark would split the output)."""
    parts: list[list[Row]] = [[], []]
    for number, file in enumerate(FILES):
        first, second = (_words(file, doc) for doc in FILES[file])
        for pair in zip(second, first, strict=False):
            parts[number // 2].extend(pair)
        longer = first if len(first) > len(second) else second
        parts[number // 2].extend(longer[min(len(first), len(second)) :])
        parts[number // 2].append(_eof(file))
    return parts


def candidate_bug() -> list[Row]:
    rows = reference()
    late = rows.pop(next(i for i, r in enumerate(rows) if (r["doc"], r["pos"]) == ("d2", "3")))
    eof = next(i for i, r in enumerate(rows) if r["kind"] == "EOF")
    rows.insert(eof + 1, late)
    typo = next(i for i, r in enumerate(rows) if (r["doc"], r["pos"]) == ("d5", "4"))
    rows[typo] = {**rows[typo], "word": "turth"}
    return rows


def write(path: Path, rows: list[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    write(HERE / "reference.csv", reference())
    for number, rows in enumerate(candidate_ok()):
        write(HERE / "candidate_ok" / f"part-{number:05d}.csv", rows)
    (HERE / "candidate_ok" / "_SUCCESS").write_text("")
    write(HERE / "candidate_bug.csv", candidate_bug())


if __name__ == "__main__":
    main()
