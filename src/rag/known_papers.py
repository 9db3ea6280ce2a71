"""The papers of one knowledge base as retrieval reads them: the catalogue, the ready papers, the paper locator.

The catalogue one `retrieve` reads is pinned for the rest of it (`PaperStore.pinned`): each read checks the
catalogue's version in the store (two round trips), and a question asked for it three times. The locator is
built once per catalogue version (its BM25 and alias tables take a while).
"""

from __future__ import annotations

from collections.abc import Sequence

from .locate import PaperLocator
from .store import Catalogue, PaperRecord, PaperStore


class KnownPapers:
    """The catalogue of `store` and its paper locators; `dense`: the locators embed questions too."""

    def __init__(self, store: PaperStore, *, dense: bool) -> None:
        self.store = store
        self.dense = dense
        self._locator: tuple[tuple[str, ...], PaperLocator] | None = None
        self._located: tuple[Catalogue, PaperLocator] | None = None  # the catalogue's own locator

    def catalogue(self) -> Catalogue:
        """The store's catalogue (cached, read again only when it changed); within `retrieve`, the one it read."""
        return self.store.catalogue()

    def ready(self) -> list[PaperRecord]:
        """Ready papers of the knowledge base (the store's cached catalogue, read again only when it changed)."""
        return list(self.catalogue().ready)

    def locator(self, papers: Sequence[PaperRecord] | None = None) -> PaperLocator:
        """The paper locator for `papers` (default: the ready catalogue), rebuilt only when the catalogue changes."""
        if papers is None:
            return self._catalogue_locator(self.catalogue())
        key = tuple(sorted(f"{p.doc_id}:{p.ingested_at}" for p in papers))
        if self._locator is None or self._locator[0] != key:
            self._locator = (key, PaperLocator(self.store, papers, dense=self.dense))
        return self._locator[1]

    def _catalogue_locator(self, catalogue: Catalogue) -> PaperLocator:
        """The locator over the ready papers of `catalogue`, built once per catalogue version."""
        if self._located is None or self._located[0] is not catalogue:
            self._located = (catalogue, PaperLocator(self.store, catalogue.ready, dense=self.dense))
        return self._located[1]

    def waiting_for_repair(self, query: str) -> PaperRecord | None:
        """The paper a question names among those the knowledge base holds but hides (not ready), if one fits."""
        waiting = self.catalogue().waiting
        if not waiting:
            return None
        doc_id = PaperLocator(self.store, waiting, dense=self.dense).locate(query).doc_id
        return next((p for p in waiting if p.doc_id == doc_id), None)
