"""How long the web page waits for a page image: `render_page` (what GET /v1/documents/{doc_id}/pages/{n}.png does
once it has found the PDF) over real papers, plain and with a chunk's boxes drawn, at the page's sizes.

Each paper is parsed once for the line boxes of its paragraphs; every page of every paper is then rendered at each
size, once plain and once with the boxes of a paragraph on that page. Prints p50/p95 milliseconds and the mean PNG
size per setting.

Usage: python benchmarks/page_image_bench.py [--papers ../shared/papers] [--max-papers 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from paperscope.parser import parse_file
from paperscope.parser.page_image import render_page

ROOT = Path(__file__).resolve().parents[1]
SETTINGS: list[tuple[str, dict[str, int]]] = [
    ("dpi 110 (default)", {"dpi": 110}),
    ("width 1200 (the page on a wide screen)", {"width": 1200}),
    ("dpi 200", {"dpi": 200}),
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=Path, default=ROOT.parent / "shared" / "papers")
    parser.add_argument("--max-papers", type=int, default=10)
    args = parser.parse_args()
    pdfs = sorted(args.papers.glob("*.pdf"))[: args.max_papers]
    if not pdfs:
        raise SystemExit(f"no PDFs in {args.papers}")
    work: list[tuple[Path, int, list[tuple[float, float, float, float]]]] = []
    for pdf in pdfs:
        paper = parse_file(pdf)
        for page in range(1, paper.pages + 1):
            paragraph = next((p for p in paper.paragraphs if p.boxes and p.boxes[0].page == page), None)
            rects = [b.rect for b in paragraph.boxes if b.page == page] if paragraph else []
            work.append((pdf, page, rects))
    print(f"{len(pdfs)} papers, {len(work)} pages ({args.papers})")
    print(f"| {'setting':<40} | {'boxes':>5} | {'p50 ms':>7} | {'p95 ms':>7} | {'PNG KB':>7} |")
    print(f"|{'-' * 42}|{'-' * 6}:|{'-' * 8}:|{'-' * 8}:|{'-' * 8}:|")
    for name, size in SETTINGS:
        for boxed in (False, True):
            seconds: list[float] = []
            sizes: list[int] = []
            for pdf, page, rects in work:
                start = time.perf_counter()
                image = render_page(pdf, page, rects=rects if boxed else (), **size)
                seconds.append(time.perf_counter() - start)
                sizes.append(len(image.png))
            print(
                f"| {name:<40} | {'yes' if boxed else 'no':>5} | {pct(seconds, 0.5) * 1000:7.1f} | "
                f"{pct(seconds, 0.95) * 1000:7.1f} | {statistics.mean(sizes) / 1024:7.0f} |"
            )


if __name__ == "__main__":
    main()
