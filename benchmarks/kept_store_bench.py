"""A fresh process on a store `query_bench.py --keep` left: how long it takes to open, how much memory it holds
once open and after answering, and the answer's latency. What a `paperscope serve` on that library pays, without
the synthetic papers `query_bench.py` generates in its own process (which raise its peak RSS).

Usage: python benchmarks/query_bench.py --sizes 100000 --home DIR --keep   (once, ~20 min)
       python benchmarks/kept_store_bench.py --home DIR [--size 100000] [--queries 20]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from query_bench import HashEmbedder

from paperscope.agent.searcher import Searcher
from paperscope.rag.store import PaperStore
from paperscope.settings_layers import load_settings


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="the --home of a `query_bench.py --keep` run")
    parser.add_argument("--size", type=int, default=100000, help="the size that run built (names its kb)")
    parser.add_argument("--queries", type=int, default=20, help="questions: a stored sentence of as many papers")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    kb = f"bench_q{args.size // 1000}k" if args.size % 1000 == 0 else f"bench_q{args.size}"
    settings = load_settings(store={"kb": kb}).model_copy(update={"home": args.home})
    started = time.perf_counter()
    store = PaperStore.open(settings, HashEmbedder(384), create=False)  # type: ignore[arg-type]
    papers = store.catalogue().ready
    opened_s, opened_mb = time.perf_counter() - started, peak_mb()
    rng = random.Random(args.seed)
    questions = []
    for paper in rng.sample(list(papers), min(args.queries, len(papers))):
        if chunks := store.get_body_chunks(paper.doc_id, [3]):
            questions.append(" ".join(chunks[0].text.split()[:12]))
    searcher = Searcher(store, settings, None)
    ms = []
    for question in questions:
        t0 = time.perf_counter()
        searcher.answer(question)
        ms.append((time.perf_counter() - t0) * 1000)
    store.close()
    print(
        f"kb {kb}: {len(papers)} papers; opened with its catalogue in {opened_s:.1f} s, peak RSS {opened_mb:.0f} MB; "
        f"{len(ms)} answers p50 {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms; peak RSS {peak_mb():.0f} MB"
    )


if __name__ == "__main__":
    main()
