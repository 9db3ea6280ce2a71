"""What every part of PaperStore shares: the client and collection names, Milvus failures as StoreError,
whole-result queries, flushing, and readiness (which papers searches and reads may show).

Readiness. A paper row is written with status "ingesting" before any of its chunks and flipped
to "ready" after the last one (and after stale rows are gone); deleting flips it back first.
Searches exclude papers that are not ready by adding ``doc_id not in [...]`` (the papers whose
status is not "ready", normally none or a handful) to the Milvus filter, so `k` is honoured and
no client-side over-fetching is needed. The list is read from the papers collection on every
search (one small scalar query) because another process may be ingesting into the same server.
Then the papers of the hits are looked up (one point query): a chunk whose paper has no catalogue
row (an orphan a crash left) or is not ready is dropped, and the search runs again without it.
Direct reads by doc_id (`get_context_window`, `get_section`) return nothing for a paper that is not
ready. `paperscope check` finds and repairs what a crash left (see check.py).

Within `PaperStore.pinned()` (one answer), readiness is taken from the catalogue read when the block began
instead (catalogue.py): the answer sees the library as it was when it started, and its searches and reads make
no readiness query of their own.

Milvus Lite notes (checked against milvus-lite 3.2.2 + pymilvus 3.0.2):
- Templated filters (`filter_params`) are ignored by Lite, so filters are escaped literals
  (see filters.py).
- Lite searches unflushed rows by rebuilding their index on every search: the store flushes a Lite
  kb every `lite_flush_rows` written rows and on close (see `StoreBase.lite_flush_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ...config import Settings
from ...errors import PaperscopeError, StoreError
from ..embeddings import Embedder
from ..filters import SearchFilter, and_exprs, quote_string, string_in
from .milvus import MilvusClient
from .records import STATUS_READY, Catalogue, StoredChunk

# Strong consistency on purpose: ingest writes a paper and immediately reads it back (stale-row
# cleanup, the ready flip, tests, the CLI's "ingest then ask"); Bounded would let those reads miss
# the rows just written. The cost (waiting for the latest timestamp) is negligible at our scale.
CONSISTENCY = "Strong"
QUERY_WINDOW = 16384  # the largest offset+limit a Milvus query accepts


def key_in(field: str, values: Sequence[str] | Sequence[int]) -> str:
    """`field in [...]` over primary-key values, always in that form (even for one value): it is the one filter
    Milvus Lite answers from its key index (a point read) instead of scanning every row."""
    return f"{field} in [{', '.join(str(int(v)) if isinstance(v, int) else quote_string(v) for v in values)}]"


# ((uri, kb), catalogue) pinned in this thread or task by `PaperStore.pinned` (catalogue.py), if any: per
# context, so threads never share it.
PINNED: ContextVar[tuple[tuple[str, str], Catalogue] | None] = ContextVar("paperscope_catalogue", default=None)


class StoreBase:
    """The state and helpers the parts of PaperStore share; PaperStore.__init__ (paper_store.py) sets it up."""

    #: Milvus Lite only: flush once this many rows were written since the last flush. Lite searches
    #: unflushed rows (its memtable) by rebuilding their index on every search, so a large memtable
    #: makes every search slow (10k unflushed chunks: ~0.6 s dense, ~2 s BM25 per query) and slows
    #: writes too; flushed rows live in segments with built HNSW / sparse indexes. Measured on 10k
    #: chunks: 256 -> 393 rows/s written, 1024 -> 368, 4096 -> 230. A server indexes growing segments
    #: itself and is never flushed here.
    lite_flush_rows = 256

    settings: Settings
    embedder: Embedder
    kb: str
    chunks_name: str
    papers_name: str
    write_batch: int
    uri: str
    chunks_recreated: bool
    _client: MilvusClient
    _lite_path: str | None
    _closed: bool
    _unflushed: int  # rows written since the last flush (Lite flushes every `lite_flush_rows`)

    @property
    def client(self) -> MilvusClient:
        """The underlying MilvusClient (for diagnostics and tests)."""
        return self._client

    @property
    def is_lite(self) -> bool:
        """True when the store is a local Milvus Lite file."""
        return self._lite_path is not None

    @contextmanager
    def _failing(self, what: str, doc_id: str | None = None) -> Iterator[None]:
        """Turn Milvus (and embedding) failures into StoreError naming the kb and doc_id."""
        try:
            yield
        except PaperscopeError:
            raise
        except Exception as exc:
            about = f"paper {doc_id}: " if doc_id else ""
            raise StoreError(f"knowledge base {self.kb!r}: {about}{what} failed: {exc}") from exc

    def _query(self, collection: str, expr: str, fields: list[str]) -> list[dict[str, Any]]:
        """Every row matching `expr` (one query window, then the iterator for larger results)."""
        rows = list(
            self._client.query(
                collection, filter=expr, output_fields=fields, limit=QUERY_WINDOW, consistency_level=CONSISTENCY
            )
        )
        if len(rows) < QUERY_WINDOW:
            return rows
        # More than one query window: page through in primary-key order.
        rows = []
        it = self._client.query_iterator(collection, batch_size=4096, filter=expr, output_fields=fields)
        try:
            while batch := it.next():
                rows.extend(batch)
        finally:
            it.close()
        return rows

    def flush(self) -> None:
        """Seal written rows into indexed segments (call after a bulk ingest; Lite also flushes by itself)."""
        with self._failing("flushing"):
            self._client.flush(self.chunks_name)
            self._client.flush(self.papers_name)
        self._unflushed = 0

    # --- readiness -------------------------------------------------------------------------------

    def _pinned(self) -> Catalogue | None:
        """The catalogue `PaperStore.pinned` holds for this knowledge base in this thread or task, if any."""
        held = PINNED.get()
        return held[1] if held is not None and held[0] == (self.uri, self.kb) else None

    def _not_ready(self) -> list[str]:
        """doc_ids of papers that are not ready (being ingested, deleted, or left by a crash)."""
        if (held := self._pinned()) is not None:
            return [p.doc_id for p in held.waiting]
        rows = self._client.query(
            self.papers_name,
            filter=f"status != {quote_string(STATUS_READY)}",
            output_fields=["doc_id"],
            limit=QUERY_WINDOW,
            consistency_level=CONSISTENCY,
        )
        return [r["doc_id"] for r in rows]

    def _ready_ids(self, doc_ids: Sequence[str]) -> set[str]:
        """Those of `doc_ids` whose catalogue row says ready (one point query by primary key: Milvus Lite answers
        `doc_id in [...]` alone from its key index, where any other filter scans every row)."""
        if not doc_ids:
            return set()
        if (held := self._pinned()) is not None:
            # A paper without a catalogue row is never ready.
            return {d for d in doc_ids if (p := held.by_id.get(d)) is not None and p.ready}
        rows = self._client.query(
            self.papers_name,
            filter=key_in("doc_id", sorted(set(doc_ids))),
            output_fields=["doc_id", "status"],
            limit=len(set(doc_ids)),
            consistency_level=CONSISTENCY,
        )
        return {r["doc_id"] for r in rows if r.get("status") == STATUS_READY}

    def _is_ready(self, doc_id: str, what: str) -> bool:
        with self._failing(what, doc_id):
            return doc_id in self._ready_ids([doc_id])

    def _ready_search(
        self, what: str, search_filter: SearchFilter | None, run: Callable[[str], list[StoredChunk]]
    ) -> list[StoredChunk]:
        """`run(expr)` restricted to ready papers: papers the catalogue hides are filtered out in Milvus, and
        hits of papers it does not hold as ready (orphans a crash left) are dropped and searched past."""
        orphans: list[str] = []
        for _ in range(3):
            with self._failing(what):
                expr = self._scoped(search_filter, orphans)
            if expr is None:
                return []
            hits = run(expr)
            found = {h.doc_id for h in hits}
            with self._failing(what):
                ready = self._ready_ids(sorted(found))
            if found <= ready:
                return hits
            orphans.extend(sorted(found - ready))
        return [h for h in hits if h.doc_id in ready]

    def _scoped(self, search_filter: SearchFilter | None, also_hidden: Sequence[str] = ()) -> str | None:
        """The filter expression restricted to ready papers; None when nothing can match."""
        f = search_filter or SearchFilter()
        if f.matches_nothing:
            return None
        hidden = [*self._not_ready(), *also_hidden]
        if f.doc_ids is not None:
            skip = set(hidden)
            wanted = [d for d in f.doc_ids if d not in skip]
            if not wanted:
                return None
            # Narrowing the doc_id list is cheaper for Milvus than a second `not in` clause.
            return f.model_copy(update={"doc_ids": wanted}).to_expr()
        return and_exprs(f.to_expr(), f"not ({string_in('doc_id', hidden)})" if hidden else "")
