"""A page of a PDF as PNG, with rectangles (a chunk's line boxes) drawn over it as a highlighter would.

Boxes are in PDF points in the frame PyMuPDF's text extraction uses, which is also the frame its drawing calls
take, so they land on their lines on rotated pages too. Pure PyMuPDF work: the server runs it in a worker process
(isolation.py), since MuPDF holds the GIL for as long as a page takes to draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from ..errors import PaperscopeError

MIN_DPI, MAX_DPI, DEFAULT_DPI = 36, 300, 110
MIN_WIDTH, MAX_WIDTH = 64, 4000
#: A page bigger than this at the asked resolution is refused (a poster at 300 dpi would be hundreds of MB).
MAX_PIXELS = 40_000_000
#: Translucent yellow over the lines, like a highlighter: the text stays readable under it.
FILL = (1.0, 0.8, 0.0)
FILL_OPACITY = 0.4
PAD = 1.0  # points around each line box: the box is the glyphs' extent, the eye wants a little air

Rect = tuple[float, float, float, float]
Problem = Literal["unreadable", "unknown_page", "too_large"]


class PageImageError(PaperscopeError):
    """A page that cannot be drawn: the file no longer opens as a PDF, no such page, or an image too large."""

    def __init__(self, problem: Problem, message: str) -> None:
        self.problem = problem
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:  # raised in a worker process, it crosses back pickled
        return (type(self), (self.problem, str(self)))


class PageImage(NamedTuple):
    """A rendered page: the PNG, and its pixels per PDF point (to place a chunk's boxes on it)."""

    png: bytes
    scale: float


def render_page(
    path: Path, page: int, *, dpi: int | None = None, width: int | None = None, rects: Sequence[Rect] = ()
) -> PageImage:
    """Page `page` (1-based) of the PDF at `path` as PNG, at `dpi` or scaled to `width` pixels, with `rects`
    (PDF points) drawn as translucent boxes. PageImageError (one line naming the file) when it cannot be."""
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)  # a file MuPDF cannot draw is one PageImageError, not stderr noise
    try:
        doc = pymupdf.open(path)
    except Exception as exc:  # PyMuPDF raises its own types, and RuntimeError/ValueError for damaged files
        raise PageImageError("unreadable", f"{path.name}: cannot be opened as a PDF any more ({exc})") from exc
    with doc:
        if not 1 <= page <= doc.page_count:
            raise PageImageError("unknown_page", f"{path.name} has pages 1..{doc.page_count}; there is no page {page}")
        pdf_page = doc[page - 1]
        box = pdf_page.rect
        scale = (width / box.width) if width is not None else (dpi or DEFAULT_DPI) / 72
        pixels = box.width * scale * box.height * scale
        if pixels > MAX_PIXELS:
            raise PageImageError(
                "too_large",
                f"page {page} of {path.name} would be {int(box.width * scale)}x{int(box.height * scale)} pixels, "
                f"over {MAX_PIXELS:,}; ask a lower dpi or width",
            )
        if rects:
            # One path for all boxes, filled once: lines that overlap a little do not show darker seams. Drawn on
            # the page in memory only (the document is never saved); overlay: above the text.
            shape = pdf_page.new_shape()
            for x0, y0, x1, y1 in rects:
                shape.draw_rect(pymupdf.Rect(x0 - PAD, y0 - PAD, x1 + PAD, y1 + PAD))
            shape.finish(color=None, fill=FILL, fill_opacity=FILL_OPACITY)
            shape.commit(overlay=True)
        pixmap = pdf_page.get_pixmap(matrix=pymupdf.Matrix(scale, scale), alpha=False)
        return PageImage(pixmap.tobytes("png"), scale)
