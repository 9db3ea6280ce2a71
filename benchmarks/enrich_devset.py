#!/usr/bin/env python3
"""Index-time enrichment against plain indexing on a few dev-set papers, with a real chat model.

usage: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=x PAPERSCOPE_LLM_MODEL=qwen2.5-coder-1.5b \\
       python benchmarks/enrich_devset.py --home /tmp/enrich-home [--strategies questions,raptor] [--papers ...]

For each strategy (and plain indexing), the papers are ingested into a knowledge base of their own
(`--kb <strategy>`, one home: the generation cache is shared, so a strategy that reuses another's
calls makes none) with `paperscope ingest --enrich <strategy> --json`; the report is kept in `--out`
and an ingest already reported there is not run again (reruns only score). Each knowledge base is then
scored without the chat model (extractive answers, so only what was indexed differs):

- the dev set's scorer (`score_retrieval.py`, `ask --no-agent --k 5`) on the questions about these papers:
  Track A evidence hit@5, Track B paper recall@5 (expected papers outside the set left out), answers with
  every fact;
- the gold rank: for each Track A question, the rank of the first chunk holding an evidence string among
  `retrieve QUESTION --paper DOC --k 20` (MRR@20; it moves before hit@5 does);
- the `raptor` knowledge base also with the `raptor` (collapsed) and `raptor:tree` retrievers.

Cost: the model calls each strategy needs (made, or answered by the shared cache) and seconds of enrichment per
chunk of the papers whose calls were made in that run (from the ingest reports). Prints one
Markdown table. Needs ../shared/devset (it skips with a message when absent).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVSET = ROOT.parent / "shared" / "devset"
CLI = [str(ROOT / ".venv" / "bin" / "paperscope")]
PAPERS = (
    "rrp2010_heart_failure_programmes.pdf",
    "bmchsr2014_quality_improvement_malawi.pdf",
    "pmj2010_h_pylori_iron_deficiency.pdf",
    "conll2009_syntactic_semantic_dependency_parsing.pdf",
)
STRATEGIES = ("none", "questions", "contextual", "summaries", "headers", "raptor", "sliding_summary")
LLM_ENV = ("OPENAI_BASE_URL", "PAPERSCOPE_LLM_MODEL", "PAPERSCOPE_LLM__MODEL", "PAPERSCOPE_LLM__BASE_URL")


def norm(text: str) -> str:
    """The scorer's normalisation: NFKC, lower case, hyphenation joined, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text or "").lower().replace("\u00ad", "").replace("-\n", "")
    return re.sub(r"\s+", " ", text).strip()


def questions_for(papers: list[str], out: Path) -> Path:
    """The dev questions about these papers (Track B: only the expected papers of the set are kept)."""
    kept = []
    for line in (DEVSET / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        inside = [f for f in q["file"] if f in papers]
        if q["expected_track"] == "A" and inside and len(inside) == len(q["file"]):
            kept.append(q)
        elif q["expected_track"] == "B" and inside:
            titles = [t for f, t in zip(q["file"], q["expected_titles"], strict=True) if f in papers]
            kept.append({**q, "file": inside, "expected_titles": titles})
    path = out / "questions_subset.jsonl"
    path.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in kept))
    return path


def plain_env(kb: str, retriever: str) -> dict[str, str]:
    """The environment of a scoring run: this knowledge base and retriever, no chat model."""
    env = {k: v for k, v in os.environ.items() if k not in LLM_ENV}
    return {**env, "PAPERSCOPE_STORE__KB": kb, "PAPERSCOPE_RETRIEVAL__RETRIEVER": retriever}


def ingest(strategy: str, kb: str, files: list[Path], out: Path) -> dict:  # type: ignore[type-arg]
    report = out / f"ingest_{kb}.json"
    if not report.exists():
        cmd = [*CLI, "ingest", *map(str, files), "--kb", kb, "--enrich", strategy, "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if not done.stdout.strip():
            sys.exit(f"ingest {strategy} failed: {done.stderr.strip()}")
        report.write_text(done.stdout)
    return json.loads(report.read_text())  # type: ignore[no-any-return]


def devset_scores(kb: str, retriever: str, questions: Path) -> dict[str, str]:
    cmd = [sys.executable, str(DEVSET / "score_retrieval.py"), " ".join(CLI), str(questions), "5"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=plain_env(kb, retriever))
    line = next((x for x in done.stdout.splitlines() if x.strip().startswith("[all]")), "")

    def grab(pattern: str) -> str:
        m = re.search(pattern, line)
        return m.group(1) if m else "?"

    return {
        "hit": grab(r"hit@5 (\d+/\d+)"),
        "recall": grab(r"recall@5 ([\d.]+)"),
        "facts": grab(r"every fact (\d+/\d+)"),
    }


def gold_mrr(kb: str, retriever: str, questions: Path, doc_ids: dict[str, str]) -> tuple[float, list[int]]:
    """MRR@20 of the first chunk holding an evidence string, Track A questions, the paper given."""
    ranks: list[int] = []
    for line in questions.read_text().splitlines():
        q = json.loads(line)
        if q["expected_track"] != "A":
            continue
        cmd = [*CLI, "retrieve", q["query"], "--paper", doc_ids[q["file"][0]], "--k", "20", "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True, env=plain_env(kb, retriever))
        hits = json.loads(done.stdout)["hits"] if done.returncode == 0 else []
        wanted = [norm(e) for e in q["evidence"]]
        rank = next((i for i, h in enumerate(hits, 1) if any(w in norm(h["text"]) for w in wanted)), 0)
        ranks.append(rank)
    mrr = sum(1 / r for r in ranks if r) / len(ranks) if ranks else 0.0
    return mrr, ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="PAPERSCOPE_HOME of the knowledge bases")
    parser.add_argument("--out", type=Path, help="where ingest reports and scores go (default: HOME/../enrich-out)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated; none = plain")
    parser.add_argument("--papers", default=",".join(PAPERS), help="dev-set PDF names, comma-separated")
    args = parser.parse_args()
    if not DEVSET.is_dir():
        print(f"skipped: the dev set {DEVSET} is absent")
        return
    os.environ["PAPERSCOPE_HOME"] = str(args.home)
    out = args.out or args.home.parent / "enrich-out"
    out.mkdir(parents=True, exist_ok=True)
    papers = args.papers.split(",")
    files = [DEVSET / "pdfs" / p for p in papers]
    questions = questions_for(papers, out)
    rows = []
    body: dict[str, int] = {}
    for strategy in args.strategies.split(","):
        kb = "plain" if strategy == "none" else strategy
        report = ingest(strategy, kb, files, out)
        doc_ids = {Path(f["path"]).name: f["doc_id"] for f in report["files"]}
        # The calls a strategy needs (made now, or answered by the generation cache a rerun shares), and the
        # seconds per chunk of the papers whose calls were made now.
        calls = sum(f.get("calls", 0) for f in report["files"]) + (report.get("cost") or {}).get("cached", 0)
        called = [f for f in report["files"] if f.get("calls")]
        seconds = sum(f.get("enrich_seconds", 0.0) for f in called)
        if strategy == "none":
            body = {f["path"]: f["chunks"] for f in report["files"]}  # chunks of the text, no enrichment rows
        timed_chunks = sum(body.get(f["path"], f["chunks"]) for f in called)
        retrievers = ["bm25", "raptor", "raptor:tree"] if strategy == "raptor" else ["bm25"]
        for retriever in retrievers:
            scores = devset_scores(kb, retriever, questions)
            mrr, ranks = gold_mrr(kb, retriever, questions, doc_ids)
            per_chunk = f"{seconds / timed_chunks:.0f}" if timed_chunks else "-"
            name = "plain" if strategy == "none" else strategy + ("" if retriever == "bm25" else f" ({retriever})")
            rows.append(
                f"| {name} | {calls} | {per_chunk} | {scores['hit']} | {mrr:.2f} ({' '.join(map(str, ranks))}) | "
                f"{scores['recall']} | {scores['facts']} |"
            )
            print(rows[-1], flush=True)
    print()
    print("| strategy | model calls | s per chunk | Track A hit@5 | gold MRR@20 (ranks) | Track B recall@5 | facts |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
