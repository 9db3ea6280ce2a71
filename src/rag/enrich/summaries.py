"""`summaries`: a summary of the paper and of each of its top-level sections, written by the chat model.

The paper's summary goes to the catalogue (searched with its title, aliases and abstract when a question names
or describes a paper; the agent reads it with the Introduction) and, like each section's, becomes a row of
kind `summary` whose index text is the summary and whose `text` is the passage it points to (the first chunk
of the section; the abstract for the paper's), so a search that matches a summary returns that passage.

Both are made in two steps for a long paper (over `enrichment.whole_document_tokens`): the sections first, then
the paper from its abstract and their summaries; a short paper is summarised from its whole text. The
contextual enricher reuses them (`section_summaries`, `document_summary`): each is asked for once per paper.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...parser.categories import is_reference_list
from ...parser.models import Section, SectionCategory
from ..chunking import Chunk
from ..registry import register
from .base import Calls, Enriched, PaperInput, clean

SECTION_PROMPT = "enrich_section_summary"
DOCUMENT_PROMPT = "enrich_document_summary"
SECTION_REPLY = 120  # tokens a section summary should take (for the cost estimate)
DOCUMENT_REPLY = 180
MAX_CHARS = 1500  # a summary longer than this (a model that rambles) is cut
SHORT_SECTION = 60  # tokens: a section this short is its own summary (no call)


@dataclass
class SectionSummary:
    """A top-level section, its body chunks in order and its summary."""

    section: Section
    chunks: list[Chunk]
    summary: str
    written: bool  # False when the section was short enough to stand as its own summary


def sections(inp: PaperInput) -> list[tuple[Section, list[Chunk]]]:
    """The paper's top-level sections with their body chunks, in order; reference lists left out."""
    groups: dict[int, tuple[Section, list[Chunk]]] = {}
    for chunk in inp.body:
        top = inp.top_section(chunk)
        if top is None or is_reference_list(top.title):
            continue
        groups.setdefault(top.id, (top, []))[1].append(chunk)
    return list(groups.values())


def full_text(inp: PaperInput) -> str:
    """The paper's body text, chunk after chunk (reference lists too: they are part of what a reader sees)."""
    return "\n\n".join(c.text for c in inp.body)


def is_long(inp: PaperInput) -> bool:
    """True when the paper is summarised in two steps (and contextual works from its summaries)."""
    return inp.count(full_text(inp)) > inp.settings.whole_document_tokens


def section_summaries(inp: PaperInput, calls: Calls) -> list[SectionSummary]:
    """Each top-level section's summary (asked for once per paper; a short section stands as its own)."""
    if "sections" in inp.memo:
        return list(inp.memo["sections"])
    groups = sections(inp)
    texts = [" ".join(c.text for c in chunks) for _, chunks in groups]
    asked = [i for i, t in enumerate(texts) if inp.count(t) > SHORT_SECTION]
    items = [{"title": inp.title, "section": groups[i][0].title, "text": inp.cut(texts[i])} for i in asked]
    replies = dict(zip(asked, calls.many(SECTION_PROMPT, items, SECTION_REPLY), strict=True))
    out: list[SectionSummary] = []
    for i, (section, chunks) in enumerate(groups):
        if i not in replies:
            out.append(SectionSummary(section, chunks, texts[i], written=False))
            continue
        text = clean(replies[i], MAX_CHARS)
        if not text:
            calls.unusable()
        out.append(SectionSummary(section, chunks, text, written=bool(text)))
    inp.memo["sections"] = out
    return list(out)


def document_summary(inp: PaperInput, calls: Calls) -> str:
    """The paper's summary: from its whole text when short, else from its abstract and section summaries."""
    if "document" in inp.memo:
        return str(inp.memo["document"])
    if is_long(inp):
        parts = [f"Abstract: {inp.paper.abstract}"] if inp.paper.abstract else []
        parts += [f"{s.section.title}: {s.summary}" for s in section_summaries(inp, calls) if s.summary]
        text = inp.cut("\n".join(parts))
    else:
        text = full_text(inp)
    reply = calls.one(DOCUMENT_PROMPT, {"title": inp.title, "text": text}, DOCUMENT_REPLY)
    summary = clean(reply, MAX_CHARS)
    if not summary:
        calls.unusable()
    inp.memo["document"] = summary
    return summary


def _row(anchor: Chunk, index: int, index_text: str, **meta: object) -> Chunk:
    """A summary row that stands for `anchor`: its fields and text, the summary as its index text."""
    metadata = {**anchor.metadata, "chunk_index": anchor.chunk_index, **meta}
    update = {"kind": "summary", "chunk_index": index, "index_text": index_text, "metadata": metadata}
    return anchor.model_copy(update=update)


@register("enricher", "summaries", needs=("llm",))
def summaries(inp: PaperInput, calls: Calls) -> Enriched:
    """A summary of the paper (kept in the catalogue) and of each top-level section, indexed as rows of kind
    summary that point to their passage: for finding papers, search_abstracts and Track B."""
    body = inp.body
    if not body:
        return Enriched()
    per_section = section_summaries(inp, calls)
    paper = document_summary(inp, calls)
    rows: list[Chunk] = []
    if paper:
        anchor = next((c for c in body if c.section_category is SectionCategory.ABSTRACT), body[0])
        rows.append(_row(anchor, 0, f"{inp.title}\n{paper}", scope="document"))
    for n, s in enumerate(per_section, start=1):  # summary rows: 0 the paper, then its sections in order
        if s.written:
            span = [s.chunks[0].chunk_index, s.chunks[-1].chunk_index]
            text = f"{inp.title} > {s.section.title}\n{s.summary}"
            rows.append(_row(s.chunks[0], n, text, scope="section", section_id=s.section.id, span=span))
    return Enriched(rows=rows, summary=paper)
