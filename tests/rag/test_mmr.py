"""Maximal Marginal Relevance on plain vectors, and over stored chunks with a scripted embedder."""

from __future__ import annotations

import math

import numpy as np
import pytest

from paperscope.parser import SectionCategory
from paperscope.rag.mmr import mmr, mmr_chunks
from paperscope.rag.store import StoredChunk

QUERY = [1.0, 0.0, 0.0]
# a and a2 are near-duplicates, both very relevant; b is less relevant but different; c is off-topic.
VECTORS = {
    "a": [1.0, 0.30, 0.0],
    "a2": [1.0, 0.31, 0.0],
    "b": [0.9, -0.436, 0.0],
    "c": [0.0, 1.0, 0.0],
}


def pick(k: int, lambda_: float, names: list[str] | None = None) -> list[str]:
    names = names or list(VECTORS)
    return mmr(QUERY, names, [VECTORS[n] for n in names], k, lambda_)


def test_near_duplicates_are_not_both_picked() -> None:
    assert pick(2, 0.7) == ["a", "b"]
    assert pick(2, 0.5) == ["a", "b"]
    assert pick(3, 0.7) == ["a", "b", "a2"]


def test_lambda_one_is_plain_relevance_order() -> None:
    assert pick(4, 1.0) == ["a", "a2", "b", "c"]
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(30, 8))
    query = rng.normal(size=8)
    relevance = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    expected = [int(i) for i in np.argsort(-relevance, kind="stable")[:10]]
    assert mmr(query.tolist(), list(range(30)), vectors.tolist(), 10, lambda_=1.0) == expected


def test_lambda_zero_is_pure_diversity() -> None:
    # The first pick is still the most relevant (nothing is selected yet), then the least similar to it.
    assert pick(2, 0.0) == ["a", "c"]


def test_k_larger_than_the_candidates_returns_each_once() -> None:
    assert sorted(pick(10, 0.7)) == sorted(VECTORS)
    assert pick(0, 0.7) == []
    assert mmr(QUERY, [], [], 3) == []


def test_ties_go_to_input_order() -> None:
    same = [[0.6, 0.8, 0.0]] * 3
    assert mmr(QUERY, ["x", "y", "z"], same, 3, 0.7) == ["x", "y", "z"]
    assert mmr(QUERY, ["z", "y", "x"], same, 1, 1.0) == ["z"]


def test_scale_does_not_matter_and_zero_vectors_are_harmless() -> None:
    scaled = [[10.0 * x for x in VECTORS[n]] for n in VECTORS]
    assert mmr([5.0, 0.0, 0.0], list(VECTORS), scaled, 4, 0.7) == pick(4, 0.7)
    # A zero vector has similarity 0 to everything (not NaN): it ranks like an off-topic candidate.
    assert mmr(QUERY, ["zero", "a", "c"], [[0.0, 0.0, 0.0], VECTORS["a"], [-1.0, 0.0, 0.0]], 3, 1.0) == [
        "a",
        "zero",
        "c",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((QUERY, ["a", "b"], [VECTORS["a"]], 2, 0.7), "2 candidates but 1 vectors"),
        ((QUERY, ["a"], [VECTORS["a"]], -1, 0.7), "k must be"),
        ((QUERY, ["a"], [VECTORS["a"]], 1.5, 0.7), "k must be"),
        ((QUERY, ["a"], [VECTORS["a"]], 1, 1.2), "lambda_ must be between 0 and 1"),
        ((QUERY, ["a"], [VECTORS["a"]], 1, -0.1), "lambda_ must be between 0 and 1"),
        ((QUERY, ["a"], [VECTORS["a"]], 1, math.nan), "lambda_ must be between 0 and 1"),
        ((QUERY, ["a"], [[1.0, 0.0]], 1, 0.7), "dimension 3"),
        ((QUERY, ["a", "b"], [[1.0, 0.0, 0.0], [1.0, 0.0]], 1, 0.7), "dimension 3"),
        (([], ["a"], [VECTORS["a"]], 1, 0.7), "query vector"),
        ((QUERY, ["a"], [[math.nan, 0.0, 0.0]], 1, 0.7), "NaN"),
    ],
)
def test_bad_input_is_a_clear_error(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mmr(*args)  # type: ignore[arg-type]


# --- chunks ---------------------------------------------------------------------------------------


class ScriptedEmbedder:
    """Vectors looked up by text; records what it was asked to embed."""

    name, dim = "scripted", 3

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.documents: list[list[str]] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.append(texts)
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.table[text]


def chunk(i: int, index_text: str) -> StoredChunk:
    return StoredChunk(
        id=i,
        doc_id="paper-1",
        title="A paper",
        year=2024,
        chunk_index=i,
        text=f"text {i}",
        index_text=index_text,
        section_title="2 Method",
        parent_section="",
        section_category=SectionCategory.METHOD,
        hierarchy_level=0,
        page_number=1,
        score=0.5,
    )


def test_mmr_chunks_embeds_index_text_and_the_query() -> None:
    table = {"query": QUERY, **{f"idx {n}": v for n, v in VECTORS.items()}}
    embedder = ScriptedEmbedder(table)
    chunks = [chunk(i, f"idx {n}") for i, n in enumerate(VECTORS)]
    picked = mmr_chunks(embedder, "query", chunks, k=2)  # type: ignore[arg-type]
    assert picked == [chunks[0], chunks[2]]  # a and b, not the near-duplicate a2
    assert embedder.documents == [[c.index_text for c in chunks]]  # one batch, the texts the store embedded
    assert embedder.queries == ["query"]
    assert mmr_chunks(embedder, "query", chunks, k=4, lambda_=1.0) == chunks  # type: ignore[arg-type]


def test_mmr_chunks_without_chunks_embeds_nothing() -> None:
    embedder = ScriptedEmbedder({})
    assert mmr_chunks(embedder, "query", [], k=3) == []  # type: ignore[arg-type]
    assert embedder.documents == [] and embedder.queries == []
    with pytest.raises(ValueError, match="lambda_"):
        mmr_chunks(embedder, "query", [], k=3, lambda_=2.0)  # type: ignore[arg-type]


def test_given_relevance_replaces_the_query_vector() -> None:
    vectors = [[1.0, 0.0], [0.99, 0.05], [0.0, 1.0]]
    ranking = [1.0, 0.95, 0.8]  # e.g. BM25 scores: the query vector plays no part
    assert mmr(None, ["a", "b", "c"], vectors, 2, lambda_=1.0, relevance=ranking) == ["a", "b"]
    assert mmr(None, ["a", "b", "c"], vectors, 2, lambda_=0.6, relevance=ranking) == ["a", "c"]
    with pytest.raises(ValueError, match="relevance must be 3 finite numbers"):
        mmr(None, ["a", "b", "c"], vectors, 2, relevance=[1.0, float("nan"), 0.0])
    with pytest.raises(ValueError, match="query vector"):
        mmr(None, ["a"], [[1.0]], 1)
