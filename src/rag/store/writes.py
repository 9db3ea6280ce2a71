"""Writes: storing a paper and its chunks (the ingest protocol), deleting a paper or its orphan chunks,
and updating a catalogue row's status, sources or vector.

Sources. A paper (one doc_id, one set of bytes) belongs to every path that holds it: the catalogue
keeps them all in `sources` (and the last one ingested in `source`). Paths are stored escaped (see
`escape_path`) so a file name with control characters can be stored, filtered on and shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import StoreError
from ...parser.models import Paper
from ...sources.merge import paper_meta
from ...sources.models import PaperMeta
from ...sources.references import parse_references
from ..chunking import Chunk
from ..filters import quote_string, validate_doc_id
from ..identity import alias_rows, paper_identity, search_text
from .base import CONSISTENCY
from .catalogue import CatalogueMixin
from .records import (
    SHA256,
    STATUS_INGESTING,
    STATUS_READY,
    Status,
    chunk_row_id,
    clip,
    fit,
    reference_rows,
    small_int,
)
from .schema import PAPER_ROW


class _CallerRaised(StoreError):
    """What the caller's progress callback raised inside the embedder: carried past `_failing` (which would word
    it as an embedding failure) and raised again as it was."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class WritesMixin(CatalogueMixin):
    """Writes to both collections, in an order that never shows a partly stored paper as ready (see base.py); each
    write to the catalogue gives it a new version (catalogue.py)."""

    def insert_paper_chunks(
        self,
        paper: Paper,
        chunks: list[Chunk],
        doc_id: str,
        sha256: str,
        source: str,
        on_batch: Callable[[int, int], None] | None = None,
        *,
        enrichments: Sequence[str] = (),
        summary: str = "",
        meta: PaperMeta | None = None,
    ) -> int:
        """Store (or replace) a paper and its chunks; returns the number of chunk rows written.

        `source` is the (escaped) path it was read from; it joins the paths already recorded for the paper.
        `on_batch(done, total)` is called as chunks are embedded (after each small group the embedder runs, each
        batch at least), before their batch is written; what it raises ends the write as it is. `enrichments`: what the
        chunks' index texts and derived rows were made with (rag/enrich); `summary`: the paper's summary written
        by the chat model, kept in the catalogue and searched with its title, aliases and abstract; `meta`: what its
        library says of it (`paper` already carries the library's title, authors and year: sources/merge.py).

        Order: paper row "ingesting" -> chunk rows in batches (embedded batch by batch) -> stale rows of a
        previous version deleted -> paper row "ready". A crash leaves the paper "ingesting" (hidden from
        search); ingesting it again repairs it. Ids are deterministic, so a re-run upserts, never duplicates.
        When the paper is already stored and ready (a forced re-ingest), everything is embedded before the
        first write, so a failing embedder (model, endpoint, cache) leaves the old version visible and whole.
        A text over Milvus' VARCHAR limit is refused before anything is written.
        """
        validate_doc_id(doc_id)
        sha = sha256.lower()
        if not SHA256.fullmatch(sha):
            raise ValueError(f"paper {doc_id}: sha256 must be 64 hex digits, got {sha256!r}")
        body = [c.chunk_index for c in chunks if c.kind == "chunk"]
        if body != list(range(len(body))):
            raise StoreError(f"knowledge base {self.kb!r}: paper {doc_id}: chunk_index of body chunks is not 0..N-1")
        where = f"knowledge base {self.kb!r}: paper {doc_id}"
        texts = [(fit(c.text, "text", where, c), fit(c.index_text, "index_text", where, c)) for c in chunks]

        title = clip(paper.title, "title")
        year = small_int(paper.year, 16)
        seen: dict[tuple[str, int], int] = {}
        ids: list[int] = []
        for c in chunks:
            n = seen.get((c.kind, c.chunk_index), 0)
            seen[(c.kind, c.chunk_index)] = n + 1
            ids.append(chunk_row_id(doc_id, c.kind, c.chunk_index, n))

        before = self.get_paper(doc_id)
        with self._failing("embedding title and abstract", doc_id):
            paper_vector = self.embedder.embed_documents([f"{paper.title}\n{paper.abstract}".strip()])[0]

        def embed(start: int) -> list[list[float]]:
            batch = chunks[start : start + self.write_batch]
            texts = [c.index_text for c in batch]
            try:
                with self._failing(f"embedding chunks {start}..{start + len(batch) - 1}", doc_id):
                    if on_batch is None:
                        return self.embedder.embed_documents(texts)
                    # Progress as the chunks are embedded (every 8 with the local model), not once per batch.
                    return self.embedder.embed_documents(texts, on_progress=lambda n: _told(on_batch, start + n))
            except _CallerRaised as raised:
                raise raised.error from None

        def _told(on_batch: Callable[[int, int], None], done: int) -> None:
            try:
                on_batch(done, len(chunks))
            except Exception as exc:  # the caller stopping the ingest, not the embedder failing: passed on as it is
                raise _CallerRaised(exc) from exc

        starts = range(0, len(chunks), self.write_batch)
        staged = {start: embed(start) for start in starts} if before is not None and before.ready else {}
        kept = paper_meta(paper, meta)
        ident = paper_identity(paper, kept.citation_key)
        paper_row: dict[str, Any] = {
            "doc_id": doc_id,
            "title": title,
            "authors": list(paper.authors),
            "year": year,
            "abstract": clip(paper.abstract, "abstract"),
            "source": clip(source, "source"),
            "sources": list(dict.fromkeys([*(before.sources if before else []), source])),
            "sha256": sha,
            "n_chunks": len(body),
            "pages": small_int(paper.pages, 16),
            "sections": [s.model_dump(mode="json") for s in paper.sections],
            "status": STATUS_INGESTING,
            "ingested_at": int(time.time()),
            "aliases": alias_rows(ident),
            "search_text": clip(search_text(paper.title, ident, f"{paper.abstract}\n{summary}".strip()), "search_text"),
            "enrichments": list(enrichments),
            "summary": clip(summary, "summary"),
            "meta": kept.model_dump(mode="json", exclude_defaults=True),
            "references": reference_rows(parse_references(paper)),
            "vector": paper_vector,
        }
        id_filter = f"doc_id == {quote_string(doc_id)}"
        with self._failing("marking the paper as ingesting", doc_id):
            self._client.upsert(self.papers_name, [paper_row])
            existing = {int(r["id"]) for r in self._query(self.chunks_name, id_filter, ["id"])}
        # A fresh paper takes plain inserts (cheaper than upserts); a re-ingest upserts over its old rows.
        write: Callable[..., Any] = self._client.upsert if existing else self._client.insert
        for start in starts:
            batch = chunks[start : start + self.write_batch]
            vectors = staged.pop(start) if staged else embed(start)
            rows = [
                {
                    "id": ids[start + i],
                    "doc_id": doc_id,
                    "title": title,
                    "conference_year": year,
                    "chunk_index": c.chunk_index,
                    "text": texts[start + i][0],
                    "index_text": texts[start + i][1],
                    "vector": vectors[i],
                    "section_title": clip(c.section_title, "section_title"),
                    "parent_section": clip(c.parent_section, "parent_section"),
                    "section_category": int(c.section_category),
                    "hierarchy_level": small_int(c.hierarchy_level, 8),
                    "page_number": small_int(c.page_number, 16),
                    "kind": c.kind,
                    "metadata": c.metadata,
                }
                for i, c in enumerate(batch)
            ]
            with self._failing(f"writing chunks {start}..{start + len(batch) - 1}", doc_id):
                write(self.chunks_name, rows)
        stale = sorted(existing - set(ids))
        with self._failing("removing stale chunks and marking the paper ready", doc_id):
            for start in range(0, len(stale), 1000):
                self._client.delete(self.chunks_name, ids=stale[start : start + 1000])
            self._client.upsert(self.papers_name, [{**paper_row, "status": STATUS_READY}])
        self._catalogue_changed()
        self._unflushed += len(chunks) + 1
        if self.is_lite and self._unflushed >= self.lite_flush_rows:
            self.flush()
        return len(chunks)

    def delete_paper(self, doc_id: str) -> int:
        """Remove a paper's chunks and its catalogue row; returns the number of chunk rows removed."""
        validate_doc_id(doc_id)
        id_filter = f"doc_id == {quote_string(doc_id)}"
        with self._failing("deleting", doc_id):
            rows = self._client.query(
                self.papers_name,
                filter=id_filter,
                output_fields=PAPER_ROW,
                limit=1,
                consistency_level=CONSISTENCY,
            )
            if rows:  # hide it first: a crash half-way leaves a not-ready paper, never a partial ready one
                self._client.upsert(self.papers_name, [{**rows[0], "status": STATUS_INGESTING}])
            n = self.count_chunks(doc_id, kind=None)
            self._client.delete(self.chunks_name, filter=id_filter)
            self._client.delete(self.papers_name, filter=id_filter)
        self._catalogue_changed()
        return n

    def delete_chunks_of(self, doc_id: str) -> int:
        """Remove every chunk row of a doc_id, catalogue untouched (orphans); returns the rows removed."""
        validate_doc_id(doc_id)
        n = self.count_chunks(doc_id, kind=None)
        with self._failing("deleting its chunks", doc_id):
            self._client.delete(self.chunks_name, filter=f"doc_id == {quote_string(doc_id)}")
        return n

    def _update_paper(self, doc_id: str, what: str, **fields: Any) -> None:
        """Rewrite some catalogue fields of a paper (Milvus upserts whole rows: read it, vector included)."""
        with self._failing(what, doc_id):
            rows = self._client.query(
                self.papers_name,
                filter=f"doc_id == {quote_string(doc_id)}",
                output_fields=PAPER_ROW,
                limit=1,
                consistency_level=CONSISTENCY,
            )
            if rows:
                self._client.upsert(self.papers_name, [{**rows[0], **fields}])
        if rows:
            self._catalogue_changed()

    def set_sources(self, doc_id: str, sources: Sequence[str], source: str | None = None) -> None:
        """Record the paths that hold a paper (and, if given, the one it was last seen at)."""
        validate_doc_id(doc_id)
        update: dict[str, Any] = {"sources": list(dict.fromkeys(sources))}
        if source is not None:
            update["source"] = clip(source, "source")
        self._update_paper(doc_id, "recording its source paths", **update)

    def set_meta(self, doc_id: str, meta: PaperMeta) -> None:
        """Record what a paper's library says of it where only the catalogue keeps it (collections, tags, venue)."""
        validate_doc_id(doc_id)
        self._update_paper(
            doc_id, "recording its library metadata", meta=meta.model_dump(mode="json", exclude_defaults=True)
        )

    def embed_paper_again(self, doc_id: str) -> bool:
        """Compute a paper's catalogue vector again from its stored title and abstract and store it (`check --repair`
        of a damaged vector); False when the paper is not in the catalogue. A title or abstract the store clipped
        gives a vector a little off the one ingest made from the whole text."""
        paper = self.get_paper(doc_id)
        if paper is None:
            return False
        with self._failing("embedding title and abstract", doc_id):
            vector = self.embedder.embed_documents([f"{paper.title}\n{paper.abstract}".strip()])[0]
        self._update_paper(doc_id, "storing its vector", vector=vector)
        return True

    def set_status(self, doc_id: str, status: Status) -> None:
        """Mark a paper ready, ingesting or broken (what `check --repair` does when no file is left)."""
        validate_doc_id(doc_id)
        self._update_paper(doc_id, f"marking it {status}", status=status)
