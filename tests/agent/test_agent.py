"""The LangGraph agent driven by a scripted chat model over the sample corpus in a real Milvus Lite store."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections.abc import Callable

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from paperscope.agent.searcher import NO_CITATION, AgenticSearcher
from paperscope.agent.tools import AgentTools, RunState, brief_declarations
from paperscope.answer.model import TraceStep
from paperscope.config import LLMSettings
from paperscope.llm.client import make_chat_model
from paperscope.prompts import load_prompt
from paperscope.rag.engine import Engine
from paperscope.rag.store import PaperStore, StoredChunk
from tests.scripted_model import DESIGN_TOOLS, ScriptedChatModel, final, invalid_tool_call, tool_call, tool_calls

CITE = re.compile(r"\[((?:P\d+|[0-9a-f-]{36}):\d+)\]")  # what the model reads: short ids such as [P3:12]
LISTED = re.compile(r"^- (P\d+): (.+?)(?: \(|$)", re.M)


def label_of(messages: list[BaseMessage], title_start: str) -> str:
    """The label (P<n>) the system prompt gives the paper whose title starts with `title_start`."""
    listed = {title: label for label, title in LISTED.findall(str(messages[0].content))}
    [label] = [label for title, label in listed.items() if title.startswith(title_start)]
    return label


def tool_results(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def cited_in_last_result(
    pick: Callable[[list[str]], list[str]], answer: str
) -> Callable[[list[BaseMessage]], AIMessage]:
    """A scripted step that finishes citing ids picked from the latest tool result."""

    def step(messages: list[BaseMessage]) -> AIMessage:
        ids = CITE.findall(str(tool_results(messages)[-1].content))
        chosen = pick(ids)
        text = answer + " " + "".join(f"[{c}]" for c in chosen)
        return tool_call("finish", {"answer": text, "sources": chosen})

    return step


def window_of_first_hit(messages: list[BaseMessage]) -> AIMessage:
    doc_id, index = CITE.findall(str(tool_results(messages)[-1].content))[0].split(":")
    return tool_call("get_context_window", {"doc_id": doc_id, "chunk_index": int(index), "window": 1})


@pytest.fixture
def agent_for(sample_kb: PaperStore) -> Callable[..., tuple[AgenticSearcher, ScriptedChatModel]]:
    def make(*steps: object, max_iterations: int = 5) -> tuple[AgenticSearcher, ScriptedChatModel]:
        model = ScriptedChatModel(list(steps))  # type: ignore[arg-type]
        return AgenticSearcher(sample_kb, model, max_iterations=max_iterations), model

    return make


def test_track_a_abstracts_then_scoped_section_then_window(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["flashrank"]
    searcher, model = agent_for(
        tool_call("search_abstracts", {"query": "FlashRank listwise reranking distillation"}),
        tool_call("search_by_section", {"query": "how many queries are labelled", "doc_id": doc, "category": "METHOD"}),
        window_of_first_hit,
        cited_in_last_result(lambda ids: ids[:2], "FlashRank labels 1.2 million queries."),
    )
    answer = searcher.run("How many queries was FlashRank trained on?")
    assert [s.tool for s in answer.trace] == [
        "search_abstracts",
        "search_by_section",
        "get_context_window",
    ]
    assert not any(s.error for s in answer.trace)
    assert answer.track == "A" and answer.supported and not answer.extractive
    assert [s.n for s in answer.sources] == [1, 2] and {s.doc_id for s in answer.sources} == {doc}
    assert answer.answer == "FlashRank labels 1.2 million queries. [1][2]"
    # The scoped search reached the store as asked: only that paper, only METHOD.
    scoped = tool_results(model.calls[2])[-1].content
    label = label_of(model.calls[0], "FlashRank")
    assert CITE.findall(str(scoped)) and all(c.startswith(f"{label}:") for c in CITE.findall(str(scoped)))
    assert "(METHOD)" in str(scoped) and "(RELATED_WORK)" not in str(scoped)
    # The model saw the system prompt with the catalogue (short ids, no doc_ids) and the tools bound.
    system = str(model.calls[0][0].content)
    assert isinstance(model.calls[0][0], SystemMessage) and f"- {label}: FlashRank" in system and doc not in system
    # Sources and trace leave the run with full doc_ids.
    assert all(s.citation.startswith(f"{doc}:") for s in answer.sources)
    assert answer.trace[1].args["doc_id"] == doc and answer.trace[2].args["doc_id"] == doc
    assert set(model.call_tools[0]) == DESIGN_TOOLS
    assert answer.route.source == "agent" and answer.turns == 4 and answer.mode == "agent"
    assert "turns" not in answer.timings and not any(s.from_text for s in answer.trace)
    assert [s.turn for s in answer.trace] == [1, 2, 3]
    # Each call's trace lists the citations it gave the model, as full ids.
    shown = [f"{doc}:{n}" for n in (int(c.split(":")[1]) for c in CITE.findall(str(scoped)))]
    assert answer.trace[1].results == shown
    assert answer.trace[0].results and all(":" in r and not r.startswith("P") for r in answer.trace[0].results)
    assert {s.citation for s in answer.sources} <= {r for step in answer.trace for r in step.results}


def test_track_b_draws_on_several_papers_and_runs_calls_concurrently(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    a, b = sample_doc_ids["reflectrag"], sample_doc_ids["hydra"]
    searcher, model = agent_for(
        tool_call("search_abstracts", {"query": "improve retrieval-augmented generation", "k": 5}),
        tool_calls(
            ("search_by_section", {"query": "results", "doc_id": a, "category": "EVALUATION", "k": 2}),
            ("search_by_section", {"query": "results", "doc_id": b, "category": "EVALUATION", "k": 2}),
            ("get_paper_introduction", {"doc_id": a}),
        ),
        lambda messages: tool_call(
            "finish",
            {
                "answer": "Self-critique and hypothetical documents both help.",
                "sources": [CITE.findall(str(m.content))[0] for m in tool_results(messages)[-3:-1]],
            },
        ),
    )
    answer = searcher.run("What methods improve retrieval-augmented generation?")
    assert answer.track == "B" and {s.doc_id for s in answer.sources} == {a, b}
    # All three calls of the second turn answered in that turn.
    assert len(tool_results(model.calls[2])) == 4
    assert [s.tool for s in answer.trace].count("search_by_section") == 2


def test_calls_of_one_turn_are_traced_in_the_order_the_model_made_them(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]],
    sample_doc_ids: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slow, fast = sample_doc_ids["chunksage"], sample_doc_ids["hydra"]
    searcher, model = agent_for(
        tool_calls(
            ("get_context_window", {"doc_id": slow, "chunk_index": 1, "window": 1}),
            ("get_context_window", {"doc_id": fast, "chunk_index": 2, "window": 0}),
        ),
        cited_in_last_result(lambda ids: ids[:1], "HyDRA."),
    )
    engine = searcher.single_shot.engine
    window: Callable[..., list[StoredChunk]] = engine.window

    def slow_first(doc_id: str, chunk_index: int, width: int = 1) -> list[StoredChunk]:
        if doc_id == slow:  # the first call ends last: the trace must not follow the order calls end in
            time.sleep(0.5)
        return window(doc_id, chunk_index, width)

    monkeypatch.setattr(engine, "window", slow_first)
    heard: list[TraceStep] = []
    searcher.on_step = heard.append
    answer = searcher.run("What does HyDRA generate?")
    steps = [s for s in answer.trace if s.turn == 1]
    assert [s.args["doc_id"] for s in steps] == [slow, fast]
    assert [s.args["doc_id"] for s in heard[:2]] == [fast, slow]  # reported as each call ended
    assert [s.turn for s in heard[:2]] == [1, 1]
    # Each step lists the citations its own call showed the model (as full ids), and only those.
    slow_msg, fast_msg = tool_results(model.calls[1])
    for step, message, doc in [(steps[0], slow_msg, slow), (steps[1], fast_msg, fast)]:
        label = label_of(model.calls[0], message_title(message))
        assert step.results == [f"{doc}:{c.split(':')[1]}" for c in CITE.findall(str(message.content))]
        assert step.results and all(c.startswith(f"{label}:") for c in CITE.findall(str(message.content)))
        assert doc in step.observation and f"{label}:" not in step.observation and not step.error
    assert [s.results for s in steps] == [[f"{slow}:0", f"{slow}:1", f"{slow}:2"], [f"{fast}:2"]]


def message_title(message: ToolMessage) -> str:
    """The start of the paper title in a tool result's first passage header (`[P1:2] Title | ...`)."""
    return str(message.content).split("] ", 1)[1].split(" | ", 1)[0][:12]


def test_calls_the_tool_node_refuses_are_traced_in_call_order_and_answered(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["quantkv"]
    turn = tool_calls(
        ("search_by_section", {"query": "memory saving", "doc_id": doc}),
        ("no_such_tool", {"x": 1}),
        ("get_context_window", {"doc_id": doc, "chunk_index": 0, "window": 10}),
    )
    turn.invalid_tool_calls = invalid_tool_call("search_abstracts", '{"query": "kv').invalid_tool_calls
    searcher, model = agent_for(turn, cited_in_last_result(lambda ids: [], "QuantKV saves memory."))
    answer = searcher.run("How much memory does QuantKV save?")
    steps = [s for s in answer.trace if s.turn == 1]
    assert [(s.tool, s.error) for s in steps] == [
        ("search_by_section", False),
        ("no_such_tool", True),
        ("get_context_window", True),
        ("search_abstracts", True),
    ]
    assert steps[1].observation == "error: unknown tool 'no_such_tool'" and steps[1].args == {}
    assert steps[2].observation.startswith("error: get_context_window: window") and steps[2].args["window"] == 10
    assert steps[3].observation == "error: search_abstracts: arguments are not valid JSON"
    replies = tool_results(model.calls[1])
    assert [m.tool_call_id for m in replies] == [c["id"] for c in turn.tool_calls] + [turn.invalid_tool_calls[0]["id"]]
    assert "no_such_tool is not a valid tool" in str(replies[1].content)
    assert [m.status for m in replies] == ["success", "error", "error", "error"]


def test_the_injected_run_state_is_declared_to_no_model(sample_kb: PaperStore) -> None:
    tools = AgentTools(Engine(sample_kb)).tools()
    # Every tool takes the run's state as an injected `runtime` argument ...
    functions = [t.func for t in tools if isinstance(t, StructuredTool) and t.func is not None]
    assert len(functions) == len(tools) and all("runtime" in inspect.signature(f).parameters for f in functions)
    # ... which neither the full declarations an OpenAI-compatible endpoint is sent nor the brief ones name.
    model = make_chat_model(LLMSettings(model="scripted-model", base_url="http://127.0.0.1:9/v1"))
    assert model is not None
    sent = model.bind_tools(tools).kwargs["tools"]  # type: ignore[attr-defined]
    for declared in (sent, brief_declarations(tools)):
        assert [d["function"]["name"] for d in declared] == [t.name for t in tools]
        for d in declared:
            assert "runtime" not in d["function"]["parameters"]["properties"], d["function"]["name"]
            assert "runtime" not in d["function"]["parameters"].get("required", [])
            assert "runtime" not in json.dumps(d)
    assert set(sent[2]["function"]["parameters"]["properties"]) == {"doc_id", "chunk_index", "window"}


@pytest.mark.parametrize(
    ("bad_call", "error"),
    [
        (("search_by_section", {"query": "x", "doc_id": "0" * 8 + "-dead-beef-0000-000000000000"}), "unknown doc_id"),
        (("search_by_section", {"query": "x", "category": "RESULTS"}), "unknown category 'RESULTS'"),
        (("search_by_section", {"query": "x", "doc_id": 'x" or doc_id != "'}), "invalid doc_id"),
        (("get_context_window", {"doc_id": "DOC", "chunk_index": 3, "window": 10}), "window"),
        (("get_context_window", {"doc_id": "DOC", "chunk_index": 99999}), "past the end"),
        (("get_paper_introduction", {}), "doc_id"),
        (("no_such_tool", {}), "no_such_tool"),
    ],
)
def test_a_bad_argument_goes_back_to_the_model(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]],
    sample_doc_ids: dict[str, str],
    bad_call: tuple[str, dict[str, object]],
    error: str,
) -> None:
    doc = sample_doc_ids["quantkv"]
    name, args = bad_call[0], {k: (doc if v == "DOC" else v) for k, v in bad_call[1].items()}
    searcher, model = agent_for(
        tool_call(name, args),
        tool_call("search_by_section", {"query": "memory saving", "doc_id": doc}),
        cited_in_last_result(lambda ids: ids[:1], "QuantKV saves memory."),
    )
    answer = searcher.run("How much memory does QuantKV save?")
    [message] = tool_results(model.calls[1])
    assert message.status == "error" and error in str(message.content)
    assert "\n" not in str(message.content) and len(str(message.content)) < 300
    assert answer.supported and answer.sources[0].doc_id == doc
    assert answer.trace[0].error and error in answer.trace[0].observation


def test_invalid_json_arguments_are_reported(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    searcher, model = agent_for(
        invalid_tool_call("search_abstracts", '{"query": "kv cache'),
        final("I could not search."),
        final("I still will not search."),
        final("Quantizing the cache to 4 bits cuts its memory [1]."),
    )
    answer = searcher.run("What reduces KV cache memory?")
    [message] = tool_results(model.calls[1])
    assert "not valid JSON" in str(message.content)
    # Nothing read yet: one re-prompt, then single-shot retrieval with the model writing from that context.
    assert "You have not read any passage yet" in str(model.calls[2][-1].content)
    assert "Excerpts:" in str(model.calls[3][-1].content)
    assert answer.mode == "fallback" and answer.supported and answer.turns == 3
    assert answer.answer == "Quantizing the cache to 4 bits cuts its memory [1]." and len(answer.sources) == 1
    assert answer.notes[0].startswith("The model answered without using the search tools")
    assert answer.trace[0].error and answer.trace[0].tool == "search_abstracts"


def test_fabricated_sources_are_dropped(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["marten"]
    fake = f"{sample_doc_ids['tokenprune']}:3"

    def finish_with_fake(messages: list[BaseMessage]) -> AIMessage:
        real = CITE.findall(str(tool_results(messages)[-1].content))[0]
        return tool_call("finish", {"answer": f"600B tokens [{real}] on 256 GPUs [{fake}].", "sources": [real, fake]})

    searcher, _ = agent_for(
        tool_call("search_by_section", {"query": "pretraining tokens", "doc_id": doc}),
        finish_with_fake,
    )
    answer = searcher.run("How many tokens was Marten-1B trained on?")
    assert [s.citation for s in answer.sources] == [answer.sources[0].citation]
    # The GPUs were in no passage this run read: the grounding check marks the figure (not a key one).
    assert answer.sources[0].doc_id == doc and answer.answer == "600B tokens [1] on 256 GPUs. (not in the sources: 256)"
    assert answer.supported
    assert any(s.error and fake in s.observation for s in answer.trace)
    assert any("Removed 1 citation that points at no passage" in n for n in answer.notes)


def test_an_answer_citing_only_unread_passages_is_rewritten_from_what_was_read(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["marten"]
    searcher, model = agent_for(
        tool_call("search_by_section", {"query": "pretraining tokens", "doc_id": doc}),
        tool_call("finish", {"answer": "It is 42 [P1:999].", "sources": ["P1:999"]}),
        final("Marten-1B was pretrained on 600B tokens [1]."),
    )
    answer = searcher.run("How many tokens was Marten-1B trained on?")
    # The model wrote the answer again, from the passages it had read, numbered as excerpts.
    assert "Excerpts:" in str(model.calls[2][-1].content) and "[Paper: Marten" in str(model.calls[2][-1].content)
    assert answer.mode == "fallback" and answer.supported
    assert answer.answer == "Marten-1B was pretrained on 600B tokens [1]."
    assert [s.doc_id for s in answer.sources] == [doc]
    assert answer.notes[0] == NO_CITATION
    assert [s.tool for s in answer.trace] == ["search_by_section"]


@pytest.mark.parametrize(
    "shape",
    ["<tool_response>\nIt is 600B tokens {cid}\n</tool_response>", "{cid}", '{{"name": "finish", "arguments": 1}}'],
    ids=["echoed-tool-response", "citations-only", "call-markup"],
)
def test_an_answer_that_is_markup_or_bare_citations_is_rewritten_from_what_was_read(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str], shape: str
) -> None:
    doc = sample_doc_ids["marten"]

    def finish(messages: list[BaseMessage]) -> AIMessage:
        [first, *_] = CITE.findall(str(tool_results(messages)[-1].content))
        return tool_call("finish", {"answer": shape.format(cid=f"[{first}]"), "sources": [first]})

    searcher, _ = agent_for(
        tool_call("search_by_section", {"query": "pretraining tokens", "doc_id": doc}),
        finish,
        final("Marten-1B was pretrained on 600B tokens [1]."),
    )
    answer = searcher.run("How many tokens was Marten-1B trained on?")
    assert answer.mode == "fallback" and answer.answer == "Marten-1B was pretrained on 600B tokens [1]."
    assert answer.notes[0] == NO_CITATION


def test_a_finish_before_reading_anything_gets_one_reprompt_then_single_shot(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    fake = f"{sample_doc_ids['marten']}:1"
    searcher, model = agent_for(
        tool_call("finish", {"answer": f"It is 42 [{fake}].", "sources": [fake]}),
        tool_call("finish", {"answer": "Still 42.", "sources": []}),
        final("Marten-1B was pretrained on 600B tokens [1]."),
    )
    answer = searcher.run("How many tokens was Marten-1B pretrained on?")
    assert "You have not read any passage yet" in str(model.calls[1][-1].content)
    assert answer.mode == "fallback" and answer.supported and "42" not in answer.answer
    assert answer.sources and answer.sources[0].doc_id == sample_doc_ids["marten"]
    assert answer.route.source == "rules" and answer.trace == []


def test_running_out_of_turns_answers_from_what_was_gathered(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["switchback"]

    def wrap_up(messages: list[BaseMessage]) -> AIMessage:
        ids = [c for m in tool_results(messages) for c in CITE.findall(str(m.content))]
        return final(f"SwitchBack uses 64 experts [{ids[0]}]; the search was cut short.")

    searcher, model = agent_for(
        tool_call("search_abstracts", {"query": "mixture of experts routing"}),
        tool_call("search_by_section", {"query": "number of experts", "doc_id": doc}),
        wrap_up,
        max_iterations=2,
    )
    answer = searcher.run("How many experts does SwitchBack use?")
    assert len(model.calls) == 3 and "out of turns" in str(model.calls[2][-1].content)
    assert any("cut short" in n for n in answer.notes)
    assert answer.supported and answer.answer.startswith("SwitchBack uses 64 experts [1]")


def test_history_reaches_the_model(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["longcite"]
    searcher, model = agent_for(
        tool_call("search_by_section", {"query": "training data", "doc_id": doc}),
        cited_in_last_result(lambda ids: ids[:1], "It uses 38,000 QA pairs."),
        tool_call("search_by_section", {"query": "ablation", "doc_id": doc, "category": "EVALUATION"}),
        cited_in_last_result(lambda ids: ids[:1], "The ablation shows citations matter."),
    )
    first = searcher.run("How much data did LongCite train on?")
    second = searcher.run("What about its ablation?", history=[first])
    sent = [str(m.content) for m in model.calls[2]]
    assert "How much data did LongCite train on?" in sent
    label = label_of(model.calls[2], "LongCite")
    assert any(f"(Sources: {label} LongCite" in s for s in sent)
    assert second.sources and second.sources[0].doc_id == doc


def test_without_a_model_or_when_disabled_it_runs_single_shot(sample_kb: PaperStore) -> None:
    no_model = AgenticSearcher(sample_kb, None)
    no_model.chat_model = None
    no_model.single_shot.chat_model = None
    answer = no_model.run("How does BlendIR weight BM25 against dense scores?")
    assert not no_model.agentic and answer.extractive and answer.trace == [] and answer.sources
    # Not routed by the model: the router's LLM call would take the one scripted reply.
    settings = sample_kb.settings.with_overrides(llm={"use_for_routing": False})
    model = ScriptedChatModel([final("generated [1]")])
    disabled = AgenticSearcher(sample_kb, model, settings=settings, enable_agentic_rag=False)
    answer = disabled.run("How does BlendIR weight BM25 against dense scores?")
    assert not disabled.agentic and answer.trace == [] and answer.answer == "generated [1]"


def test_arun(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["tabretriever"]
    searcher, _ = agent_for(
        tool_call("search_by_section", {"query": "tables", "doc_id": doc}),
        cited_in_last_result(lambda ids: ids[:1], "Tables."),
    )
    answer = asyncio.run(searcher.arun("What does TabRetriever retrieve?"))
    assert answer.sources and answer.sources[0].doc_id == doc


def test_streaming_hands_the_answer_to_the_chat(
    agent_for: Callable[..., tuple[AgenticSearcher, ScriptedChatModel]], sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["hydra"]
    searcher, _ = agent_for(
        tool_call("search_by_section", {"query": "hypothetical documents", "doc_id": doc}),
        cited_in_last_result(lambda ids: ids[:1], "Eight hypothetical documents."),
    )
    pieces: list[str] = []
    answer = searcher.run("How many hypothetical documents does HyDRA generate?", on_token=pieces.append)
    assert "".join(pieces) == answer.answer


def test_brief_declarations_keep_names_types_and_defaults_only(sample_kb: PaperStore) -> None:
    tools = AgentTools(Engine(sample_kb)).tools()
    declared = {d["function"]["name"]: d["function"] for d in brief_declarations(tools)}
    section = declared["search_by_section"]
    assert section["description"] == (
        "Search passages of the papers, optionally only in one paper (doc_id: P1, P2, ...) and one section category."
    )
    assert section["parameters"]["required"] == ["query"]
    assert section["parameters"]["properties"]["k"] == {
        "type": "integer",
        "default": 5,
        "description": "How many passages to return (1-10).",
    }
    assert section["parameters"]["properties"]["doc_id"]["type"] == "string"  # not anyOf [string, null]
    assert declared["finish"]["parameters"]["properties"]["sources"]["items"] == {"type": "string"}
    assert "minimum" not in json.dumps(declared) and "maxLength" not in json.dumps(declared)


def test_tools_remember_what_they_showed(sample_kb: PaperStore, sample_doc_ids: dict[str, str]) -> None:
    state = RunState()
    tools = AgentTools(Engine(sample_kb))
    doc = sample_doc_ids["chunksage"]
    out, shown = tools.get_context_window(state, doc, 0, 1)
    assert CITE.findall(out) == ["P1:0", "P1:1"]  # the model reads short ids ...
    assert set(state.seen) == set(shown) == {f"{doc}:0", f"{doc}:1"}  # ... the run remembers full ones
    assert state.resolve("P1:1") == state.resolve(f"{doc}:1") == f"{doc}:1" and state.resolve("P1:7") is None
    intro, shown = tools.get_paper_introduction(state, "P1")
    assert "(INTRODUCTION)" in intro and [state.resolve(c) for c in CITE.findall(intro)] == shown


def test_the_compact_contract_declares_the_tools_briefly_and_reads_calls_from_text(
    sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    def call(name: str, args: dict[str, object]) -> AIMessage:
        return final(f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(args)}}}\n</tool_call>')

    def scoped(messages: list[BaseMessage]) -> AIMessage:
        label = label_of(messages, "QuantKV")
        return call("search_by_section", {"query": "memory saving", "doc_id": label, "category": "EVALUATION"})

    def finish(messages: list[BaseMessage]) -> AIMessage:
        [first, *_] = CITE.findall(str(tool_results(messages)[-1].content))
        return call("finish", {"answer": f"It saves memory [{first}].", "sources": [first]})

    settings = sample_kb.settings.with_overrides(agent={"prompt": "compact"})
    model = ScriptedChatModel([scoped, finish])
    searcher = AgenticSearcher(sample_kb, model, settings=settings)
    answer = searcher.run("How much memory does QuantKV save?")
    system = str(model.calls[0][0].content)
    assert searcher.prompt_name == "agentic_searcher_compact" and "Reply with tool calls only." in system
    assert 2 * len(load_prompt("agentic_searcher_compact").text) < len(load_prompt("agentic_searcher").text)
    assert set(model.call_tools[0]) == DESIGN_TOOLS
    assert answer.mode == "agent" and answer.answer == "It saves memory [1]."
    assert answer.sources[0].doc_id == sample_doc_ids["quantkv"] and all(s.from_text for s in answer.trace)


def test_search_abstracts_finds_a_paper_by_what_people_call_it(
    sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    papers = [p for p in sample_kb.list_papers(brief=True) if p.ready]
    tools, state = AgentTools(Engine(sample_kb), papers), RunState()
    # Author names are in no abstract: only the catalogue's aliases know them.
    for query, paper in [("Mendez et al.", "blendir"), ("the paper by Mendez and Weiss", "blendir")]:
        first = tools.search_abstracts(state, query, k=3)[0].splitlines()[0]
        label = first.split(" | ")[0]
        assert state.labels.doc_id(label) == sample_doc_ids[paper], (query, first)
        assert re.search(r"\| score \d\.\d{3} \| abstract \[P\d+:\d+\]", first)
