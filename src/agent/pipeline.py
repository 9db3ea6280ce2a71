"""The single-shot path: route -> Track A or B -> MMR -> windows + Introduction -> answer.

It runs when the agent is off or no chat model is configured, and it is the engine the agent's
tools stand on. Track A searches inside one paper; Track B surveys the papers whose abstracts match.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from ..config import Settings
from ..errors import LLMError
from ..parser.models import SectionCategory
from ..prompts import load_prompt
from ..rag.context import Evidence, assemble, format_context
from ..rag.filters import SearchFilter, parse_category, validate_doc_id
from ..rag.mmr import mmr_chunks
from ..rag.retrievers import Retriever, get_retriever
from ..rag.store import PaperRecord, PaperStore, StoredChunk
from .answer import Answer, Source
from .extractive import HEADER, HEADER_WITHOUT_MODEL, extractive_answer
from .llm import as_llm_error, make_chat_model, model_error, model_name, question_scope
from .router import Intent, LLMRouter, PaperRef, Route, RuleRouter, make_router
from .textcalls import looks_like_a_call

# Related Work describes other papers and References list them: neither answers a question about
# this paper (or the field's findings) unless the question asks for them by category.
DEFAULT_CATEGORIES = [c for c in SectionCategory if c not in (SectionCategory.RELATED_WORK, SectionCategory.OTHER)]
# A paper "stands out" in the abstract search when it is this similar to the query and this far ahead.
STAND_OUT_SCORE = 0.45
STAND_OUT_MARGIN = 0.08
# Follow-ups that point back at the paper of the previous answer.
_ANAPHORA = re.compile(
    r"\b(it|its|this paper|that paper|the paper|this work|the authors|they|their)\b|它|这篇|该论文|作者", re.I
)
_CITATION = re.compile(r"\[(\d+)\]")
# Survey phrasing says "across papers" but carries no topic; BM25 and the embedding both match it on
# every paper that talks about "papers" or "methods", so Track B searches with the topic alone.
_SURVEY_WORDS = re.compile(
    r"\b(which|what|how do|how have|recent|existing|other)\s+(papers?|works?|methods?|approaches|systems|"
    r"techniques|studies)\b|\b(papers?|works?|studies)\b|有哪些|哪些(工作|论文|方法)?",
    re.IGNORECASE,
)


def survey_focus(query: str) -> str:
    """The topic of a survey question, without its "which papers ..." phrasing (the query if nothing is left)."""
    focus = " ".join(_SURVEY_WORDS.sub(" ", query).split())
    return focus if len(focus) >= 3 else query


@dataclass
class Plan:
    """What retrieval decided and found, before any answer is written."""

    route: Route
    track: Literal["A", "B"]
    doc_ids: list[str]
    hits: list[StoredChunk]
    n_papers: int = 0  # ready papers in the knowledge base when the question was asked
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


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
        self.store = store
        self.settings = settings or store.settings
        self.chat_model = chat_model
        self.retriever: Retriever = get_retriever(self.settings.retrieval.retriever)
        self._owns_store = owns_store
        self._router: tuple[tuple[str, ...], RuleRouter | LLMRouter] | None = None

    @classmethod
    def open(cls, settings: Settings, chat_model: BaseChatModel | None = None) -> Searcher:
        """Open the knowledge base of `settings`, with the configured chat model unless one is given."""
        model = chat_model if chat_model is not None else make_chat_model(settings.llm)
        return cls(PaperStore.open(settings), settings, model, owns_store=True)

    def close(self) -> None:
        """Close the store if this searcher opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- routing -------------------------------------------------------------------------------------

    def papers(self) -> list[PaperRecord]:
        """Ready papers of the knowledge base (a brief catalogue read)."""
        return [p for p in self.store.list_papers(brief=True) if p.ready]

    def router(self, papers: Sequence[PaperRecord] | None = None) -> RuleRouter | LLMRouter:
        """The LLM router when a chat model is configured for routing, else the rule router, for `papers` (read
        from the store when not given). Rebuilt only when the catalogue changes: its title patterns cost
        milliseconds per thousand papers."""
        papers = self.papers() if papers is None else papers
        key = tuple(sorted(p.doc_id for p in papers))
        if self._router is None or self._router[0] != key:
            refs = [PaperRef.from_record(p) for p in papers]
            use_llm = self.chat_model is not None and self.settings.llm.use_for_routing
            self._router = (key, make_router(refs, self.chat_model if use_llm else None))
        return self._router[1]

    def rule_router(self, papers: Sequence[PaperRecord] | None = None) -> RuleRouter:
        """The rule router for `papers` (the LLM router's own fallback when there is one): no model call."""
        router = self.router(papers)
        return router.fallback if isinstance(router, LLMRouter) else router

    def route(self, query: str) -> Route:
        """Which track and sections the question calls for, and which papers it names."""
        return self.router().route(query)

    # --- retrieval -----------------------------------------------------------------------------------

    def plan(
        self,
        query: str,
        *,
        doc_ids: Sequence[str] | None = None,
        categories: Sequence[str | SectionCategory] | None = None,
        k: int | None = None,
        history: Sequence[Answer] | None = None,
        use_model: bool = True,
    ) -> Plan:
        """Route the question and retrieve its evidence hits (best first, at most k); `use_model=False` routes
        with the rules even when the LLM router is configured."""
        if not query or not query.strip():
            raise ValueError("the question is empty")
        r = self.settings.retrieval
        k = k or r.k
        started = time.perf_counter()
        catalogue = self.papers()
        router = self.router(catalogue) if use_model else self.rule_router(catalogue)
        route = router.route(query)
        wanted = [validate_doc_id(d) for d in doc_ids] if doc_ids else []
        cats = [parse_category(c) for c in categories] if categories else []
        if cats:
            route = route.model_copy(update={"target_section_category": [c.name for c in cats]})
        else:
            cats = [SectionCategory.from_name(c) for c in route.target_section_category]
        notes: list[str] = []
        timings = {"route": time.perf_counter() - started}

        started = time.perf_counter()
        if not wanted and not route.doc_ids and history and _ANAPHORA.search(query):
            last = next((a for a in reversed(history) if a.track == "A" and a.sources), None)
            if last is not None:
                wanted = [last.sources[0].doc_id]
                notes.append(f"Follow-up: staying on {last.sources[0].title!r}.")
        track: Literal["A", "B"]
        if wanted:
            track, papers = ("A" if len(wanted) == 1 else "B"), wanted
        elif len(route.doc_ids) > 1:
            track, papers = "B", list(route.doc_ids)  # several papers named: compare exactly those
        elif route.doc_ids:
            track, papers = "A", [route.doc_ids[0]]
        elif route.intent == Intent.SPECIFIC_PAPER:
            located = self._locate(route, query)
            if located:
                track, papers = "A", [located]
            else:
                named = ", ".join(route.target_paper_keywords) or "the paper you named"
                notes.append(f"No paper in the knowledge base matches {named}; showing the closest passages instead.")
                track, papers = "B", []
        else:
            track, papers = "B", []

        if track == "A":
            hits = self._search_paper(query, papers[0], cats, k, notes)
        else:
            hits = self._survey(query, papers, cats, k)
        timings["retrieve"] = time.perf_counter() - started
        found = papers if track == "A" else list(dict.fromkeys(h.doc_id for h in hits))
        return Plan(route, track, found, hits, len(catalogue), notes, timings)

    def retrieve(
        self,
        query: str,
        *,
        doc_ids: Sequence[str] | None = None,
        categories: Sequence[str | SectionCategory] | None = None,
        k: int | None = None,
    ) -> list[StoredChunk]:
        """The evidence chunks a question retrieves (routed, scoped, diversified), best first."""
        return self.plan(query, doc_ids=doc_ids, categories=categories, k=k).hits

    def _locate(self, route: Route, query: str) -> str | None:
        """The one paper whose title + abstract stand out for the named keywords, if any."""
        probe = " ".join(route.target_paper_keywords) or query
        found = self.store.search_papers(probe, k=2)
        if not found or (found[0].score or 0.0) < STAND_OUT_SCORE:
            return None
        if len(found) > 1 and (found[0].score or 0.0) - (found[1].score or 0.0) < STAND_OUT_MARGIN:
            return None
        return found[0].doc_id

    def _candidates(self, query: str, search_filter: SearchFilter) -> list[StoredChunk]:
        return self.retriever(self.store, query, search_filter, self.settings.retrieval.candidates)

    def _search_paper(
        self, query: str, doc_id: str, cats: list[SectionCategory], k: int, notes: list[str]
    ) -> list[StoredChunk]:
        """Track A: search inside one paper, in the routed sections; widen when they give too little."""
        scoped = SearchFilter(doc_ids=[doc_id], categories=cats or DEFAULT_CATEGORIES)
        hits = self._candidates(query, scoped)
        if len(hits) < self.settings.retrieval.min_hits:
            if cats:
                notes.append(f"Few passages in {', '.join(c.name for c in cats)}; searched the whole paper.")
            hits = self._candidates(query, SearchFilter(doc_ids=[doc_id]))
        return mmr_chunks(self.store.embedder, query, hits, k, self.settings.retrieval.mmr_lambda)

    def _survey(self, query: str, doc_ids: list[str], cats: list[SectionCategory], k: int) -> list[StoredChunk]:
        """Track B: the papers whose abstracts match (or the ones given), then their full text."""
        r = self.settings.retrieval
        query = survey_focus(query)
        if not doc_ids:
            abstracts = self.retriever(
                self.store, query, SearchFilter(categories=[SectionCategory.ABSTRACT]), r.survey_papers * 3
            )
            doc_ids = list(dict.fromkeys(h.doc_id for h in abstracts))[: r.survey_papers]
            if not doc_ids:
                return []
        hits = self._candidates(query, SearchFilter(doc_ids=doc_ids, categories=cats or DEFAULT_CATEGORIES))
        if not hits and cats:
            hits = self._candidates(query, SearchFilter(doc_ids=doc_ids))
        ordered = mmr_chunks(self.store.embedder, query, hits, len(hits), r.mmr_lambda) if hits else []
        picked: list[StoredChunk] = []
        per: dict[str, int] = {}
        for h in ordered:
            if per.get(h.doc_id, 0) < r.per_paper:
                picked.append(h)
                per[h.doc_id] = per.get(h.doc_id, 0) + 1
            if len(picked) == k:
                break
        return picked

    # --- answers -------------------------------------------------------------------------------------

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
    ) -> Answer:
        """Answer a question with cited sources (generated with a chat model, else extracted).

        `on_token` receives the generated answer piece by piece as the model streams it. `use_model=False`
        answers without the chat model (rules route, sentences are extracted). A model that fails or writes
        no answer gives way to the extracted sentences, with a note and `llm_error` saying so.
        """
        with question_scope(self.chat_model):
            t0 = time.perf_counter()
            plan = self.plan(query, doc_ids=doc_ids, categories=categories, k=k, history=history, use_model=use_model)
            return self.compose(query, plan, on_token=on_token, use_model=use_model, started=t0)

    def compose(
        self,
        query: str,
        plan: Plan,
        *,
        on_token: Callable[[str], None] | None = None,
        use_model: bool = True,
        started: float | None = None,
    ) -> Answer:
        """The answer to `query` from the evidence of `plan`: windows, Introductions, then the model or extraction."""
        t0 = time.perf_counter() if started is None else started
        r = self.settings.retrieval
        begun = time.perf_counter()
        contexts = assemble(
            self.store,
            plan.hits,
            window=r.window,
            token_budget=r.token_budget,
            intro_tokens=r.intro_tokens,
            with_introduction=r.intro_tokens > 0,
        )
        context_text, evidence = format_context(contexts)
        plan.timings["assemble"] = time.perf_counter() - begun
        sources = evidence_sources(evidence)

        begun = time.perf_counter()
        model = self.chat_model if use_model else None
        extractive = model is None
        supported = bool(sources)
        notes = list(plan.notes)
        llm_error: str | None = None
        header = HEADER if self.chat_model is None else HEADER_WITHOUT_MODEL
        if not plan.n_papers:
            text, supported = "The knowledge base is empty: add papers with `paperscope ingest PATH`.", False
        elif not sources:
            text = "No passage in the knowledge base answers this question."
        elif model is None:
            text = extractive_answer(query, evidence, header=header)
        else:
            emitted: list[str] = []

            def emit(piece: str) -> None:
                emitted.append(piece)
                if on_token is not None:
                    on_token(piece)

            try:
                text, cut = self._generate(query, context_text, emit if on_token is not None else None)
                cited = {int(n) for n in _CITATION.findall(text)} & {s.n for s in sources}
                if cut and not cited:
                    # A reply that ran to max_tokens citing nothing is a model rambling, not an answer.
                    raise model_error(model, "bad_response", "it wrote up to max_tokens citing nothing")
            except LLMError as exc:
                llm_error, extractive = str(exc), True
                notes.append(f"The model failed ({exc.reason}); the answer is extracted from the sources without it.")
                text = extractive_answer(query, evidence, header=header)
            else:
                if cited:
                    sources = [s for s in sources if s.n in cited]
                else:
                    notes.append("The model cited none of the sources; all retrieved sources are listed.")
                if cut:
                    notes.append("The model's answer was cut at llm.max_tokens.")
            if extractive and emitted and on_token is not None:
                on_token("\n\n" + "\n".join([*notes, "", text]))  # the stream broke off: the reader gets the rest
        if notes and (extractive or not sources):
            text = "\n".join([*notes, "", text])
        plan.timings["generate"] = time.perf_counter() - begun
        plan.timings["total"] = time.perf_counter() - t0
        return Answer(
            query=query,
            answer=text,
            track=plan.track,
            route=plan.route,
            sources=sources,
            mode="single-shot",
            extractive=extractive,
            supported=supported,
            notes=notes,
            timings=plan.timings,
            models={
                "embedder": self.store.embedder.name,
                "chat_model": model_name(model),
                "router": plan.route.source,
                "retriever": self.settings.retrieval.retriever,
            },
            llm_error=llm_error,
        )

    def run(
        self, query: str, history: Sequence[Answer] | None = None, on_token: Callable[[str], None] | None = None
    ) -> Answer:
        """The chat loop's entry point: `answer` with history and streaming."""
        return self.answer(query, history=history, on_token=on_token)

    def _generate(
        self, query: str, context: str, on_token: Callable[[str], None] | None = None
    ) -> tuple[str, bool]:
        """The model's answer from the context, and whether it was cut at max_tokens; an LLMError when the model
        fails or writes no answer."""
        assert self.chat_model is not None
        messages = [HumanMessage(content=load_prompt("answer").format(context=context, question=query))]
        try:
            if on_token is None:
                reply = self.chat_model.invoke(messages)
                text, metadata = str(reply.text).strip(), reply.response_metadata
            else:
                pieces: list[str] = []
                metadata = {}
                for chunk in self.chat_model.stream(messages):
                    metadata = {**metadata, **chunk.response_metadata}
                    piece = str(chunk.text)
                    if piece:
                        pieces.append(piece)
                        on_token(piece)
                text = "".join(pieces).strip()
        except Exception as exc:  # whatever the endpoint does, the question still gets the extracted answer
            raise as_llm_error(exc, self.chat_model) from exc
        if not _CITATION.sub("", text).strip(" .,;:\n") or looks_like_a_call(text):
            what = "no answer" if not looks_like_a_call(text) else "a tool call instead of an answer"
            raise model_error(self.chat_model, "bad_response", f"it wrote {what}")
        return text, metadata.get("finish_reason") == "length"


def evidence_sources(evidence: list[Evidence]) -> list[Source]:
    """Sources numbered 1.. in evidence order."""
    return [Source.from_evidence(n, ev) for n, ev in enumerate(evidence, start=1)]
