"""Every chunking strategy over the real papers in ../shared/papers: chunks, their size, and the time it takes.

The semantic chunker's time includes embedding every sentence with the local model (a cold cache); compare it
with "embed chunks", the time to embed the recursive chunks, which every ingest pays.

Usage: python benchmarks/chunk_bench.py [PDF ...]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

from paperscope.parser import parse_pdf
from paperscope.rag.chunking import ChunkOptions, chunk_paper
from paperscope.rag.embeddings import make_embedder
from paperscope.rag.registry import names
from paperscope.rag.tokens import local_token_counter

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("pdfs", nargs="*", type=Path)
    args = ap.parse_args()
    pdfs = args.pdfs or sorted((ROOT.parent / "shared" / "papers").glob("*.pdf"))
    if not pdfs:
        raise SystemExit("no PDFs: give some, or put the real papers in ../shared/papers")
    papers = [parse_pdf(pdf) for pdf in pdfs]
    counter = local_token_counter()
    embedder = make_embedder("local")  # no disk cache: every run embeds afresh
    embedder.embed_documents(["warm up"])
    options = ChunkOptions(embed=embedder.embed_documents)
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}; {len(pdfs)} papers")
    print("| strategy | chunks | mean tokens | chunk seconds |")
    print("|---|---|---|---|")
    for name in names("chunker"):
        started = time.perf_counter()
        chunks = [c for paper in papers for c in chunk_paper(paper, counter, name, options) if c.kind == "chunk"]
        took = time.perf_counter() - started
        size = statistics.mean(counter.count(c.text) for c in chunks)
        print(f"| {name} | {len(chunks)} | {size:.0f} | {took:.1f} |")
    recursive = [c.index_text for paper in papers for c in chunk_paper(paper, counter) if c.kind == "chunk"]
    started = time.perf_counter()
    make_embedder("local").embed_documents(recursive)
    print(f"| (embed chunks: the recursive chunks) | {len(recursive)} | | {time.perf_counter() - started:.1f} |")


if __name__ == "__main__":
    main()
