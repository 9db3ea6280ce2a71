"""The embedding model's own speed: texts/s of the local model on real chunks, with each runtime.

Ingest is bounded by embedding (about 90% of its time), so this is the ceiling of ingest's chunks/s; the fresh
start of each runtime is what a one-question `paperscope ask` process pays before it can embed its question.

For each model and runtime (local:int8 on onnx, local on onnx, local on torch): a fresh process loads the model
and embeds one question (start-up s: what
`embedding.runtime` decides for a question), then that runtime's backend embeds the chunks of the papers given in
batches of --batch-size, twice (texts/s: the median of the two; no cache). The chunks come from the real parser
and chunker. paperscope embeds questions and chunks with the onnx runtime (chunks shortest first, in groups).

Usage: python benchmarks/embed_bench.py [PDF or FOLDER ...] [--batch-size 64] [--limit 512]
(default: the sample corpus in examples/pdfs)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
started = time.perf_counter()
from paperscope.rag.embeddings import make_embedder
emb = make_embedder({spec!r}, batch_size={batch}, runtime={runtime!r})
emb.embed_query("how fast does the model start")
startup = time.perf_counter() - started
texts = json.load(open({texts!r}))
# The backend itself, in batches as ingest sends them (no cache): ONNX Runtime's model, or torch's.
embed = emb.onnx.embed if {runtime!r} == "onnx" else emb._embed_batch
rates = []
for round in range(2):
    began = time.perf_counter()
    for start in range(0, len(texts), {batch}):
        embed(texts[start : start + {batch}])
    rates.append(len(texts) / (time.perf_counter() - began))
print(json.dumps({{"startup": startup, "rates": rates}}))
"""


def chunk_texts(paths: list[Path], limit: int) -> list[str]:
    from paperscope.parser import parse_file
    from paperscope.rag.chunking import chunk_paper
    from paperscope.rag.tokens import local_token_counter

    files = [f for p in paths for f in (sorted(p.glob("*.pdf")) if p.is_dir() else [p])]
    texts: list[str] = []
    for f in files:
        texts += [c.index_text for c in chunk_paper(parse_file(f), local_token_counter())]
        if len(texts) >= limit:
            break
    return texts[:limit]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path, default=[ROOT / "examples" / "pdfs"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--limit", type=int, default=512, help="chunks embedded per round")
    args = ap.parse_args()
    texts = chunk_texts(args.paths, args.limit)
    store = Path(f"/tmp/embed_bench_{int(time.time())}.json")
    store.write_text(json.dumps(texts))
    print(f"{len(texts)} chunks from {', '.join(str(p) for p in args.paths)}; batch {args.batch_size}\n")
    print("| model | runtime | fresh process: load + one question s | texts/s (median of 2 rounds) |")
    print("|---|---|---|---|")
    try:
        for spec, runtime in (("local:int8", "onnx"), ("local", "onnx"), ("local", "torch")):
            code = CHILD.format(batch=args.batch_size, spec=spec, runtime=runtime, texts=str(store))
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            rate = statistics.median(result["rates"])
            print(f"| {spec} | {runtime} | {result['startup']:.2f} | {rate:.1f} |")
    finally:
        store.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
