"""References inside the library: which papers a paper cites that the library holds, and which papers cite it.

Each paper's reference list is read at ingest (sources/references.py) and kept in its catalogue row; matching an
entry to a held paper (DOI, arXiv id, title) is done when asked, against the catalogue as it is then, so a paper
ingested later is found among the references of the papers before it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..errors import UnknownPaper
from ..sources.references import HeldPaper, Reference, ReferenceMatcher
from .locate import PaperLocator
from .store import Catalogue, PaperRecord, PaperStore


class ListedReference(Reference):
    """An entry of a paper's reference list, and the paper of the library it is, if any."""

    held: str | None = Field(None, description="doc_id of the paper of the library the entry cites; None if none.")
    held_title: str | None = Field(None, description="That paper's title.")


class CitingPaper(BaseModel):
    """A paper of the library that cites a given one, and the entry of its reference list that does."""

    doc_id: str
    title: str
    year: int | None = None
    authors: list[str] = Field(default_factory=list)
    entry: Reference = Field(description="The entry of its reference list that cites the paper.")


def held_papers(catalogue: Catalogue) -> list[HeldPaper]:
    """The ready papers of a catalogue as the matcher knows them."""
    return [
        HeldPaper(
            doc_id=p.doc_id,
            title=p.title,
            doi=p.meta.doi,
            arxiv_id=p.meta.arxiv_id,
            year=p.year,
            authors=p.authors,
        )
        for p in catalogue.ready
    ]


_MATCHERS: dict[int, tuple[Catalogue, ReferenceMatcher]] = {}


def _matcher(catalogue: Catalogue) -> ReferenceMatcher:
    """One matcher per catalogue version (the catalogue object is replaced whenever it changes)."""
    cached = _MATCHERS.get(id(catalogue))
    if cached is not None and cached[0] is catalogue:
        return cached[1]
    matcher = ReferenceMatcher(held_papers(catalogue))
    _MATCHERS.clear()
    _MATCHERS[id(catalogue)] = (catalogue, matcher)
    return matcher


def references(store: PaperStore, paper: PaperRecord) -> list[ListedReference]:
    """`paper`'s reference list, each entry marked with the paper of the library it cites (never itself)."""
    catalogue = store.catalogue()
    matcher = _matcher(catalogue)
    out = []
    for ref in store.references_of(paper.doc_id):
        held = matcher.match(ref)
        held = held if held != paper.doc_id else None
        title = catalogue.by_id[held].title if held in catalogue.by_id else None
        out.append(ListedReference(**ref.model_dump(), held=held, held_title=title))
    return out


def cited_by(store: PaperStore, paper: PaperRecord) -> list[CitingPaper]:
    """The papers of the library whose reference lists cite `paper`, by year then title."""
    catalogue = store.catalogue()
    matcher, by_id = _matcher(catalogue), catalogue.by_id
    found = []
    for doc_id, entries in store.all_references().items():
        if doc_id == paper.doc_id or doc_id not in by_id:
            continue
        entry = next((ref for ref in entries if matcher.match(ref) == paper.doc_id), None)
        if entry is not None:
            citing = by_id[doc_id]
            found.append(
                CitingPaper(doc_id=doc_id, title=citing.title, year=citing.year, authors=citing.authors, entry=entry)
            )
    return sorted(found, key=lambda c: (c.year or 0, c.title.casefold()))


def find_paper(store: PaperStore, given: str) -> PaperRecord:
    """The ready paper `given` names: its doc_id or a prefix of 4+ characters, else its title, name, authors
    ("Wellawatte et al."), DOI, arXiv id or citation key as the paper locator reads them. UnknownPaper naming what was
    given when no paper, or several, answer to it."""
    catalogue = store.catalogue()
    key = given.strip()
    by_prefix = [p for p in catalogue.ready if p.doc_id == key or (len(key) >= 4 and p.doc_id.startswith(key))]
    if len(by_prefix) == 1:
        return by_prefix[0]
    if len(by_prefix) > 1:
        raise UnknownPaper(f"{key} is ambiguous: {', '.join(p.doc_id for p in by_prefix)}")
    location = PaperLocator(store, catalogue.ready, dense=False).locate(key)
    if location.doc_id is None:
        near = ", ".join(repr(c.title) for c in location.candidates[:3])
        hint = f" (closest: {near})" if near else ""
        raise UnknownPaper(f"no paper of knowledge base {store.kb!r} is {key!r}{hint}; give its doc_id")
    return catalogue.by_id[location.doc_id]


def citing_listing(store: PaperStore, given: str, kind: str) -> dict[str, Any]:
    """What `refs`/`citedby --json` print and GET /v1/references and /v1/cited-by answer: `{"paper": {doc_id,
    title}, kind: [...]}`, `kind` "references" (the paper's reference list) or "cited_by" (the papers citing it)."""
    paper = find_paper(store, given)
    rows = references(store, paper) if kind == "references" else cited_by(store, paper)
    return {"paper": {"doc_id": paper.doc_id, "title": paper.title}, kind: [r.model_dump(mode="json") for r in rows]}
