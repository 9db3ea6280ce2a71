"""Store benchmark: ingest throughput and search latency on a knowledge base of >= N chunks.

Synthetic but realistic papers: the section structure of the sample papers in examples/papers,
with every paragraph re-drawn from sentences sampled across the whole sample corpus, chunked with
the default recursive chunker. Prints ingest throughput (chunks/s, share of time spent embedding)
and search latency p50/p95 for dense, BM25 and hybrid search over sampled queries.

Usage: python benchmarks/store_bench.py [--chunks 10000] [--queries 100] [--home DIR]
Milvus Lite under --home by default; MILVUS_URI selects a server.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import random
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pymilvus

from paperscope.parser import Paper, parse_markdown
from paperscope.rag.chunking import Chunk, chunk_paper
from paperscope.rag.embeddings import make_embedder
from paperscope.rag.filters import SearchFilter
from paperscope.rag.store import PaperStore
from paperscope.rag.tokens import TokenCounter
from paperscope.settings_layers import load_settings

ROOT = Path(__file__).resolve().parents[1]
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def synthetic_papers(n_chunks: int, counter: TokenCounter, seed: int) -> list[tuple[Paper, list[Chunk]]]:
    """Papers shaped like the samples, paragraphs re-drawn from the corpus' sentences, until >= n_chunks."""
    rng = random.Random(seed)
    templates = [parse_markdown(p) for p in sorted((ROOT / "examples" / "papers").glob("*.md"))]
    pool = [s for t in templates for p in t.paragraphs if p.kind == "body" for s in _SENTENCE.split(p.text)]
    out: list[tuple[Paper, list[Chunk]]] = []
    total = 0
    while total < n_chunks:
        template = templates[len(out) % len(templates)]
        paragraphs = [
            p
            if p.kind == "caption"
            else p.model_copy(update={"text": " ".join(rng.choices(pool, k=max(1, len(_SENTENCE.split(p.text)))))})
            for p in template.paragraphs
        ]
        paper = template.model_copy(
            update={"title": f"{template.title} (variant {len(out)})", "paragraphs": paragraphs}
        )
        chunks = chunk_paper(paper, counter)
        out.append((paper, chunks))
        total += len(chunks)
    return out


def sample_queries(papers: list[tuple[Paper, list[Chunk]]], n: int, seed: int) -> list[str]:
    """Short keyword-ish queries: 5-10 consecutive words from random chunks."""
    rng = random.Random(seed + 1)
    queries = []
    for _ in range(n):
        _, chunks = rng.choice(papers)
        words = rng.choice(chunks).text.split()
        size = rng.randint(5, 10)
        start = rng.randrange(max(1, len(words) - size))
        queries.append(" ".join(words[start : start + size]))
    return queries


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def latency(fn: Callable[[str], object], queries: list[str]) -> tuple[float, float, float]:
    """(p50, p95, mean) in milliseconds."""
    ms = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        ms.append((time.perf_counter() - t0) * 1000)
    return pct(ms, 50), pct(ms, 95), statistics.fmean(ms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=10_000, help="minimum number of chunks to ingest")
    ap.add_argument("--queries", type=int, default=100, help="queries per search method")
    ap.add_argument("--home", type=Path, default=None, help="data directory (default: a temporary one)")
    ap.add_argument("--k", type=int, default=10, help="results per search")
    ap.add_argument("--batch-size", type=int, default=64, help="texts per embedding batch / chunk rows per write")
    ap.add_argument("--embedder", default="local", help="embedding spec (default: local all-MiniLM-L6-v2)")
    ap.add_argument("--embed-cache", action="store_true", help="reuse vectors cached under --home by a previous run")
    ap.add_argument("--lite-flush-rows", type=int, default=None, help="override PaperStore.lite_flush_rows")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    home = args.home or Path(tempfile.mkdtemp(prefix="store-bench-"))
    settings = load_settings(
        embedding={"batch_size": args.batch_size, "model": args.embedder}, store={"kb": "bench"}
    ).model_copy(update={"home": home})
    embedder = make_embedder(args.embedder, args.batch_size, home / "cache" if args.embed_cache else None)

    t0 = time.perf_counter()
    papers = synthetic_papers(args.chunks, embedder.token_counter, args.seed)
    n_chunks = sum(len(c) for _, c in papers)
    build_s = time.perf_counter() - t0
    queries = sample_queries(papers, args.queries, args.seed)

    if args.lite_flush_rows:
        PaperStore.lite_flush_rows = args.lite_flush_rows
    store = PaperStore.open(settings, embedder)
    if store.count_chunks(kind=None) or store.list_papers():  # start from an empty knowledge base
        store.client.drop_collection(store.chunks_name)
        store.client.drop_collection(store.papers_name)
        store.close()
        store = PaperStore.open(settings, embedder)

    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"backend: {'Milvus Lite ' + store.uri if store.is_lite else store.uri}; pymilvus {pymilvus.__version__}")
    print(f"embedder: {embedder.name} (dim {embedder.dim}), batch {args.batch_size}")
    print(f"corpus: {len(papers)} synthetic papers, {n_chunks} chunks (built and chunked in {build_s:.1f}s)")

    t0, embed_before = time.perf_counter(), embedder.seconds
    for i, (paper, chunks) in enumerate(papers):
        doc = str(uuid.uuid5(uuid.NAMESPACE_URL, f"store-bench/{args.seed}/{i}"))
        digest = hashlib.sha256(f"{args.seed}/{i}/{paper.title}".encode()).hexdigest()
        store.insert_paper_chunks(paper, chunks, doc, digest, f"synthetic/{i}.md")
        if (i + 1) % 50 == 0:
            done = sum(len(c) for _, c in papers[: i + 1])
            print(f"  ... {done} chunks, {done / (time.perf_counter() - t0):.1f} chunks/s", flush=True)
    t1 = time.perf_counter()
    store.flush()  # what an ingest run ends with: the last rows into indexed segments
    flush_s = time.perf_counter() - t1
    ingest_s = time.perf_counter() - t0
    stored = store.count_chunks()
    assert stored == n_chunks, f"stored {stored} chunks, expected {n_chunks}"

    print()
    print("| ingest | chunks | wall s | chunks/s | embedding share | store share |")
    print("|---|---|---|---|---|---|")
    embed_s = embedder.seconds - embed_before  # time the model spent on this ingest (cache hits are free)
    embed_share = embed_s / ingest_s
    print(
        f"| {len(papers)} papers | {n_chunks} | {ingest_s:.1f} | {n_chunks / ingest_s:.1f} | "
        f"{embed_share:.0%} ({embed_s:.1f}s) | {1 - embed_share:.0%} ({ingest_s - embed_s:.1f}s) |"
    )
    print(
        f"(excluding embedding: {n_chunks / max(1e-9, ingest_s - embed_s):.0f} chunks/s written to Milvus; "
        f"final flush {flush_s:.2f}s; Lite flushes every {PaperStore.lite_flush_rows} rows)"
    )

    # Query vectors are embedded once up front (and timed), so the latencies below are the store's own.
    q_ms = []
    for q in queries:
        t1 = time.perf_counter()
        embedder.embed_query(q)
        q_ms.append((time.perf_counter() - t1) * 1000)
    first = time.perf_counter()
    store.search_dense(queries[0], k=args.k)  # the first search may build or load indexes
    first_ms = (time.perf_counter() - first) * 1000
    for q in queries[:5]:  # warm-up
        store.search_hybrid(q, k=args.k)
    scope = SearchFilter(categories=["METHOD", "EVALUATION"])
    methods: dict[str, Callable[[str], object]] = {
        "dense (HNSW, COSINE)": lambda q: store.search_dense(q, k=args.k),
        "BM25 (sparse inverted)": lambda q: store.search_bm25(q, k=args.k),
        "hybrid RRF": lambda q: store.search_hybrid(q, k=args.k),
        "hybrid weighted": lambda q: store.search_hybrid(q, k=args.k, fusion="weighted"),
        "hybrid RRF + category filter": lambda q: store.search_hybrid(q, scope, k=args.k),
    }
    print()
    print(f"| search (k={args.k}, {len(queries)} queries, {n_chunks} chunks) | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---|")
    for name, fn in methods.items():
        p50, p95, mean = latency(fn, queries)
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {mean:.1f} |")
    print(
        f"| query embedding alone ({embedder.name}) | {pct(q_ms, 50):.1f} | {pct(q_ms, 95):.1f} | "
        f"{statistics.fmean(q_ms):.1f} |"
    )
    print(f"first search after ingest: {first_ms:.0f} ms")
    store.close()


if __name__ == "__main__":
    main()
