"""What the store hands back and how Milvus rows become it: StoredChunk, PaperRecord, PaperAlias, Catalogue.

Also what rows must fit: the VARCHAR byte limits (texts are clipped to them, or refused when cutting
would lose what a chunk says), small-int columns, and the deterministic chunk row ids.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from ...errors import StoreError
from ...parser.models import Section, SectionCategory
from ...sources.models import PaperMeta, Reference
from ..chunking import Chunk

STATUS_INGESTING = "ingesting"
STATUS_READY = "ready"
STATUS_BROKEN = "broken"  # chunks damaged and no file left to ingest it from (set by `check --repair`)
Status = Literal["ingesting", "ready", "broken"]
SHA256 = re.compile(r"^[0-9a-f]{64}$")

# VARCHAR limits in bytes (Milvus counts bytes); the 65535 ones are Milvus' maximum.
VARCHAR = {
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
    "summary": 65535,
    "sha256": 64,
    "status": 16,
}


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
        default=None, exclude=True, repr=False, description="The stored embedding, for MMR (`PaperStore.load_vectors`)."
    )

    @property
    def citation(self) -> str:
        """The citation id `<doc_id>:<chunk_index>`; a RAPTOR summary node's is `<doc_id>:raptor:<level>.<n>`."""
        if self.kind == "raptor":
            return raptor_citation(self.doc_id, self.metadata)
        return f"{self.doc_id}:{self.chunk_index}"


def raptor_citation(doc_id: str, metadata: dict[str, Any]) -> str:
    """`<doc_id>:raptor:<level>.<n>`: node n (0-based) of summary level `level` (1 = summaries of chunks)."""
    return f"{doc_id}:raptor:{int(metadata.get('level', 0))}.{int(metadata.get('node', 0))}"


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
    enrichments: list[str] = Field(
        default_factory=list, description="Index-time enrichments it was ingested with (rag/enrich), in order."
    )
    summary: str = Field("", description="Its summary written by the chat model at ingest (`summaries`), or empty.")
    meta: PaperMeta = Field(
        default_factory=PaperMeta,
        description="What its library (Zotero, a .bib file, arXiv, a DOI) and the PDF say of it: venue, DOI, arXiv "
        "id, citation key, collections, tags.",
    )
    score: float | None = Field(default=None, description="Similarity to the query, for `search_papers`.")
    stored_chunks: int | None = Field(
        default=None,
        description="Body chunks stored of a paper that is not ready (`list_papers`; n_chunks is what its ingest "
        "was writing); None when not counted.",
    )

    @property
    def ready(self) -> bool:
        """True once every chunk of the paper is stored."""
        return self.status == STATUS_READY


def to_chunk(row: dict[str, Any], score: float | None = None) -> StoredChunk:
    """A chunks-collection row (any subset of its output fields) as a StoredChunk."""
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


def to_paper(row: dict[str, Any], score: float | None = None) -> PaperRecord:
    """A catalogue row (full or brief) as a PaperRecord; a row of schema 1 (no `sources`) lists its `source`."""
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
        enrichments=[str(e) for e in row.get("enrichments") or []],
        summary=row.get("summary") or "",
        meta=PaperMeta.model_validate(row.get("meta") or {}),
        score=score,
    )


#: Bytes a paper's stored reference list may take (a JSON value is bounded; a 300-entry survey still fits, its entries'
#: texts cut, its ids and titles kept).
REFERENCES_BYTES = 60_000
_ENTRY_CHARS = (400, 160, 0)  # an entry's text, cut shorter until the list fits


def reference_rows(references: list[Reference]) -> list[dict[str, Any]]:
    """A reference list as the catalogue stores it: each entry's fields, its text cut until the list fits."""
    rows: list[dict[str, Any]] = []
    for chars in _ENTRY_CHARS:
        rows = [r.model_dump(exclude_defaults=True) | {"text": r.text[:chars]} for r in references]
        if len(json.dumps(rows, ensure_ascii=False).encode()) <= REFERENCES_BYTES:
            return rows
    while rows and len(json.dumps(rows, ensure_ascii=False).encode()) > REFERENCES_BYTES:
        rows = rows[: len(rows) * 3 // 4]  # pathological: entries dropped from the end rather than the list lost
    return rows


def to_references(rows: list[dict[str, Any]] | None) -> list[Reference]:
    """The stored reference list (rows a hostile or older catalogue holds that do not read are left out)."""
    out = []
    for row in rows or []:
        try:
            out.append(Reference.model_validate({"label": "", "text": "", **row}))
        except ValueError:
            continue
    return out


def chunk_row_id(doc_id: str, kind: str, chunk_index: int, n: int = 0) -> int:
    """Deterministic INT64 primary key: the first 63 bits of sha256(doc_id, kind, chunk_index, n)."""
    digest = hashlib.sha256(f"{doc_id}\x1f{kind}\x1f{chunk_index}\x1f{n}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def clip(text: str, field: str) -> str:
    """Cut `text` to the field's byte limit on a character boundary."""
    limit = VARCHAR[field]
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")


def fit(text: str, field: str, where: str, chunk: Chunk) -> str:
    """`text` if it fits the field's byte limit; a longer text is refused, never cut silently."""
    size = len(text.encode("utf-8"))
    if size > VARCHAR[field]:
        raise StoreError(
            f"{where}: {chunk.kind} {chunk.chunk_index} ({chunk.section_title or 'no section'}): {field} is "
            f"{size:,} bytes, over Milvus' {VARCHAR[field]:,}-byte limit; nothing was stored (a smaller "
            "chunk_size keeps chunks within it)"
        )
    return text


def clipped(text: str, field: str) -> bool:
    """True when the store would cut `text` to fit `field` (titles, abstracts: what ingest warns about)."""
    return len(text.encode("utf-8")) > VARCHAR[field]


def small_int(value: int | None, bits: int) -> int:
    """Clamp to a signed INTn column (0 for None)."""
    top = (1 << (bits - 1)) - 1
    return max(-top - 1, min(top, int(value or 0)))


@dataclass(frozen=True, eq=False)
class Catalogue:
    """The papers of a knowledge base (brief rows, ready or not, ordered by title) at one version.

    Immutable: what is derived from it (the paper locator, an agent's paper list) can be cached against the
    object itself and is rebuilt when `PaperStore.catalogue()` returns another one.
    """

    version: tuple[str, int]
    papers: tuple[PaperRecord, ...]
    by_id: dict[str, PaperRecord] = field(init=False, repr=False)
    ready: tuple[PaperRecord, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {p.doc_id: p for p in self.papers})
        object.__setattr__(self, "ready", tuple(p for p in self.papers if p.ready))

    @property
    def waiting(self) -> list[PaperRecord]:
        """Papers that are not ready (an interrupted ingest, a paper being removed, a broken one)."""
        return [p for p in self.papers if not p.ready]
