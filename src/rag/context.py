"""Retrieval context assembly: hits -> windows of neighbouring chunks -> per-paper, prompt-ready context.

The steps of the single-shot path after retrieval (DESIGN.md): each hit is widened to its neighbouring
body chunks (`expand_windows`), overlapping or touching windows of a paper become one `Evidence`, the
whole is held to a token budget, evidence is grouped by paper with the paper's Introduction attached
(`assemble`), and `format_context` numbers the evidence [1], [2], ... for the prompt and the citations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, model_validator

from ..parser.models import SectionCategory
from .cues import STOPWORDS
from .store import StoredChunk

if TYPE_CHECKING:
    from .store import PaperStore
from .tokens import TokenCounter

# get_body_chunks reads at most this many chunk indexes at once.


class Evidence(BaseModel):
    """A contiguous span of one paper's body chunks around one or more retrieved hits; or one RAPTOR summary node
    (kind raptor), evidence of its own without neighbours."""

    doc_id: str
    title: str
    year: int | None
    chunks: list[StoredChunk] = Field(min_length=1, description="Body chunks in order, contiguous chunk_index.")
    hits: list[int] = Field(min_length=1, description="chunk_index of the retrieved hits in the span, in rank order.")
    score: float = Field(description="Highest score among the hits (0.0 when the hits carry none).")
    rank: int = Field(ge=0, description="Best rank of the span's hits among the input hits, 0-based.")
    read: bool = Field(
        False,
        description="Read whole for the answer (its paper's Abstract), not found by the search: its hit is its first "
        "chunk, and it supports an extracted answer without leading it.",
    )

    @classmethod
    def single(cls, chunk: StoredChunk, rank: int) -> Evidence:
        """One chunk as evidence alone: a RAPTOR summary node, or a chunk read without its neighbours."""
        return cls(
            doc_id=chunk.doc_id,
            title=chunk.title,
            year=chunk.year,
            chunks=[chunk],
            hits=[chunk.chunk_index],
            score=chunk.score or 0.0,
            rank=rank,
        )

    @model_validator(mode="after")
    def _check_span(self) -> Evidence:
        if self.is_summary:
            node = self.chunks[0]
            if len(self.chunks) != 1 or self.hits != [node.chunk_index] or node.doc_id != self.doc_id:
                raise ValueError(f"a summary node of paper {self.doc_id} is evidence alone, with itself as its hit")
            return self
        indexes = [c.chunk_index for c in self.chunks]
        if indexes != list(range(indexes[0], indexes[0] + len(indexes))):
            raise ValueError(f"evidence chunks must have contiguous chunk_index values, got {indexes}")
        if any(c.doc_id != self.doc_id or c.kind != "chunk" for c in self.chunks):
            raise ValueError(f"evidence chunks must all be body chunks of paper {self.doc_id}")
        if len(set(self.hits)) != len(self.hits) or not set(self.hits) <= set(indexes):
            raise ValueError(f"evidence hits {self.hits} must be distinct chunk_index values within {indexes}")
        return self

    @property
    def lo(self) -> int:
        """First chunk_index of the span."""
        return self.chunks[0].chunk_index

    @property
    def hi(self) -> int:
        """Last chunk_index of the span (inclusive)."""
        return self.chunks[-1].chunk_index

    @property
    def text(self) -> str:
        """The chunks' texts, one paragraph each."""
        return "\n\n".join(c.text for c in self.chunks)

    @property
    def best_hit(self) -> StoredChunk:
        """The best-ranked hit chunk of the span."""
        return next(c for c in self.chunks if c.chunk_index == self.hits[0])

    @property
    def section_titles(self) -> list[str]:
        """Titles of the sections the span crosses, in order, each once."""
        return list(dict.fromkeys(c.section_title for c in self.chunks if c.section_title))

    @property
    def section_category(self) -> SectionCategory:
        """Category of the best-ranked hit."""
        return self.best_hit.section_category

    @property
    def pages(self) -> tuple[int, int]:
        """(first page, last page) of the span; the last one counts where chunks end (metadata page_end)."""
        first = self.chunks[0].page_number
        ends = [first]
        for c in self.chunks:
            end = c.metadata.get("page_end")
            ends.append(max(c.page_number, end if isinstance(end, int) else c.page_number))
        return first, max(ends)

    @property
    def citation(self) -> str:
        """Citation id `<doc_id>:<chunk_index>` of the best-ranked hit (`<doc_id>:raptor:<level>.<n>` for a node)."""
        return self.best_hit.citation

    @property
    def is_summary(self) -> bool:
        """True for a RAPTOR summary node (its text was written by the chat model at ingest)."""
        return self.chunks[0].kind == "raptor"

    @property
    def chunk_range(self) -> tuple[int, int]:
        """First and last chunk_index of the paper's text the evidence covers (a node: the chunks it summarises)."""
        if self.is_summary:
            span = self.chunks[0].metadata.get("span") or [0, 0]
            return int(span[0]), int(span[-1])
        return self.lo, self.hi


class PaperContext(BaseModel):
    """What a prompt gets about one paper: its Introduction and the evidence found in it."""

    doc_id: str
    title: str
    year: int | None
    introduction: list[StoredChunk] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)


# --- window expansion ----------------------------------------------------------------------------


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted (lo, hi) ranges with overlapping or touching ones joined."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _fetch(store: PaperStore, spans: dict[str, list[tuple[int, int]]]) -> dict[str, list[StoredChunk]]:
    """Body chunks of each paper inside its spans (lo..hi each): the windows of every paper in one read."""
    return store.get_windows({d: [i for lo, hi in s for i in range(lo, hi + 1)] for d, s in spans.items()})


def _runs(chunks: list[StoredChunk]) -> Iterator[list[StoredChunk]]:
    """Chunks sorted by chunk_index, cut where the numbering has a gap."""
    run: list[StoredChunk] = []
    for c in chunks:
        if run and c.chunk_index != run[-1].chunk_index + 1:
            yield run
            run = []
        run.append(c)
    if run:
        yield run


def _evidence(chunks: list[StoredChunk], rank_of: dict[tuple[str, int], int]) -> Evidence | None:
    """The Evidence made of `chunks`, or None when none of them is a hit."""
    doc_id = chunks[0].doc_id
    ranked = sorted(
        ((rank_of[(doc_id, c.chunk_index)], c) for c in chunks if (doc_id, c.chunk_index) in rank_of),
        key=lambda pair: pair[0],
    )
    if not ranked:
        return None
    scores = [c.score for _, c in ranked if c.score is not None]
    return Evidence(
        doc_id=doc_id,
        title=chunks[0].title,
        year=chunks[0].year,
        chunks=chunks,
        hits=[c.chunk_index for _, c in ranked],
        score=max(scores, default=0.0),
        rank=ranked[0][0],
    )


@dataclass
class _Keep:
    """The part lo..hi of an evidence span that fits the budget so far."""

    evidence: Evidence
    lo: int
    hi: int
    closed_below: bool = False
    closed_above: bool = False


def _fit(
    spans: list[Evidence],
    budget: int,
    counter: TokenCounter,
    rank_of: dict[tuple[str, int], int],
    asked: frozenset[str] = frozenset(),
) -> list[Evidence]:
    """Spans (in rank order) cut to `budget` tokens: neighbours are cut before hits; of the neighbours as near,
    those sharing fewer of the `asked` words are cut first, then those of lower ranks."""
    # Keyed by kind too: a summary node's number may be a body chunk's index of the same paper.
    cost = {(e.doc_id, c.kind, c.chunk_index): counter.count(c.text) for e in spans for c in e.chunks}
    if sum(cost.values()) <= budget:
        return spans

    def tokens(e: Evidence, lo: int, hi: int) -> int:
        return sum(cost[(e.doc_id, e.chunks[0].kind, i)] for i in range(lo, hi + 1))

    # Hits first: each span's core (its hits and the chunks between them) in rank order, stopping at
    # the first that does not fit, so the kept hits are always a prefix of the ranking.
    kept: list[_Keep] = []
    used = 0
    for e in spans:
        lo, hi = min(e.hits), max(e.hits)
        need = tokens(e, lo, hi)
        if not kept and need > budget:
            # Even the best span's core is too big: keep its top hit and grow around it below.
            top = e.hits[0]
            kept.append(_Keep(e, top, top))
            used = cost[(e.doc_id, e.chunks[0].kind, top)]
            break
        if used + need > budget:
            break
        kept.append(_Keep(e, lo, hi))
        used += need

    # Then neighbours, nearest to a hit first (better-ranked span first on ties); a neighbour that does
    # not fit closes its side of the span, so spans stay contiguous.
    # A neighbour sharing more of the question's words is kept first: the rest of a table's rows, the sentence
    # that states the figure, rather than the paragraph before the hit.
    growth: list[tuple[int, int, int, int]] = []
    for n, k in enumerate(kept):
        for c in k.evidence.chunks:
            i = c.chunk_index
            if i < k.lo or i > k.hi:
                shared = len(asked & _words_of(c.text)) if asked else 0
                growth.append((k.lo - i if i < k.lo else i - k.hi, n, -shared, i))
    for _, n, _, i in sorted(growth):
        k = kept[n]
        below = i < k.lo
        if k.closed_below if below else k.closed_above:
            continue
        need = cost[(k.evidence.doc_id, "chunk", i)]
        if used + need > budget:
            if below:
                k.closed_below = True
            else:
                k.closed_above = True
            continue
        used += need
        if below:
            k.lo = i
        else:
            k.hi = i

    out: list[Evidence] = []
    for k in kept:
        if k.evidence.is_summary:
            out.append(k.evidence)
            continue
        trimmed = _evidence([c for c in k.evidence.chunks if k.lo <= c.chunk_index <= k.hi], rank_of)
        if trimmed is not None:  # always true: a kept range holds at least one hit
            out.append(trimmed)
    return out


def _words_of(text: str) -> frozenset[str]:
    """The lower-cased words of a text (letters and digits, 3+ characters or a number)."""
    return frozenset(w for w in re.findall(r"[a-z0-9][a-z0-9.%-]*", text.lower()) if len(w) > 2 or w[0].isdigit())


def _expand(
    store: PaperStore,
    hits: Sequence[StoredChunk],
    window: int,
    token_budget: int,
    counter: TokenCounter | None,
    papers: set[str] | None,
    query: str = "",
) -> list[Evidence]:
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    if token_budget < 1:
        raise ValueError(f"token_budget must be >= 1, got {token_budget}")
    # Only body chunks have neighbours by chunk_index; a RAPTOR summary node is evidence alone; other derived
    # rows (parents, questions, ...) are skipped.
    rank_of: dict[tuple[str, int], int] = {}
    hit_of: dict[tuple[str, int], StoredChunk] = {}
    spans: list[Evidence] = []
    nodes: set[tuple[str, int]] = set()
    for rank, hit in enumerate(hits):
        key = (hit.doc_id, hit.chunk_index)
        if papers is not None and hit.doc_id not in papers:
            continue
        if hit.kind == "raptor" and key not in nodes:
            nodes.add(key)
            spans.append(Evidence.single(hit, rank))
            continue
        if hit.kind != "chunk" or key in rank_of:
            continue
        rank_of[key] = rank
        hit_of[key] = hit
    by_paper: dict[str, list[int]] = {}
    for doc_id, index in rank_of:
        by_paper.setdefault(doc_id, []).append(index)

    merged = {d: _merge([(max(0, i - window), i + window) for i in indexes]) for d, indexes in by_paper.items()}
    fetched_of = _fetch(store, merged) if merged else {}
    for doc_id, indexes in by_paper.items():
        spans_of_paper = merged[doc_id]
        fetched = fetched_of.get(doc_id, [])
        for lo, hi in spans_of_paper:
            chunks = {c.chunk_index: c for c in fetched if lo <= c.chunk_index <= hi}
            # The hit objects stand in for their rows: they carry the scores (and survive a missing row).
            chunks.update({i: hit_of[(doc_id, i)] for i in indexes if lo <= i <= hi})
            for run in _runs([chunks[i] for i in sorted(chunks)]):
                evidence = _evidence(run, rank_of)
                if evidence is not None:
                    spans.append(evidence)
    spans.sort(key=lambda e: e.rank)
    asked = _words_of(query) - STOPWORDS  # words every passage holds say nothing of which neighbour answers
    return _fit(spans, token_budget, counter or store.embedder.token_counter, rank_of, asked)


def expand_windows(
    store: PaperStore,
    hits: Sequence[StoredChunk],
    window: int = 1,
    token_budget: int = 1500,
    counter: TokenCounter | None = None,
    query: str = "",
) -> list[Evidence]:
    """Each body-chunk hit widened to chunks i-window..i+window of its paper, as Evidence in rank order.

    Windows of a paper that overlap or touch become one Evidence holding all their hits; windows stop at
    the paper's ends. Hits whose kind is not "chunk" are skipped; a repeated hit counts at its first rank.
    Hit chunks in the result are the hit objects themselves (with their scores).

    At most `token_budget` tokens of chunk text (counted with `counter`, default the store embedder's):
    when it is short, neighbour chunks go first (furthest from a hit first), then whole lower-ranked
    evidence. The top-ranked hit chunk is always kept, even when it alone is over the budget. Of a hit's two
    neighbours, the one sharing more of the `query`'s words is kept first.
    """
    return _expand(store, hits, window, token_budget, counter, None, query)


# --- introductions and assembly ------------------------------------------------------------------


def introduction(store: PaperStore, doc_id: str, max_tokens: int = 500) -> list[StoredChunk]:
    """The paper's Introduction chunks up to `max_tokens` (the first always), else its Abstract, else []."""
    return introductions(store, [doc_id], max_tokens).get(doc_id, [])


def introductions(store: PaperStore, doc_ids: Sequence[str], max_tokens: int = 500) -> dict[str, list[StoredChunk]]:
    """`introduction` of several papers, read together ({doc_id: chunks})."""
    found = store.get_sections(doc_ids, SectionCategory.INTRODUCTION, max_tokens)
    lacking = [d for d in doc_ids if not found.get(d)]
    if lacking:
        found.update({d: c for d, c in store.get_sections(lacking, SectionCategory.ABSTRACT, max_tokens).items() if c})
    return {d: found.get(d, []) for d in doc_ids}


def _abstract(store: PaperStore, doc_id: str, evidence: list[Evidence], max_tokens: int) -> list[Evidence]:
    """The paper's Abstract as one `read` evidence, without the chunks `evidence` already holds; [] when none is
    left (or the paper has no Abstract)."""
    held = {c.chunk_index for e in evidence for c in e.chunks}
    chunks = store.get_sections([doc_id], SectionCategory.ABSTRACT, max(1, max_tokens)).get(doc_id, [])
    run: list[StoredChunk] = []
    for c in chunks:  # the first contiguous run of the Abstract's chunks that no evidence holds
        if c.chunk_index in held or (run and c.chunk_index != run[-1].chunk_index + 1):
            if run:
                break
            continue
        run.append(c)
    if not run:
        return []
    first = run[0]
    return [Evidence(doc_id=doc_id, title=first.title, year=first.year, chunks=run, hits=[first.chunk_index],
                     score=0.0, rank=len(evidence), read=True)]  # fmt: skip


def assemble(
    store: PaperStore,
    hits: Sequence[StoredChunk],
    *,
    window: int = 1,
    token_budget: int = 1500,
    intro_tokens: int = 500,
    with_introduction: bool = True,
    with_abstract: bool = False,
    max_papers: int | None = None,
    query: str = "",
) -> list[PaperContext]:
    """Hits -> per-paper context: expanded evidence grouped by paper, papers in order of their best hit.

    `token_budget` bounds the evidence only (see `expand_windows`); each paper's Introduction adds up to
    `intro_tokens` more, without the chunks already inside its evidence. `with_abstract` adds the first paper's
    Abstract (up to `intro_tokens`) as its last evidence, `read`, when no evidence holds it and the evidence is
    fewer than the hits. `max_papers` keeps the
    papers of the best-ranked hits before expanding, so the budget is not spent on papers that are then dropped.
    """
    papers: set[str] | None = None
    if max_papers is not None:
        if max_papers < 1:
            raise ValueError(f"max_papers must be >= 1 or None, got {max_papers}")
        order = list(dict.fromkeys(h.doc_id for h in hits if h.kind in ("chunk", "raptor")))
        papers = set(order[:max_papers])
    if with_introduction and intro_tokens < 1:
        raise ValueError(f"intro_tokens must be >= 1, got {intro_tokens}")

    grouped: dict[str, list[Evidence]] = {}
    for e in _expand(store, hits, window, token_budget, None, papers, query):
        grouped.setdefault(e.doc_id, []).append(e)
    out: list[PaperContext] = []
    intros = introductions(store, list(grouped), intro_tokens) if with_introduction and grouped else {}
    if with_abstract and grouped and sum(len(e) for e in grouped.values()) < len(hits):
        # A place the hits left free (several merged into one window): an answer never has more sources than hits.
        first_paper = next(iter(grouped))
        grouped[first_paper] += _abstract(store, first_paper, grouped[first_paper], intro_tokens)
    for doc_id, evidence in grouped.items():
        intro: list[StoredChunk] = []
        if with_introduction:
            seen = {c.chunk_index for e in evidence for c in e.chunks if c.kind == "chunk"}
            intro = [c for c in intros.get(doc_id, []) if c.chunk_index not in seen]
        first = evidence[0]
        out.append(
            PaperContext(doc_id=doc_id, title=first.title, year=first.year, introduction=intro, evidence=evidence)
        )
    return out


# --- formatting ----------------------------------------------------------------------------------


def _label(evidence: Evidence) -> str:
    """ " (Section / Section, p. 3-4)": where the evidence is; parts that are unknown are left out."""
    parts: list[str] = []
    if titles := evidence.section_titles:
        parts.append(" / ".join(titles))
    first, last = evidence.pages
    if first > 0:
        parts.append(f"p. {first}" if last <= first else f"p. {first}-{last}")
    return f" ({', '.join(parts)})" if parts else ""


def format_context(papers: list[PaperContext], start: int = 1) -> tuple[str, list[Evidence]]:
    """Prompt-ready text of the papers with evidence numbered [start], [start+1], ... across papers.

    Returns the text and the Evidence in number order (item j is evidence [start + j]). One block per
    paper, blocks separated by a blank line::

        [Paper: <title> (<year>)]
        Context (Introduction): <introduction text>
        Evidence [1] (<section titles joined by " / ">, p. <first>-<last>): <evidence text>
    """
    if start < 1:
        raise ValueError(f"start must be >= 1, got {start}")
    blocks: list[str] = []
    numbered: list[Evidence] = []
    for paper in papers:
        year = f" ({paper.year})" if paper.year is not None else ""
        lines = [f"[Paper: {paper.title}{year}]"]
        intro = " ".join(c.text.strip() for c in paper.introduction).strip()
        if intro:
            lines.append(f"Context (Introduction): {intro}")
        for evidence in paper.evidence:
            lines.append(f"Evidence [{start + len(numbered)}]{_label(evidence)}: {evidence.text}")
            numbered.append(evidence)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks), numbered
