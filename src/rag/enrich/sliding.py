"""`sliding_summary`: each chunk is indexed with a summary written with the previous chunk's summary as context.

The summaries run along the paper like a reader's memory: chunk i's summary is asked for with chunk i-1's, so it
can say what "this" and "the model" refer to. The calls of one paper follow each other (each needs the one
before); a reply that holds nothing usable is skipped, and the summary before it is carried on.
"""

from __future__ import annotations

from ..registry import register
from .base import Calls, Enriched, PaperInput, clean

PROMPT = "enrich_sliding_summary"
REPLY = 70  # tokens a summary should take (for the cost estimate)
MAX_CHARS = 500
FIRST = "(none: this is the first passage of the paper)"


@register("enricher", "sliding_summary", needs=("llm",))
def sliding_summary(inp: PaperInput, calls: Calls) -> Enriched:
    """Each chunk indexed as a summary written with the previous chunk's summary as context, plus the chunk
    (one call per chunk, one after the other)."""
    additions: dict[int, str] = {}
    previous = FIRST
    for chunk in inp.body:
        fields = {"title": inp.title, "previous": previous, "section": chunk.section_title, "chunk": chunk.text}
        text = clean(calls.one(PROMPT, fields, REPLY), MAX_CHARS)
        if text:
            additions[chunk.chunk_index] = text
            previous = text
        else:
            calls.unusable()
    return Enriched(additions=additions)
