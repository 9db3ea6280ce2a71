"""Page images for the web page: a page of a paper's PDF rendered as PNG, a chunk's line boxes drawn over it.

The PDF is found again through the catalogue (the paths that held the paper's bytes, an upload's kept file
among them) and checked against the paper's sha256, so a file replaced since its ingest is never shown as the
paper. Boxes are in PDF points in the frame PyMuPDF's text extraction uses, which is also the frame its drawing
calls take, so they land on their lines on rotated pages too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..rag.ingest import file_sha256
from ..rag.paths import unescape_path
from ..rag.store import PaperRecord
from .errors import ApiError

MIN_DPI, MAX_DPI, DEFAULT_DPI = 36, 300, 110
MIN_WIDTH, MAX_WIDTH = 64, 4000
#: A page bigger than this at the asked resolution is refused (a poster at 300 dpi would be hundreds of MB).
MAX_PIXELS = 40_000_000
#: Translucent yellow over the lines, like a highlighter: the text stays readable under it.
FILL = (1.0, 0.8, 0.0)
FILL_OPACITY = 0.4
PAD = 1.0  # points around each line box: the box is the glyphs' extent, the eye wants a little air

Rect = tuple[float, float, float, float]

# (path, size, mtime_ns) -> sha256: a file is hashed once, not on every page turn.
_HASHES: dict[tuple[str, int, int], str] = {}
_HASHES_LOCK = threading.Lock()


def _sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _HASHES_LOCK:
        known = _HASHES.get(key)
    if known is None:
        known = file_sha256(path)
        with _HASHES_LOCK:
            _HASHES[key] = known
    return known


def find_pdf(record: PaperRecord) -> Path:
    """The PDF on disk holding the paper's bytes.

    ApiError 400 `not_a_pdf` when the paper was read from Markdown or text (no pages to show), 410 `pdf_gone`
    when no path it was read from still holds its bytes (removed, moved or changed since)."""
    stored = list(dict.fromkeys([*record.sources, record.source]))
    paths = [unescape_path(s) for s in stored if s]
    pdfs = [p for p in paths if p.suffix.lower() == ".pdf"]
    if paths and not pdfs:
        raise ApiError(
            400, "not_a_pdf", f"paper {record.doc_id} was read from {paths[0].name}, not a PDF: it has no pages to show"
        )
    for path in pdfs:
        try:
            if path.is_file() and (not record.sha256 or _sha256(path) == record.sha256):
                return path
        except OSError:
            continue  # unreadable now: as good as gone
    names = ", ".join(sorted({p.name for p in pdfs})) or "no file recorded"
    raise ApiError(
        410,
        "pdf_gone",
        f"the PDF of paper {record.doc_id} is no longer on disk as it was ingested ({names}); "
        "ingest or upload it again to see its pages",
    )


def chunk_rects(metadata: dict[str, Any], page: int) -> list[Rect]:
    """The rectangles of a chunk's `boxes` metadata that lie on `page` (malformed entries are left out)."""
    rects: list[Rect] = []
    for box in metadata.get("boxes") or []:
        try:
            if int(box["page"]) != page:
                continue
            x0, y0, x1, y1 = (float(v) for v in box["rect"])
        except (KeyError, TypeError, ValueError):
            continue
        rects.append((x0, y0, x1, y1))
    return rects


class PageImage(NamedTuple):
    """A rendered page: the PNG, and its pixels per PDF point (to place a chunk's boxes on it)."""

    png: bytes
    scale: float


def render_page(
    path: Path, page: int, *, dpi: int | None = None, width: int | None = None, rects: Sequence[Rect] = ()
) -> PageImage:
    """Page `page` (1-based) of the PDF at `path` as PNG, at `dpi` or scaled to `width` pixels, with `rects`
    (PDF points) drawn as translucent boxes.

    ApiError 404 `unknown_page` for a page the PDF does not have, 400 `invalid_option` for an image too large,
    410 `pdf_gone` when the file can no longer be opened as a PDF."""
    import pymupdf

    try:
        doc = pymupdf.open(path)
    except Exception as exc:  # PyMuPDF raises its own types, and RuntimeError/ValueError for damaged files
        raise ApiError(410, "pdf_gone", f"{path.name}: cannot be opened as a PDF any more ({exc})") from exc
    with doc:
        if not 1 <= page <= doc.page_count:
            raise ApiError(404, "unknown_page", f"{path.name} has pages 1..{doc.page_count}; there is no page {page}")
        pdf_page = doc[page - 1]
        box = pdf_page.rect
        scale = (width / box.width) if width is not None else (dpi or DEFAULT_DPI) / 72
        pixels = box.width * scale * box.height * scale
        if pixels > MAX_PIXELS:
            raise ApiError(
                400,
                "invalid_option",
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
