"""`raptor`: a tree of summaries over a paper's chunks (RAPTOR, Sarthi et al. 2024), each node a row of its own.

The chunks' vectors are clustered (a Gaussian mixture over their main components, as in the paper, or k-means;
`enrichment.raptor_clustering`) into about n / `raptor_cluster_size` groups; the chat model summarises each
group; the summaries are embedded and clustered again, level after level, until one node is left or
`enrichment.raptor_depth` levels are built. A group of one is not summarised: its member moves up as it is, and
so do the members of a group whose summary came back empty or unusable, so the tree stays whole.

Each summary is a row of kind `raptor`: its text is the summary (answerable evidence, cited as
`<doc_id>:raptor:<level>.<n>`), its chunk_index the node's number in the paper, its metadata the tree:
`level` (1 = over chunks), `node` (its number within the level), `children` (raptor nodes) and `child_chunks`
(body chunks) right under it, `leaves` (every body chunk under it), `span`, `root`. The `raptor` retriever
searches all levels at once (collapsed), `raptor:tree` walks down from the roots.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...parser.models import SectionCategory
from ..chunking import Chunk
from ..registry import register
from .base import Calls, Enriched, PaperInput, clean

PROMPT = "enrich_raptor"
REPLY = 150  # tokens a node's summary should take (for the cost estimate)
MAX_CHARS = 1500


@dataclass
class Node:
    """A chunk (level 0) or a summary node of the tree being built."""

    text: str
    vector: list[float]
    leaves: list[int]  # body chunk_index values under it
    level: int = 0
    ordinal: int | None = None  # the raptor row's chunk_index; None for a chunk
    chunk_index: int | None = None  # a chunk's own index
    children: list[Node] = field(default_factory=list)


def cluster(vectors: list[list[float]], k: int, method: str) -> list[list[int]]:
    """Indexes of `vectors` in at most `k` groups (each in input order, groups by their first member)."""
    n = len(vectors)
    if k <= 1 or n <= 1:
        return [list(range(n))]
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA
    from sklearn.mixture import GaussianMixture

    data = np.asarray(vectors, dtype=np.float64)
    data /= np.linalg.norm(data, axis=1, keepdims=True) + 1e-12
    k = min(k, n)
    if method == "kmeans":
        labels = KMeans(n_clusters=k, n_init=4, random_state=0).fit_predict(data)
    else:
        # RAPTOR reduces the vectors before the mixture (UMAP there; PCA here: no extra dependency, deterministic).
        dims = min(10, n - 1, data.shape[1])
        reduced = PCA(n_components=dims, random_state=0).fit_transform(data) if dims >= 2 else data
        mixture = GaussianMixture(n_components=k, covariance_type="diag", reg_covar=1e-4, random_state=0)
        labels = mixture.fit_predict(reduced)
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels.tolist()):
        groups.setdefault(int(label), []).append(i)
    return list(groups.values())


def _prompt_text(inp: PaperInput, members: list[Node]) -> str:
    """The members' texts, numbered, each cut to its share of the prompt's budget."""
    share = max(64, inp.settings.max_input_tokens // len(members))
    return "\n\n".join(f"[{i}] {inp.cut(m.text, share)}" for i, m in enumerate(members, start=1))


def _estimate_rest(inp: PaperInput, calls: Calls, nodes: int, level: int) -> None:
    """Planning: the levels above `level` counted from their sizes (their inputs are not written yet)."""
    size, depth = inp.settings.raptor_cluster_size, inp.settings.raptor_depth
    per_call = inp.settings.max_input_tokens // 2
    while level < depth and nodes > 1:
        nodes = math.ceil(nodes / size)
        level += 1
        calls.stats.planned += nodes
        calls.stats.prompt_tokens += nodes * per_call
        calls.stats.reply_tokens += nodes * REPLY


@register("enricher", "raptor", needs=("llm", "embedder"))
def raptor(inp: PaperInput, calls: Calls) -> Enriched:
    """A tree of summaries over the chunks: clustered by their vectors, each cluster summarised, recursively up
    to enrichment.raptor_depth levels; each node a row of kind raptor with its children recorded."""
    body = inp.body
    if len(body) < 2 or inp.embed is None:
        return Enriched()
    s = inp.settings
    vectors = inp.embed([c.index_text for c in body])
    nodes = [
        Node(text=c.text, vector=v, leaves=[c.chunk_index], chunk_index=c.chunk_index)
        for c, v in zip(body, vectors, strict=True)
    ]
    built: list[Node] = []
    per_level: Counter[int] = Counter()
    for step in range(1, s.raptor_depth + 1):
        if len(nodes) <= 1:
            break
        groups = cluster([n.vector for n in nodes], math.ceil(len(nodes) / s.raptor_cluster_size), s.raptor_clustering)
        summarised = [g for g in groups if len(g) > 1]
        items = [{"title": inp.title, "texts": _prompt_text(inp, [nodes[i] for i in g])} for g in summarised]
        planned = calls.stats.planned
        replies = calls.many(PROMPT, items, REPLY)
        if calls.planning and calls.stats.planned > planned:
            _estimate_rest(inp, calls, len(groups), step)
            return Enriched()
        texts = {id(g): clean(r, MAX_CHARS) for g, r in zip(summarised, replies, strict=True)}
        calls.unusable(sum(1 for t in texts.values() if not t))
        new_vectors = inp.embed([f"{inp.title}\n{t}" for t in texts.values() if t])
        written = iter(new_vectors)
        above: list[Node] = []
        for g in groups:
            members = [nodes[i] for i in g]
            text = texts.get(id(g), "")
            if not text:  # a group of one, or no usable summary: its members move up as they are
                above.extend(members)
                continue
            level = 1 + max(m.level for m in members)
            node = Node(
                text=text,
                vector=next(written),
                leaves=sorted(i for m in members for i in m.leaves),
                level=level,
                ordinal=len(built),
                children=members,
            )
            per_level[level] += 1
            built.append(node)
            above.append(node)
        if len(above) == len(nodes):  # nothing was summarised at this level: going on would repeat it
            break
        nodes = above
    roots = {id(n) for n in nodes}
    numbers: Counter[int] = Counter()
    rows = [_row(inp, node, numbers, id(node) in roots) for node in built]
    return Enriched(rows=rows)


def _row(inp: PaperInput, node: Node, numbers: Counter[int], root: bool) -> Chunk:
    """The raptor row of a node: the summary as its text, the tree in its metadata."""
    by_index = {c.chunk_index: c for c in inp.body}
    leaves = [by_index[i] for i in node.leaves]
    top_titles = list(dict.fromkeys(t.title for c in leaves if (t := inp.top_section(c)) is not None))
    category = Counter(c.section_category for c in leaves).most_common(1)[0][0]
    node_number = numbers[node.level]
    numbers[node.level] += 1
    metadata: dict[str, Any] = {
        "level": node.level,
        "node": node_number,
        "children": [m.ordinal for m in node.children if m.ordinal is not None],
        "child_chunks": [m.chunk_index for m in node.children if m.chunk_index is not None],
        "leaves": node.leaves,
        "span": [node.leaves[0], node.leaves[-1]],
        "root": root,
        "page_end": max(int(c.metadata.get("page_end") or c.page_number) for c in leaves),
        "strategy": "raptor",
    }
    return Chunk(
        chunk_index=node.ordinal if node.ordinal is not None else 0,
        text=node.text,
        index_text=f"{inp.title}\n{node.text}",
        section_title=" / ".join(top_titles)[:300] or "Summary",
        parent_section="",
        section_category=category if isinstance(category, SectionCategory) else SectionCategory.OTHER,
        hierarchy_level=0,
        page_number=min(c.page_number for c in leaves),
        kind="raptor",
        metadata=metadata,
    )
