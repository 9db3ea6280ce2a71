"""The library's metadata and the PDF's, put together: what the library says wins, the PDF fills the gaps.

A reference manager's record was typed or fetched from the publisher; the parser reads what the first page
prints and can be wrong about author order, a title broken over lines, or a year. Where the library is silent
(no DOI, no year), what the PDF prints is kept.
"""

from __future__ import annotations

from ..parser.models import Paper
from .models import PaperMeta


def with_library(paper: Paper, meta: PaperMeta | None) -> Paper:
    """`paper` with its title, authors, year, DOI and arXiv id taken from `meta` where the library knows them."""
    if meta is None:
        return paper
    update: dict[str, object] = {}
    if meta.title.strip():
        update["title"] = meta.title.strip()
    if meta.authors:
        update["authors"] = list(meta.authors)
    for field in ("year", "doi", "arxiv_id"):
        if getattr(meta, field):
            update[field] = getattr(meta, field)
    return paper.model_copy(update=update) if update else paper


def paper_meta(paper: Paper, meta: PaperMeta | None) -> PaperMeta:
    """The metadata the catalogue keeps of a paper: the library's, with the ids and year the PDF prints where the
    library has none (title and authors live in the catalogue's own columns)."""
    base = meta or PaperMeta()
    return base.model_copy(
        update={
            "title": "",
            "authors": [],
            "year": base.year or paper.year,
            "doi": base.doi or paper.doi,
            "arxiv_id": base.arxiv_id or paper.arxiv_id,
        }
    )
