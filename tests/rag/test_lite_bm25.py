"""CompactBM25 against Milvus Lite's own BM25 scorer: identical ids and scores on random segments, and a Lite
store that builds it."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from milvus_lite.index import sparse_factory
from milvus_lite.index.sparse_inverted import SparseInvertedIndex

from paperscope.config import Settings
from paperscope.rag.store import PaperStore
from paperscope.rag.store.lite_bm25 import CompactBM25, install


def _segment(rng: random.Random, rows: int, vocabulary: int) -> list[dict[int, float]]:
    """Rows of term hash -> tf as Lite decodes them; some empty, some repeated (ties), a few fractional tfs."""
    segment: list[dict[int, float]] = []
    for _ in range(rows):
        roll = rng.random()
        if roll < 0.05:
            segment.append({})
        elif roll < 0.15 and segment:
            segment.append(dict(rng.choice(segment)))  # a duplicate row: equal scores, Lite's tie order decides
        else:
            terms = rng.sample(range(vocabulary), rng.randint(1, min(30, vocabulary)))
            tf = (lambda: float(np.float32(rng.random() * 3))) if roll > 0.97 else (lambda: float(rng.randint(1, 6)))
            segment.append({term * 7919 + 3: tf() for term in sorted(terms)})
    return segment


def _queries(rng: random.Random, vocabulary: int) -> list[dict[int, float]]:
    sizes = [rng.randint(1, min(8, vocabulary)) for _ in range(6)]
    queries = [{term * 7919 + 3: 1.0 for term in rng.sample(range(vocabulary), size)} for size in sizes]
    queries.append({10**9: 1.0})  # a term in no row
    queries.append({})
    queries.append({3: 2.0, 7919 * 5 + 3: 0.5})  # weights other than 1
    return queries


@pytest.mark.parametrize("seed", range(6))
def test_same_ids_and_scores_as_lites_scorer(seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = rng.choice([5, 40, 400])  # a small vocabulary makes long postings and many ties
    rows = _segment(rng, rng.randint(1, 300), vocabulary)
    params = {"k1": rng.choice([1.2, 1.5]), "b": rng.choice([0.75, 0.3, 1.0])}
    build_mask = None if seed % 2 else np.array([rng.random() > 0.2 for _ in rows])
    lite, compact = SparseInvertedIndex(**params), CompactBM25(**params)
    lite.build(rows, valid_mask=build_mask)
    compact.build(rows, valid_mask=build_mask)
    assert (compact.doc_count, compact.avgdl) == (lite.doc_count, lite.avgdl)
    queries = _queries(rng, vocabulary)
    for top_k in (1, 5, 1000):
        for search_mask in (None, np.array([rng.random() > 0.3 for _ in rows])):
            want_ids, want_dists = lite.search(queries, top_k, valid_mask=search_mask)
            got_ids, got_dists = compact.search(queries, top_k, valid_mask=search_mask)
            assert np.array_equal(got_ids, want_ids)
            assert np.array_equal(got_dists, want_dists)  # exact: the same float32 steps
            assert got_dists.dtype == want_dists.dtype


def test_an_empty_segment_and_a_bad_mask() -> None:
    compact = CompactBM25()
    compact.build([])
    ids, dists = compact.search([{1: 1.0}], 3)
    assert ids.tolist() == [[-1, -1, -1]] and np.isinf(dists).all()
    compact.build([{1: 1.0}, {2: 1.0}])
    with pytest.raises(ValueError, match="valid_mask"):
        compact.search([{1: 1.0}], 3, valid_mask=np.array([True]))


def test_holds_postings_in_arrays_not_python_tuples() -> None:
    rows = _segment(random.Random(1), 2000, 300)
    compact = CompactBM25()
    compact.build(rows)
    postings = sum(len(row) for row in rows)
    assert compact._posting_lists == {} and compact._df == {}
    assert compact._rows.nbytes + compact._tfs.nbytes == 8 * postings


def test_a_lite_store_builds_the_compact_scorer(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    store = PaperStore.open(settings, _Embedder())  # type: ignore[arg-type]
    try:
        assert isinstance(sparse_factory.create_sparse_index("BM25", {"bm25_k1": 1.2}), CompactBM25)
        assert not isinstance(sparse_factory.create_sparse_index("IP", {}), CompactBM25)
        assert sparse_factory.sparse_index_matches(CompactBM25(k1=1.2), "BM25", {"bm25_k1": 1.2})
    finally:
        store.close()
    assert install()  # a second call keeps the one installed


class _Embedder:
    """Enough of an embedder to open a store: no text is embedded here."""

    name, dim = "fake:tiny", 8

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] * self.dim for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0] * self.dim
