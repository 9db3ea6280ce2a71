"""From ordered lines to blocks: headings, body paragraphs and captions."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from .categories import match_category
from .layout import Line, PageLines
from .models import SectionCategory as Cat
from .numbering import Numbering, parse_heading
from .text import join_lines

CAPTION = re.compile(r"^(figure|fig\.?|table)\s*(\d+|[ivx]+)\s*[:.|\u2013\u2014-]", re.I)
_CAPTION_LOOSE = re.compile(r"^(figure|fig\.?|table)\s*(\d+|[ivx]+)\b", re.I)


@dataclass
class Block:
    """A heading, a body paragraph or a caption, with the lines it came from."""

    kind: Literal["heading", "body", "caption"]
    lines: list[Line] = field(default_factory=list)
    text: str = ""
    numbering: Numbering | None = None
    level: int | None = None  # from the PDF outline, when it was used

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


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def heading_candidate(ln: Line, body: float) -> Numbering | None:
    """Numbering of a line that looks like a section heading, else None."""
    text = ln.text
    words = text.split()
    if not 2 <= len(text) <= 120 or len(words) > 16 or not re.search(r"[A-Za-z]{2}", text):
        return None
    if _CAPTION_LOOSE.match(text):
        return None
    num = parse_heading(text)
    if ln.bold and match_category(num.name) is Cat.ABSTRACT and len(words) <= 2:
        return num  # abstracts are often set smaller than the body
    big = ln.size >= 1.12 * body
    if ln.size < 0.95 * body or not (ln.bold or big):
        return None
    if not num.name or num.name[-1] in ",;" or re.match(r"^[a-z]", num.name):
        return None
    named = match_category(num.name) is not None and len(num.name.split()) <= 6
    if num.number is not None or named or big:
        return num
    return None


def toc_headings(pages: list[PageLines], toc: list[list[object]]) -> dict[int, tuple[int, int]] | None:
    """Match PDF outline entries to lines: {id(first line): (level, n_lines)}, or None.

    Returns None when the outline does not match the text well enough to trust it.
    """
    entries = [(int(str(e[0])), str(e[1]), int(str(e[2]))) for e in toc if len(e) >= 3]
    if len(entries) < 2:
        return None
    top = min(lvl for lvl, _, _ in entries)
    by_page: dict[int, list[Line]] = {p.number: p.lines for p in pages}
    found: dict[int, tuple[int, int]] = {}
    for lvl, title, page_no in entries:
        want_full, want_name = _key(title), _key(parse_heading(title).name)
        if not want_name:
            continue
        hit = _find_heading(by_page, page_no, want_full, want_name, found)
        if hit is not None:
            line_id, n_lines = hit
            found[line_id] = (min(lvl - top, 2), n_lines)
    return found if len(found) >= max(2, 0.6 * len(entries)) else None


def _find_heading(
    by_page: dict[int, list[Line]],
    page_no: int,
    want_full: str,
    want_name: str,
    taken: dict[int, tuple[int, int]],
) -> tuple[int, int] | None:
    for page in (page_no, page_no - 1, page_no + 1):
        lines = by_page.get(page, [])
        for i, ln in enumerate(lines):
            if id(ln) in taken:
                continue
            got = ""
            for n in range(3):  # a heading may wrap over up to three lines
                if i + n >= len(lines):
                    break
                got += _key(lines[i + n].text)
                name = _key(parse_heading(" ".join(x.text for x in lines[i : i + n + 1])).name)
                if got in (want_full, want_name) or name == want_name:
                    return id(ln), n + 1
                if not (want_full.startswith(got) or want_name.startswith(got)):
                    break
    return None


def build_blocks(pages: list[PageLines], body: float, outline: dict[int, tuple[int, int]] | None) -> list[Block]:
    """Group the ordered lines of all pages into heading, body and caption blocks."""
    lines = [ln for p in pages for ln in p.lines]
    page_of = {p.number: p for p in pages}
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        head = _heading_at(lines, i, body, outline, page_of)
        if head is not None:
            n_lines, numbering, level = head
            block = Block("heading", lines[i : i + n_lines], numbering=numbering, level=level)
            block.text = " ".join(x.text for x in block.lines)
            blocks.append(block)
            i += n_lines
            continue
        prev = blocks[-1] if blocks else None
        starts_caption = bool(CAPTION.match(ln.text)) or (bool(_CAPTION_LOOSE.match(ln.text)) and ln.size < 0.97 * body)
        if prev is None or prev.kind == "heading" or starts_caption or _breaks(prev.lines[-1], ln, page_of):
            blocks.append(Block("caption" if starts_caption else "body", [ln]))
        else:
            prev.lines.append(ln)
        i += 1
    return blocks


def _heading_at(
    lines: list[Line],
    i: int,
    body: float,
    outline: dict[int, tuple[int, int]] | None,
    page_of: dict[int, PageLines],
) -> tuple[int, Numbering, int | None] | None:
    ln = lines[i]
    if outline is not None:
        hit = outline.get(id(ln))
        if hit is None:
            return None
        level, n_lines = hit
        return n_lines, parse_heading(" ".join(x.text for x in lines[i : i + n_lines])), level
    num = heading_candidate(ln, body)
    if num is None:
        return None
    n_lines = 1
    # A long heading wraps: take following lines set in the same style, close below,
    # when the first line runs (nearly) to the column's right edge.
    page = page_of[ln.page]
    right = page.column_right.get(ln.column, ln.x1)
    width = right - page.column_left.get(ln.column, ln.x0)
    full = ln.x1 > right - 0.3 * width
    while full and i + n_lines < len(lines) and n_lines < 3:
        nxt, last = lines[i + n_lines], lines[i + n_lines - 1]
        same_style = nxt.bold == ln.bold and abs(nxt.size - ln.size) < 0.3 and nxt.page == ln.page
        close = 0 <= nxt.y0 - last.y1 < 0.8 * ln.size
        if not (same_style and close) or (heading_candidate(nxt, body) is not None and parse_heading(nxt.text).number):
            break
        n_lines += 1
    if n_lines > 1:
        num = parse_heading(" ".join(x.text for x in lines[i : i + n_lines]))
    return n_lines, num, None


def _breaks(prev: Line, ln: Line, pages: dict[int, PageLines]) -> bool:
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
    if gap > 0.7 * size or gap < -0.5 * size:
        return True
    if ln.x0 > left + 0.8 * size and ends_sentence:
        return True
    if ln.spans and ln.spans[0].bold and not ln.bold and ends_sentence:
        return True  # a bold run-in lead starts a paragraph
    return short and ends_sentence


def paragraph_text(block: Block, vocab: Counter[str]) -> str:
    """The block's text with hyphenated line breaks re-joined."""
    return join_lines([ln.text for ln in block.lines], vocab)
