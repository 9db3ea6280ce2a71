"""Retrievers: a query, a typed filter and k in, ranked chunks out; chosen by a spec string.

| spec | what it does |
|---|---|
| `bm25` | Milvus BM25 over each chunk's index_text (the default: best on the real dev papers) |
| `dense` | embedding similarity |
| `hybrid`, `hybrid:rrf`, `hybrid:weighted` | dense + BM25 fused inside Milvus (weighted: dense 0.7, sparse 0.3) |
| `ensemble:bm25=0.6,dense=0.4` | any retrievers, each run alone, fused here by weighted reciprocal rank |
| `parent_document`, `parent_document:hybrid` | search the children of a `parent_child` ingest, return their parents |
| `raptor`, `raptor:dense` | RAPTOR collapsed: chunks and every level of the summary trees in one top-k |
| `raptor:tree`, `raptor:tree:dense` | RAPTOR tree traversal: the best roots, then their best children, down to chunks |

On a `parent_child` knowledge base every retriever searches the children (kind "chunk"); parents (kind "parent")
are context, never hits of their own, except through `parent_document`. Rows an enrichment derived from a chunk
(kinds question and summary) stand for that chunk: `to_chunks` maps hits on them back (the engine does).

`make_retriever` looks the name before the first ':' up in the operator registry and calls the factory registered
with it (a class's `from_spec`; a class that takes no argument is built as it is) with the rest; a retriever of
another module or a plugin is built the same way (docs/operators.md, "Adding an operator").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from ..config import RetrievalSettings
from ..errors import ConfigError
from .registry import build, register

if TYPE_CHECKING:  # imported where used: settings validation builds retrievers without loading Milvus
    from .filters import SearchFilter
    from .store import PaperStore, StoredChunk


class Retriever(Protocol):
    """Anything that ranks chunks for a query.

    Built from a spec by the factory registered with it (`from_spec(arg, settings)` where the spec takes an
    argument); an optional `embeds_queries` attribute says it embeds the query (the paper locator then embeds
    questions too).
    """

    @property
    def name(self) -> str: ...

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        """The k best chunks for `query` under `search_filter`, best first."""
        ...


@register("retriever", "dense")
class Dense:
    """Embedding similarity; reads meaning, but MiniLM sees only a chunk's first 256 tokens and is weak on numbers."""

    name = "dense"
    embeds_queries = True

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        return store.search_dense(query, search_filter, k)


@register("retriever", "bm25")
class BM25:
    """Milvus BM25 over index_text: exact names, numbers and terms (the default)."""

    name = "bm25"
    embeds_queries = False

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        return store.search_bm25(query, search_filter, k)


@register("retriever", "hybrid", usage="hybrid[:rrf|:weighted]")
class Hybrid:
    """Dense + BM25 in one Milvus hybrid search, fused by RRF or by weights (dense 0.7 / sparse 0.3 by default)."""

    embeds_queries = True

    def __init__(self, fusion: str = "rrf", weights: tuple[float, float] = (0.7, 0.3), rrf_k: int = 60) -> None:
        if fusion not in ("rrf", "weighted"):
            raise ConfigError(f"retriever hybrid:{fusion}: the fusion is 'rrf' or 'weighted'")
        self.fusion = fusion
        self.weights = weights
        self.rrf_k = rrf_k

    @classmethod
    def from_spec(cls, arg: str, settings: RetrievalSettings) -> Hybrid:
        """`hybrid:weighted`; no argument: `retrieval.hybrid_fusion`."""
        r = settings
        return cls(arg or r.hybrid_fusion, (r.dense_weight, r.sparse_weight), r.rrf_k)

    @property
    def name(self) -> str:
        return f"hybrid:{self.fusion}"

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        fusion: Literal["rrf", "weighted"] = "weighted" if self.fusion == "weighted" else "rrf"
        return store.search_hybrid(query, search_filter, k, fusion=fusion, rrf_k=self.rrf_k, weights=self.weights)


@register("retriever", "ensemble", usage="ensemble:<name>=<weight>,...")
class Ensemble:
    """Any retrievers run side by side, their rankings fused by weighted reciprocal rank (e.g. bm25=0.6,dense=0.4)."""

    def __init__(self, members: Sequence[tuple[Retriever, float]], rrf_k: int = 60, depth: int = 3) -> None:
        if not members:
            raise ConfigError("retriever ensemble needs members, e.g. ensemble:bm25=0.6,dense=0.4")
        self.members = list(members)
        self.rrf_k = rrf_k
        self.depth = depth  # each member is asked for depth * k hits, so a chunk ranked low by one can still win

    @classmethod
    def from_spec(cls, arg: str, settings: RetrievalSettings) -> Ensemble:
        """`ensemble:bm25=0.6,dense=0.4` (a weight defaults to 1); no argument: `retrieval.ensemble`."""
        members: list[tuple[Retriever, float]] = []
        for part in (arg or settings.ensemble).split(","):
            member, _, weight = part.strip().partition("=")
            if member.startswith("ensemble") or member.startswith("parent_document"):
                raise ConfigError(f"retriever ensemble: {member!r} cannot be a member; use bm25, dense or hybrid")
            try:
                w = float(weight) if weight else 1.0
            except ValueError:
                raise ConfigError(f"retriever ensemble: weight {weight!r} of {member!r} is not a number") from None
            if not 0 < w <= 10:
                raise ConfigError(f"retriever ensemble: weight of {member!r} must be in (0, 10], got {w:g}")
            members.append((make_retriever(member, settings), w))
        return cls(members, settings.rrf_k)

    @property
    def name(self) -> str:
        return "ensemble:" + ",".join(f"{r.name}={w:g}" for r, w in self.members)

    @property
    def embeds_queries(self) -> bool:
        return any(embeds_queries(r) for r, _ in self.members)

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        rankings = [(r.search(store, query, search_filter, self.depth * k), w) for r, w in self.members]
        return fuse(rankings, k, self.rrf_k)


def fuse(rankings: Sequence[tuple[Sequence[StoredChunk], float]], k: int, rrf_k: int = 60) -> list[StoredChunk]:
    """Weighted reciprocal-rank fusion: a chunk scores sum(weight / (rrf_k + rank)) over the rankings holding it."""
    score: dict[int, float] = {}
    first: dict[int, StoredChunk] = {}
    for hits, weight in rankings:
        for rank, hit in enumerate(hits, start=1):
            score[hit.id] = score.get(hit.id, 0.0) + weight / (rrf_k + rank)
            first.setdefault(hit.id, hit)
    best = sorted(score, key=lambda i: -score[i])[:k]
    return [first[i].model_copy(update={"score": score[i]}) for i in best]


@register("retriever", "parent_document", needs=("parent_child knowledge base",), usage="parent_document[:<base>]")
class ParentDocument:
    """Search the small children of a parent_child ingest, answer with their large parents (`matched` = children)."""

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner

    @classmethod
    def from_spec(cls, arg: str, settings: RetrievalSettings) -> ParentDocument:
        """`parent_document:hybrid`: the base searches the children; no argument: bm25."""
        if arg.startswith("parent_document"):
            raise ConfigError("retriever parent_document cannot search parents of parents")
        return cls(make_retriever(arg or "bm25", settings))

    @property
    def name(self) -> str:
        return f"parent_document:{self.inner.name}"

    @property
    def embeds_queries(self) -> bool:
        return embeds_queries(self.inner)

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        children = self.inner.search(store, query, search_filter, 4 * k)
        groups: dict[tuple[str, int], list[StoredChunk]] = {}
        for child in children:
            parent = child.metadata.get("parent_index")
            if parent is None:
                raise ConfigError(
                    f"retriever parent_document: knowledge base {store.kb!r} has no parent chunks; ingest it with "
                    f"`paperscope ingest PATH --kb {store.kb} --strategy parent_child --force` to use it"
                )
            groups.setdefault((child.doc_id, int(parent)), []).append(child)
        hits: list[StoredChunk] = []
        keys = list(groups)[:k]
        parents = {
            (p.doc_id, p.chunk_index): p
            for doc_id in dict.fromkeys(d for d, _ in keys)
            for p in store.get_chunks(doc_id, kind="parent")  # one read per paper (k papers at most)
        }
        for key in keys:
            members = groups[key]
            parent = parents.get(key)
            if parent is None:
                continue
            best = members[0]
            span = sorted(c.chunk_index for c in members)
            hits.append(
                best.model_copy(
                    update={
                        "text": parent.text,
                        "metadata": {
                            **best.metadata,
                            "matched": [c.citation for c in members],
                            "parent_span": [span[0], span[-1]],
                            "page_end": parent.metadata.get("page_end", best.page_number),
                        },
                    }
                )
            )
        return hits


def embeds_queries(retriever: Retriever) -> bool:
    """True when the retriever embeds the query (dense search, alone or as part of hybrid or an ensemble): its
    `embeds_queries` attribute; a retriever without one is taken not to."""
    return bool(getattr(retriever, "embeds_queries", False))


#: Derived row kinds that stand for one chunk (their metadata's chunk_index names it).
STANDS_FOR_CHUNK = ("question", "summary")


def to_chunks(hits: Sequence[StoredChunk]) -> list[StoredChunk]:
    """Hits on question and summary rows as the chunks they stand for (those rows carry the chunk's fields and
    text), each chunk once, at its first rank with its best score; other hits as they are, in order."""
    from .store import chunk_row_id

    out: dict[tuple[str, str, int], StoredChunk] = {}
    for hit in hits:
        if hit.kind in STANDS_FOR_CHUNK:
            index = hit.metadata.get("chunk_index")
            if not isinstance(index, int):
                continue  # a derived row that points nowhere is no evidence
            meta = {k: v for k, v in hit.metadata.items() if k not in ("chunk_index", "scope", "section_id", "span")}
            update = {
                "kind": "chunk",
                "chunk_index": index,
                "id": chunk_row_id(hit.doc_id, "chunk", index),
                "metadata": {**meta, "found_by": hit.kind},
            }
            hit = hit.model_copy(update=update)
        key = (hit.doc_id, hit.kind, hit.chunk_index)
        best = out.get(key)
        if best is None:
            out[key] = hit
        elif (hit.score or 0.0) > (best.score or 0.0):
            out[key] = best.model_copy(update={"score": hit.score})
    return list(out.values())


@register("retriever", "raptor", needs=("raptor enrichment",), usage="raptor[:<base>]")
class Raptor:
    """RAPTOR collapsed: the chunks and every level of the papers' summary trees compete in one top-k."""

    def __init__(self, inner: Retriever, tree: bool = False, beam: int = 3) -> None:
        self.inner = inner
        self.tree = tree
        self.beam = beam

    @classmethod
    def from_spec(cls, arg: str, settings: RetrievalSettings) -> Raptor:
        """`raptor:dense` (collapsed), `raptor:tree:dense` (tree traversal); no base: bm25."""
        tree = arg == "tree" or arg.startswith("tree:")
        inner = arg.partition(":")[2] if tree else arg
        if inner.split(":")[0] in ("raptor", "parent_document", "ensemble"):
            spec = f"raptor:{arg}"
            raise ConfigError(f"retriever {spec}: the base of raptor is bm25, dense or hybrid, not {inner!r}")
        return cls(make_retriever(inner or "bm25", settings), tree=tree, beam=settings.raptor_beam)

    @property
    def name(self) -> str:
        return f"raptor:{'tree:' if self.tree else ''}{self.inner.name}"

    @property
    def embeds_queries(self) -> bool:
        return embeds_queries(self.inner)

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        from .filters import SearchFilter

        scope = search_filter or SearchFilter()
        papers = store.catalogue().ready
        if not any("raptor" in p.enrichments for p in papers if not scope.doc_ids or p.doc_id in scope.doc_ids):
            # Without a single summary tree this would be its base retriever under another name.
            raise ConfigError(
                f"retriever {self.name} needs papers enriched with raptor (`paperscope ingest --enrich raptor`): "
                "none of the papers searched has a summary tree"
            )
        if not self.tree:
            kinds = list(dict.fromkeys([*scope.kinds, "raptor"]))
            return self.inner.search(store, query, scope.model_copy(update={"kinds": kinds}), k)
        picked = self._descend(store, query, scope)
        if len(picked) < k:  # papers without a tree, or a shallow one: their chunks fill the rest
            seen = {(h.doc_id, h.kind, h.chunk_index) for h in picked}
            rest = self.inner.search(store, query, scope, k)
            picked += [h for h in rest if (h.doc_id, h.kind, h.chunk_index) not in seen]
        return picked[:k]

    def _descend(self, store: PaperStore, query: str, scope: SearchFilter) -> list[StoredChunk]:
        """Tree traversal: the `beam` best roots, then the best of their children, level by level down to the
        chunks; every node picked on the way, scored relative to the best of its level, deeper ones first."""
        # Summary nodes span sections: a section filter applies to the chunks at the bottom only.
        nodes = scope.model_copy(update={"kinds": ["raptor"], "raptor_roots": True, "categories": None})
        frontier = _relative(self.inner.search(store, query, nodes, self.beam))
        picked: list[tuple[int, StoredChunk]] = [(1, h) for h in frontier]
        depth = 1
        while frontier:
            wanted = {(h.doc_id, "raptor", int(i)) for h in frontier for i in h.metadata.get("children", [])}
            wanted |= {(h.doc_id, "chunk", int(i)) for h in frontier for i in h.metadata.get("child_chunks", [])}
            if not wanted:
                break
            kinds = sorted({kind for _, kind, _ in wanted})
            update = {
                "doc_ids": sorted({d for d, _, _ in wanted}),
                "kinds": kinds,
                "chunk_indexes": sorted({i for _, _, i in wanted}),
                "raptor_roots": False,
                "categories": scope.categories if kinds == ["chunk"] else None,
            }
            within = scope.model_copy(update=update)
            n = min(1000, 4 * len(wanted))
            found = _relative(_among(self.inner.search(store, query, within, n), wanted))
            if len(found) < self.beam and not isinstance(self.inner, Dense):
                # Children that share no word with the question (BM25 finds none) can still be near it in meaning;
                # they rank below those that share words.
                seen = {h.id for h in found}
                dense = _among(Dense().search(store, query, within, n), wanted)
                near = _relative([h for h in dense if h.id not in seen])
                found += [h.model_copy(update={"score": 0.5 * (h.score or 0.0)}) for h in near]
            frontier = found[: self.beam]
            depth += 1
            picked += [(depth, h) for h in frontier]
        picked.sort(key=lambda p: (-(p[1].score or 0.0), -p[0]))
        return [h for _, h in picked]


register(
    "retriever",
    "raptor:tree",
    needs=("raptor enrichment",),
    usage="raptor:tree[:<base>]",
    summary="RAPTOR tree traversal: the best "
    "roots of the papers' summary trees, then the best of their children, level by level down to chunks.",
)(Raptor)


def _among(hits: list[StoredChunk], wanted: set[tuple[str, str, int]]) -> list[StoredChunk]:
    """The hits that are among `wanted` (doc_id, kind, chunk_index): a filter on indexes and papers apart matches
    more than the pairs."""
    return [h for h in hits if (h.doc_id, h.kind, h.chunk_index) in wanted]


def _relative(hits: list[StoredChunk]) -> list[StoredChunk]:
    """Hits with scores relative to the best of them (scores of separate searches are not comparable)."""
    top = max((h.score or 0.0 for h in hits), default=0.0) or 1.0
    return [h.model_copy(update={"score": (h.score or 0.0) / top}) for h in hits]


def make_retriever(spec: str, settings: RetrievalSettings | None = None) -> Retriever:
    """The retriever a spec `name[:argument]` names, built by the factory registered under the name (see the module
    docstring); a ConfigError naming what is wrong otherwise (an unknown name: the known ones)."""
    retriever: Retriever = build("retriever", spec, settings or RetrievalSettings())
    return retriever
