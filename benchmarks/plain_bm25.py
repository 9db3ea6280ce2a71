"""Plain BM25 over 1000-character chunks: the baseline paperscope's retrieval is measured against.

No structure, no routing, no paper identity: each PDF's text (PyMuPDF, page by page) is cut into
1000-character chunks and ranked with Okapi BM25 (k1 1.2, b 0.75, English stop words dropped).
It answers the same command line the dev-set scorer calls, so both are scored by the same script:

    python ../shared/devset/score_retrieval.py \\
        ".venv/bin/python benchmarks/plain_bm25.py --pdfs ../shared/devset/pdfs" \\
        ../shared/devset/questions.jsonl 5

Titles come from the dev set's manifest.json when the folder has one (generous to the baseline: a
plain chunker has no title), else from the PDF metadata, else the file name. The track is "A" when
most of the top k chunks come from one paper, else "B" (a plain retriever has no router; this is
the obvious rule). The index is cached in $TMPDIR, keyed by the files' names, sizes and times.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pymupdf

CHUNK_CHARS = 1000
K1, B = 1.2, 0.75
STOP = frozenset(
    str.split(
        """a an and are as at be but by for from has have how in into is it its of on or that the their them then
        there these they this to was were what when where which while who why will with does did do can than not no"""
    )
)


def tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOP]


def pdf_chunks(path: Path) -> list[str]:
    with pymupdf.open(path) as doc:
        text = " ".join(" ".join(page.get_text().split()) for page in doc)
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


def titles(folder: Path) -> dict[str, str]:
    for manifest in (folder / "manifest.json", folder.parent / "manifest.json"):
        if manifest.is_file():
            papers = json.loads(manifest.read_text(encoding="utf-8")).get("papers", [])
            return {Path(p["file"]).name: p["title"] for p in papers if p.get("title")}
    return {}


class Index:
    def __init__(self, folder: Path) -> None:
        named = titles(folder)
        self.chunks: list[tuple[str, str]] = []  # (title, text)
        for pdf in sorted(folder.glob("*.pdf")):
            with pymupdf.open(pdf) as doc:
                title = named.get(pdf.name) or (doc.metadata or {}).get("title") or pdf.stem
            self.chunks += [(title, c) for c in pdf_chunks(pdf)]
        self.docs = [Counter(tokens(t)) for _, t in self.chunks]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def search(self, query: str, k: int) -> list[tuple[str, str]]:
        terms = [t for t in tokens(query) if t in self.idf]
        scores = []
        for i, (d, length) in enumerate(zip(self.docs, self.lengths, strict=True)):
            s = 0.0
            for t in terms:
                tf = d.get(t, 0)
                if tf:
                    s += self.idf[t] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / self.avg))
            scores.append((s, i))
        scores.sort(reverse=True)
        return [self.chunks[i] for s, i in scores[:k] if s > 0]


def load(folder: Path) -> Index:
    stamp = "".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns};" for p in sorted(folder.glob("*.pdf")))
    key = hashlib.sha256(f"{folder.resolve()}|{CHUNK_CHARS}|{stamp}".encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"paperscope-plain-bm25-{key}.pickle"
    if cache.is_file():
        with cache.open("rb") as f:
            index: Index = pickle.load(f)
            return index
    index = Index(folder)
    with cache.open("wb") as f:
        pickle.dump(index, f)
    return index


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "devset" / "pdfs")
    sub = ap.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask")
    ask.add_argument("query")
    ask.add_argument("--json", action="store_true")
    ask.add_argument("--no-agent", action="store_true")
    ask.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    hits = load(args.pdfs).search(args.query, args.k)
    top = Counter(title for title, _ in hits).most_common(1)
    track = "A" if top and top[0][1] > args.k / 2 else "B"
    sources = [{"n": n, "title": title, "text": text} for n, (title, text) in enumerate(hits, start=1)]
    json.dump({"query": args.query, "track": track, "sources": sources}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
