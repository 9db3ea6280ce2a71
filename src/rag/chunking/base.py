"""Cut a Paper into chunks. A registry of strategies, all writing the DESIGN.md chunk fields.

Every strategy keeps chunks inside one section, numbers body chunks 0..N-1 over the
whole paper, and keeps "context header + text" within the embedding model's window.

Sizes are promised in characters too: a tokenizer may count a "word" of thousands of characters
(a base64 blob, a run of symbols, unspaced CJK) as one unknown token, so every chunk text holds at
most `CHARS_PER_TOKEN` characters per token of its budget and never more than `MAX_CHUNK_CHARS`
(with the header, within Milvus' 65,535-byte VARCHAR at 4 bytes a character). Such words are cut.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from ...errors import ChunkingError, ConfigError
from ...parser.models import Box, Paper, Paragraph, Section, SectionCategory
from ...parser.text import unscripted
from .. import registry as operator_registry
from ..tokens import TokenCounter

ChunkKind = Literal["chunk", "parent", "question", "summary", "raptor"]
# Sentences; a table's text splits at its rows (one a line).
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"'])|\n")
CHARS_PER_TOKEN = 10  # English runs at ~4-5 characters a token; anything far above is not prose
MAX_CHUNK_CHARS = 15_000
MAX_HEADER_CHARS = 1_000


def max_chars(budget: int) -> int:
    """The most characters a chunk of `budget` tokens may hold."""
    return min(budget * CHARS_PER_TOKEN, MAX_CHUNK_CHARS)


class Chunk(BaseModel):
    """One row of the chunks collection (vectors are added by the store)."""

    chunk_index: int = Field(description="Body order 0..N-1 across the paper (parents: their own order).")
    text: str = Field(description="The original text, what answers quote.")
    index_text: str = Field(description="Context header + text: what is embedded and BM25-indexed.")
    section_title: str
    parent_section: str = Field(description="Title of the enclosing section, empty for a top-level one.")
    section_category: SectionCategory
    hierarchy_level: int
    page_number: int = Field(description="1-based page where the chunk starts.")
    kind: ChunkKind = "chunk"
    metadata: dict[str, Any] = Field(default_factory=dict)


Embed = Callable[[list[str]], list[list[float]]]


@dataclass
class ChunkOptions:
    """Sizes in tokens of the embedding model's tokenizer; `embed` (texts -> vectors) serves the semantic chunker."""

    chunk_size: int = 200
    overlap: int = 32
    parent_size: int = 2000
    child_size: int = 300
    breakpoint_percentile: float = 90.0
    embed: Embed | None = None


@dataclass
class _Piece:
    """A run of text no larger than the budget, with where it came from."""

    text: str
    tokens: int
    page: int
    paragraph: int  # index into paper.paragraphs
    ends_paragraph: bool
    starts_paragraph: bool = True
    boxes: list[Box] | None = None  # the boxes of the lines it came from; None: its paragraph's
    start: int = -1  # where its text starts in its paragraph's text (-1: not known, looked for)


@dataclass
class _Draft:
    pieces: list[_Piece] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.pieces)

    @property
    def chars(self) -> int:
        return sum(len(p.text) + 1 for p in self.pieces)


Strategy = Callable[[Paper, TokenCounter, ChunkOptions], list[Chunk]]


# What a chunker needs beyond a paper, for `paperscope operators`.
_NEEDS = {"semantic": ("embedder",), "parent_child": ()}


def register(name: str) -> Callable[[Strategy], Strategy]:
    """Register a chunking strategy under `name` in the engine's operator registry (a spec names it: no argument)."""

    def wrap(fn: Strategy) -> Strategy:
        return operator_registry.register("chunker", name, needs=_NEEDS.get(name, ()))(fn)

    return wrap


def chunk_paper(
    paper: Paper, tokens: TokenCounter, strategy: str = "recursive", options: ChunkOptions | None = None
) -> list[Chunk]:
    """Cut `paper` into chunks with the named strategy."""
    fn: Strategy = chunker(strategy)
    chunks = fn(paper, tokens, options or ChunkOptions())
    body = [c for c in chunks if c.kind == "chunk"]
    if [c.chunk_index for c in body] != list(range(len(body))):
        raise ChunkingError(f"{paper.source or paper.title}: chunk_index is not continuous")
    return chunks


def chunker(strategy: str) -> Strategy:
    """The chunking function `strategy` names; a ChunkingError naming the registered ones otherwise."""
    try:
        fn: Strategy = operator_registry.build("chunker", strategy)
    except ConfigError as exc:
        if ":" in strategy:
            raise ChunkingError(str(exc)) from None
        known = ", ".join(operator_registry.choices("chunker"))
        raise ChunkingError(f"unknown chunking strategy {strategy!r}; choose one of {known}") from None
    return fn


# --- shared helpers -------------------------------------------------------------------


def context_header(paper: Paper, section: Section) -> str:
    """ "Title > Parent section > Section": what every chunk of the section is embedded with."""
    trail = [section.title]
    parent = paper.parent_of(section)
    while parent is not None:
        trail.insert(0, parent.title)
        parent = paper.parent_of(parent)
    return " > ".join([paper.title, *trail])


def _sections_in_order(paper: Paper) -> Iterator[tuple[Section, list[tuple[int, Paragraph]]]]:
    """Each section with its paragraphs (index, paragraph), in reading order."""
    current: int | None = None
    run: list[tuple[int, Paragraph]] = []
    for i, p in enumerate(paper.paragraphs):
        if current is not None and p.section_id != current:
            yield paper.sections[current], run
            run = []
        current = p.section_id
        run.append((i, p))
    if current is not None:
        yield paper.sections[current], run


def _budget(paper: Paper, section: Section, tokens: TokenCounter, wanted: int) -> tuple[str, int]:
    header = context_header(paper, section)
    room = tokens.max_tokens - tokens.count(header) - 2
    if room < 16 or len(header) > MAX_HEADER_CHARS:
        # A pathological header would leave no room for text: keep the section name only.
        header = section.title[:200]
        room = tokens.max_tokens - tokens.count(header) - 2
    return header, max(16, min(wanted, room))


def _cut_word(word: str, budget: int, tokens: TokenCounter) -> list[str]:
    """A word as slices of at most `budget` tokens and `max_chars(budget)` characters (most words: itself)."""
    if len(word) <= budget:  # a token covers at least one character: short words always fit
        return [word]
    limit = max_chars(budget)
    out: list[str] = []
    rest = word
    while rest:
        if len(rest) <= limit and tokens.count(rest) <= budget:
            out.append(rest)
            break
        lo, hi = 1, min(len(rest), limit)  # the longest prefix that fits, by bisection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if tokens.count(rest[:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        out.append(rest[:lo])
        rest = rest[lo:]
    return out


def _split(text: str, budget: int, tokens: TokenCounter) -> list[tuple[str, int]]:
    """Split text into parts of at most `budget` tokens (and `max_chars(budget)`): sentences, words, slices."""
    limit = max_chars(budget)
    n = tokens.count(text)
    if n <= budget and len(text) <= limit:
        return [(text, n)]
    parts: list[tuple[str, int]] = []
    for sentence in _SENTENCE.split(text):
        m = tokens.count(sentence)
        if m <= budget and len(sentence) <= limit:
            parts.append((sentence, m))
            continue
        words, current = [piece for w in sentence.split() for piece in _cut_word(w, budget, tokens)], ""
        for w in words:
            candidate = f"{current} {w}".strip()
            if current and (len(candidate) > limit or tokens.count(candidate) > budget):
                parts.append((current, tokens.count(current)))
                current = w
            else:
                current = candidate
        if current:
            parts.append((current, tokens.count(current)))
    return parts


def _pieces(paragraphs: list[tuple[int, Paragraph]], budget: int, tokens: TokenCounter) -> list[_Piece]:
    out: list[_Piece] = []
    for i, p in paragraphs:
        parts = _split(p.text, budget, tokens)
        at = 0
        for j, (text, n) in enumerate(parts):
            page = p.page if j < max(1, len(parts)) / 2 or p.page_end == p.page else p.page_end
            start = p.text.find(text, at)
            boxes = None
            if len(parts) > 1 and start >= 0:  # a paragraph split across pieces: the lines of this piece
                boxes = _boxes_between(p, start, start + len(text))
                at = start + len(text)
            out.append(_Piece(text, n, page, i, j == len(parts) - 1, j == 0, boxes, start))
    return out


def _boxes_between(p: Paragraph, start: int, end: int) -> list[Box] | None:
    """The boxes of the lines of `p` that hold its text from `start` to `end` (None when not known)."""
    if len(p.box_starts) != len(p.boxes) or not p.boxes:
        return None
    ends = [*p.box_starts[1:], len(p.text)]
    return [b for b, s, e in zip(p.boxes, p.box_starts, ends, strict=True) if s < end and max(e, s + 1) > start]


def _pack(pieces: list[_Piece], budget: int, overlap: int, by_paragraph: bool = True) -> list[_Draft]:
    """Greedy packing up to `budget` (and `max_chars(budget)`); a split inside a paragraph carries `overlap`
    tokens over."""
    limit = max_chars(budget)
    drafts: list[_Draft] = []
    current = _Draft()
    for piece in pieces:
        if current.pieces and (current.tokens + piece.tokens > budget or current.chars + len(piece.text) > limit):
            drafts.append(current)
            carry: list[_Piece] = []
            if overlap and not current.pieces[-1].ends_paragraph:
                for prev in reversed(current.pieces):
                    if prev.paragraph != piece.paragraph or sum(c.tokens for c in carry) + prev.tokens > overlap:
                        break
                    carry.insert(0, prev)
            if sum(c.tokens for c in carry) + piece.tokens > budget or _Draft(carry).chars + len(piece.text) > limit:
                carry = []
            current = _Draft(list(carry))
        current.pieces.append(piece)
        if not by_paragraph and piece.ends_paragraph:
            drafts.append(current)
            current = _Draft()
    if current.pieces:
        drafts.append(current)
    return drafts


@dataclass
class _Builder:
    """Numbers chunks and fills the fields shared by every strategy."""

    paper: Paper
    tokens: TokenCounter
    strategy: str
    chunks: list[Chunk] = field(default_factory=list)
    next_index: int = 0

    def add(
        self,
        section: Section,
        header: str,
        draft: _Draft,
        *,
        kind: ChunkKind = "chunk",
        index: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Chunk:
        paper = self.paper
        text = _joined(paper, draft.pieces)
        paragraphs = sorted({p.paragraph for p in draft.pieces})
        # A paragraph's captions go with the chunk holding its start, so each is listed once.
        captions = [c for p in draft.pieces if p.starts_paragraph for c in paper.paragraphs[p.paragraph].captions]
        is_caption = all(paper.paragraphs[i].kind == "caption" for i in paragraphs)
        parent = paper.parent_of(section)
        boxes, box_starts = _located_boxes(paper, draft.pieces)
        # The boxes know the pages a chunk's text is on (a paragraph may run onto the next page); without
        # them (Markdown), the pages of the pieces.
        pages = [b["page"] for b in boxes] or [p.page for p in draft.pieces]
        metadata: dict[str, Any] = {
            "page_end": max(pages),
            "captions": captions,
            "is_caption": is_caption,
            "strategy": self.strategy,
            "section_id": section.id,
            "boxes": boxes,
            # Where each box's line starts in `text`: a span of the text (a claim) is highlighted by its lines.
            "box_starts": box_starts,
        }
        metadata.update(extra or {})
        if index is None:
            index = self.next_index
            self.next_index += 1
        chunk = Chunk(
            chunk_index=index,
            text=text,
            index_text=self._index_text(header, text, draft.pieces),
            section_title=section.title,
            parent_section=parent.title if parent else "",
            section_category=section.category,
            hierarchy_level=section.level,
            page_number=min(pages),
            kind=kind,
            metadata=metadata,
        )
        self.chunks.append(chunk)
        return chunk

    def _index_text(self, header: str, text: str, pieces: list[_Piece]) -> str:
        """What is searched and embedded: the header, then the text. Rows of a table cut between chunks are
        searched with their table's caption (its label and what it measures: "Table 2: ... F1 on FUNSD"), as much
        of it as the model's window leaves room for, so a question in the caption's words finds them. Scripts read
        plain there ("10¹⁰" as "1010"), as a question or a passage pasted from the PDF writes them."""
        plain = f"{header}\n{unscripted(text)}"
        captions = _continued_captions(self.paper, pieces)
        spare = self.tokens.max_tokens - self.tokens.count(plain) - 1
        if not captions or spare < 4:
            return plain
        words = " ".join(captions).split()
        while words and (used := self.tokens.count(" ".join(words))) > spare:
            # Cut in proportion to the overshoot, at least one word, and count again.
            words = words[: min(len(words) - 1, len(words) * spare // used)]
        return f"{header}\n{' '.join(words)}\n{text}" if words else plain


def _continued_captions(paper: Paper, pieces: list[_Piece]) -> list[str]:
    """The captions of the tables whose rows a chunk continues (the table began in an earlier chunk)."""
    out: list[str] = []
    for piece in pieces:
        table = paper.paragraphs[piece.paragraph].table
        if table is not None and not piece.starts_paragraph and table.caption and table.caption not in out:
            out.append(table.caption)
    return out


def _joined(paper: Paper, pieces: list[_Piece]) -> str:
    """The pieces' texts joined by one character each: a line break where the paragraph had one between them (the
    rows of a table split across pieces stay one per line, so each is still read as a row), else a space."""
    out: list[str] = []
    for k, piece in enumerate(pieces):
        if k:
            before = paper.paragraphs[piece.paragraph].text[piece.start - 1 : piece.start] if piece.start > 0 else ""
            same = pieces[k - 1].paragraph == piece.paragraph
            out.append("\n" if same and before == "\n" else " ")
        out.append(piece.text)
    return "".join(out)


def _located_boxes(paper: Paper, pieces: list[_Piece]) -> tuple[list[dict[str, Any]], list[int]]:
    """Where a chunk's text stands: the boxes of its pieces' lines, each once, in reading order, and where each
    line's text starts in the chunk's text (its pieces joined by one character, see `_joined`)."""
    seen: set[tuple[int, tuple[float, float, float, float]]] = set()
    boxes: list[dict[str, Any]] = []
    starts: list[int] = []
    offset = 0
    for piece in pieces:
        for b, at in _lines_of(paper.paragraphs[piece.paragraph], piece):
            if (b.page, b.rect) not in seen:
                seen.add((b.page, b.rect))
                boxes.append({"page": b.page, "rect": list(b.rect)})
                starts.append(offset + at)
        offset += len(piece.text) + 1
    return boxes, starts


def _lines_of(p: Paragraph, piece: _Piece) -> list[tuple[Box, int]]:
    """The boxes of the lines `piece` came from, each with where its text starts in the piece's text (0 for all of
    them when the paragraph does not say where its lines start)."""
    begin = piece.start if piece.start >= 0 else p.text.find(piece.text)
    if len(p.box_starts) != len(p.boxes) or not p.boxes or begin < 0:
        return [(b, 0) for b in (piece.boxes if piece.boxes is not None else p.boxes)]
    lines = lines_in(p.box_starts, len(p.text), begin, begin + len(piece.text))
    return [(p.boxes[k], max(0, p.box_starts[k] - begin)) for k in lines]


def lines_in(starts: Sequence[int], text_end: int, start: int, end: int) -> list[int]:
    """The lines (by index) that hold some of a text from `start` to `end`, given where each line starts in it and
    where the last ends: a paragraph's lines for a piece of it, a chunk's lines for a claim's span."""
    ends = [*starts[1:], text_end]
    return [k for k, (s, e) in enumerate(zip(starts, ends, strict=True)) if s < end and max(e, s + 1) > start]


def _runs(paragraphs: list[tuple[int, Paragraph]]) -> Iterator[list[tuple[int, Paragraph]]]:
    """Body paragraphs between captions and tables, and each caption or table on its own."""
    run: list[tuple[int, Paragraph]] = []
    for item in paragraphs:
        if item[1].kind != "body":
            if run:
                yield run
                run = []
            yield [item]
        else:
            run.append(item)
    if run:
        yield run
