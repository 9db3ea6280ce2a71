"""Page images for the web page: which file holds a paper's pages, and which of a chunk's boxes lie on a page.

The PDF is found again through the catalogue (the paths that held the paper's bytes, an upload's kept file
among them) and checked against the paper's sha256, so a file replaced since its ingest is never shown as the
paper. The drawing itself is parser/page_image.py, run in a worker process (routes/pages.py).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..rag.ingest import file_sha256
from ..rag.paths import unescape_path
from ..rag.store import PaperRecord
from .errors import ApiError

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


def find_pdf(record: PaperRecord, *, not_a_pdf: tuple[int, str] = (400, "it has no pages to show")) -> Path:
    """The PDF on disk holding the paper's bytes.

    ApiError `not_a_pdf` when the paper was read from Markdown or text, with the status and the words of
    `not_a_pdf` (a page image asked of it is a bad request, 400; the PDF itself is not there, 404), 410 `pdf_gone`
    when no path it was read from still holds its bytes (removed, moved or changed since)."""
    stored = list(dict.fromkeys([*record.sources, record.source]))
    paths = [unescape_path(s) for s in stored if s]
    pdfs = [p for p in paths if p.suffix.lower() == ".pdf"]
    if paths and not pdfs:
        status, lacking = not_a_pdf
        raise ApiError(
            status, "not_a_pdf", f"paper {record.doc_id} was read from {paths[0].name}, not a PDF: {lacking}"
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
