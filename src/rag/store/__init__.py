"""The Milvus store: one knowledge base = a chunks collection and a papers catalogue.

Same code path for Milvus Lite (a local file, the default) and a Milvus server: pymilvus
`MilvusClient` only. Schema, indexes and the ingest protocol are described in DESIGN.md.
`PaperStore` is the API; each part says what it holds and what Milvus Lite needs of it:

- paper_store.py: PaperStore, assembled from the parts below, opened and closed;
- connection.py: where a kb lives (Lite data directory or server URI), the Lite lock, the shared Lite server;
- milvus.py: pymilvus, imported once with MILVUS_URI set aside;
- base.py: the client, failures as StoreError, whole-result queries, flushing, and readiness (a paper is shown
  only once all its chunks are stored);
- properties.py: the settings a kb keeps with it (read and changed by rag/kb_settings.py);
- schema.py: fields, indexes, BM25 functions, properties; collections made, checked and migrated;
- records.py: StoredChunk, PaperRecord, PaperAlias, row mapping, VARCHAR limits;
- writes.py: the ingest protocol, deletes, a paper's status and sources;
- reads.py: reads by doc_id (point reads by primary key where Milvus Lite would scan), the catalogue, damage and
  inventory checks;
- catalogue.py: the catalogue kept in memory per knowledge base and process, read again only when it changed;
- search.py: dense, BM25 and hybrid chunk search, paper search.

The checks on Milvus Lite were made against milvus-lite 3.2.2 + pymilvus 3.0.2.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .records import (
    STATUS_BROKEN,
    STATUS_INGESTING,
    STATUS_READY,
    Catalogue,
    PaperAlias,
    PaperRecord,
    Status,
    StoredChunk,
    chunk_row_id,
    clipped,
    raptor_citation,
)

if TYPE_CHECKING:
    from .base import CONSISTENCY, QUERY_WINDOW
    from .connection import knowledge_bases, lite_damage, lite_problem, peek_client
    from .paper_store import PaperStore
    from .schema import CHUNK_FIELDS, PAPER_FIELDS, PROP_DIM, PROP_EMBEDDER, PROP_SCHEMA, SCHEMA_VERSION

# What needs pymilvus (and pandas under it: half a second to import) is imported when first asked for: a command
# that only reads an answer through a running server, or the records of one, never loads it.
_LAZY = {
    **dict.fromkeys(("CONSISTENCY", "QUERY_WINDOW"), ".base"),
    **dict.fromkeys(("knowledge_bases", "lite_damage", "lite_problem", "peek_client"), ".connection"),
    "PaperStore": ".paper_store",
    **dict.fromkeys(
        ("CHUNK_FIELDS", "PAPER_FIELDS", "PROP_DIM", "PROP_EMBEDDER", "PROP_SCHEMA", "SCHEMA_VERSION"), ".schema"
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHUNK_FIELDS",
    "CONSISTENCY",
    "PAPER_FIELDS",
    "PROP_DIM",
    "PROP_EMBEDDER",
    "PROP_SCHEMA",
    "QUERY_WINDOW",
    "SCHEMA_VERSION",
    "STATUS_BROKEN",
    "STATUS_INGESTING",
    "STATUS_READY",
    "Catalogue",
    "PaperAlias",
    "PaperRecord",
    "PaperStore",
    "Status",
    "StoredChunk",
    "chunk_row_id",
    "clipped",
    "knowledge_bases",
    "lite_damage",
    "lite_problem",
    "peek_client",
    "raptor_citation",
]
