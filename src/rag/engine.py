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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import ConfigError
from ..parser.models import SectionCategory
from .context import Evidence, assemble, format_context, introduction
from .coverage import WEAK_COVERAGE, check_coverage, word_share
from .cues import points_back, section_cues, survey_focus
from .filters import SearchFilter, validate_doc_id
from .generate import Generator
from .locate import Location, PaperLocator
from .query import expand, focus, has_chinese, inflect, translate
from .question import check_question
from .ranking import REFERENCE_SLACK, diversify, drop_references, section_values, spread, survey_quota
from .registry import RunLog, register
from .rerank import Reranker, parse_rerank_spec, rerank
from .retrieval import Models, Retrieval, Track, track_of
from .retrievers import Retriever, embeds_queries, fuse, make_retriever, to_chunks
from .route import Intent, Route, RuleRouter
from .store import Catalogue, PaperRecord, PaperStore, StoredChunk
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
    "fuse",
    summary="Rankings of the question and of its transforms' queries fused by "
    "reciprocal rank (retrieval.rrf_k); runs only when a query transform is on.",
)(fuse)
register(
    "postprocessor",
    "window",
    summary="Each hit grows to its neighbouring chunks within a token budget; "
    "touching windows merge; the paper's Introduction joins the context.",
)(assemble)


#: The postprocessors in the order they run on a question's candidates (each registered under its name). The
#: reranker scores the whole fused pool once, and its order is final: `survey` shares the slots among papers by
#: its scores, `sections` and `mmr` (which would reorder it) run only without a reranker, `spread` only drops
#: the neighbours of a pick; `coverage` and `window` work on the k passages kept.
POSTPROCESSORS = ("references", "fuse", "rerank", "survey", "sections", "mmr", "spread", "coverage", "window")


# The catalogue one `retrieve` call reads, pinned for the rest of it: each read checks the catalogue's version in
# the store (two round trips), and a question asked for it three times. Per context, so threads never share it.
_PINNED: ContextVar[tuple[PaperStore, Catalogue] | None] = ContextVar("paperscope_catalogue", default=None)


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
        self._locator: tuple[tuple[str, ...], PaperLocator] | None = None
        self._located: tuple[Catalogue, PaperLocator] | None = None  # the catalogue's own locator

    # --- the catalogue ---------------------------------------------------------------------------------------

    def catalogue(self) -> Catalogue:
        """The store's catalogue (cached, read again only when it changed); within `retrieve`, the one it read."""
        pinned = _PINNED.get()
        return pinned[1] if pinned is not None and pinned[0] is self.store else self.store.catalogue()

    def papers(self) -> list[PaperRecord]:
        """Ready papers of the knowledge base (the store's cached catalogue, read again only when it changed)."""
        return list(self.catalogue().ready)

    def locator(self, papers: Sequence[PaperRecord] | None = None) -> PaperLocator:
        """The paper locator for `papers` (default: the ready catalogue), rebuilt only when the catalogue changes."""
        if papers is None:
            return self._catalogue_locator(self.catalogue())
        key = tuple(sorted(f"{p.doc_id}:{p.ingested_at}" for p in papers))
        if self._locator is None or self._locator[0] != key:
            self._locator = (key, PaperLocator(self.store, papers, dense=self.embeds_questions))
        return self._locator[1]

    @property
    def embeds_questions(self) -> bool:
        """True when the paper locator embeds questions: `retrieval.locate_dense` (a question that describes its
        paper without naming it is found by meaning), or anyway when the retriever embeds them (dense, hybrid)."""
        return self.settings.retrieval.locate_dense or embeds_queries(self.retriever)

    def _catalogue_locator(self, catalogue: Catalogue) -> PaperLocator:
        """The locator over the ready papers of `catalogue`, built once per catalogue version."""
        if self._located is None or self._located[0] is not catalogue:
            self._located = (catalogue, PaperLocator(self.store, catalogue.ready, dense=self.embeds_questions))
        return self._located[1]

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

    def waiting_for_repair(self, query: str) -> PaperRecord | None:
        """The paper a question names among those the knowledge base holds but hides (not ready), if one fits."""
        waiting = self.catalogue().waiting
        if not waiting:
            return None
        doc_id = PaperLocator(self.store, waiting, dense=self.embeds_questions).locate(query).doc_id
        return next((p for p in waiting if p.doc_id == doc_id), None)

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
        token = _PINNED.set((self.store, self.store.catalogue()))
        try:
            return self._retrieve(query, scope or SearchFilter(), k, route, previous, transforms)
        finally:
            _PINNED.reset(token)

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
        catalogue = self.catalogue()
        with log.run("transform", "glossary"):
            asked = expand(query)  # Chinese research vocabulary in English, for BM25 over English papers
        locator = self._catalogue_locator(catalogue)
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
            waiting = self.waiting_for_repair(asked)
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
            chunks = self._passages(searched, papers, prefer, k, identifying, hard, log, generated)
        else:
            chunks = self._survey(searched, papers, location, prefer, k, hard, log, generated)
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
        chunks = self._passages(translate(query), wanted, prefer, k, identifying, hard, log, generated)
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

    def context(self, retrieval: Retrieval) -> tuple[str, list[Evidence]]:
        """The evidence of a retrieval as an answer reads it: windows, Introductions, numbered [1], [2], ...;
        the window operator joins the retrieval's `operators`."""
        r = self.settings.retrieval
        log = RunLog()
        with log.run("postprocessor", "window", window=r.window, token_budget=r.token_budget) as info:
            papers = assemble(
                self.store,
                retrieval.chunks,
                window=r.window,
                token_budget=r.token_budget,
                intro_tokens=r.intro_tokens,
                with_introduction=r.intro_tokens > 0,
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

    def _candidates(self, query: str, search_filter: SearchFilter, n: int, log: RunLog) -> list[StoredChunk]:
        """The retriever's hits for a query, reference lists left out unless it asks about citations.

        Where papers were enriched (`ingest --enrich`), the rows that stand for a chunk are searched with the
        chunks and hits on them become that chunk (best score kept): questions always, section and paper
        summaries when the search spans papers (they locate papers more than passages).
        """
        derived = self._derived_kinds(search_filter)
        if derived:
            search_filter = search_filter.model_copy(update={"kinds": [*search_filter.kinds, *derived]})
        with log.run("retriever", self.retriever.name) as info:
            # Several rows can stand for one chunk: ask for more, so that enough distinct chunks remain.
            depth = n + REFERENCE_SLACK
            hits = self.retriever.search(self.store, query, search_filter, depth * (3 if derived else 1))
            info["hits"] = len(hits)
            if derived:
                hits = to_chunks(hits)[:depth]
                info["kinds"] = search_filter.kinds
        with log.run("postprocessor", "references") as info:
            kept = drop_references(query, hits, n)
            info["kept"] = len(kept)
        return kept

    def _derived_kinds(self, search_filter: SearchFilter) -> list[str]:
        """Kinds of enrichment rows to search with the chunks: those the papers have (catalogue), for a search of
        body chunks; summaries only when the search is not inside one paper."""
        if search_filter.kinds != ["chunk"]:
            return []
        made = {e for p in self.papers() for e in p.enrichments}
        kinds = ["question"] if "questions" in made else []
        if "summaries" in made and (search_filter.doc_ids is None or len(search_filter.doc_ids) > 1):
            kinds.append("summary")
        return kinds

    def _reranked(self, query: str, hits: list[StoredChunk], log: RunLog) -> list[StoredChunk]:
        """The candidates in the reranker's order (unchanged without one): scored once, with the question as asked
        (not the forms prepared for BM25), after every ranking was fused."""
        if self.reranker is None or not hits:
            return hits
        with log.run("postprocessor", "rerank", reranker=self.reranker.name) as info:
            hits = self._rerank(query, hits)
            if self.reranker.notes:
                info["notes"] = list(self.reranker.notes)
        return hits

    def _rerank(self, query: str, hits: list[StoredChunk]) -> list[StoredChunk]:
        """Hits in the reranker's order, its scores (scaled 0-1 within the candidates) as their scores; with
        `rerank_windows`, each candidate is judged with its neighbouring chunks as one text."""
        assert self.reranker is not None
        texts = {h.id: h.text for h in hits}
        if self.settings.retrieval.rerank_windows:
            texts = self._window_texts(hits)
        ranked = rerank(self.reranker, query, hits, lambda h: texts[h.id])
        scores = [s for _, s in ranked]
        low, high = min(scores), max(scores)
        span = (high - low) or 1.0
        return [h.model_copy(update={"score": (s - low) / span + 1e-6}) for h, s in ranked]

    def _window_texts(self, hits: Sequence[StoredChunk]) -> dict[int, str]:
        """Each hit's text with its neighbours (retrieval.window on each side): one read per paper."""
        w = self.settings.retrieval.window
        by_paper: dict[str, list[StoredChunk]] = {}
        for h in hits:
            by_paper.setdefault(h.doc_id, []).append(h)
        out: dict[int, str] = {}
        for doc_id, own in by_paper.items():
            wanted = {i for h in own for i in range(h.chunk_index - w, h.chunk_index + w + 1) if i >= 0}
            body = {c.chunk_index: c.text for c in self.store.get_body_chunks(doc_id, sorted(wanted))}
            for h in own:
                parts = [body[i] for i in range(h.chunk_index - w, h.chunk_index + w + 1) if i in body]
                out[h.id] = " ".join(parts) if parts else h.text
        return out

    def _passages(
        self,
        query: str,
        doc_ids: Sequence[str],
        prefer: Sequence[SectionCategory],
        k: int,
        identifying: Sequence[str],
        scope: SearchFilter,
        log: RunLog,
        generated: Generated | None = None,
    ) -> list[StoredChunk]:
        """Track A (and the agent's passage search): every section of the papers in scope competes."""

        def prepare(q: str) -> str:
            return inflect(focus(q, list(identifying)))

        with log.run("transform", "focus", identifying=list(identifying)):
            text = prepare(query)
        within = SearchFilter(**{**scope.model_dump(), "doc_ids": list(doc_ids) or None})
        n = self.settings.retrieval.candidates
        hits = self._fused(text, within, n, log, generated, prepare)
        if not hits and text != query:
            hits = self._candidates(query, within, n, log)
        return self._rank(self._reranked(query, hits, log), prefer, k, log)

    def _fused(
        self,
        text: str,
        within: SearchFilter,
        n: int,
        log: RunLog,
        generated: Generated | None,
        prepare: Callable[[str], str],
    ) -> list[StoredChunk]:
        """The candidates for the question's text, fused (RRF) with those of the transforms' queries (prepared as
        the text was) and HyDE passages; a "weak" HyDE is written only when the text's own search was weak."""
        hits = self._candidates(text, within, n, log)
        if generated is None or not generated.active:
            return hits
        rankings = [(hits, 1.0)]
        rankings += [(self._candidates(prepare(expand(q)), within, n, log), 1.0) for q in generated.queries]
        weak = not hits or word_share(text, hits[: self.settings.retrieval.k]) < WEAK_COVERAGE
        for passage in generated.hyde_passages(weak=weak):
            with log.run("retriever", f"hyde:{self.hyde_retriever.name}") as info:
                found = self.hyde_retriever.search(self.store, passage, within, n + REFERENCE_SLACK)
                rankings.append((drop_references(text, found, n), 1.0))
                info["hits"] = len(rankings[-1][0])
        if len(rankings) == 1:
            return hits
        with log.run("postprocessor", "fuse", rankings=len(rankings)) as info:
            fused = fuse(rankings, n, self.settings.retrieval.rrf_k)
            info["kept"] = len(fused)
        return fused

    def _rank(
        self, hits: list[StoredChunk], prefer: Sequence[SectionCategory], k: int, log: RunLog
    ) -> list[StoredChunk]:
        """Section preference, MMR, then neighbours of a pick give way; the best k. After a reranker its order is
        final (POSTPROCESSORS): section preference and MMR would reorder it, so they do not run."""
        if not hits:
            return []
        r = self.settings.retrieval
        ranked = hits
        if self.reranker is None:
            with log.run("postprocessor", "sections", prefer=[c.name for c in prefer]):
                values = section_values(hits, prefer)
            with log.run("postprocessor", "mmr", mmr_lambda=r.mmr_lambda):
                ranked = diversify(self.store.embedder, hits, values, r.mmr_lambda)
        with log.run("postprocessor", "spread", window=r.window):
            return spread(ranked, k, r.window)

    def _survey(
        self,
        query: str,
        doc_ids: list[str],
        location: Location,
        prefer: Sequence[SectionCategory],
        k: int,
        scope: SearchFilter,
        log: RunLog,
        generated: Generated | None = None,
    ) -> list[StoredChunk]:
        """Track B: the papers that answer best (catalogue evidence and their passages), a passage each; a
        paper that clearly leads the others gives more."""
        r = self.settings.retrieval
        text = survey_focus(query)
        within = SearchFilter(**{**scope.model_dump(), "doc_ids": doc_ids or None})
        hits = self._fused(text, within, max(r.candidates, 3 * r.survey_papers * 4), log, generated, survey_focus)
        if not hits:
            return []
        hits = self._reranked(query, hits, log)  # once for the pool: the papers' shares follow its scores
        quiet = RunLog()  # each paper's passages go through the same postprocessors: reported once, here
        with log.run("postprocessor", "survey") as info:
            scores = {c.doc_id: c.score for c in location.candidates}
            quota = survey_quota(hits, scores, max(r.survey_papers, k), r.per_paper if doc_ids else 1)
            order = list(quota)
            by_paper: dict[str, list[StoredChunk]] = {}
            for h in hits:
                by_paper.setdefault(h.doc_id, []).append(h)
            picked: list[StoredChunk] = []
            for d in order:
                picked += self._rank(by_paper[d], prefer, quota[d], quiet)[: quota[d]]
            # Leftover slots (fewer papers than k): the next best passages of the leading papers.
            for d in order:
                if len(picked) >= k:
                    break
                rest = [h for h in self._rank(by_paper[d], prefer, k, quiet) if h not in picked]
                picked += rest[: k - len(picked)]
            info["papers"] = len(order)
        if self.reranker is not None:
            # Its order is final: the papers' shares chose the passages, the reranker's scores order them.
            picked.sort(key=lambda h: -(h.score or 0.0))
        return picked[:k]
