"""Peak memory (RSS high-water mark, ru_maxrss) of each stage of the pipeline, one subprocess per stage.

Stages, each in a fresh interpreter so each figure is that stage's own peak (imports included):

- interpreter: a bare Python process (the floor every other figure includes);
- import: importing paperscope's store, ingest and answer modules (no model loaded);
- embedder: import + loading the local all-MiniLM-L6-v2 embedder and embedding one query;
- parse: parsing and chunking the sample corpus PDFs (examples/pdfs);
- ingest: ingesting the sample corpus into a fresh Milvus Lite kb (parse, embed, store; Lite runs in-process);
- answer: opening that kb and answering 10 questions single-shot without an LLM (extractive).

Usage: python benchmarks/memory_bench.py [FOLDER] [--home DIR]   (default FOLDER: examples/pdfs)
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "How many queries does FlashRank label for distillation?",
    "What bit width does QuantKV use for the key-value cache?",
    "How does SwitchBack balance expert load without auxiliary losses?",
    "How many tokens was Marten-1B pretrained on?",
    "What does HyDRA generate before retrieving documents?",
    "How does ChunkSage split long scientific documents?",
    "Which papers improve retrieval-augmented generation?",
    "What are the limitations of LongCite?",
    "How much does TokenPrune shrink late-interaction indexes?",
    "How do BlendIR and TabRetriever evaluate retrieval quality?",
]
STAGES = {
    "interpreter": "bare Python process",
    "import": "import paperscope (store, ingest, single-shot + agent searchers), no model",
    "embedder": "import + load local MiniLM embedder, embed 1 query",
    "parse": "parse + chunk the sample PDFs",
    "ingest": "ingest the sample PDFs into a fresh Lite kb",
    "answer": f"open that kb, answer {len(QUESTIONS)} questions (extractive)",
}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kB


def run_stage(stage: str, folder: Path, home: Path) -> str:
    """Do one stage in this process; returns a short note on what was processed."""
    if stage == "interpreter":
        return ""
    if stage == "import":
        import paperscope.agent.pipeline
        import paperscope.agent.searcher
        import paperscope.rag.ingest
        import paperscope.rag.store  # noqa: F401

        return ""
    if stage == "embedder":
        from paperscope.rag.embeddings import make_embedder

        embedder = make_embedder("local")
        return f"dim {len(embedder.embed_query('warm up'))}"
    if stage == "parse":
        from paperscope.parser import parse_pdf
        from paperscope.rag.chunking import chunk_paper
        from paperscope.rag.tokens import local_token_counter

        counter = local_token_counter()
        pdfs = sorted(folder.glob("*.pdf"))
        pages = chunks = 0
        for pdf in pdfs:
            paper = parse_pdf(pdf)
            pages += paper.pages
            chunks += len(chunk_paper(paper, counter))
        return f"{len(pdfs)} files, {pages} pages, {chunks} chunks"

    from paperscope.rag.store import PaperStore
    from paperscope.settings_layers import load_settings

    settings = load_settings(store={"kb": "bench_memory"}).model_copy(update={"home": home})
    if stage == "ingest":
        from paperscope.rag.ingest import ingest

        with PaperStore.open(settings) as store:
            report = ingest([folder], settings, store)
        return f"{len(report.files)} files, {report.pages} pages, {report.chunks} chunks"
    if stage == "answer":
        from paperscope.agent.pipeline import Searcher

        with PaperStore.open(settings) as store:
            searcher = Searcher(store, settings, None)
            sources = sum(len(searcher.answer(q).sources) for q in QUESTIONS)
        return f"{len(QUESTIONS)} answers, {sources} sources"
    raise SystemExit(f"unknown stage {stage!r}")


def child(stage: str, folder: Path, home: Path) -> None:
    t0 = time.perf_counter()
    note = run_stage(stage, folder, home)
    print(json.dumps({"stage": stage, "peak_mb": peak_mb(), "seconds": time.perf_counter() - t0, "note": note}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", type=Path, default=ROOT / "examples" / "pdfs", help="PDFs to parse/ingest")
    ap.add_argument("--home", type=Path, default=None, help="data directory (default: a temporary one, removed)")
    ap.add_argument("--stage", choices=sorted(STAGES), help=argparse.SUPPRESS)  # internal: run one stage
    args = ap.parse_args()
    if args.stage:
        child(args.stage, args.folder, args.home)
        return

    temporary = args.home is None
    home = args.home or Path(tempfile.mkdtemp(prefix="memory-bench-"))
    folder = args.folder
    try:
        if not any(folder.glob("*.pdf")):  # render the sample corpus when it is not there
            folder = home / "pdfs"
            subprocess.run(
                [sys.executable, str(ROOT / "examples" / "render_papers.py"), "--out", str(folder)],
                check=True,
                capture_output=True,
            )
        print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
        print(f"corpus: {folder}; each stage runs in its own process, peak = that process' ru_maxrss")
        print()
        print("| stage | peak RSS MB | stage wall s | what |")
        print("|---|---|---|---|")
        for stage, what in STAGES.items():
            cmd = [sys.executable, __file__, str(folder), "--stage", stage, "--home", str(home)]
            t0 = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if done.returncode != 0:
                tail = done.stderr.strip().splitlines()[-1:] or ["?"]
                print(f"| {stage} | failed | {wall:.1f} | {what}: {tail[0]} |")
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            note = f" ({r['note']})" if r["note"] else ""
            print(f"| {stage} | {r['peak_mb']:.0f} | {r['seconds']:.1f} | {what}{note} |")
    finally:
        if temporary:
            shutil.rmtree(home, ignore_errors=True)
    print()
    print("stage wall s excludes interpreter start-up; every peak includes the interpreter and the stage's imports.")


if __name__ == "__main__":
    main()
