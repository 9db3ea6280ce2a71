"""The retrieval engine: a question and options in, ranked evidence with citations out.

One door for every driver: the agent's tools (`find_papers`, `search`, `window`, `introduction`), the single-shot
answer (a fixed plan over the same calls), `paperscope retrieve` and the HTTP service (`retrieve`). A question
takes one of three tracks (DESIGN.md):
- A, one paper: the paper is located (locate.py, route.py), then every passage of it competes (`search`);
- B, the field: papers ranked by their best passages plus their catalogue evidence, a passage each (`survey`);
- NONE: the question names a paper the knowledge base lacks, or no paper covers it; the closest passages are
  still returned, as such.
Every step is a registered operator (registry.py): the retriever, the query transforms, the postprocessors
(ranking.py), the context windows (context.py); each run is reported in `Retrieval.operators`.

This file routes and puts the steps together; what it puts together lives beside it: the papers and their
locator (known_papers.py), the passages of a search and their ranking (passages.py), the context (context.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import ConfigError
from ..parser.models import SectionCategory
from .context import Evidence, assemble, format_context, introduction
from .coverage import check_coverage
from .cues import points_back, section_cues
from .filters import SearchFilter, validate_doc_id
from .generate import Generator
from .known_papers import KnownPapers
from .locate import PaperLocator
from .passages import Passages
from .query import expand, focus, has_chinese, translate
from .question import check_question
from .registry import RunLog, register
from .rerank import Reranker, parse_rerank_spec
from .retrieval import Models, Retrieval, Track, track_of
from .retrievers import Retriever, embeds_queries, fuse, make_retriever, to_chunks
from .route import Intent, Route, RuleRouter
from .store import PaperRecord, PaperStore, StoredChunk
from .transforms import Generated, TransformContext, papers_language

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

register(
    "transform",
    "glossary",
    by_name=False,  # always on where it applies, never chosen
    summary="Chinese research vocabulary in English, for BM25 over English papers "
    "(no model; always on for questions in Chinese).",
)(expand)
register(
    "transform",
    "focus",
    by_name=False,  # always on where it applies, never chosen
    summary="Once a paper is located, the words that named it count once, the rest "
    "twice, plus their other forms ('trained' -> 'train training'; no model; always on in Track A).",
)(focus)
register(
    "postprocessor",
    "window",
    summary="Each hit grows to its neighbouring chunks within a token budget; "
    "touching windows merge; the paper's Introduction joins the context.",
)(assemble)


class Engine:
    """Retrieval over one knowledge base (see the module docstring)."""

    def __init__(
        self, store: PaperStore, settings: Settings | None = None, chat_model: BaseChatModel | None = None
    ) -> None:
        """`chat_model`: for operators that need one (the `llm` reranker, the query transforms); the engine never
        writes answers. Query transforms configured without a chat model are a ConfigError here, before any search."""
        self.store = store
        self.settings = settings or store.settings
        r = self.settings.retrieval
        if r.transforms and chat_model is None:
            raise ConfigError(
                f"query transform {', '.join(r.transforms)} needs a chat model: set PAPERSCOPE_LLM_MODEL (and "
                "OPENAI_BASE_URL), or leave retrieval.transforms empty"
            )
        self.chat_model = chat_model
        self.retriever: Retriever = make_retriever(r.retriever, r)
        self.hyde_retriever: Retriever = make_retriever(r.hyde_retriever, r)
        self._generator: Generator | None = None
        self.reranker: Reranker | None = None
        if r.rerank:
            self.reranker = parse_rerank_spec(r.rerank, chat_model, timeout=self.settings.llm.timeout)
        self.known = KnownPapers(store, dense=self.embeds_questions)
        self.passages = Passages(store, self.settings, self.known, self.retriever, self.hyde_retriever, self.reranker)

    @property
    def embeds_questions(self) -> bool:
        """True when the paper locator embeds questions: `retrieval.locate_dense` (a question that describes its
        paper without naming it is found by meaning), or anyway when the retriever embeds them (dense, hybrid)."""
        return self.settings.retrieval.locate_dense or embeds_queries(self.retriever)

    def papers(self) -> list[PaperRecord]:
        """Ready papers of the knowledge base (the store's cached catalogue, read again only when it changed)."""
        return self.known.ready()

    def locator(self, papers: Sequence[PaperRecord] | None = None) -> PaperLocator:
        """The paper locator for `papers` (default: the ready catalogue), rebuilt only when the catalogue changes."""
        return self.known.locator(papers)

    def models(self) -> Models:
        """The embedding model and retriever behind every response (the caller adds its chat model)."""
        provider, _, model = self.store.embedder.name.partition(":")
        models = Models(embedding_provider=provider, embedding_model=model or provider, retriever=self.retriever.name)
        if self.reranker is not None:
            models.rerank_provider, models.rerank_model = self.reranker.provider, self.reranker.model
        return models

    def generator(self) -> Generator | None:
        """Cached, concurrent calls of the chat model for the transforms (None without a model)."""
        if self.chat_model is None:
            return None
        if self._generator is None or self._generator.model is not self.chat_model:
            cache = self.settings.home / "cache" / "generations.sqlite"
            self._generator = Generator(self.chat_model, cache, max_tokens=self.settings.retrieval.transform_max_tokens)
        return self._generator

    def transform(
        self, query: str, log: RunLog | None = None, *, self_query: bool = True, catalogue: Sequence[PaperRecord] = ()
    ) -> Generated:
        """Run the configured query transforms (retrieval.transforms) on a question, concurrently; what they
        generated, or nothing when none is configured. `self_query=False` for the agent's tools, whose own
        arguments are the filters."""
        names = [n for n in self.settings.retrieval.transforms if self_query or n != "self-query"]
        generator = self.generator() if names else None
        if generator is None:
            return Generated([], None)
        papers = list(catalogue) or self.papers()
        language, script = papers_language(papers)
        ctx = TransformContext(
            generator, self.settings.retrieval, language, script, papers, self.locator(papers) if self_query else None
        )
        return Generated(names, ctx).run(query, log if log is not None else RunLog())

    # --- the whole plan: route, then one paper or the field -----------------------------------------------

    def retrieve(
        self,
        query: str,
        scope: SearchFilter | None = None,
        k: int | None = None,
        *,
        route: Route | None = None,
        previous: tuple[str, str] | None = None,
        transforms: bool = True,
    ) -> Retrieval:
        """Route the question and retrieve its evidence (best first, at most k).

        `scope`: papers, section categories and years the caller fixes (hard limits: one paper is Track A, several
        are compared as Track B). `route`: a route decided elsewhere (the LLM router), else the rules route.
        `previous`: (doc_id, title) of the conversation's last one-paper answer, for a follow-up that names none.
        `transforms=False` leaves out the model's query transforms (an answer written without the model).
        """
        check_question(query)
        with self.store.pinned():
            return self._retrieve(query, scope or SearchFilter(), k, route, previous, transforms)

    def _retrieve(
        self,
        query: str,
        scope: SearchFilter,
        k: int | None,
        route: Route | None,
        previous: tuple[str, str] | None,
        transforms: bool,
    ) -> Retrieval:
        k = k or self.settings.retrieval.k
        log = RunLog()
        catalogue = self.known.catalogue()
        with log.run("transform", "glossary"):
            asked = expand(query)  # Chinese research vocabulary in English, for BM25 over English papers
        locator = self.known.locator()  # the pinned catalogue's
        with log.run("router", "rules" if route is None else route.source) as info:
            # One location serves the route, the words that named the paper and the survey's paper ranking.
            location = locator.locate(asked)
            route = route or RuleRouter(locator).route_located(asked, location)
            info["intent"] = route.intent.value
        generated = self.transform(query, log, catalogue=catalogue.ready) if transforms else Generated([], None)
        wanted = list(scope.doc_ids or [])
        cats = list(scope.categories or [])
        if cats:
            route = route.model_copy(update={"target_section_category": [c.name for c in cats]})
        notes: list[str] = list(generated.notes)
        searched, scope = translate(query), self._self_query(generated, scope)
        if (sq := generated.self_query) is not None:
            searched = expand(sq.query)
            if sq.doc_ids and not wanted and not route.doc_ids:
                wanted = list(sq.doc_ids)
        if not wanted and not route.doc_ids and previous is not None and points_back(query):
            wanted = [previous[0]]
            notes.append(f"Follow-up: staying on {previous[1]!r}.")
        track: Track
        if wanted:
            track, papers = track_of(wanted), wanted
        elif len(route.doc_ids) > 1:
            track, papers = "B", list(route.doc_ids)  # several papers named: compare exactly those
        elif route.doc_ids:
            track, papers = "A", [route.doc_ids[0]]
        elif route.intent == Intent.SPECIFIC_PAPER:
            track, papers = "NONE", []
            waiting = self.known.waiting_for_repair(asked)
            if waiting is not None:
                notes.append(
                    f"{waiting.title!r} is in the knowledge base but cannot be searched until it is repaired (an "
                    "interrupted ingest or a damaged store): run `paperscope check --repair`, or ingest its file again."
                )
            else:
                named = ", ".join(route.not_found) or "the paper the question describes"
                notes.append(f"No paper in the knowledge base matches {named}; the closest passages are shown instead.")
        else:
            track, papers = "B", []

        prefer = route.categories
        if generated.self_query is not None:
            prefer = list(dict.fromkeys([*prefer, *generated.self_query.sections]))
        hard = scope.model_copy(update={"doc_ids": None})  # papers are the track's; sections and years stay
        if track == "A":
            identifying = location.identifying_words if papers == location.named[:1] else []
            chunks = self.passages.within(searched, papers, prefer, k, identifying, hard, log, generated)
        else:
            chunks = self.passages.survey(searched, papers, location, prefer, k, hard, log, generated)
        if track == "B" and chunks:
            # A question in Chinese the model rewrote in English is checked in the model's words.
            checked = generated.queries[0] if generated.queries and has_chinese(query) else query
            with log.run("postprocessor", "coverage") as info:
                naming = [m for c in location.candidates if c.doc_id in route.doc_ids for m in c.matched]
                covered = check_coverage(
                    checked, expand(checked) if checked != query else asked, chunks, self._contains, naming
                )
                info.update(absent=covered.absent, share=round(covered.share, 2), unread=covered.unread)
            if not covered.covered:
                notes.append(covered.note())
                track = "NONE"
        found = papers if track == "A" else list(dict.fromkeys(h.doc_id for h in chunks))
        return Retrieval(
            query=query,
            chunks=chunks,
            track=track,
            route=route,
            doc_ids=found,
            notes=notes,
            n_papers=len(catalogue.ready),
            models=self.models(),
            operators=log.runs,
            generated=generated.fields(),
        )

    def _self_query(self, generated: Generated, scope: SearchFilter) -> SearchFilter:
        """The caller's scope with the years self-query found (the caller's own years win)."""
        sq = generated.self_query
        if sq is None or sq.years == (None, None):
            return scope
        return scope.model_copy(
            update={
                "year_min": scope.year_min if scope.year_min is not None else sq.years[0],
                "year_max": scope.year_max if scope.year_max is not None else sq.years[1],
            }
        )

    # --- the building blocks the agent's tools call -------------------------------------------------------------

    def search(
        self,
        query: str,
        scope: SearchFilter | None = None,
        k: int | None = None,
        *,
        generated: Generated | None = None,
    ) -> Retrieval:
        """The best passages of the papers in scope (all papers when none): every section competes, those the
        question asks about lead (`search_by_section`; `retrieve --paper ID` gives the same citations).
        `generated`: transforms already run on the query (else the configured ones run, self-query aside)."""
        check_question(query)
        scope = scope or SearchFilter()
        k = k or self.settings.retrieval.k
        log = RunLog()
        if generated is None:
            generated = self.transform(query, log, self_query=False)
        asked = expand(query)
        wanted = list(scope.doc_ids or [])
        identifying: list[str] = []
        if len(wanted) == 1:
            location = self.locator().locate(asked)
            identifying = location.identifying_words if wanted == location.named[:1] else []
        cats = list(scope.categories or [])
        prefer = cats or [SectionCategory[c] for c in section_cues(asked)]
        hard = scope.model_copy(update={"doc_ids": None})
        chunks = self.passages.within(translate(query), wanted, prefer, k, identifying, hard, log, generated)
        track: Track = track_of(wanted)
        doc_ids = list(dict.fromkeys(h.doc_id for h in chunks))
        return Retrieval(
            query=query,
            chunks=chunks,
            track=track,
            doc_ids=doc_ids,
            notes=list(generated.notes),
            models=self.models(),
            operators=log.runs,
            generated=generated.fields(),
        )

    def find_papers(
        self, query: str, k: int = 5, *, generated: Generated | None = None
    ) -> list[tuple[StoredChunk, float]]:
        """The papers a topic or a name points at (`search_abstracts`): each paper's abstract chunk and its score.

        The catalogue's view first (a paper named by its title, short name, acronym or authors leads); papers only
        the abstract search found follow, their scores kept below the located ones. `generated`: query transforms
        run on the query; their queries' abstract rankings are fused with the query's.
        """
        asked = expand(query)
        # Papers enriched with `summaries` are found by their summaries too (each stands for the abstract).
        kinds = ["chunk", "summary"] if any("summaries" in p.enrichments for p in self.papers()) else ["chunk"]
        abstracts = SearchFilter(categories=[SectionCategory.ABSTRACT], kinds=kinds)
        hits = to_chunks(self.retriever.search(self.store, asked, abstracts, k * 3))
        if generated is not None and (generated.queries or generated.hyde):
            rankings = [(hits, 1.0)]
            for q in generated.queries:
                rankings.append((to_chunks(self.retriever.search(self.store, expand(q), abstracts, k * 3)), 1.0))
            for p in generated.hyde:
                rankings.append((to_chunks(self.hyde_retriever.search(self.store, p, abstracts, k * 3)), 1.0))
            hits = fuse(rankings, k * 3, self.settings.retrieval.rrf_k)
        best: dict[str, StoredChunk] = {}
        for h in hits:
            best.setdefault(h.doc_id, h)
        top = max((h.score or 0.0 for h in hits), default=0.0) or 1.0
        score = {d: (h.score or 0.0) / top for d, h in best.items()}
        located = {c.doc_id: c.score for c in self.locator().locate(asked, k=k).candidates if c.score > 0}
        floor = min(located.values(), default=1.0)
        score = {**{d: 0.99 * floor * v for d, v in score.items()}, **located}
        order = sorted(score, key=lambda d: -score[d])
        return [(c, score[d]) for d in order[:k] if (c := best.get(d) or self._abstract(d)) is not None]

    def window(self, doc_id: str, chunk_index: int, window: int = 1) -> list[StoredChunk]:
        """Chunks chunk_index-window .. chunk_index+window of a paper, in order (`get_context_window`)."""
        return self.store.get_context_window(validate_doc_id(doc_id), chunk_index, window)

    def summary(self, doc_id: str) -> str:
        """The paper's summary written by the chat model at ingest (`--enrich summaries`), or "" when it has none."""
        paper = self.store.get_paper(validate_doc_id(doc_id))
        return paper.summary if paper is not None and paper.ready else ""

    def introduction(self, doc_id: str, max_tokens: int | None = None) -> list[StoredChunk]:
        """The paper's Introduction, first ~500 tokens (else its Abstract) (`get_paper_introduction`)."""
        tokens = max_tokens or max(1, self.settings.retrieval.intro_tokens)
        return introduction(self.store, validate_doc_id(doc_id), tokens)

    def context(
        self, retrieval: Retrieval, *, introductions: bool = True, abstract: bool = False
    ) -> tuple[str, list[Evidence]]:
        """The evidence of a retrieval as an answer reads it: windows, Introductions, numbered [1], [2], ...;
        the window operator joins the retrieval's `operators`. `introductions=False` leaves the papers'
        Introductions out of the text (an extracted answer quotes the evidence only); `abstract=True` adds the
        first paper's Abstract as its last evidence when no evidence holds it (`assemble`)."""
        r = self.settings.retrieval
        log = RunLog()
        with log.run("postprocessor", "window", window=r.window, token_budget=r.token_budget) as info:
            papers = assemble(
                self.store,
                retrieval.chunks,
                window=r.window,
                token_budget=r.token_budget,
                intro_tokens=r.intro_tokens,
                with_introduction=introductions and r.intro_tokens > 0,
                with_abstract=abstract,
                query=translate(retrieval.query),
            )
            text, evidence = format_context(papers)
            info["evidence"] = len(evidence)
        retrieval.operators.extend(log.runs)
        return text, evidence

    # --- policies ------------------------------------------------------------------------------------------

    def _contains(self, words: list[list[str]]) -> list[bool]:
        """For each word (its forms), whether some chunk of the knowledge base holds one of them (one search)."""
        return self.store.bm25_matches([" ".join(forms) for forms in words])

    def _abstract(self, doc_id: str) -> StoredChunk | None:
        """The first abstract chunk of a paper (its first chunk when it has no abstract)."""
        found = self.store.get_section(doc_id, SectionCategory.ABSTRACT, max_tokens=1)
        found = found or self.store.get_context_window(doc_id, 0, 0)
        return found[0] if found else None
