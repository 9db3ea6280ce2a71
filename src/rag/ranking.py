"""Postprocessors: what the engine does to the retriever's candidates before they become evidence.

In order, each registered by name and reported in `operators` when it runs:
1. `references`: reference lists are left out unless the question asks about citations (a list of cited
   titles matches every topic and every author's name, and is no paper's own evidence);
2. `rerank` (when configured): a cross-encoder, a rerank endpoint or the chat model scores each candidate;
3. `sections`: every candidate competes on its score relative to the best one; the sections the question
   asks about lead, the abstract (a paper's own summary) is preferred, what describes other papers trails;
4. `mmr`: near-duplicates of a picked passage give way (maximal marginal relevance over that ranking);
5. `spread`: neighbours of a picked passage give way (its context window shows them anyway);
(Track B ranks papers first: `survey`.)
6. `window` (context.py): each pick grows to its neighbours within a token budget, the paper's Introduction
   joins it.
The weights were calibrated on ../shared/devset (README, "Finding the passage").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..parser.categories import is_reference_list
from ..parser.models import SectionCategory
from .cues import about_citations
from .embeddings import Embedder
from .mmr import mmr_chunks
from .registry import register
from .store import StoredChunk

Cat = SectionCategory
CATEGORY_BOOST = 0.1
ABSTRACT_BOOST = 0.25
TRAILING = {Cat.OTHER: 0.25, Cat.RELATED_WORK: 0.1}
_NUMBERED = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVX]+\.)\s+\S")  # "3.2 Additional Components", "IV. Results"
# Reference lists are dropped after the search: fetch this many more candidates so that enough remain.
REFERENCE_SLACK = 16
# A survey ranks papers by their best passage plus this share of their catalogue evidence (title, aliases,
# abstract), and takes one passage per paper unless a paper leads the others by this factor (it then gives more).
DOMINANT = 1.6
PAPER_WEIGHT = 0.25


@register("postprocessor", "references")
def drop_references(query: str, hits: list[StoredChunk], n: int) -> list[StoredChunk]:
    """Reference lists out of the candidates unless the question asks about citations; at most n kept."""
    if about_citations(query):
        return hits[:n]
    return [h for h in hits if not is_reference_list(h.section_title)][:n]


@register("postprocessor", "captions")
def lead_captions(hits: list[StoredChunk], captions: Sequence[StoredChunk]) -> list[StoredChunk]:
    """The passages holding the caption of a table or figure the question names ("what does Table 3 list for ...",
    "the spectra of Figure 1"), right after the best candidate and scored as it is: the caption states what the
    table or figure shows and its settings, where the question's other words may rank it anywhere."""
    if not captions or not hits:
        return hits
    top = max(h.score or 0.0 for h in hits)
    ids = {c.id for c in captions}
    rest = [h for h in hits if h.id not in ids]
    return [*rest[:1], *(c.model_copy(update={"score": top}) for c in captions), *rest[1:]]


@register("postprocessor", "sections")
def section_values(hits: Sequence[StoredChunk], prefer: Sequence[SectionCategory]) -> list[float]:
    """Each candidate's value: its score relative to the best, plus the preference for its section."""
    top = max((h.score or 0.0 for h in hits), default=0.0) or 1.0
    values = []
    for h in hits:
        cat = h.section_category
        trailing = TRAILING.get(cat, 0.0)
        if cat is Cat.OTHER and _NUMBERED.match(h.section_title):
            trailing = 0.0  # "3.2 Additional Components": a numbered section of the body, not back matter
        bonus = CATEGORY_BOOST if cat in prefer else -trailing
        values.append((h.score or 0.0) / top + bonus + (ABSTRACT_BOOST if cat is Cat.ABSTRACT else 0.0))
    return values


@register("postprocessor", "mmr")
def diversify(
    embedder: Embedder, hits: list[StoredChunk], values: Sequence[float], lambda_: float
) -> list[StoredChunk]:
    """Hits ranked by value, near-duplicates of a picked one pushed down (lambda 1 = ranking only)."""
    order = sorted(range(len(hits)), key=lambda i: -values[i])
    ranked = [hits[i] for i in order]
    if lambda_ >= 1.0 or len(ranked) < 2:
        return ranked
    return mmr_chunks(embedder, "", ranked, len(ranked), lambda_, relevance=[values[i] for i in order])


@register("postprocessor", "spread")
def spread(ranked: Sequence[StoredChunk], k: int, window: int) -> list[StoredChunk]:
    """The first k hits, skipping neighbours (within `window`) of a hit already picked (body chunks only: a
    RAPTOR summary's number says nothing about where it stands in the paper)."""
    picked: list[StoredChunk] = []
    for h in ranked:
        if all(not _neighbours(h, p, window) for p in picked):
            picked.append(h)
        if len(picked) == k:
            break
    return picked


def _neighbours(a: StoredChunk, b: StoredChunk, window: int) -> bool:
    """Two body chunks of one paper within `window` of each other."""
    both = a.kind == "chunk" and b.kind == "chunk" and a.doc_id == b.doc_id
    return both and abs(a.chunk_index - b.chunk_index) <= window


@register("postprocessor", "survey")
def survey_quota(
    hits: Sequence[StoredChunk], paper_scores: dict[str, float], papers: int, per_paper: int
) -> dict[str, int]:
    """Track B: papers ranked by their best passage plus their catalogue evidence, a passage each (`per_paper`
    when the question named them), three for a paper that clearly leads; {doc_id: passages}, best paper first."""
    top = max((h.score or 0.0 for h in hits), default=0.0) or 1.0
    passage: dict[str, float] = {}
    for h in hits:
        passage[h.doc_id] = max(passage.get(h.doc_id, 0.0), (h.score or 0.0) / top)
    best_paper = max(paper_scores.values(), default=0.0) or 1.0
    rank = {d: passage[d] + PAPER_WEIGHT * paper_scores.get(d, 0.0) / best_paper for d in passage}
    order = sorted(rank, key=lambda d: -rank[d])[:papers]
    quota = {d: per_paper for d in order}
    if len(order) > 1 and rank[order[0]] >= DOMINANT * rank[order[1]]:
        quota[order[0]] = max(quota[order[0]], 3)  # one paper dominates: do not starve it
    return quota
