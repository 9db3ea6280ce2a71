"""The passages of a search: candidates from the retriever, fused, reranked and ranked (the postprocessors).

`within` ranks the passages of the papers in scope against each other (Track A, and the agent's passage search);
`survey` ranks papers by their best passages plus their catalogue evidence and takes a passage or a few from each
(Track B). Both run the postprocessors in the order POSTPROCESSORS declares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..config import Settings
from ..parser.models import SectionCategory
from .coverage import WEAK_COVERAGE, word_share
from .cues import caption_labels, named_labels, survey_focus
from .filters import SearchFilter
from .known_papers import KnownPapers
from .locate import Location
from .query import expand, focus, inflect
from .ranking import (
    REFERENCE_SLACK,
    diversify,
    drop_references,
    lead_captions,
    section_values,
    spread,
    survey_quota,
)
from .registry import RunLog, register
from .rerank import Reranker, rerank
from .retrievers import Retriever, fuse, to_chunks
from .store import PaperStore, StoredChunk
from .transforms import Generated

register(
    "postprocessor",
    "fuse",
    summary="Rankings of the question and of its transforms' queries fused by "
    "reciprocal rank (retrieval.rrf_k); runs only when a query transform is on.",
)(fuse)

#: The postprocessors in the order they run on a question's candidates (each registered under its name). The
#: reranker scores the whole fused pool once, and its order is final: `survey` shares the slots among papers by
#: its scores, `sections` and `mmr` (which would reorder it) run only without a reranker, `spread` only drops
#: the neighbours of a pick; `coverage` and `window` work on the k passages kept.
POSTPROCESSORS = (
    "references", "fuse", "rerank", "captions", "survey", "sections", "mmr", "spread", "coverage", "window",
)  # fmt: skip


class Passages:
    """Candidates and their ranking over one store, with the engine's retrievers and reranker."""

    def __init__(
        self,
        store: PaperStore,
        settings: Settings,
        known: KnownPapers,
        retriever: Retriever,
        hyde_retriever: Retriever,
        reranker: Reranker | None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.known = known
        self.retriever = retriever
        self.hyde_retriever = hyde_retriever
        self.reranker = reranker

    def within(
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
            hits = self.candidates(query, within, n, log)
        return self.rank(self._captions(query, self.reranked(query, hits, log), within, log), prefer, k, log)

    def _captions(self, query: str, hits: list[StoredChunk], within: SearchFilter, log: RunLog) -> list[StoredChunk]:
        """In one paper, the passages with the captions of the tables and figures the question names lead after
        the best candidate (`lead_captions`); searched for by their labels when no candidate holds them."""
        wanted = named_labels(query)
        if not wanted or not hits or within.doc_ids is None or len(within.doc_ids) != 1:
            return hits
        with log.run("postprocessor", "captions", labels=[" ".join(label) for label in sorted(wanted)]) as info:
            held = [h for h in hits if caption_labels(h.text) & wanted]
            if not held:
                words = " ".join(f"{'Table' if kind == 'TABLE' else 'Figure Fig'} {n}" for kind, n in sorted(wanted))
                held = [h for h in self.store.search_bm25(words, within, 10) if caption_labels(h.text) & wanted]
            info["found"] = [h.chunk_index for h in held[: len(wanted)]]
            return lead_captions(hits, held[: len(wanted)])

    def survey(
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
        hits = self.reranked(query, hits, log)  # once for the pool: the papers' shares follow its scores
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
                picked += self.rank(by_paper[d], prefer, quota[d], quiet)[: quota[d]]
            # Leftover slots (fewer papers than k): the next best passages of the leading papers.
            for d in order:
                if len(picked) >= k:
                    break
                rest = [h for h in self.rank(by_paper[d], prefer, k, quiet) if h not in picked]
                picked += rest[: k - len(picked)]
            info["papers"] = len(order)
        if self.reranker is not None:
            # Its order is final: the papers' shares chose the passages, the reranker's scores order them.
            picked.sort(key=lambda h: -(h.score or 0.0))
        return picked[:k]

    def candidates(self, query: str, search_filter: SearchFilter, n: int, log: RunLog) -> list[StoredChunk]:
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
        made = {e for p in self.known.ready() for e in p.enrichments}
        kinds = ["question"] if "questions" in made else []
        if "summaries" in made and (search_filter.doc_ids is None or len(search_filter.doc_ids) > 1):
            kinds.append("summary")
        return kinds

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
        hits = self.candidates(text, within, n, log)
        if generated is None or not generated.active:
            return hits
        rankings = [(hits, 1.0)]
        rankings += [(self.candidates(prepare(expand(q)), within, n, log), 1.0) for q in generated.queries]
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

    def reranked(self, query: str, hits: list[StoredChunk], log: RunLog) -> list[StoredChunk]:
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

    def rank(
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
                # MMR's first pick is the best-valued hit: for one pick it changes nothing and needs no vectors.
                lambda_ = r.mmr_lambda if k > 1 else 1.0
                if lambda_ < 1.0 and len(hits) > 1:
                    self.store.load_vectors(hits)
                ranked = diversify(self.store.embedder, hits, values, lambda_)
        with log.run("postprocessor", "spread", window=r.window):
            return spread(ranked, k, r.window)
