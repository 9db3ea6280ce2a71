"""What the engine returns: ranked evidence with citations, and what produced it.

`Retrieval` is the seeds' `retrieve(query, options)` result, the same for `paperscope retrieve --json`, the HTTP
service, the agent's search tools and the single-shot answer: the hits (each citable as `<doc_id>:<chunk_index>`),
the track the question took, notes for the reader, the `models` used and the `operators` that ran, in order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .registry import OperatorRun
from .route import Route
from .store import StoredChunk

Track = Literal["A", "B", "NONE"]


def track_of(papers: Iterable[str]) -> Literal["A", "B"]:
    """The track of evidence from `papers` (doc_ids, repeats allowed): one paper is Track A, several (compared) or
    none Track B. Whether a question is NONE is the route's and the coverage check's call, not the papers'."""
    return "A" if len(set(papers)) == 1 else "B"


class Models(BaseModel):
    """The models behind a response (null where none was used), as the design notes' monitoring fields."""

    embedding_provider: str | None = None
    embedding_model: str | None = None
    llm_provider: str | None = None
    llm_model: str | None = None
    rerank_provider: str | None = None
    rerank_model: str | None = None
    retriever: str | None = None


class Hit(BaseModel):
    """One ranked passage as a response shows it."""

    citation: str = Field(description="`<doc_id>:<chunk_index>`.")
    doc_id: str
    title: str
    year: int | None = None
    chunk_index: int
    section_title: str
    section_category: str
    page: int
    page_end: int
    score: float | None
    text: str
    kind: str = "chunk"
    matched: list[str] = Field(default_factory=list, description="parent_document: the child citations that matched.")

    @classmethod
    def of(cls, chunk: StoredChunk) -> Hit:
        """The response form of a stored chunk."""
        meta: dict[str, Any] = chunk.metadata or {}
        return cls(
            citation=chunk.citation,
            doc_id=chunk.doc_id,
            title=chunk.title,
            year=chunk.year,
            chunk_index=chunk.chunk_index,
            section_title=chunk.section_title,
            section_category=chunk.section_category.name,
            page=chunk.page_number,
            page_end=max(int(meta.get("page_end") or chunk.page_number), chunk.page_number),
            score=chunk.score,
            text=chunk.text,
            kind=chunk.kind,
            matched=[str(m) for m in meta.get("matched", [])],
        )


class Retrieval(BaseModel):
    """Ranked evidence for a question, the way it was found, and what produced it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    query: str
    chunks: list[StoredChunk] = Field(default_factory=list, exclude=True)  # the hits as stored (vectors kept)
    track: Track = "B"
    route: Route | None = None
    doc_ids: list[str] = Field(default_factory=list, description="The papers the evidence comes from, best first.")
    notes: list[str] = Field(default_factory=list)
    n_papers: int = Field(0, description="Ready papers in the knowledge base when the question was asked.")
    models: Models = Field(default_factory=Models)
    operators: list[OperatorRun] = Field(default_factory=list)
    generated: dict[str, Any] = Field(default_factory=dict, description="What query transforms generated.")

    @property
    def hits(self) -> list[Hit]:
        return [Hit.of(c) for c in self.chunks]

    def response(self) -> dict[str, Any]:
        """The JSON object of `paperscope retrieve --json` and POST /v1/retrieve."""
        return {
            "query": self.query,
            "track": self.track,
            "hits": [h.model_dump() for h in self.hits],
            "notes": self.notes,
            "models": self.models.model_dump(),
            "operators": [o.model_dump() for o in self.operators],
            **self.generated,
        }
