"""Reads by doc_id and over the catalogue: context windows, sections, a paper's chunks, counts, the catalogue,
the damaged-paper check and the chunk inventory `check` compares with it.

Reads of a paper's text (`get_context_window`, `get_body_chunks`, `get_section`) return nothing for a paper
that is not ready (see base.py); reads of the catalogue show every paper with its status.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any

from ...parser.models import SectionCategory
from ...sources.models import Reference
from ..filters import KINDS, SearchFilter, and_exprs, parse_category, quote_string, string_in, validate_doc_id
from .base import CONSISTENCY, StoreBase, key_in
from .records import SHA256, STATUS_READY, PaperRecord, StoredChunk, chunk_row_id, to_chunk, to_paper, to_references
from .schema import BRIEF_OUT, CHUNK_OUT, PAPER_OUT

# Body chunks read at a time when a section is looked for from the start of a paper (`get_section`).
SECTION_BATCH = 12
POINT_READ = 1000  # primary keys per point read


def _kind_expr(kind: str | None) -> str:
    """`kind == "x"` for an allowed kind, "" for None (every kind)."""
    if kind is None:
        return ""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}")
    return string_in("kind", [kind])


class ReadsMixin(StoreBase):
    """Reads of chunks and catalogue rows."""

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
        if len({int(i) for i in indexes}) > 1000:
            raise ValueError(f"chunk indexes must be >= 0 and at most 1000 of them, got {len(set(indexes))}")
        return self.get_windows({doc_id: indexes}).get(doc_id, [])

    def get_windows(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, list[StoredChunk]]:
        """Body chunks of several papers at the given chunk_index values ({doc_id: indexes}), each paper's in order;
        papers that are not ready get none. The windows of a whole answer: one readiness check and one read."""
        asked: dict[str, list[int]] = {}
        for doc_id, indexes in wanted.items():
            validate_doc_id(doc_id)
            found = sorted({int(i) for i in indexes})
            if found and found[0] < 0:
                raise ValueError(f"chunk indexes must be >= 0, got {found[0]}")
            if found:
                asked[doc_id] = found
        if not asked:
            return {}
        with self._failing("reading context windows"):
            ready = self._ready_ids(list(asked))
        return self._body_chunks({d: i for d, i in asked.items() if d in ready}, "reading context windows")

    def _body_chunks(self, wanted: Mapping[str, Iterable[int]], what: str) -> dict[str, list[StoredChunk]]:
        """Body chunks by doc_id and chunk_index, each paper's in order, read by their primary keys (a function of
        doc_id, kind and chunk_index: `chunk_row_id`), which Milvus Lite answers without scanning the collection."""
        keys = {chunk_row_id(d, "chunk", i): (d, i) for d, indexes in wanted.items() for i in indexes}
        with self._failing(what, next(iter(wanted)) if len(wanted) == 1 else None):
            rows = self._chunk_rows(list(keys), CHUNK_OUT)
        out: dict[str, list[StoredChunk]] = {d: [] for d in wanted}
        for r in rows:
            key = keys.get(int(r["id"]))
            if key is not None and key == (r.get("doc_id"), r.get("chunk_index")) and r.get("kind") == "chunk":
                out[key[0]].append(to_chunk(r))
        for chunks in out.values():
            chunks.sort(key=lambda c: c.chunk_index)
        return out

    def load_vectors(self, chunks: Sequence[StoredChunk]) -> None:
        """Fill in the stored embedding of the chunks that have none (searches return none; MMR needs them), read
        by primary key in one query; a chunk whose row is gone keeps None."""
        wanted = {c.id: c for c in chunks if c.vector is None}
        if not wanted:
            return
        with self._failing("reading chunk vectors"):
            rows = self._chunk_rows(list(wanted), ["id", "vector"])
        for row in rows:
            if (chunk := wanted.get(int(row["id"]))) is not None:
                chunk.vector = [float(x) for x in row["vector"]]

    def _chunk_rows(self, ids: Sequence[int], fields: list[str]) -> list[dict[str, Any]]:
        """The chunk rows of these primary keys (`fields` of each), `POINT_READ` keys a query: Milvus Lite answers
        `id in [...]` from its key index without scanning the collection."""
        rows: list[dict[str, Any]] = []
        for start in range(0, len(ids), POINT_READ):
            part = ids[start : start + POINT_READ]
            rows += self._client.query(
                self.chunks_name,
                filter=key_in("id", part),
                output_fields=fields,
                limit=len(part),
                consistency_level=CONSISTENCY,
            )
        return rows

    def get_section(self, doc_id: str, category: SectionCategory | str | int, max_tokens: int) -> list[StoredChunk]:
        """A ready paper's body chunks of one category, in order, until `max_tokens` (embedder tokens of `text`).

        The first chunk is always returned, even when it alone is longer than `max_tokens`.
        """
        validate_doc_id(doc_id)
        return self.get_sections([doc_id], category, max_tokens).get(doc_id, [])

    def get_sections(
        self, doc_ids: Sequence[str], category: SectionCategory | str | int, max_tokens: int
    ) -> dict[str, list[StoredChunk]]:
        """`get_section` for several papers at once ({doc_id: chunks}; papers that are not ready get none).

        A paper whose sections of this category form one run (the Abstract, the Introduction) has its chunks read
        in order by primary key, a batch at a time for all the papers together, until the run ends or the budget is
        spent; one whose first batch lacks the category, or whose category comes back later in the paper, is read
        with a filter (a scan of the collection on Milvus Lite).
        """
        cat = parse_category(category)
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        wanted = list(dict.fromkeys(validate_doc_id(d) for d in doc_ids))
        if not wanted:
            return {}
        what = f"reading the {cat.name} section"
        with self._failing(what, wanted[0] if len(wanted) == 1 else None):
            rows = self._client.query(
                self.papers_name,
                filter=key_in("doc_id", wanted),
                output_fields=["doc_id", "status", "n_chunks", "sections"],
                limit=len(wanted),
                consistency_level=CONSISTENCY,
            )
        papers = {p.doc_id: p for p in map(to_paper, rows) if p.ready}
        out: dict[str, list[StoredChunk]] = {d: [] for d in wanted if d in papers}
        used = dict.fromkeys(out, 0)
        count = self.embedder.token_counter.count
        by_filter = [d for d in out if [c for c, _ in groupby(s.category for s in papers[d].sections)].count(cat) != 1]
        reading = [d for d in out if d not in by_filter]
        start = 0
        while reading:
            batch = self._body_chunks({d: range(start, start + SECTION_BATCH) for d in reading}, what)
            still: list[str] = []
            for d in reading:
                chunks = batch.get(d, [])
                if start == 0 and not any(c.section_category == cat for c in chunks):
                    by_filter.append(d)
                    continue
                done = False
                for chunk in chunks:
                    if chunk.section_category != cat:
                        done = bool(out[d])  # the run has ended
                        if done:
                            break
                        continue
                    n = count(chunk.text)
                    if out[d] and used[d] + n > max_tokens:
                        done = True
                        break
                    out[d].append(chunk)
                    used[d] += n
                if not done and start + SECTION_BATCH < papers[d].n_chunks:
                    still.append(d)
            reading = still
            start += SECTION_BATCH
        for d in by_filter:
            out[d] = self._section_by_filter(d, cat, max_tokens, what)
        return out

    def _section_by_filter(self, doc_id: str, cat: SectionCategory, max_tokens: int, what: str) -> list[StoredChunk]:
        expr = and_exprs(f"doc_id == {quote_string(doc_id)}", 'kind == "chunk"', f"section_category == {int(cat)}")
        with self._failing(what, doc_id):
            rows = self._query(self.chunks_name, expr, CHUNK_OUT)
        out: list[StoredChunk] = []
        used = 0
        count = self.embedder.token_counter.count
        for chunk in sorted((to_chunk(r) for r in rows), key=lambda c: c.chunk_index):
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
            rows = self._query(self.chunks_name, expr, CHUNK_OUT)
        return sorted((to_chunk(r) for r in rows), key=lambda c: (c.kind, c.chunk_index, c.id))

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

        `brief` leaves out the abstract and the section tree: the reads routing and the agent make on
        every question, which at thousands of papers would otherwise move megabytes of JSON each time. Without
        it, the body chunks stored of each paper that is not ready are counted (`stored_chunks`): its row lists
        those its ingest was writing, not those it wrote before it stopped.
        """
        fields = BRIEF_OUT if brief else PAPER_OUT
        with self._failing("listing papers"):
            rows = self._query(self.papers_name, "", fields)
        papers = sorted((to_paper(r) for r in rows), key=lambda p: (p.title.casefold(), p.doc_id))
        waiting = [p.doc_id for p in papers if not p.ready]
        if brief or not waiting:
            return papers
        expr = and_exprs(_kind_expr("chunk"), string_in("doc_id", waiting))
        with self._failing("counting the chunks of papers that are not ready"):
            stored = Counter(r["doc_id"] for r in self._query(self.chunks_name, expr, ["doc_id"]))
        return [p if p.ready else p.model_copy(update={"stored_chunks": stored[p.doc_id]}) for p in papers]

    def get_paper(self, doc_id: str) -> PaperRecord | None:
        """One paper's catalogue row (ready or not), or None."""
        validate_doc_id(doc_id)
        with self._failing("reading the paper", doc_id):
            rows = self._client.query(
                self.papers_name,
                filter=key_in("doc_id", [doc_id]),
                output_fields=PAPER_OUT,
                limit=1,
                consistency_level=CONSISTENCY,
            )
        return to_paper(rows[0]) if rows else None

    def references_of(self, doc_id: str) -> list[Reference]:
        """A paper's reference list as its ingest read it (empty when none was found, or it was ingested before
        reference lists were read)."""
        validate_doc_id(doc_id)
        with self._failing("reading its reference list", doc_id):
            rows = self._query(self.papers_name, key_in("doc_id", [doc_id]), ["doc_id", "references"])
        return to_references(rows[0].get("references")) if rows else []

    def all_references(self) -> dict[str, list[Reference]]:
        """Every ready paper's reference list, by doc_id (what `citedby` reads)."""
        with self._failing("reading the reference lists"):
            rows = self._query(self.papers_name, f"status == {quote_string(STATUS_READY)}", ["doc_id", "references"])
        return {r["doc_id"]: to_references(r.get("references")) for r in rows}

    def papers_from_source(self, source: str) -> list[PaperRecord]:
        """Papers (ready or not) that `source` (an escaped path, see paths.py) is one of the sources of."""
        with self._failing(f"looking up papers from {source}"):
            rows = self._query(self.papers_name, f"json_contains(sources, {quote_string(source)})", PAPER_OUT)
        return [to_paper(r) for r in rows]

    def get_paper_by_sha(self, sha256: str) -> PaperRecord | None:
        """The paper ingested from a file with this sha256 (a ready one first), or None.

        A record whose status is not "ready" means an interrupted ingest: ingest it again.
        """
        sha = sha256.lower()
        if not SHA256.fullmatch(sha):
            raise ValueError(f"sha256 must be 64 hex digits, got {sha256[:80]!r}")
        with self._failing(f"looking up sha256 {sha[:12]}"):
            rows = self._query(self.papers_name, f"sha256 == {quote_string(sha)}", PAPER_OUT)
        papers = sorted((to_paper(r) for r in rows), key=lambda p: (not p.ready, -p.ingested_at))
        return papers[0] if papers else None

    def paper_vectors(self) -> dict[str, list[float]]:
        """{doc_id: vector} of every catalogue row (its title and abstract embedded), as stored (for `check`)."""
        with self._failing("reading the catalogue's vectors"):
            rows = self._query(self.papers_name, "", ["doc_id", "vector"])
        return {r["doc_id"]: [float(x) for x in r["vector"]] for r in rows}

    def chunk_inventory(self) -> dict[str, dict[str, list[int]]]:
        """{doc_id: {kind: [chunk_index, ...]}} over every row of the chunks collection (for `check`)."""
        with self._failing("reading the chunk inventory"):
            rows = self._query(self.chunks_name, "", ["doc_id", "kind", "chunk_index"])
        out: dict[str, dict[str, list[int]]] = {}
        for r in rows:
            out.setdefault(r["doc_id"], {}).setdefault(r["kind"], []).append(int(r["chunk_index"]))
        return out
