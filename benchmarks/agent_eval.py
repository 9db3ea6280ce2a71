"""Eval of the agent loop with a scripted policy model (no LLM exists here): the same gold queries as
`paperscope eval`, through AgenticSearcher, the LangGraph loop and the real tools, with a fake model that
follows the system prompt's strategy mechanically:

  turn 1: search_abstracts(question) and, when the rule router names a paper, search_by_section inside it
          (routed category) -- two calls in one turn, run concurrently;
  turn 2: without a named paper, search_by_section(question) over everything;
  turn 3: finish, citing the passages of the last section search and quoting their text as the answer.

It measures what the tools and the loop deliver (routing, Recall@k, citations) independent of model quality,
and the agent's overhead per run. Usage: python benchmarks/agent_eval.py [--home DIR] [--k 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

ROOT = Path(__file__).resolve().parents[1]

from paperscope.agent.searcher import AgenticSearcher  # noqa: E402
from paperscope.config import Settings  # noqa: E402
from paperscope.eval.queries import load_queries  # noqa: E402
from paperscope.eval.report import markdown  # noqa: E402
from paperscope.eval.runner import run_eval  # noqa: E402
from paperscope.rag.ingest import ingest  # noqa: E402
from paperscope.rag.locate import PaperLocator  # noqa: E402
from paperscope.rag.route import RuleRouter  # noqa: E402
from paperscope.rag.store import PaperStore  # noqa: E402

CITE = re.compile(r"\[(P\d+:\d+)\]")  # the short citation ids the agent's tools show the model


class PolicyModel(BaseChatModel):
    """A deterministic stand-in for an LLM that follows the agent prompt's strategy."""

    router: Any = None
    k: int = 5

    @property
    def _llm_type(self) -> str:
        return "policy"

    def bind_tools(self, tools: Any, **kwargs: Any) -> PolicyModel:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        question = str([m for m in messages if isinstance(m, HumanMessage)][-1].content)
        results = [m for m in messages if isinstance(m, ToolMessage)]
        turn = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        route = self.router.route(question)
        calls: list[dict[str, Any]] = []
        if turn == 0:
            calls.append({"name": "search_abstracts", "args": {"query": question, "k": 3}})
            if route.doc_ids:
                args: dict[str, Any] = {"query": question, "doc_id": route.doc_ids[0], "k": self.k}
                if len(route.target_section_category) == 1:
                    args["category"] = route.target_section_category[0]
                calls.append({"name": "search_by_section", "args": args})
        elif turn == 1 and not route.doc_ids:
            calls.append({"name": "search_by_section", "args": {"query": question, "k": self.k}})
        if calls:
            message = AIMessage(
                content="", tool_calls=[{**c, "id": f"c{turn}_{i}", "type": "tool_call"} for i, c in enumerate(calls)]
            )
        else:
            last = str(results[-1].content) if results else ""
            ids = CITE.findall(last)[: self.k]
            passages = [p.split("\n", 1)[-1] for p in last.split("\n\n")][: self.k]
            answer = " ".join(f"{p} [{i}]" for p, i in zip(passages, ids, strict=False)) or "Nothing found."
            message = AIMessage(
                content="",
                tool_calls=[
                    {"name": "finish", "args": {"answer": answer, "sources": ids}, "id": "fin", "type": "tool_call"}
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=message)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--home", type=Path, default=None, help="data directory (default: temporary, sample corpus ingested)"
    )
    ap.add_argument("--queries", type=Path, default=ROOT / "eval" / "sample.jsonl")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown report here")
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="paperscope-agent-eval-"))
    settings = Settings(home=home)
    with PaperStore.open(settings) as store:
        if not store.list_papers():
            ingest([ROOT / "examples" / "pdfs"], settings, store)
        router = RuleRouter(PaperLocator(store, [p for p in store.list_papers(brief=True) if p.ready]))
        searcher = AgenticSearcher(store, PolicyModel(router=router, k=args.k), settings=settings)
        report = run_eval(
            searcher, load_queries(args.queries), k=args.k, file=str(args.queries), mode="agent, scripted policy"
        )
    text = markdown(report)
    if args.out:
        args.out.write_text(text)
    print(text.split("## What each metric means")[0])


if __name__ == "__main__":
    sys.exit(main())
