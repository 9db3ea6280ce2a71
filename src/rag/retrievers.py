"""Retrievers by name: each takes a query, a typed filter and k, and returns ranked chunks."""

from __future__ import annotations

from collections.abc import Callable

from .filters import SearchFilter
from .store import PaperStore, StoredChunk

Retriever = Callable[[PaperStore, str, SearchFilter | None, int], list[StoredChunk]]


def dense(store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
    """Embedding similarity only."""
    return store.search_dense(query, search_filter, k)


def bm25(store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
    """Milvus BM25 over index_text only."""
    return store.search_bm25(query, search_filter, k)


def hybrid(store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
    """Dense + BM25 fused with RRF inside Milvus (the default)."""
    return store.search_hybrid(query, search_filter, k, fusion="rrf")


RETRIEVERS: dict[str, Retriever] = {"dense": dense, "bm25": bm25, "hybrid": hybrid}


def get_retriever(name: str) -> Retriever:
    """The retriever registered under `name`; ValueError listing the valid names otherwise."""
    try:
        return RETRIEVERS[name]
    except KeyError:
        raise ValueError(f"unknown retriever {name!r}; expected one of {sorted(RETRIEVERS)}") from None
