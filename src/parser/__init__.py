"""PDF/Markdown -> Paper. Knows nothing of stores, embeddings or agents.

The parsers load PyMuPDF, which takes a second: they are imported when first used, so that what only needs the
models (SectionCategory, Paper) stays quick to import (e.g. a command that talks to a server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .models import Box, Paper, Paragraph, Section, SectionCategory, Table

if TYPE_CHECKING:
    from .files import parse_file
    from .markdown import parse_markdown
    from .pdf import parse_pdf

__all__ = [
    "Box",
    "Paper",
    "Paragraph",
    "Section",
    "SectionCategory",
    "Table",
    "parse_file",
    "parse_markdown",
    "parse_pdf",
]

_LAZY = {"parse_file": "files", "parse_markdown": "markdown", "parse_pdf": "pdf"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
