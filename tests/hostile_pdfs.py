"""PDFs built to cost a reader far more than their size, as a hostile-input probe made them.

`text_bomb`: one page whose content stream inflates to `mb` megabytes of text-show operators (a few hundred KB
on disk; MuPDF builds every glyph of it in memory when the text is extracted). `lines_bomb`: one page of `n`
random line segments (slow to list and to draw). Each page also shows one line of ordinary text.
"""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf

LINE = "A first line of ordinary text, as a real paper would print it on its first page."


def _page_with(path: Path, extra: bytes) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), LINE, fontsize=11)
    xref = page.get_contents()[0]
    doc.update_stream(xref, doc.xref_stream(xref) + extra, compress=True)
    doc.save(path)
    doc.close()
    return path


def plain(path: Path) -> Path:
    """A page with the ordinary line alone: what every bomb looks like without its payload."""
    return _page_with(path, b"")


def text_bomb(path: Path, mb: float) -> Path:
    """A page of `mb` MB of `(aaaa...) Tj` operators (in the font insert_text set up: /helv)."""
    unit = b"BT /helv 11 Tf 72 100 Td (aaaaaaaaaaaaaaaaaaaa) Tj ET\n"
    return _page_with(path, unit * int(mb * 1_000_000 / len(unit)))


def lines_bomb(path: Path, n: int) -> Path:
    """A page of `n` stroked random line segments."""
    rng = random.Random(1)
    parts = [b"0.1 w\n"]
    for _ in range(n):
        x0, y0, x1, y1 = (rng.randint(0, 600), rng.randint(0, 800), rng.randint(0, 600), rng.randint(0, 800))
        parts.append(b"%d %d m %d %d l S\n" % (x0, y0, x1, y1))
    return _page_with(path, b"".join(parts))
