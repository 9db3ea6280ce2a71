"""Ingest benchmark: the real pipeline (parse -> chunk -> embed -> Milvus) over a folder of papers.

Prints pages/s and chunks/s with the share of time spent embedding, for a first ingest into an
empty knowledge base and for the no-op re-ingest of the same files.

Usage: python benchmarks/ingest_bench.py [FOLDER ...] [--home DIR]   (default: examples/pdfs)
Milvus Lite under a temporary --home by default; MILVUS_URI selects a server.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
from pathlib import Path

from paperscope.rag.ingest import IngestReport, ingest
from paperscope.rag.store import PaperStore
from paperscope.settings_layers import load_settings

ROOT = Path(__file__).resolve().parents[1]


def row(label: str, report: IngestReport, pages: int, chunks: int) -> str:
    s = report.seconds
    share = report.embed_seconds / s if s else 0.0
    return (
        f"| {label} | {len(report.files)} | {pages} | {chunks} | {s:.1f} | {pages / s:.2f} | {chunks / s:.1f} "
        f"| {share:.0%} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path, default=[ROOT / "examples" / "pdfs"])
    ap.add_argument("--home", type=Path, default=None, help="data directory (default: a temporary one)")
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="paperscope-ingest-bench-"))
    settings = load_settings(store={"kb": "bench_ingest"}).model_copy(update={"home": home})

    with PaperStore.open(settings) as store:
        store.embedder.embed_query("warm up")  # model load is not ingest time
        first = ingest(args.folders, settings, store)
        again = ingest(args.folders, settings, store)
        uri = store.uri
    failed = first.failed
    pages, chunks = first.pages, first.chunks
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"backend: {uri}; embedder: {settings.embedding.model}, batch {settings.embedding.batch_size}")
    print()
    print("| ingest | files | pages | chunks | wall s | pages/s | chunks/s | embedding share |")
    print("|---|---|---|---|---|---|---|---|")
    print(row("first (empty kb)", first, pages, chunks))
    print(row("again (all unchanged)", again, pages, 0))
    for f in failed:
        print(f"failed: {f.error}")


if __name__ == "__main__":
    main()
