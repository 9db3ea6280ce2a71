"""Maximal Marginal Relevance: pick results that are relevant to the query but not to each other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from .embeddings import Embedder
from .store import StoredChunk

T = TypeVar("T")


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1; zero rows stay zero so their cosine similarity is 0, not NaN."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out


def _check(k: int, lambda_: float) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"mmr: k must be an integer >= 0, got {k!r}")
    if not 0.0 <= lambda_ <= 1.0:  # also rejects NaN
        raise ValueError(f"mmr: lambda_ must be between 0 and 1, got {lambda_!r}")


def mmr(
    query_vector: Sequence[float],
    candidates: Sequence[T],
    vectors: Sequence[Sequence[float]],
    k: int,
    lambda_: float = 0.7,
) -> list[T]:
    """Up to `k` candidates chosen greedily by MMR with cosine similarity.

    Each step takes the candidate maximising ``lambda_ * sim(query, c) - (1 - lambda_) * max(sim(c, s))``
    over the already selected ``s`` (0 when none). ``lambda_ = 1`` is plain relevance order,
    ``lambda_ = 0`` pure diversity. Exact ties go to the candidate that comes first in the input.
    """
    if len(candidates) != len(vectors):
        raise ValueError(f"mmr: got {len(candidates)} candidates but {len(vectors)} vectors; they must pair up")
    _check(k, lambda_)
    query = np.asarray(query_vector, dtype=np.float64)
    if query.ndim != 1 or query.size == 0:
        raise ValueError("mmr: the query vector must be a non-empty list of numbers")
    if not candidates or k == 0:
        return []
    try:
        docs = np.asarray(vectors, dtype=np.float64)
    except ValueError as exc:  # ragged input
        raise ValueError(f"mmr: candidate vectors must all have the query's dimension {query.size}") from exc
    if docs.ndim != 2 or docs.shape[1] != query.size:
        raise ValueError(f"mmr: candidate vectors must all have the query's dimension {query.size}")
    if not (np.isfinite(query).all() and np.isfinite(docs).all()):
        raise ValueError("mmr: vectors must not contain NaN or infinity")

    docs = _unit_rows(docs)
    relevance = docs @ _unit_rows(query[None, :])[0]
    pairwise = docs @ docs.T
    n = len(candidates)
    redundancy = np.zeros(n)
    available = np.ones(n, dtype=bool)
    chosen: list[int] = []
    for _ in range(min(k, n)):
        scores = lambda_ * relevance - (1.0 - lambda_) * redundancy
        scores[~available] = -np.inf
        best = int(np.argmax(scores))  # argmax returns the first maximum: input order breaks ties
        chosen.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, pairwise[best])
    return [candidates[i] for i in chosen]


def mmr_chunks(
    embedder: Embedder, query: str, chunks: list[StoredChunk], k: int, lambda_: float = 0.7
) -> list[StoredChunk]:
    """MMR over stored chunks, with the vectors searches return (else their `index_text` embedded again)."""
    _check(k, lambda_)
    if not chunks or k == 0:
        return []
    missing = [c.index_text for c in chunks if c.vector is None]
    fresh = iter(embedder.embed_documents(missing) if missing else [])
    vectors = [c.vector if c.vector is not None else next(fresh) for c in chunks]
    return mmr(embedder.embed_query(query), chunks, vectors, k, lambda_)
