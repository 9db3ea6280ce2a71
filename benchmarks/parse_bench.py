"""Parse throughput (pages/s) over the sample corpus and the real papers in ../shared/papers.

Usage: python benchmarks/parse_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paperscope.parser import parse_pdf
from paperscope.rag.chunking import chunk_paper
from paperscope.rag.tokens import local_token_counter

ROOT = Path(__file__).resolve().parents[1]


def measure(pdfs: list[Path], repeat: int) -> tuple[int, float, float]:
    counter = local_token_counter()
    pages, parse_s, chunk_s = 0, 0.0, 0.0
    for _ in range(repeat):
        for pdf in pdfs:
            t0 = time.perf_counter()
            paper = parse_pdf(pdf)
            t1 = time.perf_counter()
            chunk_paper(paper, counter)
            parse_s += t1 - t0
            chunk_s += time.perf_counter() - t1
            pages += paper.pages
    return pages, parse_s, chunk_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(ROOT / "examples" / "render_papers.py"), "--out", tmp], check=True, capture_output=True
        )
        sets = {"sample corpus": sorted(Path(tmp).glob("*.pdf"))}
        shared = ROOT.parent / "shared" / "papers"
        if shared.is_dir():
            sets["shared real papers"] = sorted(shared.glob("*.pdf"))
        print(f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}")
        print("| set | files | pages | parse pages/s | parse+chunk pages/s |")
        print("|---|---|---|---|---|")
        for name, pdfs in sets.items():
            pages, parse_s, chunk_s = measure(pdfs, args.repeat)
            print(
                f"| {name} | {len(pdfs)} | {pages // args.repeat} | {pages / parse_s:.1f} | "
                f"{pages / (parse_s + chunk_s):.1f} |"
            )


if __name__ == "__main__":
    main()
