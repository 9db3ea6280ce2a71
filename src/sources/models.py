"""What a library knows about a paper (PaperMeta), one paper of a library to ingest (LibraryItem), an entry of a
paper's reference list (Reference) and a held paper as matching sees it (HeldPaper).

The types alone, without references.py's patterns: the store's records import them, and so every command does.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class PaperMeta(BaseModel):
    """A paper's metadata as a reference manager or a publisher gives it; empty fields are unknown."""

    title: str = Field("", description="Title as the library holds it.")
    authors: list[str] = Field(default_factory=list, description='Authors in order, "Given Family" each.')
    year: int | None = Field(None, description="Year of publication.")
    venue: str = Field("", description="Journal, proceedings or repository (e.g. arXiv).")
    doi: str | None = Field(None, description="DOI, lower-cased, without a resolver prefix (10.1145/...).")
    arxiv_id: str | None = Field(None, description="arXiv id without version, e.g. 2004.07180.")
    url: str = Field("", description="Where the paper is found on the web.")
    citation_key: str = Field("", description="BibTeX citation key (from a .bib file or Better BibTeX).")
    item_key: str = Field("", description="The reference manager's own key of the item (Zotero's 8-character key).")
    collections: list[str] = Field(
        default_factory=list, description='Collections the item is filed in, as paths ("Thesis/Chapter 2").'
    )
    tags: list[str] = Field(default_factory=list, description="The item's tags.")
    origin: str = Field(
        "", description='Where the metadata came from: "zotero", "bibtex", "arxiv", "doi", "url" (empty: the PDF).'
    )
    library: str = Field(
        "", description="Which library it came from: a Zotero data directory or a .bib file's path (for syncing)."
    )

    @property
    def key(self) -> str:
        """What names the item within its library: the reference manager's key, else the citation key."""
        return self.item_key or self.citation_key

    @property
    def empty(self) -> bool:
        """True when nothing is known beyond the origin."""
        return not (self.title or self.authors or self.year or self.doi or self.arxiv_id or self.citation_key)


class LibraryItem(BaseModel):
    """One paper of a library: its PDF on disk (None when it has none that can be read) and its metadata."""

    pdf: Path | None = Field(None, description="The PDF to ingest.")
    meta: PaperMeta = Field(default_factory=PaperMeta)
    problem: str = Field(
        "", description="Why the item cannot be ingested, in one line naming it (a missing attachment file)."
    )


class Reference(BaseModel):
    """One entry of a paper's reference list."""

    n: int = Field(description="1-based position in the list.")
    label: str = Field(description='Label as printed: "[12]", "12.", "(12)", or "" for author-year lists.')
    text: str = Field(description="The whole entry as one line, label excluded.")
    title: str = Field(default="", description="Best guess of the cited work's title.")
    authors: list[str] = Field(default_factory=list, description="Family names as printed, in order; may be partial.")
    year: int | None = None
    doi: str | None = Field(default=None, description="Lower-case DOI.")
    arxiv_id: str | None = Field(default=None, description="arXiv id without version.")


class HeldPaper(BaseModel):
    """A paper the library holds, as far as matching needs it."""

    doc_id: str
    title: str
    doi: str | None = None
    arxiv_id: str | None = None
    year: int | None = None
    authors: list[str] = Field(default_factory=list)
