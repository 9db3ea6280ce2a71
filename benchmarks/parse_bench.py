"""Parse throughput (pages/s) over the sample corpus, the real papers in ../shared/papers and, when it is
there, the dev set (../shared/devset: real papers and LaTeX class samples).

Pages/s are counted in wall time and in CPU time (the CPU time of this process: what the parser costs
on a machine other jobs share). The share of the time the table finder takes is printed too.

Usage: python benchmarks/parse_bench.py [--repeat N] [--no-devset]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paperscope.parser.pdf as pdf_module
from paperscope.parser import parse_pdf
from paperscope.rag.chunking import chunk_paper
from paperscope.rag.tokens import local_token_counter

ROOT = Path(__file__).resolve().parents[1]
SPENT = {"tables": 0.0}


def _timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT["tables"] += time.process_time() - t0

    return wrapper


def measure(pdfs: list[Path], repeat: int) -> dict[str, float]:
    counter = local_token_counter()
    out = {"pages": 0.0, "parse": 0.0, "parse_cpu": 0.0, "chunk": 0.0, "tables_cpu": 0.0, "tables": 0.0}
    SPENT["tables"] = 0.0
    for _ in range(repeat):
        for pdf in pdfs:
            t0, c0 = time.perf_counter(), time.process_time()
            paper = parse_pdf(pdf)
            t1, c1 = time.perf_counter(), time.process_time()
            chunk_paper(paper, counter)
            out["parse"] += t1 - t0
            out["parse_cpu"] += c1 - c0
            out["chunk"] += time.perf_counter() - t1
            out["pages"] += paper.pages
            out["tables"] += len(getattr(paper, "tables", []))
    out["tables_cpu"] = SPENT["tables"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-devset", action="store_true", help="leave out ../shared/devset")
    args = ap.parse_args()
    if hasattr(pdf_module, "find_tables"):
        pdf_module.find_tables = _timed(pdf_module.find_tables)  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(ROOT / "examples" / "render_papers.py"), "--out", tmp], check=True, capture_output=True
        )
        sets = {"sample corpus": sorted(Path(tmp).glob("*.pdf"))}
        shared = ROOT.parent / "shared"
        if (shared / "papers").is_dir():
            sets["shared real papers"] = sorted((shared / "papers").glob("*.pdf"))
        if not args.no_devset and (shared / "devset" / "pdfs").is_dir():
            sets["dev set (papers + samples)"] = sorted((shared / "devset" / "pdfs").glob("*.pdf")) + sorted(
                (shared / "devset" / "samples").glob("*.pdf")
            )
        print(f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}")
        print(
            "| set | files | pages | tables | parse pages/s | parse pages/CPU-s | table finder (CPU) "
            "| parse+chunk pages/s |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for name, pdfs in sets.items():
            m = measure(pdfs, args.repeat)
            n = args.repeat
            print(
                f"| {name} | {len(pdfs)} | {int(m['pages']) // n} | {int(m['tables']) // n} | "
                f"{m['pages'] / m['parse']:.1f} | {m['pages'] / m['parse_cpu']:.1f} | "
                f"{100 * m['tables_cpu'] / m['parse_cpu']:.0f}% | {m['pages'] / (m['parse'] + m['chunk']):.1f} |"
            )


if __name__ == "__main__":
    main()
