"""Where papers come from besides files and folders: a Zotero library, a BibTeX file, arXiv ids, DOIs and URLs.

Each reader turns its source into `LibraryItem`s (a PDF on disk and the library's metadata of it); ingest
(rag/ingest.py) parses and stores the PDF and lets the library's metadata win over what the PDF says. Reference
lists (references.py) are read from parsed papers and matched to the papers a knowledge base holds.

This stage imports only the parser's models and the shared errors and settings: rag/ imports it, never the
other way round.
"""

from .models import LibraryItem, PaperMeta

__all__ = ["LibraryItem", "PaperMeta"]
