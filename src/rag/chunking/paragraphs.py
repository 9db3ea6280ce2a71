"""The paragraph-based chunkers: recursive (the default), simple, markdown, sliding_window, parent_child."""

from __future__ import annotations

from ...parser.models import Paper
from ..tokens import TokenCounter
from .base import (
    Chunk,
    ChunkOptions,
    _budget,
    _Builder,
    _cut_word,
    _Draft,
    _pack,
    _Piece,
    _pieces,
    _runs,
    _sections_in_order,
    max_chars,
    register,
)


@register("recursive")
def recursive(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """Paragraphs packed up to the size; long paragraphs split by sentence, then word, with overlap."""
    build = _Builder(paper, tokens, "recursive")
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, opts.chunk_size)
        for run in _runs(paragraphs):
            for draft in _pack(_pieces(run, budget, tokens), budget, min(opts.overlap, budget // 4)):
                build.add(section, header, draft)
    return build.chunks


@register("simple")
def simple(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """One chunk per paragraph (a paragraph larger than the window is split)."""
    build = _Builder(paper, tokens, "simple")
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, tokens.max_tokens)
        for draft in _pack(_pieces(paragraphs, budget, tokens), budget, 0, by_paragraph=False):
            build.add(section, header, draft)
    return build.chunks


@register("markdown")
def markdown(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """A section is one chunk when it fits the window, else it is split recursively."""
    build = _Builder(paper, tokens, "markdown")
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, tokens.max_tokens)
        for draft in _pack(_pieces(paragraphs, budget, tokens), budget, min(opts.overlap, budget // 4)):
            build.add(section, header, draft)
    return build.chunks


@register("sliding_window")
def sliding_window(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """Fixed windows of words over each section's text, overlapping by `overlap` tokens."""
    build = _Builder(paper, tokens, "sliding_window")
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, opts.chunk_size)
        limit = max_chars(budget)
        words = [
            (piece, i, p.page) for i, p in paragraphs for w in p.text.split() for piece in _cut_word(w, budget, tokens)
        ]
        start = 0
        while start < len(words):
            end, used, chars = start, 0, 0
            while end < len(words):
                n = tokens.count(words[end][0])
                if (used + n > budget or chars + len(words[end][0]) + 1 > limit) and end > start:
                    break
                used += n
                chars += len(words[end][0]) + 1
                end += 1
            window = words[start:end]
            boxes = [b for i in sorted({w[1] for w in window}) for b in paper.paragraphs[i].boxes]
            text = " ".join(w for w, _, _ in window)
            pieces = [_Piece(text, used, window[0][2], window[0][1], end >= len(words), boxes=boxes)]
            build.add(section, header, _Draft(pieces))
            if end >= len(words):
                break
            back, kept = end, 0
            while back > start + 1 and kept + tokens.count(words[back - 1][0]) <= opts.overlap:
                back -= 1
                kept += tokens.count(words[back][0])
            start = back
    return build.chunks


@register("parent_child")
def parent_child(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """Parents of ~parent_size tokens (kind="parent"), children of ~child_size that point to them."""
    build = _Builder(paper, tokens, "parent_child")
    parents: list[Chunk] = []
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, opts.child_size)
        big = _pack(_pieces(paragraphs, opts.parent_size, tokens), opts.parent_size, 0)
        for parent_draft in big:
            parent_index = len(parents)
            members = [(p.paragraph, paper.paragraphs[p.paragraph]) for p in parent_draft.pieces]
            seen: set[int] = set()
            unique = [m for m in members if not (m[0] in seen or seen.add(m[0]))]  # type: ignore[func-returns-value]
            for draft in _pack(_pieces(unique, budget, tokens), budget, min(opts.overlap, budget // 4)):
                build.add(section, header, draft, extra={"parent_index": parent_index})
            parent = build.add(section, header, parent_draft, kind="parent", index=parent_index)
            parents.append(parent)
    return build.chunks
