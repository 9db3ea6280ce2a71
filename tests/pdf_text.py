"""The text printed inside rectangles of a PDF's pages, read once per page (PyMuPDF's get_textbox walks every
character of the page for each rectangle, which made box checks over whole papers take minutes)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pymupdf


class PageWords:
    """The words of every page of a PDF, with their boxes."""

    def __init__(self, pdf: Path) -> None:
        with pymupdf.open(pdf) as doc:
            self.pages = [page.get_text("words", sort=True) for page in doc]

    def inside(self, page: int, rect: list[float] | tuple[float, ...], slack: float = 1.0) -> str:
        """The words of 1-based `page` whose centre lies inside `rect` (x0, y0, x1, y1; PDF points), in reading
        order; ligatures spelt out ("ﬁ" as "fi"), as the parser's text has them."""
        x0, y0, x1, y1 = rect
        return " ".join(
            unicodedata.normalize("NFKC", w[4])
            for w in self.pages[page - 1]
            if x0 - slack <= (w[0] + w[2]) / 2 <= x1 + slack and y0 - slack <= (w[1] + w[3]) / 2 <= y1 + slack
        )
