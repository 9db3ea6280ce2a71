"""`contextual`: each chunk's index text starts with a short context the chat model wrote for it.

Contextual retrieval: a chunk alone often does not say what it is about ("the model reaches 81.2 on the test
set" - which model, which set?). The context is written from the whole paper when it is short (up to
`enrichment.whole_document_tokens`); a long paper is read in two steps, its summary and section summaries first
(summaries.py), then each chunk's context from the paper's summary, its section's title and summary, and the
chunk. The paper's part of the prompt comes first, so a server that caches prompt prefixes (llama.cpp, vLLM)
reads it once for all the chunks of a section.
"""

from __future__ import annotations

from collections.abc import Callable

from ..chunking import Chunk
from ..registry import register
from .base import Calls, Enriched, PaperInput, clean
from .summaries import document_summary, full_text, is_long, section_summaries

PROMPT = "enrich_context"
REPLY = 80  # tokens a context should take (for the cost estimate)
MAX_CHARS = 600


@register("enricher", "contextual", needs=("llm",))
def contextual(inp: PaperInput, calls: Calls) -> Enriched:
    """Each chunk's index text starts with a context the model wrote from the paper (a long paper: from its
    summary and its section's): contextual retrieval."""
    body = inp.body
    if not body:
        return Enriched()
    document: Callable[[Chunk], str]
    if is_long(inp):
        paper = document_summary(inp, calls)
        by_section = {s.section.id: s for s in section_summaries(inp, calls)}

        def document(chunk: Chunk) -> str:
            parts = [f"Summary of the paper: {paper}"] if paper else []
            top = inp.top_section(chunk)
            if top is not None and (s := by_section.get(top.id)) is not None and s.summary:
                parts.append(f'Summary of its section "{top.title}": {s.summary}')
            return "\n\n".join(parts) or inp.cut(full_text(inp))

    else:
        whole = full_text(inp)

        def document(chunk: Chunk) -> str:
            return whole

    items = [{"document": document(c), "title": inp.title, "section": c.section_title, "chunk": c.text} for c in body]
    additions: dict[int, str] = {}
    for chunk, reply in zip(body, calls.many(PROMPT, items, REPLY), strict=True):
        if text := clean(reply, MAX_CHARS):
            additions[chunk.chunk_index] = text
        else:
            calls.unusable()
    return Enriched(additions=additions)
