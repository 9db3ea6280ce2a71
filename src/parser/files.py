"""Pick the parser for a file by its type."""

from __future__ import annotations

from pathlib import Path

from ..errors import ParseError
from .markdown import parse_markdown
from .models import Paper
from .pdf import parse_pdf

PDF_SUFFIXES = {".pdf"}
TEXT_SUFFIXES = {".md", ".markdown", ".txt"}
SUPPORTED = PDF_SUFFIXES | TEXT_SUFFIXES


def parse_file(path: str | Path, *, title: str | None = None) -> Paper:
    """Parse a PDF, Markdown or text file into a Paper."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return parse_markdown(path, title=title)
    if suffix in PDF_SUFFIXES:
        return parse_pdf(path, title=title)
    raise ParseError(path, f"unsupported file type {suffix or '(none)'}; expected PDF, Markdown or text")
