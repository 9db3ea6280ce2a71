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
from ..parser.categories import is_reference_list
from ..parser.models import SectionCategory
from ..prompts import load_prompt
from ..rag.context import Evidence, assemble, format_context
from ..rag.filters import SearchFilter, parse_category, validate_doc_id
from ..rag.mmr import mmr_chunks
from ..rag.query import expand, focus, inflect
from ..rag.retrievers import Retriever, get_retriever
from ..rag.store import PaperRecord, PaperStore, StoredChunk
from .answer import Answer, Source
from .citations import CitationStream, ground, grounding_notes
from .extractive import HEADER, HEADER_WITHOUT_MODEL, extractive_answer
from .llm import as_llm_error, make_chat_model, model_error, model_name, question_scope
from .locate import Location, PaperLocator, content_words
from .question import check_question
from .router import Intent, LLMRouter, Route, RuleRouter, make_router
from .textcalls import looks_like_a_call

Track = Literal["A", "B", "NONE"]
Cat = SectionCategory
# Passages compete on their search score (relative to the best one); the sections a question asks about
# lead, the abstract (a paper's own summary) is preferred, and what describes other papers trails.
# Calibrated on ../shared/devset (README, "Finding the passage").
CATEGORY_BOOST = 0.1
ABSTRACT_BOOST = 0.25
TRAILING = {Cat.OTHER: 0.25, Cat.RELATED_WORK: 0.1}
# A survey ranks papers by their best passage plus this share of their catalogue evidence (title, aliases,
# abstract), and takes one passage per paper unless a paper leads the others by this factor (it then gives more).
DOMINANT = 1.6
PAPER_WEIGHT = 0.25
# Below this share of the question's words in what was found, the papers do not seem to answer it.
WEAK_COVERAGE = 0.35
# Reference lists stay out of the passages unless the question is about citations; fetch this many more
# hits so that dropping them still leaves enough.
REFERENCE_SLACK = 16
_ABOUT_CITATIONS = re.compile(r"\b(cit(e|es|ed|ing|ation|ations)|referenc\w*|bibliograph\w*)\b|引用|参考文献", re.I)
# Follow-ups that point back at the paper of the previous answer.
_ANAPHORA = re.compile(
    r"\b(it|its|this paper|that paper|the paper|this work|the authors|they|their)\b|它|这篇|该论文|作者", re.I
)
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
    track: Track
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
        self._locator: tuple[tuple[str, ...], PaperLocator] | None = None

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

    def locator(self, papers: Sequence[PaperRecord] | None = None) -> PaperLocator:
        """The paper locator for `papers` (read from the store when not given), rebuilt when the catalogue
        changes: its alias patterns cost milliseconds per thousand papers."""
        papers = self.papers() if papers is None else papers
        key = tuple(sorted(f"{p.doc_id}:{p.ingested_at}" for p in papers))
        if self._locator is None or self._locator[0] != key:
            self._locator = (key, PaperLocator(self.store, papers))
        return self._locator[1]

    def router(self, papers: Sequence[PaperRecord] | None = None) -> RuleRouter | LLMRouter:
        """The LLM router when a chat model is configured for routing, else the rule router, for `papers`."""
        locator = self.locator(papers)
        key = (*self._locator[0], str(id(locator))) if self._locator else ()
        if self._router is None or self._router[0] != key:
            use_llm = self.chat_model is not None and self.settings.llm.use_for_routing
            self._router = (key, make_router(locator, self.chat_model if use_llm else None))
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
        check_question(query)
        r = self.settings.retrieval
        k = k or r.k
        started = time.perf_counter()
        catalogue = self.papers()
        asked = expand(query)  # Chinese research vocabulary in English, for BM25 over English papers
        router = self.router(catalogue) if use_model else self.rule_router(catalogue)
        route = router.route(asked)
        location = self.locator(catalogue).locate(asked)
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
        track: Track
        if wanted:
            track, papers = ("A" if len(wanted) == 1 else "B"), wanted
        elif len(route.doc_ids) > 1:
            track, papers = "B", list(route.doc_ids)  # several papers named: compare exactly those
        elif route.doc_ids:
            track, papers = "A", [route.doc_ids[0]]
        elif route.intent == Intent.SPECIFIC_PAPER:
            named = ", ".join(route.not_found) or "the paper the question describes"
            waiting = self._waiting_for_repair(asked)
            if waiting is not None:
                notes.append(
                    f"{waiting.title!r} is in the knowledge base but cannot be searched until it is repaired (an "
                    "interrupted ingest or a damaged store): run `paperscope check --repair`, or ingest its file again."
                )
            else:
                notes.append(f"No paper in the knowledge base matches {named}; the closest passages are shown instead.")
            track, papers = "NONE", []
        else:
            track, papers = "B", []

        identifying = location.identifying_words if track == "A" and papers == location.named[:1] else []
        # Sections given by the caller (--section) are a hard filter; those the question implies only lead.
        hard = SearchFilter(categories=cats) if categories else SearchFilter()
        if track == "A":
            hits = self._search_paper(asked, papers[0], cats, k, identifying, hard)
        else:
            hits = self._survey(asked, papers, location, cats, k, hard)
        if track == "B" and hits and _coverage(asked, hits) < WEAK_COVERAGE:
            notes.append("The papers in the knowledge base do not seem to answer this; the closest passages follow.")
            track = "NONE"
        timings["retrieve"] = time.perf_counter() - started
        found = papers if track == "A" else list(dict.fromkeys(h.doc_id for h in hits))
        return Plan(route, track, found, hits, len(catalogue), notes, timings)

    def _waiting_for_repair(self, query: str) -> PaperRecord | None:
        """The paper a question names among those the knowledge base holds but hides (not ready), if one fits."""
        waiting = [p for p in self.store.list_papers(brief=True) if not p.ready]
        if not waiting:
            return None
        doc_id = PaperLocator(self.store, waiting).locate(query).doc_id
        return next((p for p in waiting if p.doc_id == doc_id), None)

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

    def _candidates(self, query: str, search_filter: SearchFilter, n: int | None = None) -> list[StoredChunk]:
        """Passages for a question, reference lists left out unless it asks about citations: a list of cited
        titles matches every topic and every author's name, and is no paper's own evidence."""
        n = n or self.settings.retrieval.candidates
        if _ABOUT_CITATIONS.search(query):
            return self.retriever(self.store, query, search_filter, n)
        hits = self.retriever(self.store, query, search_filter, n + REFERENCE_SLACK)
        return [h for h in hits if not is_reference_list(h.section_title)][:n]

    def _search_paper(
        self,
        query: str,
        doc_id: str,
        cats: list[SectionCategory],
        k: int,
        identifying: Sequence[str] = (),
        scope: SearchFilter | None = None,
    ) -> list[StoredChunk]:
        """Track A: the best passages of one paper. Every section competes; the asked-for ones lead."""
        text = inflect(focus(query, list(identifying)))
        within = SearchFilter(**{**(scope or SearchFilter()).model_dump(), "doc_ids": [doc_id]})
        hits = self._candidates(text, within)
        if not hits and text != query:
            hits = self._candidates(query, within)
        return self._prefer(hits, cats, k)

    def _prefer(self, hits: list[StoredChunk], cats: list[SectionCategory], k: int) -> list[StoredChunk]:
        """Rank hits by relative score plus section preference; neighbours of a picked hit (its context
        window already shows them) give way to passages from elsewhere."""
        if not hits:
            return []
        top = max(h.score or 0.0 for h in hits) or 1.0

        def value(h: StoredChunk) -> float:
            cat = h.section_category
            bonus = CATEGORY_BOOST if cat in cats else -TRAILING.get(cat, 0.0)
            return (h.score or 0.0) / top + bonus + (ABSTRACT_BOOST if cat is Cat.ABSTRACT else 0.0)

        r = self.settings.retrieval
        ranked = sorted(hits, key=value, reverse=True)
        if r.mmr_lambda < 1.0:
            # MMR over the ranking value: near-duplicates of a picked passage give way.
            relevance = [value(h) for h in ranked]
            ranked = mmr_chunks(self.store.embedder, "", ranked, len(ranked), r.mmr_lambda, relevance=relevance)
        picked: list[StoredChunk] = []
        for h in ranked:
            if all(h.doc_id != p.doc_id or abs(h.chunk_index - p.chunk_index) > r.window for p in picked):
                picked.append(h)
            if len(picked) == k:
                break
        return picked

    def _survey(
        self,
        query: str,
        doc_ids: list[str],
        location: Location,
        cats: list[SectionCategory],
        k: int,
        scope: SearchFilter | None = None,
    ) -> list[StoredChunk]:
        """Track B: the papers that answer best (catalogue evidence and their passages), a passage each; a
        paper that clearly leads the others gives more."""
        r = self.settings.retrieval
        text = survey_focus(query)
        within = SearchFilter(**{**(scope or SearchFilter()).model_dump(), "doc_ids": doc_ids or None})
        hits = self._candidates(text, within, max(r.candidates, 3 * r.survey_papers * 4))
        if not hits:
            return []
        top = max(h.score or 0.0 for h in hits) or 1.0
        passage: dict[str, float] = {}
        for h in hits:
            passage[h.doc_id] = max(passage.get(h.doc_id, 0.0), (h.score or 0.0) / top)
        paper = {c.doc_id: c.score for c in location.candidates}
        best_paper = max(paper.values(), default=0.0) or 1.0
        rank = {d: passage.get(d, 0.0) + PAPER_WEIGHT * paper.get(d, 0.0) / best_paper for d in passage}
        order = sorted(rank, key=lambda d: -rank[d])[: max(r.survey_papers, k)]
        quota = {d: r.per_paper if doc_ids else 1 for d in order}
        if len(order) > 1 and rank[order[0]] >= DOMINANT * rank[order[1]]:
            quota[order[0]] = max(quota[order[0]], 3)  # one paper dominates: do not starve it
        by_paper: dict[str, list[StoredChunk]] = {}
        for h in hits:
            by_paper.setdefault(h.doc_id, []).append(h)
        picked: list[StoredChunk] = []
        for d in order:
            picked += self._prefer(by_paper[d], cats, quota[d])[: quota[d]]
        # Leftover slots (fewer papers than k): the next best passages of the leading papers.
        for d in order:
            if len(picked) >= k:
                break
            rest = [h for h in self._prefer(by_paper[d], cats, k) if h not in picked]
            picked += rest[: k - len(picked)]
        return picked[:k]

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
        # Not in the knowledge base: the closest passages are listed, but they do not support an answer.
        supported = bool(sources) and plan.track != "NONE"
        notes = list(plan.notes)
        llm_error: str | None = None
        header = HEADER if self.chat_model is None else HEADER_WITHOUT_MODEL
        if not plan.n_papers:
            text, supported = self._nothing_ready(), False
        elif not sources:
            text = "No passage in the knowledge base answers this question."
        elif model is None:
            text = extractive_answer(query, evidence, header=header)
        else:
            emitted: list[str] = []
            resolve = source_resolver(sources)
            stream = CitationStream(resolve, on_token) if on_token is not None else None

            def emit(piece: str) -> None:
                emitted.append(piece)
                if stream is not None:
                    stream.feed(piece)

            try:
                raw, cut = self._generate(query, context_text, emit if on_token is not None else None)
                grounded = ground(raw, resolve)
                if cut and not grounded.supported:
                    # A reply that ran to max_tokens citing nothing is a model rambling, not an answer.
                    raise model_error(model, "bad_response", "it wrote up to max_tokens citing nothing")
            except LLMError as exc:
                llm_error, extractive = str(exc), True
                notes.append(f"The model failed ({exc.reason}); the answer is extracted from the sources without it.")
                text = extractive_answer(query, evidence, header=header)
            else:
                if stream is not None:
                    stream.close()
                text = grounded.text
                notes += grounding_notes(grounded)
                if grounded.supported:
                    by_n = {str(s.n): s for s in sources}
                    sources = [by_n[key].model_copy(update={"n": n}) for n, key in enumerate(grounded.order, 1)]
                else:
                    # The sources below are what the model was given; none of them backs what it wrote.
                    supported = False
                    text = f"{text}\n\n({grounding_notes(grounded)[-1]})"
                    if on_token is not None:
                        on_token(f"\n\n({grounding_notes(grounded)[-1]})")
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

    def _nothing_ready(self) -> str:
        """Why no paper could be searched: an empty knowledge base, or papers that wait for repair."""
        waiting = [p for p in self.store.list_papers(brief=True) if not p.ready]
        if not waiting:
            return "The knowledge base is empty: add papers with `paperscope ingest PATH`."
        names = "; ".join(repr(p.title) for p in waiting[:3]) + (" ..." if len(waiting) > 3 else "")
        return (
            f"No paper can be searched yet: {len(waiting)} paper(s) of the knowledge base wait for repair "
            f"after an interrupted ingest or a damaged store ({names}). Run `paperscope check --repair`, "
            "or ingest their files again."
        )

    def run(
        self, query: str, history: Sequence[Answer] | None = None, on_token: Callable[[str], None] | None = None
    ) -> Answer:
        """The chat loop's entry point: `answer` with history and streaming."""
        return self.answer(query, history=history, on_token=on_token)

    def _generate(self, query: str, context: str, on_token: Callable[[str], None] | None = None) -> tuple[str, bool]:
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
        if not ground(text, lambda ref: None).text.strip(" .,;:\n") or looks_like_a_call(text):
            what = "no answer" if not looks_like_a_call(text) else "a tool call instead of an answer"
            raise model_error(self.chat_model, "bad_response", f"it wrote {what}")
        return text, metadata.get("finish_reason") == "length"


def _coverage(query: str, hits: Sequence[StoredChunk]) -> float:
    """Share of the question's meaningful words that the passages found contain."""
    wanted = [w for w in dict.fromkeys(content_words(survey_focus(query))) if len(w) >= 4]
    if not wanted:
        return 1.0
    found = " ".join(h.text.lower() for h in hits)
    return sum(1 for w in wanted if w in found) / len(wanted)


def source_resolver(sources: Sequence[Source]) -> Callable[[str], str | None]:
    """What a reference in a single-shot answer points at: a source's number ("3"), or a citation id
    (`<doc_id>:<chunk_index>`) inside a source's chunk range; the key is the source's number, as text."""
    numbers = {str(s.n) for s in sources}
    chunks = {
        f"{s.doc_id}:{i}": str(s.n) for s in reversed(sources) for i in range(s.chunk_range[0], s.chunk_range[1] + 1)
    }

    def resolve(ref: str) -> str | None:
        if ref.isdigit():
            return str(int(ref)) if str(int(ref)) in numbers else None
        doc_id, _, index = ref.rpartition(":")
        return chunks.get(f"{doc_id}:{int(index)}") if index.isdigit() else None

    return resolve


def evidence_sources(evidence: list[Evidence]) -> list[Source]:
    """Sources numbered 1.. in evidence order."""
    return [Source.from_evidence(n, ev) for n, ev in enumerate(evidence, start=1)]
