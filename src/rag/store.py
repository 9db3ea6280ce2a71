"""The Milvus store: one knowledge base = a chunks collection and a papers catalogue.

Same code path for Milvus Lite (a local file, the default) and a Milvus server: pymilvus
`MilvusClient` only. Schema, indexes and the ingest protocol are described in DESIGN.md.

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

Sources. A paper (one doc_id, one set of bytes) belongs to every path that holds it: the catalogue
keeps them all in `sources` (and the last one ingested in `source`). Paths are stored escaped (see
`escape_path`) so a file name with control characters can be stored, filtered on and shown.

Milvus Lite 3.2 notes (checked against milvus-lite 3.2.2 + pymilvus 3.0.2):
- BM25 `Function`, SPARSE_INVERTED_INDEX/BM25, `hybrid_search` with RRF and weighted rankers, JSON
  fields and collection properties all work. Lite returns BM25 hits with *negated* distances (the
  server returns positive scores), so BM25 scores are read as abs(distance); BM25 IDF statistics
  are per segment in Lite, so scores drift slightly as data is flushed.
- Scalar indexes: only INVERTED is implemented (STL_SORT, BITMAP, TRIE are rejected), so INVERTED is
  used everywhere; a server supports it on every field type used here.
- Templated filters (`filter_params`) are ignored by Lite, so filters are escaped literals
  (see filters.py).
- A reopened Lite collection starts "released": collections are loaded explicitly on open.
- Lite searches unflushed rows by rebuilding their index on every search: the store flushes a Lite
  kb every `lite_flush_rows` written rows and on close (see `PaperStore.lite_flush_rows`).
- The Lite file is a directory, locked by the process that serves it (an flock on its LOCK file): one
  process at a time. Opening fails the same way when the lock is held and when the data is damaged, so
  the store probes the lock itself to say which.
- Collections cannot gain fields in Lite (`add_collection_field` is not implemented): a catalogue of
  schema 1 (without `sources`) is rebuilt under a temporary name and renamed (`_migrate_papers`).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..config import Settings
from ..errors import PaperscopeError, StoreError
from ..parser.models import Paper, Section, SectionCategory
from .chunking import Chunk
from .embeddings import Embedder, make_embedder
from .filters import KINDS, SearchFilter, and_exprs, int_in, parse_category, quote_string, string_in, validate_doc_id
from .identity import Identity, identity_of, paper_identity
from .kb_settings import created_properties

# pymilvus parses MILVUS_URI when it is imported and raises on anything but a server URL, so
# `MILVUS_URI=/path/kb.db` (a Lite file, which paperscope reads itself) would end in a traceback.
_ENV_URI = os.environ.pop("MILVUS_URI", None)
try:
    from pymilvus import (  # type: ignore[import-untyped]
        AnnSearchRequest,
        CollectionSchema,
        DataType,
        Function,
        FunctionType,
        MilvusClient,
        RRFRanker,
        WeightedRanker,
    )
finally:
    if _ENV_URI is not None:
        os.environ["MILVUS_URI"] = _ENV_URI

# Strong consistency on purpose: ingest writes a paper and immediately reads it back (stale-row
# cleanup, the ready flip, tests, the CLI's "ingest then ask"); Bounded would let those reads miss
# the rows just written. The cost (waiting for the latest timestamp) is negligible at our scale.
CONSISTENCY = "Strong"
QUERY_WINDOW = 16384  # the largest offset+limit a Milvus query accepts
SCHEMA_VERSION = "3"  # 2: the catalogue's `sources`; 3: its `aliases`, searched with BM25 with title and abstract
PROP_EMBEDDER = "paperscope.embedder"
PROP_DIM = "paperscope.dim"
PROP_SCHEMA = "paperscope.schema"
STATUS_INGESTING = "ingesting"
STATUS_READY = "ready"
STATUS_BROKEN = "broken"  # chunks damaged and no file left to ingest it from (set by `check --repair`)
Status = Literal["ingesting", "ready", "broken"]
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_BM25_INDEX = {"inverted_index_algo": "DAAT_MAXSCORE", "bm25_k1": 1.2, "bm25_b": 0.75}

# VARCHAR limits in bytes (Milvus counts bytes); the 65535 ones are Milvus' maximum.
_VARCHAR = {
    "doc_id": 64,
    "title": 2048,
    "text": 65535,
    "index_text": 65535,
    "section_title": 1024,
    "parent_section": 1024,
    "kind": 16,
    "abstract": 65535,
    "source": 4096,
    "search_text": 65535,
    "sha256": 64,
    "status": 16,
}

CHUNK_FIELDS: dict[str, DataType] = {
    "id": DataType.INT64,
    "doc_id": DataType.VARCHAR,
    "title": DataType.VARCHAR,
    "conference_year": DataType.INT16,
    "chunk_index": DataType.INT32,
    "text": DataType.VARCHAR,
    "index_text": DataType.VARCHAR,
    "vector": DataType.FLOAT_VECTOR,
    "sparse": DataType.SPARSE_FLOAT_VECTOR,
    "section_title": DataType.VARCHAR,
    "parent_section": DataType.VARCHAR,
    "section_category": DataType.INT8,
    "hierarchy_level": DataType.INT8,
    "page_number": DataType.INT16,
    "kind": DataType.VARCHAR,
    "metadata": DataType.JSON,
}
PAPER_FIELDS: dict[str, DataType] = {
    "doc_id": DataType.VARCHAR,
    "title": DataType.VARCHAR,
    "authors": DataType.JSON,
    "year": DataType.INT16,
    "abstract": DataType.VARCHAR,
    "source": DataType.VARCHAR,
    "sources": DataType.JSON,
    "sha256": DataType.VARCHAR,
    "n_chunks": DataType.INT32,
    "pages": DataType.INT16,
    "sections": DataType.JSON,
    "status": DataType.VARCHAR,
    "ingested_at": DataType.INT64,
    "aliases": DataType.JSON,
    "search_text": DataType.VARCHAR,
    "vector": DataType.FLOAT_VECTOR,
    "sparse": DataType.SPARSE_FLOAT_VECTOR,
}
# Fields an earlier catalogue schema lacks; `_migrate_papers` rebuilds the catalogue with them.
_LATER_FIELDS = ("sources", "aliases", "search_text", "sparse")
_CHUNK_OUT = [f for f in CHUNK_FIELDS if f not in ("vector", "sparse")]
_PAPER_OUT = [f for f in PAPER_FIELDS if f not in ("vector", "sparse")]
_BRIEF_OUT = [
    "doc_id",
    "title",
    "year",
    "source",
    "sources",
    "sha256",
    "n_chunks",
    "pages",
    "status",
    "ingested_at",
    "aliases",
]
_SEARCH_OUT = [*_CHUNK_OUT, "vector"]  # searches return vectors so MMR needs no re-embedding

# A Lite file is served by an in-process gRPC server shared by every client of that path; the
# last PaperStore to close it stops the server (and frees the data directory's lock).
_LITE_USERS: dict[str, int] = {}
_LITE_LOCK = threading.Lock()


class StoredChunk(Chunk):
    """A chunk as read back from the store, with its paper and (for searches) its score."""

    id: int
    doc_id: str
    title: str
    year: int | None = Field(description="Conference year, None when unknown.")
    score: float | None = Field(
        default=None,
        description="Search score: cosine similarity (dense), BM25 (sparse), fused score (hybrid); None for reads.",
    )

    vector: list[float] | None = Field(
        default=None, exclude=True, repr=False, description="The stored embedding (searches return it, for MMR)."
    )

    @property
    def citation(self) -> str:
        """The citation id `<doc_id>:<chunk_index>`."""
        return f"{self.doc_id}:{self.chunk_index}"


class PaperAlias(BaseModel):
    """One name of a paper (see rag/identity.py) and how strongly it points at the paper."""

    text: str
    kind: str
    weight: float


class PaperRecord(BaseModel):
    """One row of the papers catalogue."""

    doc_id: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    abstract: str = ""
    source: str = Field("", description="The path it was last ingested from (escaped, see escape_path).")
    sources: list[str] = Field(default_factory=list, description="Every path known to hold these bytes (escaped).")
    sha256: str = ""
    n_chunks: int = 0
    pages: int = 0
    sections: list[Section] = Field(default_factory=list)
    status: Status = "ingesting"
    ingested_at: int = Field(0, description="Unix time (s) of the last ingest start.")
    aliases: list[PaperAlias] = Field(
        default_factory=list, description="What people call the paper: short title, names, authors, ids."
    )
    score: float | None = Field(default=None, description="Similarity to the query, for `search_papers`.")

    @property
    def ready(self) -> bool:
        """True once every chunk of the paper is stored."""
        return self.status == STATUS_READY


def _alias_rows(ident: Identity) -> list[list[Any]]:
    return [[a.text, a.kind, a.weight] for a in ident.aliases]


def _search_text(title: str, ident: Identity, abstract: str) -> str:
    """What BM25 paper search reads: the title, every alias (authors included) and the abstract."""
    text = "\n".join([title, " ; ".join(a.text for a in ident.aliases if a.kind != "year"), abstract])
    return _clip(text, "search_text")


def _bm25_params() -> dict[str, Any]:
    """BM25 search parameters (a fresh dict per call: pymilvus may add keys to what it is given)."""
    return {"metric_type": "BM25"}


def _dense_params(limit: int) -> dict[str, Any]:
    """HNSW search parameters: ef must be at least the number of hits asked for."""
    return {"metric_type": "COSINE", "params": {"ef": max(64, limit)}}


def chunk_row_id(doc_id: str, kind: str, chunk_index: int, n: int = 0) -> int:
    """Deterministic INT64 primary key: the first 63 bits of sha256(doc_id, kind, chunk_index, n)."""
    digest = hashlib.sha256(f"{doc_id}\x1f{kind}\x1f{chunk_index}\x1f{n}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _clip(text: str, field: str) -> str:
    """Cut `text` to the field's byte limit on a character boundary."""
    limit = _VARCHAR[field]
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")


def _fit(text: str, field: str, where: str, chunk: Chunk) -> str:
    """`text` if it fits the field's byte limit; a longer text is refused, never cut silently."""
    size = len(text.encode("utf-8"))
    if size > _VARCHAR[field]:
        raise StoreError(
            f"{where}: {chunk.kind} {chunk.chunk_index} ({chunk.section_title or 'no section'}): {field} is "
            f"{size:,} bytes, over Milvus' {_VARCHAR[field]:,}-byte limit; nothing was stored (a smaller "
            "chunk_size keeps chunks within it)"
        )
    return text


def clipped(text: str, field: str) -> bool:
    """True when the store would cut `text` to fit `field` (titles, abstracts: what ingest warns about)."""
    return len(text.encode("utf-8")) > _VARCHAR[field]


def knowledge_bases(client: MilvusClient) -> list[str]:
    """Names of the knowledge bases in a Milvus instance (both collections present)."""
    names = set(client.list_collections())
    return sorted(n[: -len("_chunks")] for n in names if n.endswith("_chunks") and f"{n[:-7]}_papers" in names)


def lite_problem(path: str) -> str:
    """Why a Milvus Lite data directory cannot be opened: another process holds its lock, or it is damaged.

    Lite reports both as "Open local milvus failed"; the lock (an flock on LOCK) tells them apart.
    """
    data = Path(path)
    if data.exists() and not data.is_dir():
        return (
            f"{data} is not a Milvus Lite data directory (a file is in its place, e.g. from an older Milvus Lite); "
            "move it aside and ingest again"
        )
    lock = data / "LOCK"
    try:
        import fcntl
    except ImportError:  # Windows: no flock to probe
        return "another process may be using this Milvus Lite file, or it is damaged"
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return f"the Milvus Lite data at {data} is damaged (no readable LOCK file); move it aside and ingest again"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return "another process is using this Milvus Lite file (it holds the lock); wait for it to finish"
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return f"the Milvus Lite data at {data} is damaged; move it aside and ingest again"


def _kind_expr(kind: str | None) -> str:
    """`kind == "x"` for an allowed kind, "" for None (every kind)."""
    if kind is None:
        return ""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}")
    return string_in("kind", [kind])


def _small_int(value: int | None, bits: int) -> int:
    """Clamp to a signed INTn column (0 for None)."""
    top = (1 << (bits - 1)) - 1
    return max(-top - 1, min(top, int(value or 0)))


class PaperStore:
    """Papers and their chunks in one Milvus knowledge base (`{kb}_chunks`, `{kb}_papers`)."""

    #: Milvus Lite only: flush once this many rows were written since the last flush. Lite searches
    #: unflushed rows (its memtable) by rebuilding their index on every search, so a large memtable
    #: makes every search slow (10k unflushed chunks: ~0.6 s dense, ~2 s BM25 per query) and slows
    #: writes too; flushed rows live in segments with built HNSW / sparse indexes. Measured on 10k
    #: chunks: 256 -> 393 rows/s written, 1024 -> 368, 4096 -> 230. A server indexes growing segments
    #: itself and is never flushed here.
    lite_flush_rows = 256

    def __init__(self, settings: Settings, embedder: Embedder, *, create: bool = True) -> None:
        """Open the knowledge base; `create=False` (every read-only command) refuses one that does not exist."""
        self.settings = settings
        self.embedder = embedder
        self.kb = settings.store.kb
        self.chunks_name = f"{self.kb}_chunks"
        self.papers_name = f"{self.kb}_papers"
        self.write_batch = settings.embedding.batch_size
        self.uri, self._lite_path = self._resolve_uri(settings, create)
        try:
            self._client = MilvusClient(uri=self.uri, token=settings.store.token or "")
        except Exception as exc:
            why = lite_problem(self._lite_path) if self._lite_path else str(exc)
            raise StoreError(f"knowledge base {self.kb!r}: cannot open Milvus at {self.uri}: {why}") from exc
        if self._lite_path is not None:
            with _LITE_LOCK:
                _LITE_USERS[self._lite_path] = _LITE_USERS.get(self._lite_path, 0) + 1
        self._closed = False
        self._unflushed = 0
        self.chunks_recreated = False  # True when the chunks collection was missing and was made again, empty
        try:
            self._ensure_collections(create)
        except BaseException as exc:
            self.close()
            # Lite failing to read its own collections (not our checks refusing them) means damaged data.
            cause = exc.__cause__
            if self._lite_path and isinstance(exc, StoreError) and cause and not isinstance(cause, PaperscopeError):
                hint = f"the Milvus Lite data at {self._lite_path} looks damaged: move it aside and ingest again"
                raise StoreError(f"{exc}; {hint}") from exc
            raise

    @classmethod
    def open(cls, settings: Settings, embedder: Embedder | None = None, *, create: bool = True) -> PaperStore:
        """Open the knowledge base named by `settings.store.kb`, creating it unless `create` is False.

        Without `embedder`, the one named by `settings.embedding.model` is built, caching vectors
        under the data directory (the cache is opened when something is first embedded).
        """
        if embedder is None:
            embedder = make_embedder(
                settings.embedding.model,
                batch_size=settings.embedding.batch_size,
                cache_dir=Path(settings.home).expanduser() / "cache",
            )
        return cls(settings, embedder, create=create)

    # --- setup -----------------------------------------------------------------------

    @staticmethod
    def _resolve_uri(settings: Settings, create: bool = True) -> tuple[str, str | None]:
        """(uri for MilvusClient, Lite data path or None for a server); no directory is made unless `create`."""
        uri = settings.store.uri
        kb = settings.store.kb
        if re.match(r"^(https?|tcp|unix)://", uri or "") or (uri or "").startswith("unix:"):
            return str(uri), None
        if not uri:
            file = (Path(settings.home).expanduser() / "milvus.db").resolve()
        elif uri.endswith(".db"):
            file = Path(uri).expanduser().resolve()
        else:
            raise StoreError(
                f"knowledge base {kb!r}: MILVUS_URI {uri!r} is neither a server (http://host:19530) nor a "
                f"Milvus Lite file, whose name must end in .db (e.g. {uri.rstrip('/')}/milvus.db)"
            )
        if not create and not file.exists():
            raise StoreError(
                f"knowledge base {kb!r} does not exist: there is no store at {file} yet "
                f"(`paperscope ingest PATH --kb {kb}` creates it)"
            )
        if file.exists() and not file.is_dir():
            raise StoreError(f"knowledge base {kb!r}: {lite_problem(str(file))}")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"knowledge base {kb!r}: cannot create {file.parent}: {exc.strerror or exc}") from exc
        return str(file), str(file)

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

    def _ensure_collections(self, create: bool = True) -> None:
        with self._failing("opening the collections"):
            self._finish_migration()
            has_chunks, has_papers = (self._client.has_collection(c) for c in (self.chunks_name, self.papers_name))
            if not create and not has_chunks and not has_papers:
                others = ", ".join(repr(k) for k in knowledge_bases(self._client)) or "none yet"
                raise StoreError(
                    f"knowledge base {self.kb!r} does not exist (existing: {others}); "
                    f"`paperscope ingest PATH --kb {self.kb}` creates it"
                )
            if not create and not has_papers:
                raise StoreError(
                    f"knowledge base {self.kb!r}: its catalogue (collection {self.papers_name}) is missing while its "
                    f"chunks remain; ingest the files again (`paperscope ingest PATH --kb {self.kb}`), then "
                    f"`paperscope check --repair --kb {self.kb}` deletes the chunks no paper claims"
                )
            if has_papers and not has_chunks:
                # The chunks vanished under a catalogue that lists papers: an empty chunks collection takes their
                # place, so every paper shows as damaged (`damaged()`) and ingest or `check --repair` restores it.
                self.chunks_recreated = True
        with self._failing("asking the embedder for its dimension"):
            dim, name = self.embedder.dim, self.embedder.name
        with self._failing("opening the collections"):
            if self._client.has_collection(self.chunks_name):
                self._check_collection(self.chunks_name)
            else:
                self._create_chunks(dim, name)
            self._client.load_collection(self.chunks_name)
            if not self._client.has_collection(self.papers_name):
                self._create_papers(dim, name)
            elif self._check_collection(self.papers_name):
                self._migrate_papers(dim, name)
            self._client.load_collection(self.papers_name)

    @property
    def _migrating_name(self) -> str:
        return f"{self.papers_name}_v{SCHEMA_VERSION}"

    def _finish_migration(self) -> None:
        """Complete a catalogue migration a crash interrupted: the new collection is whole once it exists alone."""
        tmp = self._migrating_name
        if not self._client.has_collection(tmp):
            return
        if self._client.has_collection(self.papers_name):
            self._client.drop_collection(tmp)  # cut short while copying: the old catalogue is intact, start over
        else:
            self._client.rename_collection(tmp, self.papers_name)

    def _migrate_papers(self, dim: int, name: str) -> None:
        """Schema 1 or 2 -> 3: rebuild the catalogue with `sources` (each paper's own source) and `aliases`
        (from its title, abstract and authors) under a temporary name, then swap it in; a crash at any
        point leaves one whole catalogue (see `_finish_migration`)."""
        self._client.load_collection(self.papers_name)
        have = {f["name"] for f in self._client.describe_collection(self.papers_name)["fields"]}
        rows = self._query(self.papers_name, "", [f for f in PAPER_FIELDS if f in have and f != "sparse"])
        tmp = self._migrating_name
        self._create_papers(dim, name, tmp)
        self._client.load_collection(tmp)
        for start in range(0, len(rows), 500):
            batch = []
            for r in rows[start : start + 500]:
                r.setdefault("sources", [r["source"]] if r.get("source") else [])
                if "aliases" not in r:
                    ident = identity_of(r.get("title", ""), r.get("abstract", ""), list(r.get("authors") or []))
                    r["aliases"] = _alias_rows(ident)
                    r["search_text"] = _search_text(r.get("title", ""), ident, r.get("abstract", ""))
                batch.append(r)
            self._client.insert(tmp, batch)
        self._client.flush(tmp)
        self._client.drop_collection(self.papers_name)
        self._client.rename_collection(tmp, self.papers_name)

    def _properties(self, dim: int, name: str) -> dict[str, str]:
        props = {PROP_EMBEDDER: name, PROP_DIM: str(dim), PROP_SCHEMA: SCHEMA_VERSION}
        return props | created_properties(self.settings, name, dim)  # the kb's settings, saved at creation

    def _check_collection(self, collection: str) -> list[str]:
        """Refuse a collection built with another embedder or holding another schema; returns the fields a
        catalogue of an earlier schema lacks (which `_migrate_papers` adds)."""
        desc = self._client.describe_collection(collection)
        fields = {f["name"]: f for f in desc["fields"]}
        expected = CHUNK_FIELDS if collection == self.chunks_name else PAPER_FIELDS
        wrong = sorted(n for n, t in expected.items() if n not in fields or fields[n]["type"] != t)
        missing = [f for f in _LATER_FIELDS if f not in fields] if collection == self.papers_name else []
        if wrong and wrong != sorted(missing):
            raise StoreError(
                f"knowledge base {self.kb!r}: collection {collection} does not have the paperscope schema "
                f"(missing or mistyped: {', '.join(wrong)}); use another knowledge base name"
            )
        props = desc.get("properties") or {}
        built_dim = int(fields["vector"]["params"].get("dim", 0))
        built_name = props.get(PROP_EMBEDDER, "an unknown embedder")
        if built_dim != self.embedder.dim or built_name != self.embedder.name:
            raise StoreError(
                f"knowledge base {self.kb!r} was built with {built_name} (dim {built_dim}); this run uses "
                f"{self.embedder.name} (dim {self.embedder.dim}). Use the same embedding model, or another "
                "knowledge base (and ingest again)."
            )
        return missing

    def _create_chunks(self, dim: int, name: str) -> None:
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=_VARCHAR["doc_id"])
        schema.add_field("title", DataType.VARCHAR, max_length=_VARCHAR["title"])
        schema.add_field("conference_year", DataType.INT16)
        schema.add_field("chunk_index", DataType.INT32)
        schema.add_field("text", DataType.VARCHAR, max_length=_VARCHAR["text"])
        schema.add_field(
            "index_text",
            DataType.VARCHAR,
            max_length=_VARCHAR["index_text"],
            enable_analyzer=True,
            enable_match=True,
        )
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("section_title", DataType.VARCHAR, max_length=_VARCHAR["section_title"])
        schema.add_field("parent_section", DataType.VARCHAR, max_length=_VARCHAR["parent_section"])
        schema.add_field("section_category", DataType.INT8)
        schema.add_field("hierarchy_level", DataType.INT8)
        schema.add_field("page_number", DataType.INT16)
        schema.add_field("kind", DataType.VARCHAR, max_length=_VARCHAR["kind"])
        schema.add_field("metadata", DataType.JSON)
        self._create(self.chunks_name, schema, "index_text", ("doc_id", "section_category", "chunk_index"), dim, name)

    def _create_papers(self, dim: int, name: str, collection: str | None = None) -> None:
        collection = collection or self.papers_name
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=_VARCHAR["doc_id"], is_primary=True)
        schema.add_field("title", DataType.VARCHAR, max_length=_VARCHAR["title"])
        schema.add_field("authors", DataType.JSON)
        schema.add_field("year", DataType.INT16)
        schema.add_field("abstract", DataType.VARCHAR, max_length=_VARCHAR["abstract"])
        schema.add_field("source", DataType.VARCHAR, max_length=_VARCHAR["source"])
        schema.add_field("sources", DataType.JSON)
        schema.add_field("sha256", DataType.VARCHAR, max_length=_VARCHAR["sha256"])
        schema.add_field("n_chunks", DataType.INT32)
        schema.add_field("pages", DataType.INT16)
        schema.add_field("sections", DataType.JSON)
        schema.add_field("status", DataType.VARCHAR, max_length=_VARCHAR["status"])
        schema.add_field("ingested_at", DataType.INT64)
        schema.add_field("aliases", DataType.JSON)
        # Title, aliases and abstract: what paper location searches with BM25 (`search_papers_bm25`).
        schema.add_field(
            "search_text",
            DataType.VARCHAR,
            max_length=_VARCHAR["search_text"],
            enable_analyzer=True,
        )
        # Milvus requires a vector in every collection; this one serves search_papers (title + abstract).
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        self._create(collection, schema, "search_text", ("sha256", "status"), dim, name)

    def _create(
        self, collection: str, schema: CollectionSchema, text_field: str, scalars: tuple[str, ...], dim: int, name: str
    ) -> None:
        """A collection with BM25 over `text_field` into `sparse`, HNSW on `vector` and INVERTED on `scalars`."""
        schema.add_function(
            Function(
                name=f"{text_field}_bm25",
                function_type=FunctionType.BM25,
                input_field_names=[text_field],
                output_field_names=["sparse"],
            )
        )
        index = MilvusClient.prepare_index_params()
        index.add_index("vector", index_type="HNSW", metric_type="COSINE", params={"M": 16, "efConstruction": 200})
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params=_BM25_INDEX)
        # INVERTED is the only scalar index Milvus Lite implements (STL_SORT would suit the ints on a
        # server); it is valid on a server too, so both backends share one definition.
        for scalar in scalars:
            index.add_index(scalar, index_type="INVERTED")
        self._client.create_collection(
            collection, schema=schema, consistency_level=CONSISTENCY, properties=self._properties(dim, name)
        )
        # sync=False: pymilvus would otherwise poll each index build with a 0.5 s sleep; the collection
        # is empty so the builds are immediate, and load_collection (next) waits for them anyway.
        self._client.create_index(collection, index, sync=False)

    # --- low-level reads -----------------------------------------------------------------

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

    def _not_ready(self) -> list[str]:
        """doc_ids of papers that are not ready (being ingested, deleted, or left by a crash)."""
        rows = self._client.query(
            self.papers_name,
            filter=f"status != {quote_string(STATUS_READY)}",
            output_fields=["doc_id"],
            limit=QUERY_WINDOW,
            consistency_level=CONSISTENCY,
        )
        return [r["doc_id"] for r in rows]

    def _ready_ids(self, doc_ids: Sequence[str]) -> set[str]:
        """Those of `doc_ids` whose catalogue row says ready (one point query)."""
        if not doc_ids:
            return set()
        rows = self._client.query(
            self.papers_name,
            filter=and_exprs(string_in("doc_id", sorted(set(doc_ids))), f"status == {quote_string(STATUS_READY)}"),
            output_fields=["doc_id"],
            limit=len(set(doc_ids)),
            consistency_level=CONSISTENCY,
        )
        return {r["doc_id"] for r in rows}

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

    @staticmethod
    def _to_chunk(row: dict[str, Any], score: float | None = None) -> StoredChunk:
        year = int(row.get("conference_year") or 0)
        return StoredChunk(
            id=int(row["id"]),
            doc_id=row["doc_id"],
            title=row.get("title", ""),
            year=year or None,
            chunk_index=int(row["chunk_index"]),
            text=row.get("text", ""),
            index_text=row.get("index_text", ""),
            section_title=row.get("section_title", ""),
            parent_section=row.get("parent_section", ""),
            section_category=SectionCategory(int(row["section_category"])),
            hierarchy_level=int(row.get("hierarchy_level") or 0),
            page_number=int(row.get("page_number") or 0),
            kind=row.get("kind", "chunk"),
            metadata=row.get("metadata") or {},
            score=score,
            vector=row.get("vector"),
        )

    @staticmethod
    def _to_paper(row: dict[str, Any], score: float | None = None) -> PaperRecord:
        sections = row.get("sections") or []
        source = row.get("source", "")
        return PaperRecord(
            doc_id=row["doc_id"],
            title=row.get("title", ""),
            authors=list(row.get("authors") or []),
            year=int(row.get("year") or 0) or None,
            abstract=row.get("abstract", ""),
            source=source,
            sources=list(row.get("sources") or ([source] if source else [])),
            sha256=row.get("sha256", ""),
            n_chunks=int(row.get("n_chunks") or 0),
            pages=int(row.get("pages") or 0),
            sections=[Section.model_validate(s) for s in sections],
            status=row.get("status", STATUS_INGESTING),
            ingested_at=int(row.get("ingested_at") or 0),
            aliases=[PaperAlias(text=a[0], kind=a[1], weight=a[2]) for a in row.get("aliases") or []],
            score=score,
        )

    # --- writes ----------------------------------------------------------------------------

    def insert_paper_chunks(
        self,
        paper: Paper,
        chunks: list[Chunk],
        doc_id: str,
        sha256: str,
        source: str,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> int:
        """Store (or replace) a paper and its chunks; returns the number of chunk rows written.

        `source` is the (escaped) path it was read from; it joins the paths already recorded for the paper.
        `on_batch(done, total)` is called after each batch of chunks is embedded.

        Order: paper row "ingesting" -> chunk rows in batches (embedded batch by batch) -> stale rows of a
        previous version deleted -> paper row "ready". A crash leaves the paper "ingesting" (hidden from
        search); ingesting it again repairs it. Ids are deterministic, so a re-run upserts, never duplicates.
        When the paper is already stored and ready (a forced re-ingest), everything is embedded before the
        first write, so a failing embedder (model, endpoint, cache) leaves the old version visible and whole.
        A text over Milvus' VARCHAR limit is refused before anything is written.
        """
        validate_doc_id(doc_id)
        sha = sha256.lower()
        if not _SHA256.fullmatch(sha):
            raise ValueError(f"paper {doc_id}: sha256 must be 64 hex digits, got {sha256!r}")
        body = [c.chunk_index for c in chunks if c.kind == "chunk"]
        if body != list(range(len(body))):
            raise StoreError(f"knowledge base {self.kb!r}: paper {doc_id}: chunk_index of body chunks is not 0..N-1")
        where = f"knowledge base {self.kb!r}: paper {doc_id}"
        texts = [(_fit(c.text, "text", where, c), _fit(c.index_text, "index_text", where, c)) for c in chunks]

        title = _clip(paper.title, "title")
        year = _small_int(paper.year, 16)
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
            with self._failing(f"embedding chunks {start}..{start + len(batch) - 1}", doc_id):
                vectors = self.embedder.embed_documents([c.index_text for c in batch])
            if on_batch is not None:
                on_batch(start + len(batch), len(chunks))
            return vectors

        starts = range(0, len(chunks), self.write_batch)
        staged = {start: embed(start) for start in starts} if before is not None and before.ready else {}
        ident = paper_identity(paper)
        paper_row: dict[str, Any] = {
            "doc_id": doc_id,
            "title": title,
            "authors": list(paper.authors),
            "year": year,
            "abstract": _clip(paper.abstract, "abstract"),
            "source": _clip(source, "source"),
            "sources": list(dict.fromkeys([*(before.sources if before else []), source])),
            "sha256": sha,
            "n_chunks": len(body),
            "pages": _small_int(paper.pages, 16),
            "sections": [s.model_dump(mode="json") for s in paper.sections],
            "status": STATUS_INGESTING,
            "ingested_at": int(time.time()),
            "aliases": _alias_rows(ident),
            "search_text": _search_text(paper.title, ident, paper.abstract),
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
                    "section_title": _clip(c.section_title, "section_title"),
                    "parent_section": _clip(c.parent_section, "parent_section"),
                    "section_category": int(c.section_category),
                    "hierarchy_level": _small_int(c.hierarchy_level, 8),
                    "page_number": _small_int(c.page_number, 16),
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
                output_fields=[*_PAPER_OUT, "vector"],
                limit=1,
                consistency_level=CONSISTENCY,
            )
            if rows:  # hide it first: a crash half-way leaves a not-ready paper, never a partial ready one
                self._client.upsert(self.papers_name, [{**rows[0], "status": STATUS_INGESTING}])
            n = self.count_chunks(doc_id, kind=None)
            self._client.delete(self.chunks_name, filter=id_filter)
            self._client.delete(self.papers_name, filter=id_filter)
        return n

    # --- reads -----------------------------------------------------------------------------

    def get_context_window(self, doc_id: str, center_chunk_index: int, window_size: int = 1) -> list[StoredChunk]:
        """Body chunks center-window .. center+window of a ready paper, in order, clipped at its ends."""
        validate_doc_id(doc_id)
        if center_chunk_index < 0:
            raise ValueError(f"chunk_index must be >= 0, got {center_chunk_index}")
        if not 0 <= window_size <= 50:
            raise ValueError(f"window_size must be between 0 and 50, got {window_size}")
        lo, hi = max(0, center_chunk_index - window_size), center_chunk_index + window_size
        return self.get_body_chunks(doc_id, range(lo, hi + 1))

    def get_body_chunks(self, doc_id: str, indexes: Sequence[int]) -> list[StoredChunk]:
        """Body chunks of a ready paper at the given chunk_index values (at most 1000), in order: the windows of
        several hits read in one query."""
        validate_doc_id(doc_id)
        wanted = sorted({int(i) for i in indexes})
        if not wanted:
            return []
        if wanted[0] < 0 or len(wanted) > 1000:
            raise ValueError(f"chunk indexes must be >= 0 and at most 1000 of them, got {len(wanted)}")
        if not self._is_ready(doc_id, "reading a context window"):
            return []
        expr = and_exprs(f"doc_id == {quote_string(doc_id)}", 'kind == "chunk"', int_in("chunk_index", wanted))
        with self._failing("reading a context window", doc_id):
            rows = self._query(self.chunks_name, expr, _CHUNK_OUT)
        return sorted((self._to_chunk(r) for r in rows), key=lambda c: c.chunk_index)

    def get_section(self, doc_id: str, category: SectionCategory | str | int, max_tokens: int) -> list[StoredChunk]:
        """A ready paper's body chunks of one category, in order, until `max_tokens` (embedder tokens of `text`).

        The first chunk is always returned, even when it alone is longer than `max_tokens`.
        """
        validate_doc_id(doc_id)
        cat = parse_category(category)
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if not self._is_ready(doc_id, f"reading the {cat.name} section"):
            return []
        expr = and_exprs(f"doc_id == {quote_string(doc_id)}", 'kind == "chunk"', f"section_category == {int(cat)}")
        with self._failing(f"reading the {cat.name} section", doc_id):
            rows = self._query(self.chunks_name, expr, _CHUNK_OUT)
        out: list[StoredChunk] = []
        used = 0
        count = self.embedder.token_counter.count
        for chunk in sorted((self._to_chunk(r) for r in rows), key=lambda c: c.chunk_index):
            n = count(chunk.text)
            if out and used + n > max_tokens:
                break
            out.append(chunk)
            used += n
        return out

    def get_chunks(self, doc_id: str, kind: str | None = "chunk") -> list[StoredChunk]:
        """Every row of a paper (of one kind, or all kinds), ordered by kind then chunk_index."""
        validate_doc_id(doc_id)
        expr = and_exprs(f"doc_id == {quote_string(doc_id)}", _kind_expr(kind))
        with self._failing("reading chunks", doc_id):
            rows = self._query(self.chunks_name, expr, _CHUNK_OUT)
        return sorted((self._to_chunk(r) for r in rows), key=lambda c: (c.kind, c.chunk_index, c.id))

    def count_chunks(self, doc_id: str | None = None, kind: str | None = "chunk") -> int:
        """Rows of one paper (or of the whole kb), of one kind (default body chunks) or all kinds (None)."""
        parts = [_kind_expr(kind)]
        if doc_id is not None:
            parts.append(f"doc_id == {quote_string(validate_doc_id(doc_id))}")
        with self._failing("counting chunks", doc_id):
            res = self._client.query(
                self.chunks_name,
                filter=and_exprs(*parts),
                output_fields=["count(*)"],
                consistency_level=CONSISTENCY,
            )
        return int(res[0]["count(*)"]) if res else 0

    def damaged(self, papers: Sequence[PaperRecord] | None = None) -> dict[str, int]:
        """{doc_id: body chunks stored} of the ready papers whose stored chunks are not the number their catalogue
        row lists (a damaged or replaced chunks collection, a crash the store did not see).

        Cheap on a healthy store: one count over the ready papers' body chunks against the catalogue's total; the
        chunks are counted per paper only when the totals disagree. `papers`: the catalogue, if just read.
        """
        ready = [p for p in (self.list_papers(brief=True) if papers is None else papers) if p.ready]
        if not ready:
            return {}
        with self._failing("counting chunks of ready papers"):
            expr = self._scoped(SearchFilter(kinds=["chunk"]))
            res = self._client.query(
                self.chunks_name, filter=expr or "", output_fields=["count(*)"], consistency_level=CONSISTENCY
            )
        if (int(res[0]["count(*)"]) if res else 0) == sum(p.n_chunks for p in ready):
            return {}
        with self._failing("counting chunks per paper"):
            rows = self._query(self.chunks_name, _kind_expr("chunk"), ["doc_id"])
        stored: dict[str, int] = {}
        for r in rows:
            stored[r["doc_id"]] = stored.get(r["doc_id"], 0) + 1
        return {p.doc_id: stored.get(p.doc_id, 0) for p in ready if stored.get(p.doc_id, 0) != p.n_chunks}

    def list_papers(self, brief: bool = False) -> list[PaperRecord]:
        """The whole catalogue (ready or not), ordered by title.

        `brief` leaves out the abstract, authors and section tree: the reads routing and the agent make on
        every question, which at thousands of papers would otherwise move megabytes of JSON each time.
        """
        fields = _BRIEF_OUT if brief else _PAPER_OUT
        with self._failing("listing papers"):
            rows = self._query(self.papers_name, "", fields)
        return sorted((self._to_paper(r) for r in rows), key=lambda p: (p.title.casefold(), p.doc_id))

    def get_paper(self, doc_id: str) -> PaperRecord | None:
        """One paper's catalogue row (ready or not), or None."""
        validate_doc_id(doc_id)
        with self._failing("reading the paper", doc_id):
            rows = self._client.query(
                self.papers_name,
                filter=f"doc_id == {quote_string(doc_id)}",
                output_fields=_PAPER_OUT,
                limit=1,
                consistency_level=CONSISTENCY,
            )
        return self._to_paper(rows[0]) if rows else None

    def papers_from_source(self, source: str) -> list[PaperRecord]:
        """Papers (ready or not) that `source` (an escaped path, see paths.py) is one of the sources of."""
        with self._failing(f"looking up papers from {source}"):
            rows = self._query(self.papers_name, f"json_contains(sources, {quote_string(source)})", _PAPER_OUT)
        return [self._to_paper(r) for r in rows]

    def _update_paper(self, doc_id: str, what: str, **fields: Any) -> None:
        """Rewrite some catalogue fields of a paper (Milvus upserts whole rows: read it, vector included)."""
        with self._failing(what, doc_id):
            rows = self._client.query(
                self.papers_name,
                filter=f"doc_id == {quote_string(doc_id)}",
                output_fields=[*_PAPER_OUT, "vector"],
                limit=1,
                consistency_level=CONSISTENCY,
            )
            if rows:
                self._client.upsert(self.papers_name, [{**rows[0], **fields}])

    def set_sources(self, doc_id: str, sources: Sequence[str], source: str | None = None) -> None:
        """Record the paths that hold a paper (and, if given, the one it was last seen at)."""
        validate_doc_id(doc_id)
        update: dict[str, Any] = {"sources": list(dict.fromkeys(sources))}
        if source is not None:
            update["source"] = _clip(source, "source")
        self._update_paper(doc_id, "recording its source paths", **update)

    def set_status(self, doc_id: str, status: Status) -> None:
        """Mark a paper ready, ingesting or broken (what `check --repair` does when no file is left)."""
        validate_doc_id(doc_id)
        self._update_paper(doc_id, f"marking it {status}", status=status)

    def chunk_inventory(self) -> dict[str, dict[str, list[int]]]:
        """{doc_id: {kind: [chunk_index, ...]}} over every row of the chunks collection (for `check`)."""
        with self._failing("reading the chunk inventory"):
            rows = self._query(self.chunks_name, "", ["doc_id", "kind", "chunk_index"])
        out: dict[str, dict[str, list[int]]] = {}
        for r in rows:
            out.setdefault(r["doc_id"], {}).setdefault(r["kind"], []).append(int(r["chunk_index"]))
        return out

    def delete_chunks_of(self, doc_id: str) -> int:
        """Remove every chunk row of a doc_id, catalogue untouched (orphans); returns the rows removed."""
        validate_doc_id(doc_id)
        n = self.count_chunks(doc_id, kind=None)
        with self._failing("deleting its chunks", doc_id):
            self._client.delete(self.chunks_name, filter=f"doc_id == {quote_string(doc_id)}")
        return n

    def get_paper_by_sha(self, sha256: str) -> PaperRecord | None:
        """The paper ingested from a file with this sha256 (a ready one first), or None.

        A record whose status is not "ready" means an interrupted ingest: ingest it again.
        """
        sha = sha256.lower()
        if not _SHA256.fullmatch(sha):
            raise ValueError(f"sha256 must be 64 hex digits, got {sha256[:80]!r}")
        with self._failing(f"looking up sha256 {sha[:12]}"):
            rows = self._query(self.papers_name, f"sha256 == {quote_string(sha)}", _PAPER_OUT)
        papers = sorted((self._to_paper(r) for r in rows), key=lambda p: (not p.ready, -p.ingested_at))
        return papers[0] if papers else None

    # --- search ------------------------------------------------------------------------------

    @staticmethod
    def _check_query(query: str, k: int) -> None:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("the search query is empty")
        if not 1 <= k <= 1000:
            raise ValueError(f"k must be between 1 and 1000, got {k}")

    def _hits(self, result: Any, score: Callable[[float], float] = float) -> list[StoredChunk]:
        hits = result[0] if result else []
        return [self._to_chunk(dict(h["entity"], id=h["id"]), score(h["distance"])) for h in hits]

    def _search_chunks(self, what: str, data: Any, field: str, params: dict[str, Any], expr: str, k: int) -> Any:
        with self._failing(what):
            return self._client.search(
                self.chunks_name,
                data=[data],
                anns_field=field,
                filter=expr,
                limit=k,
                output_fields=_SEARCH_OUT,
                search_params=params,
                consistency_level=CONSISTENCY,
            )

    def search_dense(self, query: str, filter: SearchFilter | None = None, k: int = 10) -> list[StoredChunk]:
        """Nearest chunks by embedding (score = cosine similarity), ready papers only."""
        self._check_query(query, k)
        vector: list[float] = []

        def run(expr: str) -> list[StoredChunk]:
            nonlocal vector
            vector = vector or self.embedder.embed_query(query)
            return self._hits(self._search_chunks("dense search", vector, "vector", _dense_params(k), expr, k))

        return self._ready_search("dense search", filter, run)

    def search_bm25(self, query: str, filter: SearchFilter | None = None, k: int = 10) -> list[StoredChunk]:
        """Best chunks by BM25 over index_text (Milvus' BM25 function), ready papers only."""
        self._check_query(query, k)

        def run(expr: str) -> list[StoredChunk]:
            result = self._search_chunks("BM25 search", query, "sparse", _bm25_params(), expr, k)
            # BM25 scores are >= 0; Milvus Lite reports them negated, a server as they are.
            return self._hits(result, abs)

        return self._ready_search("BM25 search", filter, run)

    def search_hybrid(
        self,
        query: str,
        filter: SearchFilter | None = None,
        k: int = 10,
        fusion: Literal["rrf", "weighted"] = "rrf",
        rrf_k: int = 60,
        weights: tuple[float, float] = (0.5, 0.5),
        candidates: int | None = None,
    ) -> list[StoredChunk]:
        """Dense + BM25 fused by Milvus `hybrid_search` (RRF or weighted), ready papers only.

        `candidates` is how many hits each route contributes to the fusion (default max(2k, 20)).
        `weights` are (dense, bm25); weighted fusion normalizes both scores (arctan) first.
        """
        self._check_query(query, k)
        if fusion == "rrf":
            if rrf_k < 1:
                raise ValueError(f"rrf_k must be >= 1, got {rrf_k}")
            ranker = RRFRanker(rrf_k)
        elif fusion == "weighted":
            if len(weights) != 2 or any(not 0 <= w <= 1 for w in weights):
                raise ValueError(f"weights must be two numbers in [0, 1], got {weights!r}")
            ranker = WeightedRanker(float(weights[0]), float(weights[1]), norm_score=True)
        else:
            raise ValueError(f"unknown fusion {fusion!r}; use 'rrf' or 'weighted'")
        n = candidates or max(2 * k, 20)
        vector: list[float] = []

        def run(expr: str) -> list[StoredChunk]:
            nonlocal vector
            vector = vector or self.embedder.embed_query(query)
            where = expr or None
            reqs = [
                AnnSearchRequest(data=[vector], anns_field="vector", param=_dense_params(n), limit=n, expr=where),
                AnnSearchRequest(data=[query], anns_field="sparse", param=_bm25_params(), limit=n, expr=where),
            ]
            with self._failing("hybrid search"):
                result = self._client.hybrid_search(
                    self.chunks_name,
                    reqs,
                    ranker,
                    limit=k,
                    output_fields=_SEARCH_OUT,
                    consistency_level=CONSISTENCY,
                )
            return self._hits(result)

        return self._ready_search("hybrid search", filter, run)

    def search_papers(self, query: str, k: int = 5, doc_ids: Sequence[str] | None = None) -> list[PaperRecord]:
        """Ready papers whose title + abstract are nearest the query (score = cosine similarity)."""
        self._check_query(query, k)
        parts = [f"status == {quote_string(STATUS_READY)}"]
        if doc_ids is not None:
            ids = SearchFilter(doc_ids=list(doc_ids)).doc_ids or []
            if not ids:
                return []
            parts.append(string_in("doc_id", ids))
        vector = self.embedder.embed_query(query)
        with self._failing("paper search"):
            result = self._client.search(
                self.papers_name,
                data=[vector],
                anns_field="vector",
                filter=and_exprs(*parts),
                limit=k,
                output_fields=_PAPER_OUT,
                search_params=_dense_params(k),
                consistency_level=CONSISTENCY,
            )
        hits = result[0] if result else []
        return [self._to_paper(dict(h["entity"], doc_id=h["doc_id"]), float(h["distance"])) for h in hits]

    def search_papers_bm25(self, query: str, k: int = 10) -> list[PaperRecord]:
        """Ready papers whose title, aliases and abstract match the query's words best (score = BM25)."""
        self._check_query(query, k)
        with self._failing("paper search"):
            result = self._client.search(
                self.papers_name,
                data=[query],
                anns_field="sparse",
                filter=f"status == {quote_string(STATUS_READY)}",
                limit=k,
                output_fields=_BRIEF_OUT,
                search_params=_bm25_params(),
                consistency_level=CONSISTENCY,
            )
        hits = result[0] if result else []
        # Lite returns BM25 distances negated (see the module notes).
        return [self._to_paper(dict(h["entity"], doc_id=h["doc_id"]), abs(float(h["distance"]))) for h in hits]

    # --- lifecycle -------------------------------------------------------------------------------

    def flush(self) -> None:
        """Seal written rows into indexed segments (call after a bulk ingest; Lite also flushes by itself)."""
        with self._failing("flushing"):
            self._client.flush(self.chunks_name)
            self._client.flush(self.papers_name)
        self._unflushed = 0

    def close(self) -> None:
        """Flush (Lite), release the connection, and stop the Lite server when this was its last user."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        try:
            if self.is_lite and self._unflushed:
                self.flush()
        finally:
            self._close_client()

    def _close_client(self) -> None:
        try:
            self._client.close()
        finally:
            path = self._lite_path
            if path is not None:
                with _LITE_LOCK:
                    users = _LITE_USERS.get(path, 1) - 1
                    if users > 0:
                        _LITE_USERS[path] = users
                    else:
                        _LITE_USERS.pop(path, None)
                if users <= 0:
                    from milvus_lite.server_manager import server_manager_instance

                    server_manager_instance.release_server(path)

    def __enter__(self) -> PaperStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
