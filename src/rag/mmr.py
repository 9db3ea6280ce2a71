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
    query_vector: Sequence[float] | None,
    candidates: Sequence[T],
    vectors: Sequence[Sequence[float]],
    k: int,
    lambda_: float = 0.7,
    relevance: Sequence[float] | None = None,
) -> list[T]:
    """Up to `k` candidates chosen greedily by MMR with cosine similarity.

    Each step takes the candidate maximising ``lambda_ * rel(c) - (1 - lambda_) * max(sim(c, s))`` over the
    already selected ``s`` (0 when none); ``rel`` is the cosine to the query vector, or the given `relevance`
    (e.g. a ranking's scores, then the query vector is not needed). ``lambda_ = 1`` is plain relevance order,
    ``lambda_ = 0`` pure diversity. Exact ties go to the candidate that comes first in the input.
    """
    if len(candidates) != len(vectors):
        raise ValueError(f"mmr: got {len(candidates)} candidates but {len(vectors)} vectors; they must pair up")
    _check(k, lambda_)
    rel = np.zeros(0)
    if relevance is not None:
        rel = np.asarray(relevance, dtype=np.float64)
        if rel.shape != (len(candidates),) or not np.isfinite(rel).all():
            raise ValueError(f"mmr: relevance must be {len(candidates)} finite numbers, one per candidate")
        query = None
    else:
        query = np.asarray(query_vector if query_vector is not None else [], dtype=np.float64)
        if query.ndim != 1 or query.size == 0:
            raise ValueError("mmr: the query vector must be a non-empty list of numbers")
    if not candidates or k == 0:
        return []
    dim = query.size if query is not None else len(vectors[0])
    try:
        docs = np.asarray(vectors, dtype=np.float64)
    except ValueError as exc:  # ragged input
        raise ValueError(f"mmr: candidate vectors must all have the query's dimension {dim}") from exc
    if docs.ndim != 2 or docs.shape[1] != dim or dim == 0:
        raise ValueError(f"mmr: candidate vectors must all have the query's dimension {dim}")
    if not ((query is None or np.isfinite(query).all()) and np.isfinite(docs).all()):
        raise ValueError("mmr: vectors must not contain NaN or infinity")

    docs = _unit_rows(docs)
    gain = rel if query is None else docs @ _unit_rows(query[None, :])[0]
    pairwise = docs @ docs.T
    n = len(candidates)
    redundancy = np.zeros(n)
    available = np.ones(n, dtype=bool)
    chosen: list[int] = []
    for _ in range(min(k, n)):
        scores = lambda_ * gain - (1.0 - lambda_) * redundancy
        scores[~available] = -np.inf
        best = int(np.argmax(scores))  # argmax returns the first maximum: input order breaks ties
        chosen.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, pairwise[best])
    return [candidates[i] for i in chosen]


def mmr_chunks(
    embedder: Embedder,
    query: str,
    chunks: list[StoredChunk],
    k: int,
    lambda_: float = 0.7,
    relevance: Sequence[float] | None = None,
) -> list[StoredChunk]:
    """MMR over stored chunks, with the vectors searches return (else their `index_text` embedded again);
    relevance is the cosine to the embedded query, or the given scores (then the query is not embedded)."""
    _check(k, lambda_)
    if not chunks or k == 0:
        return []
    missing = [c.index_text for c in chunks if c.vector is None]
    fresh = iter(embedder.embed_documents(missing) if missing else [])
    vectors = [c.vector if c.vector is not None else next(fresh) for c in chunks]
    query_vector = embedder.embed_query(query) if relevance is None else None
    return mmr(query_vector, chunks, vectors, k, lambda_, relevance=relevance)
