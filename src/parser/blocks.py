"""From ordered lines to blocks: headings, body paragraphs and captions."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal

from .captions import starts_caption
from .headings import Hit
from .layout import Line, PageLines
from .models import Box
from .numbering import Numbering, parse_heading
from .tables import FoundTable
from .text import join_lines_at


@dataclass
class Block:
    """A heading, a body paragraph, a caption or a table (its caption's lines), with the lines it came from."""

    kind: Literal["heading", "body", "caption", "table"]
    lines: list[Line] = field(default_factory=list)
    text: str = ""
    numbering: Numbering | None = None
    level: int | None = None
    table: FoundTable | None = None

    @property
    def page(self) -> int:
        return self.lines[0].page

    @property
    def page_end(self) -> int:
        return self.lines[-1].page

    @property
    def size(self) -> float:
        weights: Counter[float] = Counter()
        for ln in self.lines:
            weights[ln.size] += len(ln.text)
        return weights.most_common(1)[0][0]


def build_blocks(pages: list[PageLines], body: float, hits: dict[int, Hit], leading: float) -> list[Block]:
    """Group the ordered lines of all pages into heading, body and caption blocks.

    `leading` is the usual space between the lines of a paragraph (see layout.line_gap).
    """
    lines = [ln for p in pages for ln in p.lines]
    page_of = {p.number: p for p in pages}
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        hit = hits.get(i)
        if hit is not None:
            block = Block("heading", lines[i : i + hit.n_lines], text=hit.title, level=hit.level)
            block.numbering = parse_heading(hit.title)
            blocks.append(block)
            if not hit.runin_spans:
                i += hit.n_lines
                continue
            # A run-in heading: the rest of its line opens the section's first paragraph.
            ln = replace(ln, spans=ln.spans[hit.runin_spans :])
            blocks.append(Block("body", [ln]))
            i += 1
            continue
        prev = blocks[-1] if blocks else None
        caption = starts_caption(ln, body)
        if prev is None or prev.kind == "heading" or caption or _breaks(prev.lines[-1], ln, page_of, leading):
            blocks.append(Block("caption" if caption else "body", [ln]))
        else:
            prev.lines.append(ln)
        i += 1
    return blocks


def _breaks(prev: Line, ln: Line, pages: dict[int, PageLines], leading: float) -> bool:
    """True when `ln` starts a new paragraph after `prev`."""
    size = max(prev.size, ln.size, 1.0)
    if abs(prev.size - ln.size) > 0.8:
        return True
    page = pages[prev.page]
    right = page.column_right.get(prev.column, prev.x1)
    left = pages[ln.page].column_left.get(ln.column, ln.x0)
    width = max(right - page.column_left.get(prev.column, prev.x0), 1.0)
    ends_sentence = bool(re.search(r"[.!?:]['\")\]]?$", prev.text))
    short = prev.x1 < right - 0.12 * width
    if ln.page != prev.page or ln.column != prev.column:
        return short and ends_sentence
    gap = ln.y0 - prev.y1
    if gap > max(0.7 * size, leading + 0.5 * size) or gap < -0.5 * size:
        return True
    if ln.x0 > left + 0.8 * size and ends_sentence:
        return True
    if ln.spans and ln.spans[0].bold and not ln.bold and ends_sentence:
        return True  # a bold run-in lead starts a paragraph
    return short and ends_sentence


def paragraph_text(block: Block, vocab: Counter[str]) -> str:
    """The block's text with hyphenated line breaks re-joined."""
    return paragraph_text_at(block, vocab)[0]


def paragraph_text_at(block: Block, vocab: Counter[str]) -> tuple[str, list[Box], list[int]]:
    """The block's text, a box per line, and where each line's text begins in it."""
    # Running text marks its superscripts and subscripts; a caption or a table's lines read as printed.
    lines = [ln.marked_text if block.kind == "body" else ln.text for ln in block.lines]
    text, starts = join_lines_at(lines, vocab)
    return text, [line_box(ln) for ln in block.lines], starts


def line_box(ln: Line) -> Box:
    """The box of a line on its page."""
    return Box.of(ln.page, ln.x0, ln.y0, ln.x1, ln.y1)
