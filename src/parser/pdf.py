"""parse_pdf: a PDF file -> Paper, with its real structure."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf

from ..errors import ParseError
from ..isolation import heartbeat
from .blocks import Block, build_blocks, paragraph_text_at
from .headings import find_headings
from .layout import (
    Line,
    PageLines,
    body_font,
    body_size,
    drop_page_furniture,
    figure_boxes,
    line_gap,
    order_page,
    raw_lines,
)
from .metadata import authors_from, byline, identifiers, metadata_title, title_lines, title_text, year_from
from .models import Paper
from .page_cost import MAX_PAGE_GLYPHS, MAX_PAGE_INFLATED, MAX_PAGE_PATHS, page_cost
from .structure import Heading, Item, Text, assemble
from .tables import FoundTable, find_tables, table_block
from .text import normalize, vocabulary

MAX_PAGES = 500
_REFERENCES = re.compile(r"^(\d+\.?\s*)?(references|bibliography|literature cited|参考文献)$", re.I)
# "1 https://...", "*Equal contribution", "†Work done at ..." -- but not "[5] A. Author ...".
_FOOTNOTE_MARK = re.compile(r"^(\d{1,2}\s?[A-Za-z]|[*\u2217\u2020\u2021\u00a7\u00b6])")


def parse_pdf(
    path: str | Path,
    *,
    title: str | None = None,
    use_outline: bool = True,
    max_pages: int = MAX_PAGES,
    max_page_glyphs: int = MAX_PAGE_GLYPHS,
    max_page_paths: int = MAX_PAGE_PATHS,
) -> Paper:
    """Parse a PDF into a Paper. `title` overrides the detected title.

    Raises ParseError (naming the file, and the page where it is one) for anything that is not a readable,
    text-bearing PDF of at most `max_pages` pages, each showing at most `max_page_glyphs` glyphs. A page with more
    than `max_page_paths` path operators is read for its text alone (see page_cost.py). Reports each page with
    `isolation.heartbeat`, so a worker process running it can hold each page to a time limit.
    """
    path = Path(path)
    doc = open_pdf(path, max_pages)
    with doc:
        try:
            return _parse(doc, path, title, use_outline, max_page_glyphs, max_page_paths)
        except ParseError:
            raise
        except (RuntimeError, ValueError) as exc:  # MuPDF errors surface as these
            raise ParseError(path, f"damaged PDF: {exc}") from exc


def open_pdf(path: Path, max_pages: int = MAX_PAGES) -> pymupdf.Document:
    """Open a PDF, turning every way it can be unusable (more than `max_pages` pages too) into a ParseError."""
    if not path.is_file():
        raise ParseError(path, "file not found")
    size = path.stat().st_size
    if size == 0:
        raise ParseError(path, "empty file")
    with path.open("rb") as fh:
        head = fh.read(1024)
        fh.seek(max(0, size - 4096))
        tail = fh.read()
    if b"%PDF-" not in head:
        raise ParseError(path, "not a PDF (no %PDF header)")
    if b"%%EOF" not in tail:
        raise ParseError(path, "truncated PDF (no %%EOF marker at the end of the file)")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # MuPDF raises several types for corrupt input
        raise ParseError(path, f"corrupt PDF: {exc}") from exc
    if doc.needs_pass:
        doc.close()
        raise ParseError(path, "encrypted PDF (a password is required)")
    pages = doc.page_count  # read before close(): a closed document raises on every attribute
    if pages == 0:
        doc.close()
        raise ParseError(path, "corrupt PDF: no pages")
    if pages > max_pages:
        doc.close()
        raise ParseError(path, f"too many pages ({pages} > {max_pages})")
    return doc


def _parse(
    doc: pymupdf.Document, path: Path, title: str | None, use_outline: bool, max_glyphs: int, max_paths: int
) -> Paper:
    raw = []
    light: list[bool] = []  # per page: its drawings may be listed
    for i, page in enumerate(doc):
        heartbeat(f"page {i + 1}")
        cost = page_cost(doc, page, stop_glyphs=max_glyphs)
        if cost.glyphs > max_glyphs:
            raise ParseError(
                path, f"page {i + 1}: shows over {max_glyphs:,} glyphs (parsing.max_page_glyphs); not read"
            )
        if cost.inflated > MAX_PAGE_INFLATED:
            raise ParseError(path, f"page {i + 1}: its content inflates past {MAX_PAGE_INFLATED >> 20} MB; not read")
        light.append(cost.paths <= max_paths)
        try:
            raw.append(raw_lines(page, i + 1))
        except Exception as exc:
            raise ParseError(path, f"page {i + 1}: cannot extract text ({exc})") from exc
    if sum(len(ln.text) for lines in raw for ln in lines) < 50:
        raise ParseError(path, "no extractable text (a scanned PDF?); OCR is not supported")
    pages, body, cleaned = lay_out(doc, raw, light)
    heights = [p.height for p in pages]

    meta = doc.metadata or {}
    page_one = normalize(doc[0].get_text())
    found_title = title_lines(pages[0].lines, heights[0], body)
    for ln in found_title:
        pages[0].lines.remove(ln)
    # The byline is under the title, never in a sidebar beside it (a publisher's box cites the paper as
    # "Thomason K, Babar MA, ...", BMJ's lists affiliations).
    by = byline([ln for ln in pages[0].lines if not ln.sidebar], found_title)
    paper_title = title or metadata_title(meta, page_one) or title_text(found_title) or path.stem

    tables = _take_tables(doc, pages, body)
    toc = doc.get_toc() if use_outline else []
    leading = line_gap(pages, body)
    hits = find_headings(pages, body, body_font(cleaned, body), leading, toc, paper_title)
    blocks = _mark_tables(build_blocks(pages, body, hits, leading), tables)
    blocks = _rejoin_across_floats(_drop_footnotes(_attach_tables(blocks), body, heights))
    vocab = vocabulary(ln.text for p in pages for ln in p.lines)
    items: list[Item] = []
    for b in blocks:
        if b.kind == "heading":
            items.append(Heading(b.text, b.page, b.level, b.size))
            continue
        text, boxes, starts = paragraph_text_at(b, vocab)
        if b.table is not None:
            text, boxes, starts, table = table_block(b.table, text, boxes, starts)
            items.append(Text(text, b.page, b.page_end, "table", boxes, starts, table))
        else:
            items.append(Text(text, b.page, b.page_end, "caption" if b.kind == "caption" else "body", boxes, starts))
    paper = assemble(
        items,
        title=normalize(paper_title),
        authors=authors_from(meta, by),
        year=year_from(page_one, meta),
        pages=doc.page_count,
        source=str(path),
    )
    paper.arxiv_id, paper.doi = identifiers(page_one)
    return paper


def lay_out(
    doc: pymupdf.Document, raw: list[list[Line]], light: list[bool] | None = None
) -> tuple[list[PageLines], float, list[list[Line]]]:
    """Pages in reading order without furniture, the body type size, and the cleaned lines per page. `light`: per
    page, whether its drawings may be listed (figures are looked for only there; default every page)."""
    heights = [page.rect.height for page in doc]

    def order(body: float) -> tuple[list[PageLines], list[list[Line]]]:
        cleaned = drop_page_furniture(raw, heights, body)
        return [
            order_page(lines, i + 1, doc[i].rect.width, heights[i], body) for i, lines in enumerate(cleaned)
        ], cleaned

    body = body_size(raw)
    pages, cleaned = order(body)
    # In a short paper the reference list can outweigh the body text: measure the body before it.
    running = body_size([_before_references([ln for p in pages for ln in p.lines])])
    if running != body:
        body = running
        pages, cleaned = order(body)
    for page, pdf_page in zip(pages, doc, strict=True):
        page.drawings = light[page.number - 1] if light is not None else True
        if page.drawings:
            heartbeat(f"page {page.number} (figures)")
            page.figures = figure_boxes(pdf_page, page.lines, body)
    return pages, body, cleaned


def _before_references(lines: list[Line]) -> list[Line]:
    """The lines before a closing References heading (all of them when there is none)."""
    for i in range(len(lines) - 1, int(0.4 * len(lines)), -1):
        if _REFERENCES.match(lines[i].text):
            return lines[:i]
    return lines


def _take_tables(doc: pymupdf.Document, pages: list[PageLines], body: float) -> dict[int, FoundTable]:
    """Find the tables of pages that hold a table caption, and take their lines out of the running text.

    Returns the tables by the id of their caption's first line.
    """
    found: dict[int, FoundTable] = {}
    for page in pages:
        heartbeat(f"page {page.number} (tables)")
        for table in find_tables(doc[page.number - 1], page, body):
            found[id(table.caption_lines[0])] = table
            inside = {id(ln) for ln in table.lines}
            page.lines = [ln for ln in page.lines if id(ln) not in inside]
    return found


def _mark_tables(blocks: list[Block], tables: dict[int, FoundTable]) -> list[Block]:
    """A caption block whose table was found becomes the table's block."""
    for b in blocks:
        if b.kind == "caption" and id(b.lines[0]) in tables:
            b.kind = "table"
            b.table = tables[id(b.lines[0])]
    return blocks


def _attach_tables(blocks: list[Block]) -> list[Block]:
    """Table cells that follow a "Table N" caption in small type join the caption (a table not found)."""
    out: list[Block] = []
    table: Block | None = None
    for b in blocks:
        if b.kind == "caption":
            table = b if re.match(r"(?i)table", b.lines[0].text) else None
        elif table is not None and b.kind == "body" and _continues_table(table, b):
            table.lines.extend(b.lines)
            continue
        else:
            table = None
        out.append(b)
    return out


def _continues_table(table: Block, b: Block) -> bool:
    last, first = table.lines[-1], b.lines[0]
    return (
        b.size <= table.size + 0.3
        and first.page == last.page
        and first.column == last.column
        and -2 * b.size < first.y0 - last.y1 < 3 * b.size
    )


def _rejoin_across_floats(blocks: list[Block]) -> list[Block]:
    """A paragraph cut by a figure or table ("...these impro-" | Figure 2 | "vements ...") is one paragraph."""
    out: list[Block] = []
    pending: list[Block] = []  # captions seen since the last body block
    for b in blocks:
        if b.kind in ("caption", "table"):
            pending.append(b)
            continue
        last_body = next((x for x in reversed(out) if x.kind == "body"), None)
        cut = (
            b.kind == "body"
            and pending
            and last_body is not None
            and out[-1] is last_body
            and not re.search(r"[.!?:]['\")\]]?$", last_body.lines[-1].text)
            and re.match(r"[a-z]", b.lines[0].text)
        )
        if cut and last_body is not None:
            last_body.lines.extend(b.lines)
        else:
            out.append(b)
        out.extend(pending)
        pending = []
    return out + pending


def _drop_footnotes(blocks: list[Block], body: float, heights: list[float]) -> list[Block]:
    """Small-type body blocks low on a page are footnotes: not part of the running text."""
    kept = []
    for b in blocks:
        first = b.lines[0]
        low = first.y0 > 0.7 * heights[first.page - 1]
        marked = bool(_FOOTNOTE_MARK.match(first.text))
        if b.kind == "body" and b.size < 0.92 * body and low and marked:
            continue
        kept.append(b)
    return kept


__all__ = ["PageLines", "open_pdf", "parse_pdf"]
