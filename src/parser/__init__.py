"""PDF/Markdown -> Paper. Knows nothing of stores, embeddings or agents."""

from .files import parse_file
from .markdown import parse_markdown
from .models import Box, Paper, Paragraph, Section, SectionCategory, Table
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
