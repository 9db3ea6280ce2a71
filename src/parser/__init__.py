"""PDF/Markdown -> Paper. Knows nothing of stores, embeddings or agents.

The parsers are imported on first use: importing PyMuPDF costs about a second (it loads its layout models), which
every command that only reads the store (`papers`, `ask`, `check`) would otherwise pay for the Paper model alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .models import Paper, Paragraph, Section, SectionCategory

if TYPE_CHECKING:
    from .files import parse_file
    from .markdown import parse_markdown
    from .pdf import parse_pdf

__all__ = ["Paper", "Paragraph", "Section", "SectionCategory", "parse_file", "parse_markdown", "parse_pdf"]

_PARSERS = {"parse_file": ".files", "parse_markdown": ".markdown", "parse_pdf": ".pdf"}


def __getattr__(name: str) -> Any:
    """`parse_file`, `parse_markdown`, `parse_pdf`, imported when first asked for."""
    module = _PARSERS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
