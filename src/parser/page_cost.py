"""What a page costs to read, measured before PyMuPDF reads it.

When MuPDF extracts a page's text it builds every glyph in memory, and when it lists a page's drawings it builds
every path: a page a few hundred kilobytes long, compressed, can hold millions of text-show operators (gigabytes
once read) or a million line segments (seconds per pass, and again each time it is drawn). The page's content
streams (and the form XObjects it draws) are inflated here a block at a time, never whole, and what they show
counted: the bytes of its strings (about one glyph a byte) and its path operators. A page over the glyph limit is
refused before MuPDF reads it; one over the path limit is read for its text only (its figures and ruled tables
are not looked for).

Counts are estimates of what MuPDF would build (a form drawn many times counts once): the worker process that
parses a file stands behind them with its own memory and time limits (isolation.py).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import pymupdf

#: Glyphs one page may show: a dense two-column page shows about 10,000, a table in small type perhaps 30,000.
MAX_PAGE_GLYPHS = 400_000
#: Path operators past which a page's drawings are not read (a dense vector plot has tens of thousands).
MAX_PAGE_PATHS = 200_000
#: Bytes of content a page may inflate to, counted as they are inflated (no page of a paper comes near).
MAX_PAGE_INFLATED = 256 * 1024 * 1024
BLOCK = 1 << 20

_STRING = re.compile(rb"\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>")
_PATH_OP = re.compile(rb"(?<![A-Za-z*'\"])(?:m|l|c|v|y|h|re)(?![A-Za-z*'\"])")


@dataclass
class PageCost:
    """What a page's content holds: string bytes (about its glyphs), path operators, bytes inflated."""

    glyphs: int = 0
    paths: int = 0
    inflated: int = 0
    #: False when some stream used a filter this scan does not inflate (the counts then leave it out).
    complete: bool = True


def page_cost(doc: pymupdf.Document, page: pymupdf.Page, stop_glyphs: int | None = None) -> PageCost:
    """The cost of `page`: its content streams and the form XObjects it uses, each counted once; the count stops
    early once over `stop_glyphs`."""
    cost = PageCost()
    xrefs = list(page.get_contents())
    try:
        xrefs += [x[0] for x in page.get_xobjects() if doc.xref_get_key(x[0], "Subtype")[1] == "/Form"]
    except (RuntimeError, ValueError, IndexError):
        cost.complete = False  # damaged resources: MuPDF will say so itself when it reads the page
    for xref in dict.fromkeys(xrefs):
        if cost.inflated > MAX_PAGE_INFLATED or (stop_glyphs is not None and cost.glyphs > stop_glyphs):
            break
        _count(doc, xref, cost, stop_glyphs)
    return cost


def _count(doc: pymupdf.Document, xref: int, cost: PageCost, stop_glyphs: int | None) -> None:
    try:
        kind, value = doc.xref_get_key(xref, "Filter")
        raw = doc.xref_stream_raw(xref)
    except (RuntimeError, ValueError):
        cost.complete = False
        return
    filters = re.findall(r"/(\w+)", value) if kind in ("name", "array") else []
    if raw is None or filters not in ([], ["FlateDecode"], ["Fl"]):
        cost.complete = cost.complete and raw is None
        return
    carry = b""
    for block in _blocks(raw, bool(filters), cost):
        cost.inflated += len(block)
        carry = _scan(carry + block, cost)
        if cost.inflated > MAX_PAGE_INFLATED or (stop_glyphs is not None and cost.glyphs > stop_glyphs):
            return
    _scan(carry, cost, final=True)


def _blocks(raw: bytes, deflated: bool, cost: PageCost) -> Iterator[bytes]:
    """The stream's bytes a block at a time, inflated as they are read (never more than BLOCK at once)."""
    if not deflated:
        yield from (raw[i : i + BLOCK] for i in range(0, len(raw), BLOCK))
        return
    inflater = zlib.decompressobj()
    try:
        for start in range(0, len(raw), BLOCK):
            data = raw[start : start + BLOCK]
            while data:
                yield inflater.decompress(data, BLOCK)
                data = inflater.unconsumed_tail
    except zlib.error:
        cost.complete = False  # MuPDF reads what it can of a broken stream; so does the count


def _scan(data: bytes, cost: PageCost, *, final: bool = False) -> bytes:
    """Count the strings and path operators of `data`; returns the tail to carry into the next block (a string or
    an operator may be cut at the block's end)."""
    cut = len(data) if final else max(data.rfind(b"\n"), data.rfind(b" "), data.rfind(b")")) + 1
    if cut <= 0:
        if len(data) < 4 * BLOCK:
            return data
        cost.glyphs += len(data)  # megabytes without a space or a string's end: one huge string, as text
        return b""
    body = data[:cut]
    for match in _STRING.finditer(body):
        text = match.group()
        cost.glyphs += len(text) - 2 if text[:1] == b"(" else (len(text) - 2) // 2
    cost.paths += len(_PATH_OP.findall(body))
    return data[cut:]
