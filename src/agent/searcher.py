"""AgenticSearcher: the LangGraph agent over a knowledge base, or the single-shot path without one.

`run` returns the same Answer as the single-shot Searcher, plus the trace of tool calls and token usage.
Citations: the agent cites `[doc_id:chunk_index]`; only ids it saw in this run's tool results count.
They are renumbered [1], [2], ... in the answer text, in the order the answer uses them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from ..config import Settings
from ..prompts import load_prompt
from ..rag.store import PaperRecord, PaperStore
from .answer import Answer, Source, TraceStep
from .citations import BRACKET, ids_in
from .graph import AgentState, build_graph, finish_call
from .llm import make_chat_model, model_name
from .pipeline import Searcher
from .question import check_question
from .router import Intent
from .streaming import AnswerStream
from .tools import AgentTools, RunState

CATALOGUE_IN_PROMPT = 60  # papers listed in the system prompt; larger collections rely on search_abstracts


class AgenticSearcher:
    """Answers questions with the agent when a chat model is configured, else with the single-shot path."""

    def __init__(
        self,
        source: Settings | PaperStore,
        chat_model: BaseChatModel | None = None,
        *,
        settings: Settings | None = None,
        enable_agentic_rag: bool | None = None,
        max_iterations: int | None = None,
    ) -> None:
        if isinstance(source, PaperStore):
            self.store, self._owns_store = source, False
            self.settings = settings or source.settings
        else:
            self.settings = source
            self.store, self._owns_store = PaperStore.open(source), True
        self.chat_model = chat_model if chat_model is not None else make_chat_model(self.settings.llm)
        self.enable_agentic_rag = (
            self.settings.agent.enable_agentic_rag if enable_agentic_rag is None else enable_agentic_rag
        )
        self.max_iterations = max_iterations or self.settings.agent.max_iterations
        self.single_shot = Searcher(self.store, self.settings, self.chat_model)

    @property
    def agentic(self) -> bool:
        """True when questions go to the agent (a chat model is set and the agent is enabled)."""
        return self.enable_agentic_rag and self.chat_model is not None

    def close(self) -> None:
        """Close the store if this searcher opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> AgenticSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- running -----------------------------------------------------------------------------------------

    def run(
        self, query: str, history: Sequence[Answer] | None = None, on_token: Callable[[str], None] | None = None
    ) -> Answer:
        """Answer `query` (with earlier answers as conversation history); `on_token` receives the answer text."""
        if not self.agentic:
            return self.single_shot.run(query, history=history, on_token=on_token)
        started = time.perf_counter()
        state, graph, inputs, papers = self._prepare(query, history)
        config: RunnableConfig = {"recursion_limit": 4 * self.max_iterations + 10}
        stream: AnswerStream | None = None
        result: dict[str, Any] = {}
        if on_token is None:
            result = graph.invoke(inputs, config=config)
        else:
            stream = AnswerStream(state.seen, on_token)
            for mode, item in graph.stream(inputs, config=config, stream_mode=["messages", "values"]):
                if mode == "messages" and isinstance(item[0], AIMessageChunk):
                    stream.feed(item[0], item[1].get("langgraph_node"))
                elif mode == "values":
                    result = item
            stream.close()
        answer = self._answer(query, result, state, started, papers)
        if on_token is not None and (stream is None or not stream.streamed):
            on_token(answer.answer)  # the model did not stream (or answered in plain text): hand it on whole
        return answer

    async def arun(self, query: str, history: Sequence[Answer] | None = None) -> Answer:
        """`run`, awaitable."""
        if not self.agentic:
            import asyncio

            return await asyncio.to_thread(self.single_shot.run, query, history)
        started = time.perf_counter()
        state, graph, inputs, papers = self._prepare(query, history)
        result = await graph.ainvoke(inputs, config={"recursion_limit": 4 * self.max_iterations + 10})
        return self._answer(query, result, state, started, papers)

    def _prepare(
        self, query: str, history: Sequence[Answer] | None
    ) -> tuple[RunState, Any, AgentState, list[PaperRecord]]:
        check_question(query)
        assert self.chat_model is not None
        papers = self.single_shot.papers()  # one catalogue read per run: prompt, tools and route share it
        state = RunState()
        tools = AgentTools(self.store, self.settings, state, papers)
        graph = build_graph(self.chat_model, tools, self.max_iterations)
        listing = "\n".join(
            f"- doc_id={p.doc_id}: {p.title}{f' ({p.year})' if p.year else ''}" for p in papers[:CATALOGUE_IN_PROMPT]
        )
        if len(papers) > CATALOGUE_IN_PROMPT:
            listing += f"\n- ... and {len(papers) - CATALOGUE_IN_PROMPT} more: use search_abstracts"
        system = load_prompt("agentic_searcher").format(
            n_papers=len(papers), papers=listing or "(empty)", max_iterations=self.max_iterations
        )
        messages: list[AnyMessage] = [SystemMessage(content=system)]
        for earlier in history or []:
            cited = ", ".join(sorted({f"{s.title} (doc_id={s.doc_id})" for s in earlier.sources}))
            messages.append(HumanMessage(content=earlier.query))
            messages.append(AIMessage(content=earlier.answer + (f"\n\n(Sources: {cited})" if cited else "")))
        messages.append(HumanMessage(content=query))
        return state, graph, {"messages": messages, "turns": 0, "cut_short": False}, papers

    # --- the answer --------------------------------------------------------------------------------------

    def _answer(
        self, query: str, result: dict[str, Any], state: RunState, started: float, papers: list[PaperRecord]
    ) -> Answer:
        messages: list[AnyMessage] = result["messages"]
        last = messages[-1]
        finish = finish_call(last)
        notes: list[str] = []
        if finish is not None:
            text, claimed = str(finish["answer"]), list(finish["sources"])
        else:
            text, claimed = (str(last.text) if isinstance(last, AIMessage) else ""), []
        if result.get("cut_short"):
            notes.append(f"The search was cut short after {self.max_iterations} turns; the answer uses what was found.")

        # Cited ids: the sources list first, then any inline id it did not list.
        inline = [cid for m in BRACKET.finditer(text) for cid in ids_in(m.group(1))]
        wanted = list(dict.fromkeys([*claimed, *inline]))
        valid = [cid for cid in wanted if cid in state.seen]
        dropped = [cid for cid in wanted if cid not in state.seen]
        if dropped:
            message = f"dropped sources not seen in this run: {', '.join(dropped)}"
            state.record(TraceStep(tool="finish", args={"sources": claimed}, observation=message, error=True))
            notes.append(f"Dropped {len(dropped)} cited source(s) the agent had not read.")
        # Renumber in the order the answer text uses them, then the rest of the sources list.
        order = list(dict.fromkeys([c for c in inline if c in state.seen] + valid))
        number = {cid: n for n, cid in enumerate(order, start=1)}
        text = BRACKET.sub(lambda m: _renumber(m, number), text).strip()
        sources = [Source.from_chunk(number[cid], state.seen[cid]) for cid in order]
        supported = bool(sources)
        if not supported:
            notes.append("No retrieved passage supports this answer.")
        if not text:
            text = "The agent gave no answer."

        route = self.single_shot.rule_router(papers).route(query)
        track: Literal["A", "B"]
        if sources:
            track = "A" if len({s.doc_id for s in sources}) == 1 else "B"
        else:
            track = "A" if route.intent == Intent.SPECIFIC_PAPER and route.doc_ids else "B"
        usage: dict[str, int] = {}
        for m in messages:
            meta = getattr(m, "usage_metadata", None) if isinstance(m, AIMessage) else None
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                if meta and key in meta:
                    usage[key] = usage.get(key, 0) + int(meta[key])  # type: ignore[literal-required]
        turns = int(result.get("turns", 0))
        return Answer(
            query=query,
            answer=text,
            track=track,
            route=route,
            sources=sources,
            extractive=False,
            supported=supported,
            notes=notes,
            timings={
                "tools": round(sum(s.seconds for s in state.trace), 4),
                "turns": float(turns),
                "total": time.perf_counter() - started,
            },
            models={
                "embedder": self.store.embedder.name,
                "chat_model": model_name(self.chat_model),
                "router": "agent",
                "retriever": self.settings.retrieval.retriever,
            },
            trace=list(state.trace),
            usage=usage,
        )


def _renumber(match: re.Match[str], number: dict[str, int]) -> str:
    ids = ids_in(match.group(1))
    if not ids:
        return match.group(0)  # not a citation group, e.g. "[sic]"
    kept = [f"[{number[c]}]" for c in dict.fromkeys(ids) if c in number]
    return "".join(kept)
