"""What every question returns, on the single-shot path and from the agent alike."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..rag.context import Evidence
from ..rag.registry import OperatorRun
from ..rag.retrieval import Models
from ..rag.route import Route
from ..rag.store import StoredChunk
from .claims import Claim
from .grounding import GroundingReport


class Source(BaseModel):
    """One piece of evidence the answer drew on, with its citation number."""

    n: int = Field(description="Citation number used in the answer text as [n].")
    citation: str = Field(
        description="Citation id `<doc_id>:<chunk_index>` of the retrieved chunk (`<doc_id>:raptor:<level>.<n>` for a "
        "RAPTOR summary node)."
    )
    doc_id: str
    title: str
    year: int | None = None
    section_title: str = Field(description="Section of the retrieved chunk.")
    section_category: str = Field(description="Category name of that section, e.g. METHOD.")
    chunk_index: int = Field(description="The retrieved chunk.")
    chunk_range: tuple[int, int] = Field(
        description="First and last chunk_index of the text shown (window included; a summary node: the chunks it "
        "summarises)."
    )
    page: int = Field(description="Page where the text shown starts (1-based).")
    pages: tuple[int, int] = Field(description="First and last page of the text shown.")
    score: float | None = Field(None, description="Retrieval score of the chunk.")
    text: str = Field(description="The evidence as the answer saw it, window included.")

    @classmethod
    def from_evidence(cls, n: int, ev: Evidence) -> Source:
        """Source number `n` for an Evidence span, anchored on its best hit."""
        best = ev.hits[0]
        hit = next((c for c in ev.chunks if c.chunk_index == best), ev.chunks[0])
        return cls(
            n=n,
            citation=ev.citation,
            doc_id=ev.doc_id,
            title=ev.title,
            year=ev.year,
            section_title=hit.section_title,
            section_category=hit.section_category.name,
            chunk_index=best,
            chunk_range=ev.chunk_range,
            page=ev.pages[0],
            pages=ev.pages,
            score=ev.score,
            text=ev.text,
        )

    @classmethod
    def from_chunk(cls, n: int, chunk: StoredChunk) -> Source:
        """Source number `n` for one chunk the agent read."""
        page_end = int(chunk.metadata.get("page_end") or chunk.page_number)
        span = chunk.metadata.get("span") if chunk.kind == "raptor" else None  # a summary node: the chunks it covers
        chunk_range = (int(span[0]), int(span[-1])) if span else (chunk.chunk_index, chunk.chunk_index)
        return cls(
            n=n,
            citation=chunk.citation,
            doc_id=chunk.doc_id,
            title=chunk.title,
            year=chunk.year,
            section_title=chunk.section_title,
            section_category=chunk.section_category.name,
            chunk_index=chunk.chunk_index,
            chunk_range=chunk_range,
            page=chunk.page_number,
            pages=(chunk.page_number, max(page_end, chunk.page_number)),
            score=chunk.score,
            text=chunk.text,
        )


class TraceStep(BaseModel):
    """One tool call (the agent's, or a step of the single-shot plan over the same tools)."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    observation: str = Field("", description="What the tool returned, shortened.")
    results: list[str] = Field(default_factory=list, description="Citation ids `<doc_id>:<chunk_index>` it returned.")
    seconds: float = 0.0
    error: bool = Field(False, description="True when the call was rejected or failed.")
    turn: int = Field(0, description="The model turn that made the call (1-based; 0 = after the loop).")
    from_text: bool = Field(False, description="True when the model wrote the call as text, not as a tool call.")


class ReflectionRound(BaseModel):
    """One answer the reflection loop wrote and scored."""

    round: int = Field(description="1 for the first answer.")
    retry: str = Field(description="How this round searched: initial, expand, rewrite, or expand+rewrite.")
    query: str = Field(description="The query searched (the question, or its rewrite).")
    k: int = Field(0, description="Evidence passages drawn on (0: the agent chose).")
    scores: dict[str, float] = Field(
        default_factory=dict, description="1-10: accuracy, completeness, relevance, support (the model's), grounding."
    )
    score: float = Field(0.0, description="The mean of the scores: what is compared with reflection.min_score.")
    missing: str = Field("", description="What the model said the answer lacks.")
    note: str = Field("", description="Why a score is missing (the model failed, or wrote no scores).")


class Reflection(BaseModel):
    """What the reflection loop did: every round's scores, what was retried, which answer was kept."""

    rounds: list[ReflectionRound] = Field(default_factory=list)
    kept: int = Field(1, description="The round whose answer is given (the best score).")
    min_score: float = 7.0
    stopped: str = Field("", description="Why the loop ended: the score was reached, max_rounds, or a failure.")


class CitedWork(BaseModel):
    """A paper an answer cites, as a bibliography lists it (from the catalogue: the library's metadata first)."""

    n: int = Field(description="Its number in the answer's reference list, in the order the answer first cites it.")
    doc_id: str
    title: str
    authors: list[str] = Field(default_factory=list, description="In order.")
    year: int | None = None
    venue: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    citation_key: str = Field("", description="The library's citation key, where known.")
    sources: list[int] = Field(default_factory=list, description="The answer's source numbers [n] from this paper.")


class Answer(BaseModel):
    """An answer with its sources, the path it took, and how long it took."""

    query: str
    answer: str
    track: Literal["A", "B", "NONE"] = Field(
        description="A: one paper; B: a survey of the field; NONE: no paper in the knowledge base seems to answer "
        "(the closest passages are the sources)."
    )
    route: Route
    sources: list[Source] = Field(default_factory=list, description="Best first; [n] in the answer refers to n.")
    claims: list[Claim] = Field(
        default_factory=list,
        description="The answer's sentences, each with the span of the chunk it rests on and a verdict (claims.py); "
        "the first of role `answer` is what answers the question.",
    )
    mode: Literal["agent", "single-shot", "fallback"] = Field(
        "single-shot",
        description="agent: the agent answered; single-shot: retrieval then one answer; fallback: the agent could "
        "not answer (no tool use, or the model failed) and single-shot retrieval did (notes say why).",
    )
    extractive: bool = Field(False, description="True when the answer is extracted evidence (no language model).")
    supported: bool = Field(True, description="False when no retrieved source backs the answer.")
    notes: list[str] = Field(default_factory=list, description="What the reader should know, e.g. a fallback taken.")
    timings: dict[str, float] = Field(default_factory=dict, description="Seconds per stage, and total.")
    models: Models = Field(default_factory=Models, description="The models behind the answer (null where none).")
    operators: list[OperatorRun] = Field(default_factory=list, description="The operators that ran, in order.")
    trace: list[TraceStep] = Field(default_factory=list, description="Tool calls of an agent run.")
    usage: dict[str, int] = Field(default_factory=dict, description="Token usage when the model reports it.")
    turns: int = Field(0, description="Model turns of an agent run.")
    llm_error: str | None = Field(None, description="One line naming the model and endpoint when the model failed.")
    generated_queries: list[str] = Field(
        default_factory=list, description="Queries the rewrite and multi-query transforms wrote (searched)."
    )
    hyde_queries: list[str] = Field(default_factory=list, description="Passages the hyde transform wrote (searched).")
    semantic_query: str | None = Field(None, description="The topic self-query searched in place of the question.")
    parsed_filters: dict[str, Any] = Field(
        default_factory=dict, description="The filters self-query found and validated (years, doc_ids, sections)."
    )
    grounding: GroundingReport | None = Field(
        None, description="The check of the model's figures against the evidence read (None for extracted answers)."
    )
    reflection: Reflection | None = Field(None, description="The reflection loop's rounds, when it ran.")
    bibliography: list[CitedWork] = Field(
        default_factory=list,
        description="The papers the answer cites, numbered in the order it first cites them (none for Track NONE).",
    )

    @property
    def track_label(self) -> str:
        """The track in words, for people: "one paper", "across papers", "not in the knowledge base"."""
        return TRACK_LABELS[self.track]


TRACK_LABELS = {"A": "one paper", "B": "across papers", "NONE": "not in the knowledge base"}
