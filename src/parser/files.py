"""Pick the parser for a file by its type."""

from __future__ import annotations

from pathlib import Path

from ..errors import ParseError
from .markdown import MAX_TEXT_BYTES, parse_markdown
from .models import Paper
from .page_cost import MAX_PAGE_GLYPHS, MAX_PAGE_PATHS
from .pdf import MAX_PAGES, parse_pdf

PDF_SUFFIXES = {".pdf"}
TEXT_SUFFIXES = {".md", ".markdown", ".txt"}
SUPPORTED = PDF_SUFFIXES | TEXT_SUFFIXES


def parse_file(
    path: str | Path,
    *,
    title: str | None = None,
    max_pages: int = MAX_PAGES,
    max_text_bytes: int = MAX_TEXT_BYTES,
    max_page_glyphs: int = MAX_PAGE_GLYPHS,
    max_page_paths: int = MAX_PAGE_PATHS,
) -> Paper:
    """Parse a PDF (at most `max_pages` pages, `max_page_glyphs` glyphs a page; see parse_pdf), Markdown or text
    file (at most `max_text_bytes`) into a Paper."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return parse_markdown(path, title=title, max_bytes=max_text_bytes)
    if suffix in PDF_SUFFIXES:
        return parse_pdf(
            path, title=title, max_pages=max_pages, max_page_glyphs=max_page_glyphs, max_page_paths=max_page_paths
        )
    raise ParseError(path, f"unsupported file type {suffix or '(none)'}; expected PDF, Markdown or text")
