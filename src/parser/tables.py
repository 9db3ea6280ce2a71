"""Tables: find the table a "Table N" caption labels, and read it as rows under their column headers.

Only pages with a table caption are searched, and only next to the caption: a table is what lies
between the horizontal rules right above or below it (booktabs, \\hline, a framed grid), or, without
rules, the run of rows of side-by-side short pieces of text there. Its grid is read from the words
inside (see table_grid.py). A detection that does not read as a table (one column, one row, mostly
empty, sentences in the cells of an unruled one) is dropped and the page is read as before.

PyMuPDF's own finder (`page.find_tables`) was measured on the dev papers and not used: its layout
model finds the right regions but costs about 0.7 s of CPU a page, and without it the "lines"
strategy cuts booktabs tables at every rule while "text" takes two-column body text for tables.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pymupdf

from .captions import starts_caption
from .layout import Line, PageLines
from .models import Box, Table
from .rules import Rule, VRule, page_rules
from .table_grid import Rect, Word, read_grid

TABLE_CAPTION = re.compile(r"^(table|tab\.)\s*(\d+|[ivxl]+)\b", re.I)


@dataclass
class FoundTable:
    """A table found next to its caption: header, rows, and where each row stands on the page."""

    page: int
    rect: Rect
    caption_lines: list[Line]
    header: list[str]
    rows: list[list[str]]
    row_rects: list[Rect]
    header_rect: Rect | None
    lines: list[Line]  # the page lines inside the table, taken out of the running text


def is_table_caption(ln: Line, body: float) -> bool:
    """True when the line opens a table caption ("Table 3:", "TABLE IV.", "Table 2" in small type)."""
    return bool(TABLE_CAPTION.match(ln.text)) and starts_caption(ln, body)


def find_tables(pdf_page: pymupdf.Page, page: PageLines, body: float) -> list[FoundTable]:
    """The tables labelled by the table captions of a page (none when the page has no table caption)."""
    starts = [i for i, ln in enumerate(page.lines) if is_table_caption(ln, body)]
    if not starts:
        return []
    # A page too full of paths to list them (see page_cost.py) is read without its rules.
    rules, verticals = page_rules(pdf_page) if page.drawings else ([], [])
    words = [Word(*w[:5]) for w in pdf_page.get_text("words", flags=pymupdf.TEXT_MEDIABOX_CLIP)]
    captions = [_caption_lines(page, i) for i in starts]
    candidates: list[tuple[bool, int, float, int, FoundTable]] = []
    for n, caption in enumerate(captions):
        for direction in (-1, 1):
            ruled = _ruled_region(page, caption, rules, words, direction)
            rect = ruled or _text_region(page, caption, direction, body)
            if rect is None:
                continue
            table = _grid(page, caption, rect, rules, verticals, words, ruled is not None)
            if table is not None:
                gap = caption[0].y0 - table.rect[3] if direction < 0 else table.rect[1] - caption[-1].y1
                candidates.append((ruled is None, direction, gap, n, table))
    # Two captions may both border one table (Table 5's caption sits between Table 5 and Table 6). A page
    # puts its captions on one side of their tables: the side most captions have a table on wins, then
    # ruled tables and the nearest pairs are settled first; a caption or a table is used once.
    sides = Counter(d for d in (-1, 1) for n in range(len(captions)) if any(c[1:4:2] == (d, n) for c in candidates))
    usual = max((-1, 1), key=lambda d: sides[d]) if sides[-1] != sides[1] else 0
    found: list[FoundTable] = []
    done: set[int] = set()
    for _, _, _, n, table in sorted(candidates, key=lambda c: (c[0], c[1] != usual, c[2])):
        if n in done or any(_intersects(table.rect, t.rect) for t in found):
            continue
        done.add(n)
        found.append(table)
    return sorted(found, key=lambda t: t.caption_lines[0].y0)


def _intersects(a: Rect, b: Rect) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1


def _caption_lines(page: PageLines, i: int) -> list[Line]:
    """The caption's lines: the first and the lines that continue it in the same column and type."""
    lines = [page.lines[i]]
    for ln in page.lines[i + 1 :]:
        last = lines[-1]
        gap = ln.y0 - last.y1
        if ln.column != last.column or abs(ln.size - last.size) > 0.5 or not -0.3 * ln.size < gap < 0.8 * ln.size:
            break
        if ln.bold and not last.bold:  # a heading right under the caption
            break
        lines.append(ln)
    return lines


def _extent(page: PageLines, caption: list[Line]) -> tuple[float, float]:
    """The horizontal band the table may occupy: the caption's column, or the page's text width."""
    xs0 = [ln.x0 for ln in page.lines] or [0.0]
    xs1 = [ln.x1 for ln in page.lines] or [page.width]
    left, right = min(xs0), max(xs1)
    column = caption[0].column
    if not page.two_column or column == -1:
        return left, right
    mid = page.width / 2
    return (left, mid) if column == 0 else (mid, right)


def _ruled_region(
    page: PageLines, caption: list[Line], rules: list[Rule], words: list[Word], direction: int
) -> Rect | None:
    """The table between the horizontal rules next to the caption, in one direction (-1 up, +1 down)."""
    size = caption[0].size or 10.0
    xa, xb = _extent(page, caption)
    cx0, cx1 = min(ln.x0 for ln in caption), max(ln.x1 for ln in caption)
    lo_x, hi_x = min(xa, cx0), max(xb, cx1)
    edge = caption[0].y0 if direction < 0 else caption[-1].y1
    near = [
        r
        for r in rules
        if (edge - r.y if direction < 0 else r.y - edge) > -1
        # Within the caption's column, or flush with a left-aligned caption over a wider table (Elsevier).
        and (min(r.x1, hi_x) - max(r.x0, lo_x) >= 0.6 * (r.x1 - r.x0) or abs(r.x0 - cx0) <= 4)
    ]
    near.sort(key=lambda r: abs(r.y - edge))
    if not near or abs(near[0].y - edge) > 4 * size:
        return None
    first = near[0]
    chain = [first]
    # The table spans its outer rules; inner rules (midrules, cmidrules) lie within them.
    for r in near[1:]:
        if r.x0 < first.x0 - 3 or r.x1 > first.x1 + 3:
            if r.x1 > first.x0 and r.x0 < first.x1:
                break  # a wider rule across the table's band: the frame of something else
            continue
        prev = chain[-1]
        lo, hi = sorted((prev.y, r.y))
        between = [
            ln
            for ln in page.lines
            if lo < (ln.y0 + ln.y1) / 2 < hi and first.x0 - 2 <= (ln.x0 + ln.x1) / 2 <= first.x1 + 2
        ]
        # Text between rules of one extent is the table's, cells of prose included; a caption or lines of the
        # running text (flush left in their column, filling it) are not, and blank space ends the table (the
        # frame of a figure below it is no part of it).
        blank = not any(
            lo < (w.y0 + w.y1) / 2 < hi and first.x0 - 2 <= (w.x0 + w.x1) / 2 <= first.x1 + 2 for w in words
        )
        if (
            (blank and hi - lo > 1.5 * size)
            or hi - lo > 0.6 * page.height
            or any(
                ln in caption or is_table_caption(ln, size) or _running(page, ln, first.x0, first.x1 - first.x0)
                for ln in between
            )
        ):
            break
        chain.append(r)
    if len(chain) < 2:
        return None
    ys = sorted(r.y for r in chain)
    return (first.x0 - 1, ys[0], first.x1 + 1, ys[-1])


def _text_region(page: PageLines, caption: list[Line], direction: int, body: float) -> Rect | None:
    """An unruled table: the rows of short, side-by-side pieces of text next to the caption."""
    size = caption[0].size or body
    xa, xb = _extent(page, caption)
    edge = caption[0].y0 if direction < 0 else caption[-1].y1
    cands = [
        ln
        for ln in page.lines
        if ln not in caption
        and xa - 2 <= (ln.x0 + ln.x1) / 2 <= xb + 2
        and ((ln.y1 <= edge + 1) if direction < 0 else (ln.y0 >= edge - 1))
    ]
    cands.sort(key=lambda ln: abs((ln.y0 + ln.y1) / 2 - edge))
    rows: list[list[Line]] = []
    for ln in cands:
        if rows and _same_row(rows[-1][0], ln):
            rows[-1].append(ln)
            continue
        if rows:
            last = rows[-1]
            gap = (min(x.y0 for x in last) - ln.y1) if direction < 0 else (ln.y0 - max(x.y1 for x in last))
        else:
            gap = (edge - ln.y1) if direction < 0 else (ln.y0 - edge)
        if gap > 2.5 * size or is_table_caption(ln, body) or _prose(ln, _column_width(page, ln, xb - xa)):
            break
        rows.append([ln])
    if len(rows) < 3 or sum(1 for r in rows if len(r) >= 2) < 2:
        return None
    lines = [ln for r in rows for ln in r]
    if sum(ln.math_share for ln in lines) > 0.3 * len(lines):
        return None  # a displayed formula, not a table
    return (
        min(ln.x0 for ln in lines) - 1,
        min(ln.y0 for ln in lines) - 1,
        max(ln.x1 for ln in lines) + 1,
        max(ln.y1 for ln in lines) + 1,
    )


def _same_row(a: Line, b: Line) -> bool:
    overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return overlap > 0.5 * min(a.height, b.height)


def _column_width(page: PageLines, ln: Line, default: float) -> float:
    """The width of the body text's column a line sits in (at most `default`)."""
    if ln.column in (0, 1) or not page.two_column:
        left = page.column_left.get(ln.column)
        right = page.column_right.get(ln.column)
        if left is not None and right is not None and right > left:
            return min(default, right - left)
    return default


def _running(page: PageLines, ln: Line, left: float, width: float) -> bool:
    """A line of the running text: prose that starts at its column's left edge and fills the column."""
    column = _column_width(page, ln, width)
    edges = {left, page.column_left.get(ln.column, left)}
    flush = any(abs(ln.x0 - x) <= 3 for x in edges)
    return flush and _prose(ln, column) and ln.x1 - ln.x0 >= 0.85 * column


def _prose(ln: Line, width: float) -> bool:
    """A line of running text: it fills the width with many words, half of them lower-case words."""
    words = ln.text.split()
    lower = sum(1 for w in words if re.fullmatch(r"[a-z][a-z\-]+[,.;:]?", w))
    return ln.x1 - ln.x0 >= 0.7 * width and len(words) >= 8 and lower >= 0.5 * len(words)


def _grid(
    page: PageLines,
    caption: list[Line],
    rect: Rect,
    page_rules: list[Rule],
    verticals: list[VRule],
    words: list[Word],
    ruled: bool,
) -> FoundTable | None:
    """The table inside `rect`, with the page lines it takes from the running text; None when the words
    there do not read as a table."""
    x0, y0, x1, y1 = rect
    rules = [r for r in page_rules if y0 - 1 <= r.y <= y1 + 1 and r.x0 >= x0 - 2 and r.x1 <= x1 + 2]
    grid = read_grid(rect, rules, verticals, words, ruled)
    if grid is None:
        return None
    lines = [
        ln
        for ln in page.lines
        if ln not in caption and x0 - 1 <= (ln.x0 + ln.x1) / 2 <= x1 + 1 and y0 - 1 <= (ln.y0 + ln.y1) / 2 <= y1 + 1
    ]
    return FoundTable(page.number, rect, caption, grid.header, grid.rows, grid.row_rects, grid.header_rect, lines)


def table_text(label: str, caption: str, header: list[str], rows: list[list[str]]) -> list[str]:
    """The table as lines of text: the caption, then each row with its column headers and the table's
    label, so that a row quoted alone still says what it is ("Table 2 | Model: BERT | F1: 90.9")."""
    out = [caption]
    for row in rows:
        parts = [label]
        for name, value in zip(header, row, strict=False):
            if value:
                parts.append(f"{name}: {value}" if name else value)
        out.append(" | ".join(parts))
    return out


def table_block(
    found: FoundTable, caption: str, caption_boxes: list[Box], caption_starts: list[int]
) -> tuple[str, list[Box], list[int], Table]:
    """A found table as a paragraph: its text (see table_text), a box per caption line and per row
    (the header's box goes with the first row), where each box's text begins, and the cells."""
    m = TABLE_CAPTION.match(caption)
    label = m.group(0) if m else "Table"
    lines = table_text(label, caption, found.header, found.rows)
    boxes, starts = list(caption_boxes), list(caption_starts)
    offset = len(lines[0]) + 1
    if found.header_rect is not None:
        boxes.append(Box.of(found.page, *found.header_rect))
        starts.append(offset)
    for line, rect in zip(lines[1:], found.row_rects, strict=True):
        boxes.append(Box.of(found.page, *rect))
        starts.append(offset)
        offset += len(line) + 1
    table = Table(label=label, caption=caption, page=found.page, header=found.header, rows=found.rows)
    return "\n".join(lines), boxes, starts, table
