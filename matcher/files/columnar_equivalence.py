"""Two JSON lines outputs proven equivalent under a per-key order without a Python object
per event: ``prove_equivalent``, the first try of ``matcher.files.compare``.

    verdict = prove_equivalent(spec, (ref_files, cand_files), known, inferences)  # or None

Under ``by_key`` (or ``ordered``: one key) and exact equality but for ignored columns, two
streams are equivalent iff each key's events form the same sequence on both sides (events
of one key are dependent, of two keys independent: DiffStream, §3). So the n-th event of
key k on one side must equal the n-th event of key k on the other. Here an event is named
by its key and its rank n, and its compared values by their JSON texts, all as Arrow and
numpy arrays, a block of lines at a time from each side (``columnar.text_blocks``). Events
named alike on both sides are compared and settled; the rest wait. A key whose events have
all settled is forgotten, and its ranks start again from 0 on both sides, so memory
follows the waiting events, as the online matcher's does.

It proves equivalence and nothing else. On anything else it returns ``None`` and the
caller runs the online matcher from the start, whose verdict and witnesses are the rule:

* a block with a line the columnar reader leaves to the per-line one;
* a key column holding a fraction, a boolean or ``-0``: texts that do not name their value
  alone (``1 == 1.0 == True`` and ``0 == -0`` are one key to the core);
* a column missing from a block, or of another kind than in the first block (a number
  here, a string there): the online matcher and the schema plan decide those;
* two events named alike whose texts differ (equal values can be written differently:
  ``1.0`` and ``1.00``), an event left waiting, or different numbers of events.

Texts that are equal name equal values, since every block has the same columns of the same
kinds: a number's literal gives one ``int`` or one ``float`` (JSON has no NaN), and a
string without escapes is its text.

The verdict is the online matcher's to the field. ``peak_unmatched`` is taken over its
fair interleaving (``matcher.online._interleave``: reference event i at step 2i, candidate
event j at 2j + 1, when the counts are equal): an event adds a waiting event when it comes
before its counterpart, and settles one when it comes after, so the peak is the highest
running sum of those steps. A step's sign is known once its counterpart has been read, or
once the other side has been read past it; sums are taken up to there, block by block.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from pathlib import Path
from typing import Any

from matcher.dependence import ByKey, Ordered
from matcher.files.columnar import JsonBatch, TextBlock, text_blocks, text_scalar
from matcher.files.json_schema import JsonInference
from matcher.online import SIDES
from matcher.spec import Spec
from matcher.verdict import Verdict

#: joins the texts of one event's columns: a control character, which no text holds
_SEPARATOR = "\x00"


def prove_equivalent(
    spec: Spec,
    files: tuple[Sequence[Path], Sequence[Path]],
    known: Sequence[Sequence[str]],
    inferences: tuple[JsonInference, JsonInference],
) -> Verdict | None:
    """The equivalent verdict of the two outputs' JSON lines ``files``, as the online matcher
    gives it (before the schema findings), or ``None`` when not proven (see the module's
    docstring). Each block's column types go to its side's ``inferences`` as it is read.

    ``known``: the columns each output is known to have (``readers.read_columns``); a
    block lacking one is not read here (the core fills it with nulls)."""
    dependence = spec.build_dependence()
    equality = spec.build_equality()
    if type(dependence) is ByKey:
        key_columns: tuple[str, ...] = dependence.key_columns
    elif type(dependence) is Ordered:
        key_columns = ()
    else:
        return None
    if not equality.exact_but_ignored or any(c in equality.ignore for c in key_columns):
        return None
    settle = _Settle(key_columns, equality.ignore)
    reference, candidate = (chain.from_iterable(map(text_blocks, side)) for side in files)
    needed = frozenset(chain.from_iterable(known))
    # Both sides are read a block ahead, each in a thread, while this one settles: Arrow
    # lets go of the GIL while it matches lines, the main cost.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="parity-read") as reader:
        ahead = (reader.submit(next, reference, _END), reader.submit(next, candidate, _END))
        while True:
            blocks = (ahead[0].result(), ahead[1].result())
            if blocks[0] is _END and blocks[1] is _END:
                break
            ahead = (reader.submit(next, reference, _END), reader.submit(next, candidate, _END))
            for block, inference in zip(blocks, inferences, strict=True):
                if block is None:
                    return None
                if block is not _END:
                    if not needed <= frozenset(block.names):
                        return None
                    inference.add(JsonBatch([], block.column_types, ()))
            if not settle.step(blocks[0], blocks[1]):
                return None
    return settle.verdict(dependence.describe())


_END: Any = object()  # a side read to its end


class _Waiting:
    """One side's events waiting for their counterparts: the index of each one's key in
    the current keys, its rank within its key, its step in the interleaving, and the
    texts of its compared columns (one Arrow array per column)."""

    def __init__(self, columns: int) -> None:
        import numpy as np
        import pyarrow as pa

        empty = np.zeros(0, dtype=np.int64)
        self.key, self.rank, self.step = empty, empty, empty
        self.values: list[Any] = [pa.nulls(0, pa.large_string())] * columns

    def add(self, key: Any, rank: Any, step: Any, values: list[Any]) -> None:
        import numpy as np
        import pyarrow as pa

        self.key = np.concatenate((self.key, key))
        self.rank = np.concatenate((self.rank, rank))
        self.step = np.concatenate((self.step, step))
        self.values = [pa.concat_arrays(pair) for pair in zip(self.values, values, strict=True)]

    def keep(self, kept: Any) -> None:
        """Keep the events where the boolean array ``kept`` is true."""
        import numpy as np

        self.key, self.rank, self.step = self.key[kept], self.rank[kept], self.step[kept]
        indexes = _arrow_indexes(np.flatnonzero(kept))
        self.values = [value.take(indexes) for value in self.values]


class _Settle:
    """The state between blocks: the keys that have waiting events, each side's count of
    events per key, the waiting events, and the running sum of the interleaving's steps."""

    def __init__(self, key_columns: tuple[str, ...], ignore: frozenset[str]) -> None:
        import numpy as np
        import pyarrow as pa

        self.key_columns = key_columns
        self.ignore = ignore
        #: every block's columns and their kinds (a block with others is not provable)
        self.kinds: dict[str, str] | None = None
        self.compared: list[str] = []  # the compared columns, by name
        self.keys: Any = pa.nulls(0, pa.large_string())
        self.counts = np.zeros((2, 0), dtype=np.int64)
        self.waiting = (_Waiting(0), _Waiting(0))  # made with the first block's columns
        self.read = [0, 0]
        self.ended = [False, False]
        self.summed = 0  # the steps before it are summed
        self.pending = np.zeros(0, dtype=np.int64)  # the summands from ``summed`` on
        self.level = 0
        self.peak = 0

    def step(self, reference: TextBlock | Any, candidate: TextBlock | Any) -> bool:
        """Read a block of each side (``_END``: none left); ``False``: not provable."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        blocks = [block if block is not _END else None for block in (reference, candidate)]
        texts = []
        for side, block in enumerate(blocks):
            if block is None:
                self.ended[side] = True
                continue
            kinds = dict(zip(block.names, block.kinds, strict=True))
            if self.kinds is None:
                if not all(column in kinds for column in self.key_columns):
                    return False  # the online matcher says which event lacks it
                self._start(kinds)
            if kinds != self.kinds:
                return False
            key = self._key_texts(block)
            if key is None:
                return False
            texts.append((side, block, key))
        encoded = pc.dictionary_encode(pa.concat_arrays([self.keys, *(t[2] for t in texts)]))
        indexes = _numpy_indexes(encoded.indices)
        counts = np.zeros((2, len(encoded.dictionary)), dtype=np.int64)
        counts[:, : len(self.keys)] = self.counts  # the old keys come first, in their order
        settled = np.minimum(counts[0], counts[1])  # each key's ranks below are settled
        start = len(self.keys)
        for side, block, _ in texts:
            key = indexes[start : start + block.rows]
            start += block.rows
            rank = _ranks(key, counts[side])
            step = 2 * (self.read[side] + np.arange(block.rows, dtype=np.int64)) + side
            self.read[side] += block.rows
            values = [block.texts[block.names.index(name)] for name in self.compared]
            self.waiting[side].add(key, rank, step, values)
        if not self._settle(settled, np.minimum(counts[0], counts[1])):
            return False
        self._sum()
        self._forget_settled(encoded.dictionary, counts)
        return True

    def _start(self, kinds: dict[str, str]) -> None:
        self.kinds = kinds
        self.compared = sorted(name for name in kinds if name not in self.ignore)
        self.waiting = (_Waiting(len(self.compared)), _Waiting(len(self.compared)))

    def _key_texts(self, block: TextBlock) -> Any:
        """Each event's key as one text (its columns' texts joined), or ``None`` when a
        key's text may not name its value alone."""
        import pyarrow.compute as pc

        if not self.key_columns:  # ``ordered``: one key, the empty text
            return pc.utf8_slice_codeunits(block.texts[0], 0, 0)
        parts = []
        for column in self.key_columns:
            i = block.names.index(column)
            kind, text = block.kinds[i], block.texts[i]
            if kind == "boolean":
                return None
            if kind == "number":
                if (column, "double") in block.column_types:
                    return None
                if pc.any(pc.equal(text, text_scalar("-0"))).as_py():
                    return None
            parts.append(text)
        if len(parts) == 1:
            return parts[0]
        return pc.binary_join_element_wise(*parts, text_scalar(_SEPARATOR))

    def _settle(self, before: Any, after: Any) -> bool:
        """Settle the events whose rank in their key is now on both sides: from ``before``
        to ``after`` (per key index); ``False`` if two differ.

        A key's waiting events are on one side only (ranks that both sides have read are
        settled), from rank ``before`` on. So the events to settle are those below
        ``after``, the same keys and ranks on both sides: each is placed, without a sort,
        at its key's offset among them plus its rank past ``before``."""
        import numpy as np
        import pyarrow.compute as pc

        ref, cand = self.waiting
        sizes = after - before
        total = int(sizes.sum())
        if not total:
            return True
        offsets = np.cumsum(sizes) - sizes
        placed = []
        for side in (ref, cand):
            chosen = np.flatnonzero(side.rank < after[side.key])
            if len(chosen) != total:  # raised, not asserted, so that ``python -O`` keeps it
                raise AssertionError("ranks to settle differ between sides (a bug in Parity)")
            key = side.key[chosen]
            order = np.empty(total, dtype=np.int64)
            order[offsets[key] + side.rank[chosen] - before[key]] = chosen
            placed.append(order)
        left, right = placed
        lefts, rights = _arrow_indexes(left), _arrow_indexes(right)
        for ours, theirs in zip(ref.values, cand.values, strict=True):
            if not pc.all(pc.equal(ours.take(lefts), theirs.take(rights))).as_py():
                return False
        first = np.minimum(ref.step[left], cand.step[right])
        second = np.maximum(ref.step[left], cand.step[right])
        # an event counted as waiting when the sum passed it adds nothing more
        self._add_steps(first[first >= self.summed], 1)
        self._add_steps(second, -1)
        for side, settled in ((ref, left), (cand, right)):
            kept = np.ones(len(side.key), dtype=bool)
            kept[settled] = False
            side.keep(kept)
        return True

    def _add_steps(self, steps: Any, sign: int) -> None:
        import numpy as np

        if not len(steps):
            return
        offsets = steps - self.summed
        size = int(offsets.max()) + 1
        if size > len(self.pending):
            self.pending = np.concatenate(
                (self.pending, np.zeros(size - len(self.pending), dtype=np.int64))
            )
        self.pending += sign * np.bincount(offsets, minlength=len(self.pending))

    def _sum(self) -> None:
        """Sum the steps up to the first one either side has not read: every event before
        it either settled (both its steps are in) or waits for a later counterpart (+1)."""
        import numpy as np

        frontier = min(
            (2 * self.read[side] + side for side in (0, 1) if not self.ended[side]),
            default=2 * max(self.read) + 1,
        )
        for side in self.waiting:
            self._add_steps(side.step[(side.step >= self.summed) & (side.step < frontier)], 1)
        done = frontier - self.summed
        summed = np.cumsum(self.pending[:done])
        if len(summed):
            self.peak = max(self.peak, self.level + int(summed.max()))
            self.level += int(summed[-1])
        self.pending = self.pending[done:]
        self.summed = frontier

    def _forget_settled(self, dictionary: Any, counts: Any) -> None:
        """Keep the keys that have waiting events only: the others have as many events on
        both sides, all settled, and start again from rank 0."""
        import numpy as np

        ref, cand = self.waiting
        kept = np.unique(np.concatenate((ref.key, cand.key)))
        self.keys = dictionary.take(_arrow_indexes(kept))
        self.counts = counts[:, kept]
        ref.key = np.searchsorted(kept, ref.key)
        cand.key = np.searchsorted(kept, cand.key)

    def verdict(self, dependence: str) -> Verdict | None:
        """The verdict once both sides are read: equivalent if every event settled (as
        many on both sides, then, since each settling takes one from each)."""
        rows = self.read[0]
        if rows == 0 or self.read[1] != rows or len(self.waiting[0].key):
            return None
        self.ended = [True, True]
        self._sum()
        return Verdict(
            equivalent=True,
            reference_count=rows,
            candidate_count=rows,
            matched_count=rows,
            peak_unmatched=self.peak,
            dependence=dependence,
            side_stats={side: {"rows": rows} for side in SIDES},
        )


def _arrow_indexes(indexes: Any) -> Any:
    """A numpy array of indexes as an Arrow ``int64`` array, sharing its buffer: ``take``
    given numpy indexes converts them with ``pa.array``, which imports pandas (0.2 s)."""
    import numpy as np
    import pyarrow as pa

    data = np.ascontiguousarray(indexes, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def _numpy_indexes(indexes: Any) -> Any:
    """An Arrow integer array without nulls as an ``int64`` numpy array (``to_numpy``
    imports pandas)."""
    import numpy as np

    dtype = np.dtype(f"int{indexes.type.bit_width}")
    data = np.frombuffer(indexes.buffers()[1], dtype=dtype)
    return data[indexes.offset : indexes.offset + len(indexes)].astype(np.int64)


def _ranks(key: Any, counts: Any) -> Any:
    """Each event's rank within its key, counting on from ``counts`` (per key index), which
    is updated in place."""
    import numpy as np

    rows = len(key)
    # numpy's stable sort of 16-bit integers is a radix sort: 30 times a 64-bit one's speed
    order = np.argsort(key.astype(np.uint16) if len(counts) <= 1 << 16 else key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    run_start = np.repeat(starts, np.diff(np.append(starts, rows)))
    ranks = np.empty(rows, dtype=np.int64)
    ranks[order] = counts[ordered] + np.arange(rows) - run_start
    counts += np.bincount(key, minlength=len(counts))
    return ranks
