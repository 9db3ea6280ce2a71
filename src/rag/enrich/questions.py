"""`questions`: the questions each chunk answers, written by the chat model, indexed as rows of their own.

Each question is a row of kind `question` that stands for its chunk: the chunk's fields and text, the question
alone as its index text (a short row holding the paper's title too would match every question that names the
paper), `metadata.chunk_index` pointing back. A search that matches a question returns the chunk
(the engine maps the hit back, keeping the best score). Questions close the gap between how a question is
asked and how a paper states the answer.
"""

from __future__ import annotations

import re

from ..chunking import Chunk
from ..registry import register
from .base import Calls, Enriched, PaperInput, clean

PROMPT = "enrich_questions"
REPLY_PER_QUESTION = 25  # tokens (for the cost estimate)
MAX_CHARS = 300
_NUMBERING = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.):]|q\d{1,2}[.:)]?|question\s*\d*\s*[:.])\s*", re.I)


def parse_questions(reply: str, n: int) -> list[str]:
    """Up to `n` distinct questions in a reply: one per line, numbering and bullets off, each ending at its
    first question mark; lines without one (preambles, answers, markup) are not questions."""
    out: list[str] = []
    for line in reply.splitlines():
        line = _NUMBERING.sub("", line.strip().strip('"*'))
        if "?" not in line:
            continue
        text = clean(line[: line.index("?") + 1], MAX_CHARS)
        words = len(text.split())
        if text and 3 <= words <= 60 and text.casefold() not in {q.casefold() for q in out}:
            out.append(text)
        if len(out) == n:
            break
    return out


@register("enricher", "questions", needs=("llm",))
def questions(inp: PaperInput, calls: Calls) -> Enriched:
    """3-5 questions each chunk answers, each indexed as a row of kind question that points back to the chunk:
    a hit on a question returns the chunk."""
    n = inp.settings.questions
    body = inp.body
    items = [{"title": inp.title, "section": c.section_title, "chunk": c.text, "n": n} for c in body]
    rows: list[Chunk] = []
    for chunk, reply in zip(body, calls.many(PROMPT, items, REPLY_PER_QUESTION * n), strict=True):
        found = parse_questions(reply, n)
        if not found:
            calls.unusable()
        for question in found:
            metadata = {**chunk.metadata, "chunk_index": chunk.chunk_index}
            update = {"kind": "question", "index_text": question, "metadata": metadata}
            rows.append(chunk.model_copy(update=update))
    return Enriched(rows=rows)
