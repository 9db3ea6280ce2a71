"""PDF/Markdown -> Paper. Knows nothing of stores, embeddings or agents."""

from .files import parse_file
from .markdown import parse_markdown
from .models import Paper, Paragraph, Section, SectionCategory
from .pdf import parse_pdf

__all__ = ["Paper", "Paragraph", "Section", "SectionCategory", "parse_file", "parse_markdown", "parse_pdf"]
