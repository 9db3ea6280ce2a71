"""Milvus Lite's BM25 scorer, kept in arrays: the same scores and order at a tenth of the memory.

Milvus Lite 3.2 (pure Python, in this process) builds a BM25 inverted index per segment on the first search and
keeps each posting as a Python tuple `(local_id, tf)`: about 120 bytes a posting, 1.2 GB at 100,000 chunks, and a
Python loop over every posting of every query term at each search. `CompactBM25` keeps the postings as two arrays
sorted by term (8 bytes a posting) and scores a term's postings in one vectorised step.

It is Lite's own class with its data laid out differently: the arithmetic is Lite's, step for step in the same
float32/float64 precision, and ties keep Lite's order (the first query term that touched a row first), so every
score and every ranking is identical (tests/rag/test_lite_bm25.py compares both on random segments).
`install()` makes Lite's index factory build it; it does nothing on a Lite whose internals differ from 3.2's, which
then keeps its own scorer. A Milvus server (`MILVUS_URI`) is not touched: it has its own indexes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

try:
    from milvus_lite.index import sparse_factory  # type: ignore[import-untyped]
    from milvus_lite.index.sparse_common import empty_results, validate_mask  # type: ignore[import-untyped]
    from milvus_lite.index.sparse_inverted import SparseInvertedIndex  # type: ignore[import-untyped]
except ImportError:  # no Lite (a server-only install): nothing to replace
    sparse_factory = None
    SparseInvertedIndex = object

_INSTALLED = False


class CompactBM25(SparseInvertedIndex):  # type: ignore[misc,valid-type]
    """Lite's per-segment BM25 index (`SparseInvertedIndex`) with its postings in arrays sorted by term."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        super().__init__(k1=k1, b=b)
        self._terms: NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # the distinct term hashes, ascending
        self._starts: NDArray[np.int64] = np.zeros(1, dtype=np.int64)  # term i's postings: [starts[i], starts[i+1])
        self._rows: NDArray[np.int32] = np.zeros(0, dtype=np.int32)  # each posting's local row, ascending per term
        self._tfs: NDArray[np.float32] = np.zeros(0, dtype=np.float32)  # its term frequency (stored as float32)

    def build(self, sparse_vectors: Sequence[Mapping[int, float]], valid_mask: object = None) -> None:
        """Index `sparse_vectors` (row i: term hash -> tf), skipping rows `valid_mask` rules out (Lite's `build`)."""
        n = len(sparse_vectors)
        mask = validate_mask(valid_mask, n)
        kept = [sv if mask is None or mask[i] else {} for i, sv in enumerate(sparse_vectors)]
        # Lite sums each row's tfs as Python floats and keeps the length as float32; the total and the average stay
        # Python floats, added row by row.
        lengths = [sum(sv.values()) if sv else 0.0 for sv in kept]
        self._doc_lengths = np.array(lengths, dtype=np.float32)
        total_length = 0.0
        for sv, length in zip(kept, lengths, strict=True):
            if sv:
                total_length += length
        self.doc_count = n if mask is None else int(np.count_nonzero(mask))
        self.avgdl = total_length / self.doc_count if self.doc_count > 0 else 0.0
        # Lite's rows hold uint32 term hashes and float32 tfs (analyzer/sparse.py): both arrays store them exactly.
        sizes = np.fromiter((len(sv) for sv in kept), np.int64, count=n)
        total = int(sizes.sum())
        terms = np.fromiter(itertools.chain.from_iterable(sv.keys() for sv in kept), np.uint32, count=total)
        tfs = np.fromiter(itertools.chain.from_iterable(sv.values() for sv in kept), np.float32, count=total)
        rows = np.repeat(np.arange(n, dtype=np.int32), sizes)
        order = np.argsort(terms, kind="stable")  # stable: a term's rows stay ascending, as Lite appends them
        # One array permuted at a time, its original dropped at once: a segment holds up to 100,000 rows (millions
        # of postings), and this runs beside Lite's own decoded rows, so the peak is what a large library pays.
        self._rows = rows[order]
        del rows
        self._tfs = tfs[order]
        del tfs
        terms = terms[order]
        del order
        firsts = np.concatenate(([0], np.flatnonzero(np.diff(terms)) + 1)) if total else np.zeros(0, dtype=np.int64)
        self._terms = terms[firsts].astype(np.int64)
        self._starts = np.append(firsts, total).astype(np.int64)
        self._posting_lists: dict[int, list[tuple[int, float]]] = {}  # Lite's own layout, unused here
        self._df: dict[int, int] = {}

    def search(
        self, query_sparse_vectors: Sequence[Mapping[int, float]], top_k: int, valid_mask: object = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The `top_k` rows by BM25 per query, as Lite returns them: (local ids, -score), padded with -1 / inf."""
        mask = validate_mask(valid_mask, len(self._doc_lengths))
        all_ids, all_dists = empty_results(len(query_sparse_vectors), top_k)
        if self.doc_count == 0:
            return all_ids, all_dists
        for qi, query in enumerate(query_sparse_vectors):
            ranked = self._rank(query, mask)
            if ranked is None:
                continue
            rows, scores = ranked
            count = min(top_k, len(rows))
            all_ids[qi, :count] = rows[:count]
            all_dists[qi, :count] = -scores[:count]
        return all_ids, all_dists

    def _rank(
        self, query: Mapping[int, float], mask: NDArray[np.bool_] | None
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]] | None:
        """Every scored row, best first: Lite's formula per posting, its float32 steps, its tie order."""
        n_rows = len(self._doc_lengths)
        scores = np.zeros(n_rows, dtype=np.float32)
        touched = np.full(n_rows, -1, dtype=np.int64)  # the order a row was first scored in (Lite's tie order)
        seen = 0
        n = self.doc_count
        k1, b = self.k1, self.b
        avgdl = self.avgdl if self.avgdl > 0 else 1.0
        for term, weight in query.items():
            at = int(np.searchsorted(self._terms, term))
            if at == len(self._terms) or int(self._terms[at]) != term:
                continue
            start, end = int(self._starts[at]), int(self._starts[at + 1])
            df = end - start
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
            rows, tfs = self._rows[start:end], self._tfs[start:end]
            if mask is not None:
                keep = mask[rows]
                rows, tfs = rows[keep], tfs[keep]
            if not len(rows):
                continue
            # Lite: tf * (k1 + 1.0) is a Python float (float64); every step with the float32 length is float32.
            lengths = self._doc_lengths[rows]
            norm = np.float32(k1) * (np.float32(1.0 - b) + np.float32(b) * lengths / np.float32(avgdl))
            tf_norm = (tfs.astype(np.float64) * (k1 + 1.0)).astype(np.float32) / (tfs + norm)
            scores[rows] += np.float32(idf) * tf_norm * np.float32(weight)
            new = rows[touched[rows] < 0]
            touched[new] = np.arange(seen, seen + len(new))
            seen += len(new)
        scored = np.flatnonzero(touched >= 0)
        if not len(scored):
            return None
        # Lite sorts (row, score) pairs by score, stably, in the order rows were first scored.
        scored = scored[np.argsort(touched[scored], kind="stable")]
        ranked = scored[np.argsort(-scores[scored], kind="stable")]
        return ranked, scores[ranked]


def install() -> bool:
    """Make Milvus Lite build `CompactBM25` for BM25 fields; False (Lite untouched) where its layout is not 3.2's."""
    global _INSTALLED
    if _INSTALLED:
        return True
    if sparse_factory is None or not _lite_matches():
        return False
    lite_create = sparse_factory.create_sparse_index

    def create_sparse_index(metric_type: str, params: dict[str, object]) -> object:
        if metric_type == "BM25":
            return CompactBM25(k1=float(params.get("bm25_k1", 1.5)), b=float(params.get("bm25_b", 0.75)))  # type: ignore[arg-type]
        return lite_create(metric_type, params)

    sparse_factory.create_sparse_index = create_sparse_index
    _INSTALLED = True
    return True


def _lite_matches() -> bool:
    """Lite's BM25 index has the attributes `CompactBM25` relies on, and its factory checks the class by isinstance."""
    probe = SparseInvertedIndex()
    needed = ("k1", "b", "doc_count", "avgdl", "_doc_lengths", "_posting_lists", "_df")
    factory_checks = callable(getattr(sparse_factory, "sparse_index_matches", None))
    return factory_checks and all(hasattr(probe, name) for name in needed)
