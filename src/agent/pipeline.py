"""The single-shot path: route -> Track A or B -> windows + Introduction -> answer, as one fixed plan.

It runs when the agent is off or no chat model is configured, and it is the agent's fallback. Retrieval is the
engine's (rag/engine.py: the same code the agent's tools call); the answer is written by `AnswerWriter`
(writer.py: the model from the evidence, or the extracted sentences). With a chat model set for routing, the LLM
router decides the route and the engine follows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..answer.model import Answer
from ..config import Settings
from ..llm.client import make_chat_model, question_scope
from ..parser.models import SectionCategory
from ..rag.engine import Engine
from ..rag.filters import SearchFilter
from ..rag.query import expand
from ..rag.retrieval import Retrieval
from ..rag.store import PaperRecord, PaperStore, StoredChunk
from .reflection import Reflector
from .router import LLMRouter

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["Progress", "Searcher"]

#: progress(stage, detail): what an answer is doing, for a caller that shows it (the HTTP event stream).
Progress = Callable[[str, str], None]


class Searcher:
    """Single-shot question answering over one knowledge base."""

    def __init__(
        self,
        store: PaperStore,
        settings: Settings | None = None,
        chat_model: BaseChatModel | None = None,
        *,
        owns_store: bool = False,
    ) -> None:
        from .writer import AnswerWriter

        self.store = store
        self.settings = settings or store.settings
        self.engine = Engine(store, self.settings, chat_model)  # its query transforms call the model
        self.writer = AnswerWriter(self.engine, chat_model)
        self._owns_store = owns_store
        self._router: tuple[tuple[str, ...], LLMRouter] | None = None

    @property
    def chat_model(self) -> BaseChatModel | None:
        """The chat model that writes (and routes) answers; None answers by extraction."""
        return self.writer.chat_model

    @chat_model.setter
    def chat_model(self, model: BaseChatModel | None) -> None:
        self.writer.chat_model = model
        self.engine.chat_model = model
        self._router = None

    @classmethod
    def open(cls, settings: Settings, chat_model: BaseChatModel | None = None) -> Searcher:
        """Open the knowledge base of `settings`, with the configured chat model unless one is given."""
        model = chat_model if chat_model is not None else make_chat_model(settings.llm)
        return cls(PaperStore.open(settings), settings, model, owns_store=True)

    def widened(self, settings: Settings) -> Searcher:
        """A searcher over the same store and model with other `settings` (the store stays this one's to close)."""
        return Searcher(self.store, settings, self.chat_model)

    def close(self) -> None:
        """Close the store if this searcher opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def reflecting(self) -> bool:
        """True when answers go through the reflection loop (reflection.enabled, and a chat model to score them)."""
        return self.settings.reflection.enabled and self.chat_model is not None

    def papers(self) -> list[PaperRecord]:
        """Ready papers of the knowledge base (a brief catalogue read)."""
        return self.engine.papers()

    def llm_router(self, papers: Sequence[PaperRecord] | None = None) -> LLMRouter | None:
        """The LLM router for `papers` (default: the ready catalogue) when a chat model is configured for routing
        (rebuilt when they change)."""
        if self.chat_model is None or not self.settings.llm.use_for_routing:
            return None
        papers = self.papers() if papers is None else papers
        locator = self.engine.locator(papers)
        key = tuple(sorted(f"{p.doc_id}:{p.ingested_at}" for p in papers))
        if self._router is None or self._router[0] != key or self._router[1].locator is not locator:
            self._router = (key, LLMRouter(self.chat_model, locator))
        return self._router[1]

    # --- retrieval -----------------------------------------------------------------------------------------------

    def plan(
        self,
        query: str,
        *,
        doc_ids: Sequence[str] | None = None,
        categories: Sequence[str | SectionCategory] | None = None,
        k: int | None = None,
        history: Sequence[Answer] | None = None,
        use_model: bool = True,
    ) -> Retrieval:
        """Route the question and retrieve its evidence (best first, at most k); `use_model=False` routes with the
        rules even when the LLM router is configured, and runs no query transform. Explicit papers and sections
        are hard limits."""
        scope = SearchFilter(
            doc_ids=list(doc_ids) if doc_ids else None, categories=list(categories) if categories else None
        )
        router = self.llm_router() if use_model else None
        route = router.route(expand(query)) if router is not None and not doc_ids else None
        last = next((a for a in reversed(history or []) if a.track == "A" and a.sources), None)
        previous = (last.sources[0].doc_id, last.sources[0].title) if last is not None else None
        return self.engine.retrieve(query, scope, k, route=route, previous=previous, transforms=use_model)

    def retrieve(
        self,
        query: str,
        *,
        doc_ids: Sequence[str] | None = None,
        categories: Sequence[str | SectionCategory] | None = None,
        k: int | None = None,
    ) -> list[StoredChunk]:
        """The evidence chunks a question retrieves (routed, scoped, diversified), best first."""
        return self.plan(query, doc_ids=doc_ids, categories=categories, k=k).chunks

    # --- answers -------------------------------------------------------------------------------------------------

    def answer(
        self,
        query: str,
        *,
        doc_ids: Sequence[str] | None = None,
        categories: Sequence[str | SectionCategory] | None = None,
        k: int | None = None,
        history: Sequence[Answer] | None = None,
        on_token: Callable[[str], None] | None = None,
        use_model: bool = True,
        on_progress: Progress | None = None,
        reflect: bool = True,
    ) -> Answer:
        """Answer a question with cited sources (generated with a chat model, else extracted).

        `on_token` receives the generated answer piece by piece as the model streams it. `use_model=False`
        answers without the chat model (rules route, sentences are extracted). A model that fails or writes
        no answer gives way to the extracted sentences, with a note and `llm_error` saying so. `on_progress`
        hears (stage, detail) as the answer is prepared: "searching", then "writing". With
        `reflection.enabled` the answer is scored and retried (reflection.py).
        """
        if reflect and self.reflecting and use_model:

            def first(relay: Callable[[str], None] | None) -> Answer:
                return self.answer(
                    query,
                    doc_ids=doc_ids,
                    categories=categories,
                    k=k,
                    history=history,
                    on_token=relay,
                    on_progress=on_progress,
                    reflect=False,
                )

            names = [str(c.name if isinstance(c, SectionCategory) else c) for c in categories or []]
            return Reflector(self).run(
                query, first, doc_ids=doc_ids, categories=names or None, k=k, history=history, on_token=on_token
            )
        # One catalogue for the whole answer: its retrieval and its passages see the library as it was at the start.
        with question_scope(self.chat_model), self.engine.store.pinned():
            started = time.perf_counter()
            if on_progress is not None:
                on_progress("searching", "routing the question and ranking passages")
            retrieval = self.plan(
                query, doc_ids=doc_ids, categories=categories, k=k, history=history, use_model=use_model
            )
            if on_progress is not None:
                found = f"{len(retrieval.chunks)} passages from {len(set(retrieval.doc_ids))} paper(s)"
                on_progress("writing", f"{found}, track {retrieval.track}")
            return self.writer.from_retrieval(query, retrieval, on_token=on_token, use_model=use_model, started=started)

    def run(
        self, query: str, history: Sequence[Answer] | None = None, on_token: Callable[[str], None] | None = None
    ) -> Answer:
        """The chat loop's entry point: `answer` with history and streaming."""
        return self.answer(query, history=history, on_token=on_token)
