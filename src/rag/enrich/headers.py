"""`headers`: a descriptive header the chat model wrote for each chunk, embedded and indexed with it.

The chunker's header is the paper's title and the section trail ("Title > 4 Experiments > 4.2 Setup"); the
written one says what the passage is about ("Batch size and learning rate used to train the retriever").
"""

from __future__ import annotations

import re

from ..registry import register
from .base import Calls, Enriched, PaperInput, clean

PROMPT = "enrich_header"
REPLY = 24  # tokens a header should take (for the cost estimate)
MAX_CHARS = 160
_DECORATION = re.compile(r"^(?:\s*(?:[#*>\-]+|\d{1,2}[.)]))+\s*|[\s*#]+$")


def first_line(reply: str) -> str:
    """The header in a reply: its first non-empty line, without Markdown decoration."""
    for line in reply.splitlines():
        line = _DECORATION.sub("", line).strip()
        if line:
            return line
    return ""


@register("enricher", "headers", needs=("llm",))
def headers(inp: PaperInput, calls: Calls) -> Enriched:
    """A descriptive header written for each chunk (what it is about, in one line), indexed with it."""
    body = inp.body
    items = [{"title": inp.title, "section": c.section_title, "chunk": c.text} for c in body]
    additions: dict[int, str] = {}
    for chunk, reply in zip(body, calls.many(PROMPT, items, REPLY), strict=True):
        if text := clean(first_line(reply), MAX_CHARS):
            additions[chunk.chunk_index] = text
        else:
            calls.unusable()
    return Enriched(additions=additions)
