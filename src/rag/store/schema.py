"""The two collections of a knowledge base: their fields, indexes, BM25 functions and properties; opening them
(created when missing, refused when built by another embedder or schema) and migrating an older catalogue.

Milvus Lite notes (checked against milvus-lite 3.2.2 + pymilvus 3.0.2):
- BM25 `Function`, SPARSE_INVERTED_INDEX/BM25, JSON fields and collection properties all work (for the
  searches, see search.py).
- Scalar indexes: only INVERTED is implemented (STL_SORT, BITMAP, TRIE are rejected), so INVERTED is
  used everywhere; a server supports it on every field type used here.
- A reopened Lite collection starts "released": collections are loaded explicitly on open.
- Collections cannot gain fields in Lite (`add_collection_field` is not implemented): a catalogue of
  schema 1 (without `sources`) is rebuilt under a temporary name and renamed (`_migrate_papers`).
"""

from __future__ import annotations

import uuid

from ...errors import StoreError
from ..identity import alias_rows, identity_of, search_text
from .base import CONSISTENCY, StoreBase
from .connection import knowledge_bases
from .milvus import CollectionSchema, DataType, Function, FunctionType, MilvusClient
from .properties import created_properties
from .records import VARCHAR, clip

# 2: the catalogue's `sources`; 3: its `aliases`, searched with BM25 with title and abstract; 4: the enrichments
# each paper was indexed with and its summary (rag/enrich); 5: `meta`, what a library (Zotero, BibTeX, arXiv) and
# the PDF say of the paper (venue, DOI, arXiv id, citation key, collections, tags), and `references`, its reference
# list as entries.
SCHEMA_VERSION = "5"
PROP_EMBEDDER = "paperscope.embedder"
PROP_DIM = "paperscope.dim"
PROP_SCHEMA = "paperscope.schema"
PROP_CATALOGUE = "paperscope.catalogue"  # the catalogue's version token (catalogue.py), on the papers collection
_BM25_INDEX = {"inverted_index_algo": "DAAT_MAXSCORE", "bm25_k1": 1.2, "bm25_b": 0.75}

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
    "enrichments": DataType.JSON,
    "summary": DataType.VARCHAR,
    "meta": DataType.JSON,
    "references": DataType.JSON,
    "vector": DataType.FLOAT_VECTOR,
    "sparse": DataType.SPARSE_FLOAT_VECTOR,
}
# Fields an earlier catalogue schema lacks; `_migrate_papers` rebuilds the catalogue with them.
_LATER_FIELDS = ("sources", "aliases", "search_text", "sparse", "enrichments", "summary", "meta", "references")

# What reads and searches ask for.
CHUNK_OUT = [f for f in CHUNK_FIELDS if f not in ("vector", "sparse")]
# A paper's reference list is read on its own (`references_of`): listing papers never moves it.
PAPER_OUT = [f for f in PAPER_FIELDS if f not in ("vector", "sparse", "references")]
#: What rewriting a whole catalogue row reads back (Milvus upserts whole rows).
PAPER_ROW = [*PAPER_OUT, "references", "vector"]
BRIEF_OUT = [
    "doc_id",
    "title",
    "authors",  # a bibliography of an answer names them
    "year",
    "source",
    "sources",
    "sha256",
    "n_chunks",
    "pages",
    "status",
    "ingested_at",
    "aliases",
    "enrichments",
    "meta",
]
# Searches return no vectors: at 10k chunks a survey's 60 candidates cost ~10 ms more with theirs, and MMR needs
# only the vectors of a paper's hits when it picks several (`PaperStore.load_vectors` reads those by key).
SEARCH_OUT = CHUNK_OUT


def new_version() -> str:
    """A fresh catalogue version token."""
    return uuid.uuid4().hex


class SchemaMixin(StoreBase):
    """Opening, creating, checking and migrating the collections of the knowledge base."""

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
        """Schema 1 to 4 -> 5: rebuild the catalogue with `sources` (each paper's own source), `aliases`
        (from its title, abstract and authors), `enrichments` (none), `summary` (none), `meta` and `references`
        (none: `ingest --force` reads them) under a temporary name, then swap it in; a crash at any point leaves
        one whole catalogue (see `_finish_migration`)."""
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
                r.setdefault("enrichments", [])
                r.setdefault("summary", "")
                r.setdefault("meta", {})
                r.setdefault("references", [])
                if "aliases" not in r:
                    ident = identity_of(r.get("title", ""), r.get("abstract", ""), list(r.get("authors") or []))
                    r["aliases"] = alias_rows(ident)
                    r["search_text"] = clip(
                        search_text(r.get("title", ""), ident, r.get("abstract", "")), "search_text"
                    )
                batch.append(r)
            self._client.insert(tmp, batch)
        self._client.flush(tmp)
        self._client.drop_collection(self.papers_name)
        self._client.rename_collection(tmp, self.papers_name)

    def _properties(self, dim: int, name: str) -> dict[str, str]:
        props = {PROP_EMBEDDER: name, PROP_DIM: str(dim), PROP_SCHEMA: SCHEMA_VERSION, PROP_CATALOGUE: new_version()}
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
        schema.add_field("doc_id", DataType.VARCHAR, max_length=VARCHAR["doc_id"])
        schema.add_field("title", DataType.VARCHAR, max_length=VARCHAR["title"])
        schema.add_field("conference_year", DataType.INT16)
        schema.add_field("chunk_index", DataType.INT32)
        schema.add_field("text", DataType.VARCHAR, max_length=VARCHAR["text"])
        schema.add_field(
            "index_text",
            DataType.VARCHAR,
            max_length=VARCHAR["index_text"],
            enable_analyzer=True,
            enable_match=True,
        )
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("section_title", DataType.VARCHAR, max_length=VARCHAR["section_title"])
        schema.add_field("parent_section", DataType.VARCHAR, max_length=VARCHAR["parent_section"])
        schema.add_field("section_category", DataType.INT8)
        schema.add_field("hierarchy_level", DataType.INT8)
        schema.add_field("page_number", DataType.INT16)
        schema.add_field("kind", DataType.VARCHAR, max_length=VARCHAR["kind"])
        schema.add_field("metadata", DataType.JSON)
        self._create(self.chunks_name, schema, "index_text", ("doc_id", "section_category", "chunk_index"), dim, name)

    def _create_papers(self, dim: int, name: str, collection: str | None = None) -> None:
        collection = collection or self.papers_name
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=VARCHAR["doc_id"], is_primary=True)
        schema.add_field("title", DataType.VARCHAR, max_length=VARCHAR["title"])
        schema.add_field("authors", DataType.JSON)
        schema.add_field("year", DataType.INT16)
        schema.add_field("abstract", DataType.VARCHAR, max_length=VARCHAR["abstract"])
        schema.add_field("source", DataType.VARCHAR, max_length=VARCHAR["source"])
        schema.add_field("sources", DataType.JSON)
        schema.add_field("sha256", DataType.VARCHAR, max_length=VARCHAR["sha256"])
        schema.add_field("n_chunks", DataType.INT32)
        schema.add_field("pages", DataType.INT16)
        schema.add_field("sections", DataType.JSON)
        schema.add_field("status", DataType.VARCHAR, max_length=VARCHAR["status"])
        schema.add_field("ingested_at", DataType.INT64)
        schema.add_field("aliases", DataType.JSON)
        # Title, aliases and abstract: what paper location searches with BM25 (`search_papers_bm25`).
        schema.add_field(
            "search_text",
            DataType.VARCHAR,
            max_length=VARCHAR["search_text"],
            enable_analyzer=True,
        )
        schema.add_field("enrichments", DataType.JSON)  # what the paper was indexed with (rag/enrich)
        schema.add_field("summary", DataType.VARCHAR, max_length=VARCHAR["summary"])  # the model's, or ""
        schema.add_field("meta", DataType.JSON)  # what the library and the PDF say of it (sources.PaperMeta)
        schema.add_field("references", DataType.JSON)  # its reference list (sources.references.Reference rows)
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
