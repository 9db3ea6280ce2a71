"""AgenticSearcher: the LangGraph agent over a knowledge base, or the single-shot path without one.

`run` returns the same Answer as the single-shot Searcher, plus the trace of tool calls and token usage.
Citations: the model reads and cites short ids (`[P1:12]`, see labels.py); only ids it saw in this run's tool
results count. They are renumbered [1], [2], ... in the answer text, in the order the answer uses them, and
mapped back to `<doc_id>:<chunk_index>` in the sources and the trace.

Every question gets a grounded answer, whatever the model does (`Answer.mode` and `notes` say which way):
- the agent finishes citing what it read: `mode="agent"`;
- the model never used a tool (after one re-prompt), or finished before reading anything: single-shot
  retrieval, the model writing the answer from that context (`mode="fallback"`);
- it read passages but answered citing none of them (plain text, tool-call junk, only unseen ids): the
  model writes the answer from the passages it read (`mode="fallback"`);
- the model failed (endpoint down, HTTP error, timeout, the question's budget spent): single-shot
  retrieval with extracted sentences, `llm_error` naming the endpoint and model (`mode="fallback"`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from ..answer.citations import ground, grounding_notes
from ..answer.model import Answer, TraceStep
from ..config import Settings
from ..errors import LLMError
from ..llm.client import make_chat_model, question_scope
from ..parser.models import SectionCategory
from ..prompts import load_prompt
from ..rag.question import check_question
from ..rag.retrieval import Retrieval, track_of
from ..rag.store import PaperRecord, PaperStore
from .graph import build_graph, finish_call, initial_state
from .labels import PaperLabels, paper_line
from .mode import uses_agent
from .pipeline import Searcher
from .probe import prompt_choice
from .reflection import Reflector
from .streaming import AnswerStream
from .textcalls import looks_like_a_call
from .tools import AgentTools, RunState

CATALOGUE_IN_PROMPT = 60  # papers listed in the system prompt; larger collections rely on search_abstracts
PROMPT_ALIAS_KINDS = ("short", "name", "acronym", "first_author", "id")  # not every body mention or author
MAX_PROMPT_ALIASES = 6
PROMPTS = {"full": "agentic_searcher", "compact": "agentic_searcher_compact"}

NO_TOOLS = "The model answered without using the search tools; the answer was written from single-shot retrieval."
NO_CITATION = (
    "The model gave no answer that cites the passages it had read; the answer was written from those passages."
)


@dataclass
class _Run:
    """One question's agent run: its state, graph, first messages and catalogue."""

    state: RunState
    graph: Any
    messages: list[AnyMessage]
    papers: list[PaperRecord]


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
        on_step: Callable[[TraceStep], None] | None = None,
    ) -> None:
        """`on_step` hears of each tool call of an agent run as it ends (the trace as it grows)."""
        if isinstance(source, PaperStore):
            self.store, self._owns_store = source, False
            self.settings = settings or source.settings
        else:
            self.settings = source
            self.store, self._owns_store = PaperStore.open(source), True
        if enable_agentic_rag is not None:
            self.settings = self.settings.with_overrides(agent={"enable_agentic_rag": enable_agentic_rag})
        self.chat_model = chat_model if chat_model is not None else make_chat_model(self.settings.llm)
        self.max_iterations = max_iterations or self.settings.agent.max_iterations
        self.on_step = on_step
        self.single_shot = Searcher(self.store, self.settings, self.chat_model)

    @property
    def agentic(self) -> bool:
        """True when questions go to the agent (a chat model is set and the agent is enabled)."""
        return uses_agent(self.settings, self.chat_model is not None)

    @property
    def prompt_name(self) -> str:
        """The system prompt file the agent uses: `agent.prompt`, or for auto the compact one on short contexts."""
        return PROMPTS[prompt_choice(self.settings)]

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
        """Answer `query` (with earlier answers as conversation history); `on_token` receives the answer text.
        With `reflection.enabled` the answer is scored and, below the bar, retried single-shot (reflection.py)."""
        if not self.agentic:
            return self.single_shot.run(query, history=history, on_token=on_token)
        if self.single_shot.reflecting:
            return Reflector(self.single_shot).run(
                query, lambda relay: self._agent(query, history, relay), history=history, on_token=on_token
            )
        return self._agent(query, history, on_token)

    def _agent(self, query: str, history: Sequence[Answer] | None, on_token: Callable[[str], None] | None) -> Answer:
        """One agent run (see the module docstring)."""
        with question_scope(self.chat_model):
            started = time.perf_counter()
            run = self._prepare(query, history)
            config: RunnableConfig = {"recursion_limit": 4 * self.max_iterations + 12}
            stream: AnswerStream | None = None
            result: dict[str, Any] = {}
            inputs = initial_state(run.messages)
            if on_token is None:
                result = run.graph.invoke(inputs, config=config, context=run.state)
            else:
                stream = AnswerStream(run.state.seen, on_token, resolve=run.state.resolve)
                modes = ["messages", "values"]
                for mode, item in run.graph.stream(inputs, config=config, context=run.state, stream_mode=modes):
                    if mode == "messages" and isinstance(item[0], AIMessageChunk):
                        stream.feed(item[0], item[1].get("langgraph_node"))
                    elif mode == "values":
                        result = item
                stream.close()
            streamed = stream is not None and stream.streamed
            return self._conclude(query, history, run, result, started, on_token, streamed)

    async def arun(self, query: str, history: Sequence[Answer] | None = None) -> Answer:
        """`run`, awaitable (the agent's model and store calls are blocking; they run in a worker thread)."""
        return await asyncio.to_thread(self.run, query, history)

    def _prepare(self, query: str, history: Sequence[Answer] | None) -> _Run:
        check_question(query)
        assert self.chat_model is not None
        papers = self.single_shot.papers()  # one catalogue read per run: prompt, tools and route share it
        listed = papers[:CATALOGUE_IN_PROMPT]
        labels = PaperLabels(p.doc_id for p in listed)
        state = RunState(labels, on_record=self.on_step)
        tools = AgentTools(self.single_shot.engine, papers)
        prompt = self.prompt_name
        compact = prompt == PROMPTS["compact"]
        graph = build_graph(self.chat_model, tools, self.max_iterations, brief=compact)
        listing = "\n".join(paper_entry(labels.label(p.doc_id), p) for p in listed)
        if len(papers) > CATALOGUE_IN_PROMPT:
            listing += f"\n- ... and {len(papers) - CATALOGUE_IN_PROMPT} more: use search_abstracts"
        system = load_prompt(prompt).format(
            n_papers=len(papers), papers=listing or "(empty)", max_iterations=self.max_iterations
        )
        messages: list[AnyMessage] = [SystemMessage(content=system)]
        for earlier in history or []:
            cited = "; ".join(sorted({f"{labels.label(s.doc_id)} {s.title}" for s in earlier.sources}))
            messages.append(HumanMessage(content=earlier.query))
            messages.append(AIMessage(content=earlier.answer + (f"\n\n(Sources: {cited})" if cited else "")))
        messages.append(HumanMessage(content=query))
        return _Run(state, graph, messages, papers)

    # --- the answer --------------------------------------------------------------------------------------

    def _conclude(
        self,
        query: str,
        history: Sequence[Answer] | None,
        run: _Run,
        result: dict[str, Any],
        started: float,
        on_token: Callable[[str], None] | None,
        streamed: bool,
    ) -> Answer:
        """Judge how the run ended and give the answer it earned (see the module docstring)."""
        state = run.state
        messages: list[AnyMessage] = result.get("messages", run.messages)
        turns = int(result.get("turns", 0))
        error: LLMError | None = result.get("error")
        last = messages[-1]

        def fallback(note: str, *, use_model: bool, retrieval: Retrieval | None = None) -> Answer:
            """The single-shot answer (its retrieval, or the passages the agent read), keeping the agent's trace."""
            if streamed and on_token is not None:
                on_token("\n\n")  # whatever streamed is not the answer: the fallback's text follows
            if retrieval is None:
                # The rules route: a model that would not use tools (or failed) is no better at a router's tool call.
                retrieval = self.single_shot.plan(query, history=history, use_model=False)
            retrieval.notes.insert(0, note)
            heard: list[str] = []

            def relay(piece: str) -> None:
                heard.append(piece)
                if on_token is not None:
                    on_token(piece)

            answer = self.single_shot.writer.from_retrieval(
                query,
                retrieval,
                mode="fallback",
                use_model=use_model,
                on_token=relay if on_token is not None else None,
                started=started,
                llm_error=str(error) if error is not None else None,
                trace=list(state.trace),
                usage=_usage(messages),
                turns=turns,
            )
            answer.timings["tools"] = round(sum(s.seconds for s in state.trace), 4)
            if on_token is not None and not heard:
                on_token(answer.answer)
            return answer

        if error is not None:
            note = f"The model failed ({error.reason}); the answer is extracted from single-shot retrieval."
            return fallback(note, use_model=False)
        finish = finish_call(last)
        if finish is not None:
            text, claimed = str(finish["answer"]), [str(c) for c in finish["sources"]]
        else:
            text = str(last.text) if isinstance(last, AIMessage) and not last.tool_calls else ""
            claimed = []
        if not state.seen:
            return fallback(NO_TOOLS, use_model=True)

        grounded = ground(text, state.resolve, listed=claimed)
        cited_nothing_read = (finish is None or grounded.claimed) and not grounded.supported
        says_something = ground(text, lambda ref: None).text.strip()  # an "answer" of citations alone says nothing
        if not says_something or looks_like_a_call(text) or cited_nothing_read:
            return fallback(NO_CITATION, use_model=True, retrieval=self._gathered(query, run))

        notes: list[str] = []
        if result.get("cut_short"):
            notes.append(f"The search was cut short after {self.max_iterations} turns; the answer uses what was found.")
        if grounded.dropped:
            expanded = [state.labels.resolve(c) or c for c in grounded.dropped]
            message = f"dropped citations of passages not read in this run: {', '.join(expanded)}"
            state.record(TraceStep(tool="finish", args={"sources": claimed}, observation=message, error=True))
        notes += grounding_notes(grounded)
        notes += [n for n in state.notes if n not in notes]
        answer = self.single_shot.writer.from_agent(
            query,
            grounded,
            state.seen,
            notes=notes,
            started=started,
            trace=list(state.trace),
            usage=_usage(messages),
            turns=turns,
            **state.generated,
        )
        if on_token is not None and not streamed:
            on_token(answer.answer)  # the model did not stream its answer (e.g. a call written as text): hand it on
        return answer

    def _gathered(self, query: str, run: _Run) -> Retrieval:
        """The passages the agent read as a retrieval (its searches' hits first, abstracts last), to answer from."""
        seen = list(run.state.seen.values())
        hits = [c for c in seen if c.section_category != SectionCategory.ABSTRACT]
        hits += [c for c in seen if c.section_category == SectionCategory.ABSTRACT]
        hits = hits[: 2 * self.settings.retrieval.k]
        doc_ids = list(dict.fromkeys(c.doc_id for c in hits))
        engine = self.single_shot.engine
        return Retrieval(
            query=query,
            chunks=hits,
            track=track_of(doc_ids),
            doc_ids=doc_ids,
            n_papers=len(run.papers),
            models=engine.models(),
        )


def paper_entry(label: str, paper: PaperRecord) -> str:
    """A catalogue paper as the prompt lists it, with the names people call it by (its catalogue aliases)."""
    names = [a.text for a in paper.aliases if a.kind in PROMPT_ALIAS_KINDS]
    return paper_line(label, paper.title, paper.year, names[:MAX_PROMPT_ALIASES])


def _usage(messages: list[AnyMessage]) -> dict[str, int]:
    usage: dict[str, int] = {}
    for m in messages:
        meta = getattr(m, "usage_metadata", None) if isinstance(m, AIMessage) else None
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            if meta and key in meta:
                usage[key] = usage.get(key, 0) + int(meta[key])  # type: ignore[literal-required]
    return usage
