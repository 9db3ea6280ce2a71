"""The agent with a real model behind any OpenAI-compatible endpoint (by hand, never in CI).

Runs a subset of the gold queries (eval/sample.jsonl over the sample corpus, optionally devset questions)
through AgenticSearcher and prints, per question: the tool calls the model made (structured / parsed from
text), whether a fallback answered, the sources, supported, the expected facts found (answer_contains) and
seconds; then totals, and whether the run met the bar: every answer grounded with sources, no traceback, no
tool-call markup in an answer, no question over the question budget.

    python benchmarks/real_llm.py --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b
    python benchmarks/real_llm.py --base-url ... --model ... --ids a01,b01 --devset 4 --out table.md

The endpoint is probed first (as `paperscope doctor` does), which records its context length for the
`auto` prompt choice. The sample corpus is ingested into --home (default: a temporary directory) when empty.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEVSET = ROOT.parent / "shared" / "devset" / "questions.jsonl"
DEFAULT_IDS = "a01,a05,a08,a11,a18,a23,a32,b01,b06,zh02"

from paperscope.agent.probe import probe  # noqa: E402
from paperscope.agent.searcher import AgenticSearcher  # noqa: E402
from paperscope.agent.textcalls import looks_like_a_call  # noqa: E402
from paperscope.answer.model import Answer  # noqa: E402
from paperscope.eval.metrics import coverage  # noqa: E402
from paperscope.eval.queries import EvalQuery, load_queries  # noqa: E402
from paperscope.rag.ingest import ingest  # noqa: E402
from paperscope.rag.store import PaperStore  # noqa: E402
from paperscope.settings_layers import load_settings  # noqa: E402


def calls_made(answer: Answer) -> str:
    """ "3 structured, 1 text" / "none"."""
    structured = sum(1 for s in answer.trace if not s.from_text and s.turn)
    text = sum(1 for s in answer.trace if s.from_text)
    parts = [f"{structured} structured"] if structured else []
    parts += [f"{text} text"] if text else []
    return ", ".join(parts) or "none"


def fallback_taken(answer: Answer) -> str:
    if answer.mode != "fallback":
        return "-"
    note = answer.notes[0] if answer.notes else ""
    if answer.llm_error:
        return "model failed: " + answer.llm_error.split("failed: ", 1)[-1]
    if "without using the search tools" in note:
        return "no tool use"
    if "no answer that cites" in note:
        return "uncited answer"
    return note[:40]


def row(q: EvalQuery, answer: Answer | None, seconds: float, error: str | None, budget: float) -> dict[str, Any]:
    if answer is None:
        return {
            "id": q.id,
            "calls": "-",
            "fallback": "-",
            "sources": 0,
            "supported": False,
            "facts": "-",
            "seconds": seconds,
            "error": error,
            "junk": False,
            "over": seconds > budget,
        }
    facts = "-"
    if q.answer_contains:
        found = round(coverage(answer.answer, q.answer_contains) * len(q.answer_contains))
        facts = f"{found}/{len(q.answer_contains)}"
    return {
        "id": q.id,
        "calls": calls_made(answer),
        "fallback": fallback_taken(answer),
        "sources": len(answer.sources),
        "supported": answer.supported,
        "facts": facts,
        "seconds": seconds,
        "error": None,
        "junk": looks_like_a_call(answer.answer),
        "over": seconds > budget,
        "answer": answer.answer,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| id | tool calls | fallback | sources | supported | facts | s |",
        "|---|---|---|---:|---|---|---:|",
    ]
    for r in rows:
        fallback = r["fallback"] if not r["error"] else f"TRACEBACK: {r['error']}"
        lines.append(
            f"| {r['id']} | {r['calls']} | {fallback} | {r['sources']} | {'yes' if r['supported'] else 'no'} | "
            f"{r['facts']} | {r['seconds']:.0f} |"
        )
    return "\n".join(lines)


def totals(rows: list[dict[str, Any]], budget: float) -> str:
    n = len(rows)
    agent = sum(1 for r in rows if r["fallback"] == "-" and not r["error"])
    with_sources = sum(1 for r in rows if r["sources"])
    supported = sum(1 for r in rows if r["supported"])
    facts = [tuple(map(int, r["facts"].split("/"))) for r in rows if "/" in r["facts"]]
    found, wanted = sum(f for f, _ in facts), sum(w for _, w in facts)
    errors = sum(1 for r in rows if r["error"])
    junk = sum(1 for r in rows if r["junk"])
    over = sum(1 for r in rows if r["over"])
    slowest = max((r["seconds"] for r in rows), default=0.0)
    met = with_sources == n and not errors and not junk and not over
    return (
        f"{n} questions: {agent} answered by the agent, {n - agent - errors} by a fallback; "
        f"{with_sources}/{n} with sources, {supported}/{n} supported; facts found {found}/{wanted}; "
        f"tracebacks {errors}; tool-call markup in answers {junk}; over the {budget:.0f} s budget {over} "
        f"(slowest {slowest:.0f} s). Bar {'met' if met else 'NOT met'}."
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("--model", required=True, help="model name the endpoint serves")
    ap.add_argument("--api-key", default="not-needed")
    ap.add_argument("--home", type=Path, default=None, help="data directory (default: temporary, corpus ingested)")
    ap.add_argument("--queries", type=Path, default=ROOT / "eval" / "sample.jsonl")
    ap.add_argument("--ids", default=DEFAULT_IDS, help="comma-separated query ids (default: a mixed set of 10)")
    ap.add_argument("--devset", type=int, default=0, help="also the first N questions of ../shared/devset")
    ap.add_argument("--timeout", type=float, default=None, help="llm.timeout (default: the setting's)")
    ap.add_argument("--budget", type=float, default=None, help="llm.question_budget (default: the setting's)")
    ap.add_argument("--prompt", choices=["auto", "full", "compact"], default="auto")
    ap.add_argument("--out", type=Path, default=None, help="also write the table (Markdown) here")
    ap.add_argument("--show-answers", action="store_true", help="print each answer")
    args = ap.parse_args()

    home = args.home or Path(tempfile.mkdtemp(prefix="paperscope-real-llm-"))
    llm: dict[str, Any] = {"model": args.model, "base_url": args.base_url, "api_key": args.api_key}
    if args.timeout:
        llm["timeout"] = args.timeout
    if args.budget:
        llm["question_budget"] = args.budget
    settings = load_settings(llm=llm, agent={"prompt": args.prompt})
    settings.home = home

    found = probe(settings, refresh=True)
    print(
        f"endpoint {found.endpoint} · model {found.model} · reachable {found.reachable} · tool calls "
        f"{found.tool_calls} · streaming {found.streaming} · latency {found.latency} s · context "
        f"{found.context_length} tokens{' · ' + found.error if found.error else ''}",
        flush=True,
    )
    wanted = [i.strip() for i in args.ids.split(",") if i.strip()]
    by_id = {q.id: q for q in load_queries(args.queries)}
    queries = [by_id[i] for i in wanted if i in by_id]
    if args.devset and DEVSET.is_file():
        queries += load_queries(DEVSET)[: args.devset]

    rows: list[dict[str, Any]] = []
    with PaperStore.open(settings) as store:
        if not store.list_papers():
            ingest([ROOT / "examples" / "pdfs"], settings, store)
        searcher = AgenticSearcher(store, settings=settings)
        print(f"prompt: {searcher.prompt_name} · budget {settings.llm.question_budget:.0f} s per question", flush=True)
        for q in queries:
            started = time.perf_counter()
            answer: Answer | None = None
            error = None
            try:
                answer = searcher.run(q.query)
            except Exception as exc:  # the bar is "no traceback": count it, show it, go on
                error = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
            r = row(q, answer, time.perf_counter() - started, error, settings.llm.question_budget)
            rows.append(r)
            print(
                f"{q.id}: {r['calls']} · fallback {r['fallback']} · {r['sources']} sources · "
                f"facts {r['facts']} · {r['seconds']:.0f} s",
                flush=True,
            )
            if args.show_answers and answer is not None:
                print("   " + json.dumps(answer.answer[:400], ensure_ascii=False), flush=True)

    text = f"{table(rows)}\n\n{totals(rows, settings.llm.question_budget)}\n"
    print()
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
