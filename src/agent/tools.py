"""The agent's tools (the contract in DESIGN.md): typed, validated, observations the model can cite from.

Every chunk a tool shows is written with its citation id `<doc_id>:<chunk_index>` and remembered in
the run's `RunState`, so `finish` can check that each cited source was really read in this run.
A bad argument goes back to the model as a one-line error (`BadToolCall`); anything else raises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt.tool_node import ToolInvocationError
from pydantic import BaseModel, Field, ValidationError

from ..config import Settings
from ..parser.models import SectionCategory
from ..rag.context import introduction
from ..rag.filters import SearchFilter, parse_category, validate_doc_id
from ..rag.retrievers import get_retriever
from ..rag.store import PaperRecord, PaperStore, StoredChunk
from .answer import TraceStep

MAX_K = 10
MAX_WINDOW = 3
SNIPPET_CHARS = 300
OBSERVATION_CHARS = 160  # of an observation kept in the trace
CATEGORY_NAMES = ", ".join(c.name for c in SectionCategory)


class BadToolCall(Exception):
    """A tool argument the model can fix; its message goes back to the model."""


class RunState:
    """What one agent run has seen and done (shared by concurrently running tools)."""

    def __init__(self) -> None:
        self.seen: dict[str, StoredChunk] = {}
        self.trace: list[TraceStep] = []
        self._lock = threading.Lock()

    def remember(self, chunks: list[StoredChunk]) -> None:
        with self._lock:
            for c in chunks:
                self.seen.setdefault(c.citation, c)

    def record(self, step: TraceStep) -> None:
        with self._lock:
            self.trace.append(step)

    def record_error(self, tool: str, message: str) -> None:
        self.record(TraceStep(tool=tool, observation=message, error=True))


# --- argument schemas: what the model fills in ----------------------------------------------------------


class SearchAbstractsArgs(BaseModel):
    query: str = Field(description="What the papers should be about, in a few words.", min_length=1, max_length=500)
    k: int = Field(5, ge=1, le=MAX_K, description="How many papers to return (1-10).")


class SearchBySectionArgs(BaseModel):
    query: str = Field(description="What the passage should say, in a few words.", min_length=1, max_length=500)
    doc_id: str | None = Field(None, description="Search only this paper (a doc_id from an earlier result).")
    category: str | None = Field(None, description=f"Search only this section category: one of {CATEGORY_NAMES}.")
    k: int = Field(5, ge=1, le=MAX_K, description="How many passages to return (1-10).")


class ContextWindowArgs(BaseModel):
    doc_id: str = Field(description="The paper's doc_id.")
    chunk_index: int = Field(ge=0, description="The passage's chunk_index (the number after ':' in its citation id).")
    window: int = Field(1, ge=0, le=MAX_WINDOW, description="Passages to read on each side (0-3).")


class IntroductionArgs(BaseModel):
    doc_id: str = Field(description="The paper's doc_id.")


class FinishArgs(BaseModel):
    answer: str = Field(description="The final answer, citing passages inline as [<doc_id>:<chunk_index>].")
    sources: list[str] = Field(description="Citation ids `<doc_id>:<chunk_index>` the answer relies on.")


# --- observations ------------------------------------------------------------------------------------------


def format_chunk(c: StoredChunk, *, with_score: bool = True) -> str:
    """A passage as the model sees it: citation id, paper, section, page (and score), then the text."""
    score = f", score {c.score:.3f}" if with_score and c.score is not None else ""
    head = f"[{c.citation}] {c.title} | {c.section_title} ({c.section_category.name}), p. {c.page_number}{score}"
    return f"{head}\n{c.text.strip()}"


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class AgentTools:
    """The five tools bound to one store and one run's state."""

    def __init__(
        self, store: PaperStore, settings: Settings, state: RunState, papers: Sequence[PaperRecord] | None = None
    ) -> None:
        """`papers`: the ready catalogue if the caller has just read it (it is re-read on an unknown doc_id)."""
        self.store = store
        self.settings = settings
        self.state = state
        self._retrieve = get_retriever(settings.retrieval.retriever)
        self._papers: dict[str, PaperRecord] | None = None if papers is None else {p.doc_id: p for p in papers}

    def _paper(self, doc_id: str) -> PaperRecord:
        """The ready paper with this doc_id, or a BadToolCall the model can act on."""
        try:
            validate_doc_id(doc_id)
        except ValueError as exc:
            raise BadToolCall(f"{exc}; use a doc_id from a search result") from None
        if self._papers is None or doc_id not in self._papers:
            self._papers = {p.doc_id: p for p in self.store.list_papers(brief=True) if p.ready}
        paper = self._papers.get(doc_id)
        if paper is None:
            raise BadToolCall(f"unknown doc_id {doc_id!r}; call search_abstracts to find papers")
        return paper

    # The docstrings below are exactly what the model reads.

    def search_abstracts(self, query: str, k: int = 5) -> str:
        """Find the papers about a topic by searching their titles and abstracts.

        Returns for each paper its doc_id, title, year, score, and the citation id and start of its abstract.
        Start here to learn which papers matter, then search inside them with search_by_section.
        """
        hits = self._retrieve(self.store, query, SearchFilter(categories=[SectionCategory.ABSTRACT]), k * 3)
        best: dict[str, StoredChunk] = {}
        for h in hits:
            best.setdefault(h.doc_id, h)
        papers = list(best.values())[:k]
        if not papers:
            return "No paper matches. Try other words."
        self.state.remember(papers)
        lines = []
        for h in papers:
            year = f" ({h.year})" if h.year else ""
            lines.append(
                f"doc_id={h.doc_id} | {h.title}{year} | score {h.score or 0.0:.3f} | abstract [{h.citation}]: "
                f"{shorten(h.text, SNIPPET_CHARS)}"
            )
        return "\n".join(lines)

    def search_by_section(self, query: str, doc_id: str | None = None, category: str | None = None, k: int = 5) -> str:
        """Search passages of the papers, optionally only in one paper (doc_id) and one section category.

        Categories: METHOD (how it works, setup, data), EVALUATION (results, numbers, ablations),
        INTRODUCTION (problem, motivation), CONCLUSION (limitations, future work), RELATED_WORK (what
        OTHER papers did), ABSTRACT, OTHER (references, appendix). Returns passages with their citation id
        [doc_id:chunk_index], paper title, section, page, score and text.
        """
        cats: list[SectionCategory] | None = None
        if category is not None and category.strip():
            try:
                cats = [parse_category(category)]
            except ValueError:
                raise BadToolCall(f"unknown category {category!r}; use one of {CATEGORY_NAMES}") from None
        doc_ids = [self._paper(doc_id).doc_id] if doc_id else None
        hits = self._retrieve(self.store, query, SearchFilter(doc_ids=doc_ids, categories=cats), k)
        if not hits:
            scope = " in that paper" if doc_id else ""
            return f"No passage found{scope}{' under ' + cats[0].name if cats else ''}. Try other words or no category."
        self.state.remember(hits)
        return "\n\n".join(format_chunk(h) for h in hits)

    def get_context_window(self, doc_id: str, chunk_index: int, window: int = 1) -> str:
        """Read the passages around one passage of a paper, in order: chunk_index-window .. chunk_index+window.

        Use it when a passage is cut off or you need what comes just before or after it.
        """
        paper = self._paper(doc_id)
        if chunk_index >= paper.n_chunks:
            raise BadToolCall(
                f"chunk_index {chunk_index} is past the end: this paper has chunks 0..{paper.n_chunks - 1}"
            )
        chunks = self.store.get_context_window(doc_id, chunk_index, window)
        self.state.remember(chunks)
        return "\n\n".join(format_chunk(c, with_score=False) for c in chunks)

    def get_paper_introduction(self, doc_id: str) -> str:
        """Read the beginning of a paper's Introduction (about 500 tokens): its problem, motivation, contributions.

        Use it for background on one paper.
        """
        paper = self._paper(doc_id)
        chunks = introduction(self.store, doc_id, max(1, self.settings.retrieval.intro_tokens))
        if not chunks:
            return f"{paper.title} has no Introduction or Abstract in the store."
        self.state.remember(chunks)
        return "\n\n".join(format_chunk(c, with_score=False) for c in chunks)

    def finish(self, answer: str, sources: list[str]) -> str:
        """Give the final answer and stop.

        `answer` cites the passages it uses inline as [<doc_id>:<chunk_index>]; `sources` lists those citation
        ids. Cite only ids shown in tool results of this conversation. If the papers do not answer the
        question, say so in `answer` and give the closest sources you found (or none).
        """
        return "Answer recorded."

    # --- binding -----------------------------------------------------------------------------------------

    def tools(self) -> list[BaseTool]:
        """The tools as LangChain tools, each timed and traced."""
        specs: list[tuple[Callable[..., str], type[BaseModel]]] = [
            (self.search_abstracts, SearchAbstractsArgs),
            (self.search_by_section, SearchBySectionArgs),
            (self.get_context_window, ContextWindowArgs),
            (self.get_paper_introduction, IntroductionArgs),
            (self.finish, FinishArgs),
        ]
        return [
            StructuredTool.from_function(
                func=self._traced(fn),
                name=fn.__name__,
                description=(fn.__doc__ or "").strip(),
                args_schema=schema,
                infer_schema=False,
            )
            for fn, schema in specs
        ]

    def tool_error(self, e: Exception) -> str:
        """ToolNode's error handler: one line for the model on bad arguments; anything else is re-raised."""
        if isinstance(e, BadToolCall):
            return f"error: {e}"
        if isinstance(e, ToolInvocationError):
            cause = e.source
            detail = "invalid arguments"
            if isinstance(cause, ValidationError) and cause.errors():
                first = cause.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "arguments"
                detail = f"{where}: {first['msg']}"
            message = f"error: {e.tool_name}: {detail}"
            self.state.record(TraceStep(tool=e.tool_name, args=dict(e.tool_kwargs), observation=message, error=True))
            return message
        raise e

    def _traced(self, fn: Callable[..., str]) -> Callable[..., str]:
        name = fn.__name__

        def run(**kwargs: Any) -> str:
            started = time.perf_counter()
            try:
                out = fn(**kwargs)
            except BadToolCall as exc:
                self.state.record(
                    TraceStep(tool=name, args=kwargs, observation=f"error: {exc}", seconds=_since(started), error=True)
                )
                raise
            self.state.record(
                TraceStep(tool=name, args=kwargs, observation=shorten(out, OBSERVATION_CHARS), seconds=_since(started))
            )
            return out

        run.__name__ = name
        return run


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 4)
