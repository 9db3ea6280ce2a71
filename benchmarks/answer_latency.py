"""Latency of the no-LLM answer, in-process, with the real MiniLM embedder: the figure issue 11 holds under 100 ms.

Ingests the sample corpus (examples/pdfs) into a temporary Milvus Lite kb (or uses --home, e.g. a kb of
the dev-set PDFs), warms up with one question, then answers every query of the file --repeat times with
`Searcher.answer` (no chat model: route, locate the paper, retrieve, context windows + Introduction,
extracted sentences) and prints p50/p95 per stage.

Usage: python benchmarks/answer_latency.py [--home DIR] [--queries eval/sample.jsonl] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from paperscope.agent.pipeline import Searcher  # noqa: E402
from paperscope.config import Settings  # noqa: E402
from paperscope.eval.queries import load_queries  # noqa: E402
from paperscope.rag.ingest import ingest  # noqa: E402
from paperscope.rag.store import PaperStore  # noqa: E402

STAGES = ("route", "retrieve", "assemble", "generate", "total")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=None, help="an existing kb's data directory (default: temporary)")
    ap.add_argument("--queries", type=Path, default=ROOT / "eval" / "sample.jsonl")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="paperscope-answer-latency-"))
    settings = Settings(home=home, llm={"model": None})  # the no-LLM path, whatever the environment configures
    queries = load_queries(args.queries)
    with PaperStore.open(settings) as store:
        if not store.list_papers():
            t0 = time.perf_counter()
            ingest([ROOT / "examples" / "pdfs"], settings, store)
            print(f"ingested the sample corpus in {time.perf_counter() - t0:.0f} s")
        searcher = Searcher(store, settings)
        searcher.answer(queries[0].query)  # model load, first search, catalogue read
        timings: dict[str, list[float]] = {s: [] for s in STAGES}
        wall: list[float] = []
        for _ in range(args.repeat):
            for q in queries:
                t0 = time.perf_counter()
                answer = searcher.answer(q.query)
                wall.append(time.perf_counter() - t0)
                for stage in STAGES:
                    timings[stage].append(answer.timings.get(stage, 0.0))
        n_papers = len(store.list_papers(brief=True))
        n_chunks = store.count_chunks()
    print(f"kb: {home} ({n_papers} papers, {n_chunks} chunks); queries: {args.queries.name} x{args.repeat}")
    print(f"retriever: {settings.retrieval.retriever}; embedder: {settings.embedding.model}")
    print()
    print("| stage | p50 ms | p95 ms |")
    print("|---|---|---|")
    for stage in STAGES:
        print(f"| {stage} | {1000 * pct(timings[stage], 0.5):.0f} | {1000 * pct(timings[stage], 0.95):.0f} |")
    print(f"| wall (answer call) | {1000 * pct(wall, 0.5):.0f} | {1000 * pct(wall, 0.95):.0f} |")
    print(f"\nmean {1000 * statistics.mean(wall):.0f} ms over {len(wall)} answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
