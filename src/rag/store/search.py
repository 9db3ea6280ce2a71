"""Searches: chunks by embedding (dense), by BM25 and by both fused in Milvus (hybrid); papers by embedding
and by BM25 over their title, aliases and abstract. Every search shows ready papers only (see base.py).

Milvus Lite notes (checked against milvus-lite 3.2.2 + pymilvus 3.0.2):
- BM25 search, `hybrid_search` with RRF and weighted rankers all work. Lite returns BM25 hits with
  *negated* distances (the server returns positive scores), so BM25 scores are read as abs(distance);
  BM25 IDF statistics are per segment in Lite, so scores drift slightly as data is flushed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..filters import SearchFilter, and_exprs, quote_string, string_in
from .base import CONSISTENCY, StoreBase
from .milvus import AnnSearchRequest, RRFRanker, WeightedRanker
from .records import STATUS_READY, PaperRecord, StoredChunk, to_chunk, to_paper
from .schema import BRIEF_OUT, PAPER_OUT, SEARCH_OUT


def _bm25_params() -> dict[str, Any]:
    """BM25 search parameters (a fresh dict per call: pymilvus may add keys to what it is given)."""
    return {"metric_type": "BM25"}


def _dense_params(limit: int) -> dict[str, Any]:
    """HNSW search parameters: ef must be at least the number of hits asked for."""
    return {"metric_type": "COSINE", "params": {"ef": max(64, limit)}}


class SearchMixin(StoreBase):
    """Chunk and paper searches."""

    @staticmethod
    def _check_query(query: str, k: int) -> None:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("the search query is empty")
        if not 1 <= k <= 1000:
            raise ValueError(f"k must be between 1 and 1000, got {k}")

    @staticmethod
    def _hits(result: Any, score: Callable[[float], float] = float) -> list[StoredChunk]:
        hits = result[0] if result else []
        return [to_chunk(dict(h["entity"], id=h["id"]), score(h["distance"])) for h in hits]

    def _search_chunks(
        self,
        what: str,
        data: list[Any],
        field: str,
        params: dict[str, Any],
        expr: str,
        k: int,
        fields: Sequence[str] = SEARCH_OUT,
    ) -> Any:
        """One Milvus search of the chunks: a result list per query in `data`."""
        with self._failing(what):
            return self._client.search(
                self.chunks_name,
                data=data,
                anns_field=field,
                filter=expr,
                limit=k,
                output_fields=list(fields),
                search_params=params,
                consistency_level=CONSISTENCY,
            )

    def search_dense(self, query: str, filter: SearchFilter | None = None, k: int = 10) -> list[StoredChunk]:
        """Nearest chunks by embedding (score = cosine similarity), ready papers only."""
        self._check_query(query, k)
        vector: list[float] = []

        def run(expr: str) -> list[StoredChunk]:
            nonlocal vector
            vector = vector or self.embedder.embed_query(query)
            return self._hits(self._search_chunks("dense search", [vector], "vector", _dense_params(k), expr, k))

        return self._ready_search("dense search", filter, run)

    def search_bm25(self, query: str, filter: SearchFilter | None = None, k: int = 10) -> list[StoredChunk]:
        """Best chunks by BM25 over index_text (Milvus' BM25 function), ready papers only."""
        self._check_query(query, k)

        def run(expr: str) -> list[StoredChunk]:
            result = self._search_chunks("BM25 search", [query], "sparse", _bm25_params(), expr, k)
            # BM25 scores are >= 0; Milvus Lite reports them negated, a server as they are.
            return self._hits(result, abs)

        return self._ready_search("BM25 search", filter, run)

    def bm25_matches(self, queries: Sequence[str], filter: SearchFilter | None = None) -> list[bool]:
        """For each query, whether some chunk of a ready paper matches any of its words by BM25: one search for
        all of them (Milvus takes several queries in one request), where a search each cost ~7 ms at 10k chunks."""
        for query in queries:
            self._check_query(query, 1)
        if not queries:
            return []
        with self._failing("BM25 search"):
            expr = self._scoped(filter)
        if expr is None:
            return [False] * len(queries)
        result = self._search_chunks("BM25 search", list(queries), "sparse", _bm25_params(), expr, 1, ["doc_id"])
        found = [{h["entity"]["doc_id"] for h in hits} for hits in result]
        with self._failing("BM25 search"):
            ready = self._ready_ids(sorted(set().union(*found)))
        # A hit on a paper the catalogue does not hold as ready (an orphan a crash left) proves nothing: that
        # query is searched again alone, past the orphans.
        return [
            bool(f) if f <= ready else bool(self.search_bm25(q, filter, 1)) for q, f in zip(queries, found, strict=True)
        ]

    def search_hybrid(
        self,
        query: str,
        filter: SearchFilter | None = None,
        k: int = 10,
        fusion: Literal["rrf", "weighted"] = "rrf",
        rrf_k: int = 60,
        weights: tuple[float, float] = (0.5, 0.5),
        candidates: int | None = None,
    ) -> list[StoredChunk]:
        """Dense + BM25 fused by Milvus `hybrid_search` (RRF or weighted), ready papers only.

        `candidates` is how many hits each route contributes to the fusion (default max(2k, 20)).
        `weights` are (dense, bm25); weighted fusion normalizes both scores (arctan) first.
        """
        self._check_query(query, k)
        if fusion == "rrf":
            if rrf_k < 1:
                raise ValueError(f"rrf_k must be >= 1, got {rrf_k}")
            ranker = RRFRanker(rrf_k)
        elif fusion == "weighted":
            if len(weights) != 2 or any(not 0 <= w <= 1 for w in weights):
                raise ValueError(f"weights must be two numbers in [0, 1], got {weights!r}")
            ranker = WeightedRanker(float(weights[0]), float(weights[1]), norm_score=True)
        else:
            raise ValueError(f"unknown fusion {fusion!r}; use 'rrf' or 'weighted'")
        n = candidates or max(2 * k, 20)
        vector: list[float] = []

        def run(expr: str) -> list[StoredChunk]:
            nonlocal vector
            vector = vector or self.embedder.embed_query(query)
            where = expr or None
            reqs = [
                AnnSearchRequest(data=[vector], anns_field="vector", param=_dense_params(n), limit=n, expr=where),
                AnnSearchRequest(data=[query], anns_field="sparse", param=_bm25_params(), limit=n, expr=where),
            ]
            with self._failing("hybrid search"):
                result = self._client.hybrid_search(
                    self.chunks_name,
                    reqs,
                    ranker,
                    limit=k,
                    output_fields=SEARCH_OUT,
                    consistency_level=CONSISTENCY,
                )
            return self._hits(result)

        return self._ready_search("hybrid search", filter, run)

    def search_papers(
        self, query: str, k: int = 5, doc_ids: Sequence[str] | None = None, fields: Sequence[str] = PAPER_OUT
    ) -> list[PaperRecord]:
        """Ready papers whose title + abstract are nearest the query (score = cosine similarity). Only `fields`
        are read; the others keep their defaults (locating a paper needs its doc_id alone)."""
        self._check_query(query, k)
        parts = [f"status == {quote_string(STATUS_READY)}"]
        if doc_ids is not None:
            ids = SearchFilter(doc_ids=list(doc_ids)).doc_ids or []
            if not ids:
                return []
            parts.append(string_in("doc_id", ids))
        vector = self.embedder.embed_query(query)
        with self._failing("paper search"):
            result = self._client.search(
                self.papers_name,
                data=[vector],
                anns_field="vector",
                filter=and_exprs(*parts),
                limit=k,
                output_fields=list(fields),
                search_params=_dense_params(k),
                consistency_level=CONSISTENCY,
            )
        hits = result[0] if result else []
        return [to_paper(dict(h["entity"], doc_id=h["doc_id"]), float(h["distance"])) for h in hits]

    def search_papers_bm25(self, query: str, k: int = 10, fields: Sequence[str] = BRIEF_OUT) -> list[PaperRecord]:
        """Ready papers whose title, aliases and abstract match the query's words best (score = BM25). Only
        `fields` are read, as in `search_papers`."""
        self._check_query(query, k)
        with self._failing("paper search"):
            result = self._client.search(
                self.papers_name,
                data=[query],
                anns_field="sparse",
                filter=f"status == {quote_string(STATUS_READY)}",
                limit=k,
                output_fields=list(fields),
                search_params=_bm25_params(),
                consistency_level=CONSISTENCY,
            )
        hits = result[0] if result else []
        # Lite returns BM25 distances negated (see the module notes).
        return [to_paper(dict(h["entity"], doc_id=h["doc_id"]), abs(float(h["distance"]))) for h in hits]
