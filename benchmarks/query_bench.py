"""Query latency at several knowledge-base sizes: retrieval, single-shot answers, and agent overhead.

For each size (default 1000, 10000, 100000 chunks) a fresh Milvus Lite kb is filled with synthetic
papers (built like store_bench.py's) and these are timed over sampled sentences as queries:

- bm25: one bare `PaperStore.search_bm25(q, k=10)` over the whole collection: the engine's own floor, one pass
  over the library in Milvus Lite (which keeps no index), that an answer's cost is read against (answer / bm25);
  timed interleaved with the answers (each question's bare search, then its answer);
- hybrid: `PaperStore.search_hybrid(q, k=10)` (dense + BM25, RRF), retrieval only;
- answer: single-shot `Searcher.answer(q)` without a chat model (route, retrieve, MMR, context
  windows, extractive answer);
- agent: `AgenticSearcher.run(q)` driven by a scripted chat model whose replies are instant
  (search_abstracts -> search_by_section in the best paper -> finish citing what it read), so what
  is left besides the tools is the agent's own overhead: per step = (run time - tool time) / model turns.

Vectors come from `HashEmbedder` (feature hashing, 384 dims), not MiniLM: embedding 100k chunks
with the real model takes hours on a small CPU (~17 chunks/s). Search quality is meaningless
here; latency (index and store work at that size) is what is measured. Query embedding with the
real model would add its own cost (see store_bench.py: ~10-20 ms per query on 2 cores).

Measured on the project's 2-core machine (shared, so noisy): building 1k chunks takes ~3 s, 10k ~30 s,
100k ~17 min (insert_paper_chunks into Milvus Lite slows from ~430 to ~70 chunks/s as the kb grows);
the default run (1k, 10k, 100k; 50 queries) takes ~35 min in all, ~1 GB peak RSS up to 10k, ~3.7 GB at 100k.
run_all.py runs 1k and 10k only.

Usage: python benchmarks/query_bench.py [--sizes 1000,10000,100000] [--queries 50] [--home DIR] [--keep]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import itertools
import platform
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from paperscope.agent.pipeline import Searcher
from paperscope.agent.searcher import AgenticSearcher
from paperscope.config import Settings
from paperscope.parser import Paper
from paperscope.rag.chunking import Chunk
from paperscope.rag.store import PaperStore
from paperscope.rag.tokens import TokenCounter, local_token_counter
from paperscope.settings_layers import load_settings

ROOT = Path(__file__).resolve().parents[1]
# The repository root on sys.path for `tests.scripted_model`: the agent is driven by the same scripted
# chat model the unit tests use (tests/agent/test_agent.py), so the benchmark exercises the exact
# LangGraph path those tests check, with no network and no model latency. benchmarks/ itself is on
# sys.path already (the script's folder), which makes store_bench importable for its corpus helpers.
sys.path.insert(0, str(ROOT))

from store_bench import synthetic_papers  # noqa: E402

from tests.scripted_model import ScriptedChatModel, final, tool_call  # noqa: E402

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
_CITE = re.compile(r"\[(P\d+:\d+)\]")  # the short citation ids the agent's tools show the model
_DOC_ID = re.compile(r"^(P\d+) \|", re.M)  # a paper line of search_abstracts


class HashEmbedder:
    """Deterministic, fast stand-in for MiniLM: hashed word unigrams + bigrams, 384 dims, L2-normalised.

    Exposes what the store, retrievers and MMR use of a `CachedEmbedder` (name, dim, max_tokens,
    token_counter, embed_documents, embed_query, close and the counters).
    """

    def __init__(self, dim: int = 384, batch_size: int = 512) -> None:
        self.name = f"bench:hash-{dim}"
        self.dim = dim
        self.batch_size = batch_size
        self.token_counter: TokenCounter = local_token_counter()
        self.max_tokens = self.token_counter.max_tokens
        self.calls = 0
        self.embedded = 0
        self.cache_hits = 0
        self.seconds = 0.0

    def _vector(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower())
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        vec = np.zeros(self.dim, dtype=np.float32)
        if not features:
            vec[0] = 1.0  # a unit vector for empty text: cosine needs a non-zero norm
            return vec
        hashes = np.fromiter((zlib.crc32(f.encode()) for f in features), dtype=np.uint32, count=len(features))
        signs = np.where(hashes & (1 << 31), -1.0, 1.0).astype(np.float32)
        np.add.at(vec, (hashes % self.dim).astype(np.intp), signs)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return vec / norm

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        out = [self._vector(t).tolist() for t in texts]
        self.seconds += time.perf_counter() - started
        self.calls += 1
        self.embedded += len(texts)
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def close(self) -> None:
        pass


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def sample_sentences(papers: list[tuple[Paper, list[Chunk]]], n: int, seed: int) -> list[str]:
    """`n` whole sentences (4-40 words) drawn from random chunks, used as questions."""
    rng = random.Random(seed + 1)
    out: list[str] = []
    while len(out) < n:
        _, chunks = rng.choice(papers)
        sentences = [s for s in _SENTENCE.split(rng.choice(chunks).text) if 4 <= len(s.split()) <= 40]
        if sentences:
            out.append(rng.choice(sentences))
    return out


def rss_mb() -> tuple[float, float]:
    """(peak RSS of this process so far, current RSS) in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB
    current = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    except OSError:
        pass
    return peak, current


class MilvusCalls:
    """Counts the requests a store sends to Milvus (search, hybrid_search, query, get) by collection, and the time
    spent in them: what an answer costs in passes over the library, read beside its wall time."""

    METHODS = ("search", "hybrid_search", "query", "get")

    def __init__(self, store: PaperStore) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.seconds: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.active = True  # counting; off while something other than an answer runs
        self._client = store.client
        self._saved = {m: getattr(self._client, m) for m in self.METHODS}
        for method, call in self._saved.items():
            setattr(self._client, method, self._counted(method, call, store))

    def _counted(self, method: str, call: Callable[..., object], store: PaperStore) -> Callable[..., object]:
        def counted(collection_name: str, *args: object, **kwargs: object) -> object:
            which = "chunks" if collection_name == store.chunks_name else "papers"
            if not self.active:
                return call(collection_name, *args, **kwargs)
            started = time.perf_counter()
            try:
                return call(collection_name, *args, **kwargs)
            finally:
                self.calls[f"{method} {which}"] += 1
                self.seconds[f"{method} {which}"] += time.perf_counter() - started

        return counted

    def close(self) -> None:
        for method, call in self._saved.items():
            setattr(self._client, method, call)

    def per(self, n: int) -> str:
        """ "search chunks 1.0 (61 ms), query papers 4.0 (9 ms), ...": calls and ms per question."""
        return ", ".join(
            f"{key} {self.calls[key] / n:.1f} ({self.seconds[key] / n * 1000:.0f} ms)" for key in sorted(self.calls)
        )


def timed_ms(fn: Callable[[str], object], queries: list[str]) -> list[float]:
    ms = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        ms.append((time.perf_counter() - t0) * 1000)
    return ms


# --- the scripted agent ---------------------------------------------------------------------------------


def _last_result(messages: list[BaseMessage]) -> str:
    results = [m for m in messages if isinstance(m, ToolMessage)]
    return str(results[-1].content) if results else ""


def _section_search(query: str) -> Callable[[list[BaseMessage]], AIMessage]:
    def step(messages: list[BaseMessage]) -> AIMessage:
        found = _DOC_ID.search(_last_result(messages))
        args: dict[str, object] = {"query": query, "category": "METHOD"}
        if found:
            args["doc_id"] = found.group(1)
        return tool_call("search_by_section", args)

    return step


def _finish(messages: list[BaseMessage]) -> AIMessage:
    ids = list(dict.fromkeys(_CITE.findall(_last_result(messages))))[:2]
    if not ids:
        return final("Nothing relevant was found.")
    text = "The passages say so " + "".join(f"[{c}]" for c in ids) + "."
    return tool_call("finish", {"answer": text, "sources": ids})


def agent_script(query: str) -> list[object]:
    """Three instant model turns: search_abstracts, search_by_section in the top paper, finish."""
    return [tool_call("search_abstracts", {"query": query}), _section_search(query), _finish]


# --- one size -------------------------------------------------------------------------------------------


def build(
    size: int, home: Path, embedder: HashEmbedder, batch: int, seed: int, reuse: bool = False
) -> tuple[PaperStore, Settings, list[tuple[Paper, list[Chunk]]], float, float]:
    """A fresh kb of >= size chunks (with `reuse`, the one a kept --home holds); returns (store, settings, papers,
    generate s, insert+flush s; 0 when reused)."""
    kb = f"bench_q{size // 1000}k" if size % 1000 == 0 else f"bench_q{size}"
    settings = load_settings(embedding={"batch_size": batch}, store={"kb": kb}).model_copy(update={"home": home})
    store = PaperStore.open(settings, embedder)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    papers = synthetic_papers(size, embedder.token_counter, seed)
    gen_s = time.perf_counter() - t0
    if reuse and len(store.list_papers(brief=True)) == len(papers):
        return store, settings, papers, gen_s, 0.0
    if store.count_chunks(kind=None) or store.list_papers():  # a kept --home from an earlier run
        store.client.drop_collection(store.chunks_name)
        store.client.drop_collection(store.papers_name)
        store.close()
        store = PaperStore.open(settings, embedder)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    last = t0
    for i, (paper, chunks) in enumerate(papers):
        doc = str(uuid.uuid5(uuid.NAMESPACE_URL, f"query-bench/{seed}/{size}/{i}"))
        digest = hashlib.sha256(f"{seed}/{size}/{i}/{paper.title}".encode()).hexdigest()
        store.insert_paper_chunks(paper, chunks, doc, digest, f"synthetic/{i}.md")
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            done = sum(len(c) for _, c in papers[: i + 1])
            print(f"  ... {size}: {done} chunks, {done / (last - t0):.0f} chunks/s", file=sys.stderr, flush=True)
    store.flush()
    return store, settings, papers, gen_s, time.perf_counter() - t0


def run_size(size: int, args: argparse.Namespace, embedder: HashEmbedder) -> dict[str, float]:
    store, settings, papers, gen_s, insert_s = build(size, args.home, embedder, args.batch_size, args.seed, args.reuse)
    n_chunks = store.count_chunks()
    queries = sample_sentences(papers, args.queries, args.seed)
    searcher = Searcher(store, settings, None)
    model = ScriptedChatModel([])
    agent = AgenticSearcher(store, model, settings=settings, max_iterations=5)
    try:
        t0 = time.perf_counter()
        store.search_hybrid(queries[0], k=args.k)  # the first search may load or build indexes
        first_ms = (time.perf_counter() - t0) * 1000
        for q in queries[:3]:  # warm-up of every path
            store.search_hybrid(q, k=args.k)
            searcher.answer(q)
            model.add(*agent_script(q))  # type: ignore[arg-type]
            agent.run(q)

        hybrid = timed_ms(lambda q: store.search_hybrid(q, k=args.k), queries)
        catalogue = timed_ms(lambda q: store.list_papers(), queries[:10])  # every row, every field
        cached = timed_ms(lambda q: store.catalogue(), queries)  # what a question pays: the version check
        calls = MilvusCalls(store)
        bm25: list[float] = []
        answer: list[float] = []
        try:
            # Interleaved, the bare search then the answer of each question: Milvus Lite's search time drifts by
            # tens of percent over a minute on this machine, and the drift then falls on both columns alike.
            for q in queries:
                calls.active = False
                bm25 += timed_ms(lambda q: store.search_bm25(q, k=args.k), [q])
                calls.active = True
                answer += timed_ms(searcher.answer, [q])
        finally:
            calls.close()
        milvus = calls.per(len(queries))
        in_milvus = sum(calls.seconds.values()) / len(queries) * 1000
        run_ms, step_ms, turns = [], [], []
        for q in queries:
            model.add(*agent_script(q))  # type: ignore[arg-type]
            t0 = time.perf_counter()
            result = agent.run(q)
            wall = (time.perf_counter() - t0) * 1000
            steps = max(1, result.turns)
            run_ms.append(wall)
            step_ms.append((wall - result.timings.get("tools", 0.0) * 1000) / steps)
            turns.append(steps)
    finally:
        store.close()
    peak, current = rss_mb()
    print(
        f"  size {size}: {n_chunks} chunks in {len(papers)} papers; generated+chunked {gen_s:.1f}s, "
        f"inserted+flushed {insert_s:.1f}s ({n_chunks / max(insert_s, 1e-9):.0f} chunks/s, hash embedding "
        f"{embedder.seconds:.1f}s so far); first search {first_ms:.0f} ms; "
        f"peak RSS {peak:.0f} MB (current {current:.0f} MB)\n"
        f"  an answer's Milvus requests, per question (mean): {milvus}; {in_milvus:.0f} ms in Milvus of "
        f"{statistics.fmean(answer):.0f} ms",
        flush=True,
    )
    return {
        "size": size,
        "chunks": n_chunks,
        "build": gen_s + insert_s,
        "b50": pct(bm25, 50),
        "b95": pct(bm25, 95),
        "h50": pct(hybrid, 50),
        "h95": pct(hybrid, 95),
        "a50": pct(answer, 50),
        "a95": pct(answer, 95),
        "r50": pct(run_ms, 50),
        "r95": pct(run_ms, 95),
        "s50": pct(step_ms, 50),
        "c50": pct(catalogue, 50),
        "cc50": pct(cached, 50),
        "turns": statistics.fmean(turns),
        "peak": peak,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated kb sizes in chunks")
    ap.add_argument("--queries", type=int, default=50, help="sampled sentences timed per path and size")
    ap.add_argument("--k", type=int, default=10, help="results per hybrid search")
    ap.add_argument("--batch-size", type=int, default=512, help="embedding batch / chunk rows per write")
    ap.add_argument("--home", type=Path, default=None, help="data directory (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the data directory (and its kbs) at the end")
    ap.add_argument("--reuse", action="store_true", help="query the kbs a kept --home holds instead of building them")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    temporary = args.home is None
    args.home = args.home or Path(tempfile.mkdtemp(prefix="query-bench-"))
    embedder = HashEmbedder(batch_size=args.batch_size)

    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(
        f"embedder: {embedder.name} (feature hashing, dim {embedder.dim}) instead of MiniLM, so that 100k chunks "
        "build in minutes: search quality is meaningless here, latency is what is measured"
    )
    print(
        f"queries: {args.queries} sampled sentences per size; hybrid k={args.k}; answer = Searcher.answer without "
        "an LLM (extractive); agent = AgenticSearcher with an instant scripted model "
        "(search_abstracts, search_by_section, finish)"
    )
    rows = []
    try:
        for size in sizes:
            rows.append(run_size(size, args, embedder))
    finally:
        if temporary and not args.keep:
            shutil.rmtree(args.home, ignore_errors=True)
        elif args.keep:
            print(f"kept {args.home}")
    print()
    print(
        "| size (chunks) | build s | bare BM25 p50/p95 ms | hybrid p50/p95 ms | answer p50/p95 ms "
        "| answer / BM25 (p50) | agent run p50/p95 ms | agent per-step overhead ms (p50) "
        "| catalogue per question / full read ms (p50) | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["a50"] / max(r["b50"], 1e-9)
        print(
            f"| {r['chunks']:.0f} | {r['build']:.0f} | {r['b50']:.1f} / {r['b95']:.1f} | {r['h50']:.1f} / "
            f"{r['h95']:.1f} | {r['a50']:.0f} / {r['a95']:.0f} | {ratio:.1f}x | {r['r50']:.0f} / {r['r95']:.0f} "
            f"| {r['s50']:.1f} ({r['turns']:.0f} turns) | {r['cc50']:.1f} / {r['c50']:.0f} | {r['peak']:.0f} |"
        )
    print()
    print(
        "build s = generating + chunking the synthetic papers, then insert_paper_chunks + flush. "
        "Per-step overhead = (agent run time - time inside tools) / model turns: graph, prompt, message and "
        "tool-binding work with an instant model, plus the catalogue (kept in memory: a question checks its "
        "version). Catalogue per question = `PaperStore.catalogue()` (the version check; rows are read again only "
        "after a write); full read = `list_papers()`, every row and field (what `paperscope papers` reads). "
        "Peak RSS is the process' high-water mark so far (sizes run in order in one process)."
    )


if __name__ == "__main__":
    main()
