"""The scripted OpenAI-compatible server drives the real `ChatOpenAI` client over loopback HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, cast

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from tests.openai_server import (
    Drop,
    EmptyBody,
    Endless,
    Garbage,
    Hang,
    HTTPError,
    Ramble,
    RawArguments,
    Reply,
    ScriptedOpenAIServer,
    Slow,
    Text,
    ToolCalls,
    copy_schemas,
    hermes_call,
)


@tool
def search_abstracts(query: str, limit: int = 5) -> str:
    """Search paper abstracts."""
    return f"results for {query}"


class FetchSection(BaseModel):
    """Fetch one section of a paper."""

    doc_id: str = Field(description="paper id")
    section: str


def chat(server: ScriptedOpenAIServer, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(model="scripted-model", base_url=server.base_url, api_key="test", max_retries=0, **kwargs)


def streamed(chunks: Sequence[BaseMessage]) -> AIMessageChunk:
    """The streamed chunks added up into one message."""
    assert chunks
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    pieces = cast(list[AIMessageChunk], list(chunks))
    total = pieces[0]
    for chunk in pieces[1:]:
        total = total + chunk
    return total


def test_text_reply_with_usage() -> None:
    with ScriptedOpenAIServer([Text("Hello there.")]) as server:
        reply = chat(server).invoke("hi")
    assert isinstance(reply, AIMessage)
    assert reply.content == "Hello there."
    assert reply.tool_calls == []
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] > 0
    assert reply.usage_metadata["total_tokens"] == (
        reply.usage_metadata["input_tokens"] + reply.usage_metadata["output_tokens"]
    )
    assert reply.response_metadata["finish_reason"] == "stop"
    assert reply.response_metadata["model_name"] == "scripted-model"
    assert server.remaining == 0
    assert server.errors == []
    request = server.requests[0]
    assert request["model"] == "scripted-model"
    assert server.messages(0) == [{"role": "user", "content": "hi"}]
    # Chat Completions, not the Responses API; no stream_options for a custom base_url.
    assert "stream_options" not in request
    assert not request.get("stream")


def test_single_tool_call() -> None:
    with ScriptedOpenAIServer([ToolCalls([("search_abstracts", {"query": "kv cache"})])]) as server:
        reply = chat(server).bind_tools([search_abstracts]).invoke("find kv cache papers")
    assert isinstance(reply, AIMessage)
    assert [(c["name"], c["args"], c["id"]) for c in reply.tool_calls] == [
        ("search_abstracts", {"query": "kv cache"}, "call_1")
    ]
    assert reply.response_metadata["finish_reason"] == "tool_calls"
    assert server.tool_calls_made == [("search_abstracts", {"query": "kv cache"})]
    declared = server.requests[0]["tools"]
    assert [t["function"]["name"] for t in declared] == ["search_abstracts"]
    assert declared[0]["type"] == "function"
    assert set(declared[0]["function"]["parameters"]["properties"]) == {"query", "limit"}


def test_several_tool_calls_in_one_message() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("FetchSection", {"doc_id": "p1", "section": "Method"}),
        ("search_abstracts", {"query": "attention", "limit": 2}),
    ]
    with ScriptedOpenAIServer([ToolCalls(calls, content="Let me look.")]) as server:
        reply = chat(server).bind_tools([FetchSection, search_abstracts]).invoke("go")
    assert isinstance(reply, AIMessage)
    assert reply.content == "Let me look."
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == calls
    assert [c["id"] for c in reply.tool_calls] == ["call_1", "call_2"]
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["FetchSection", "search_abstracts"]


def test_invalid_json_arguments_become_invalid_tool_calls() -> None:
    with ScriptedOpenAIServer([RawArguments("search_abstracts", '{"query": "kv')]) as server:
        reply = chat(server).bind_tools([search_abstracts]).invoke("go")
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == []
    assert len(reply.invalid_tool_calls) == 1
    bad = reply.invalid_tool_calls[0]
    assert bad["name"] == "search_abstracts"
    assert bad["args"] == '{"query": "kv'
    assert server.tool_calls_made == [("search_abstracts", '{"query": "kv')]


def test_streaming_text_arrives_in_several_chunks() -> None:
    text = "Streaming works in small pieces."
    with ScriptedOpenAIServer([Text(text)]) as server:
        chunks = list(chat(server).stream("hi"))
    contents = [c.content for c in chunks if c.content]
    assert len(contents) >= 5
    assert "".join(str(c) for c in contents) == text
    assert streamed(chunks).response_metadata["finish_reason"] == "stop"
    assert server.requests[0]["stream"] is True
    assert "stream_options" not in server.requests[0]


def test_streaming_tool_calls_assemble() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_abstracts", {"query": "mixture of experts", "limit": 3}),
        ("FetchSection", {"doc_id": "p9", "section": "Results"}),
    ]
    with ScriptedOpenAIServer([ToolCalls(calls)]) as server:
        chunks = list(chat(server).bind_tools([search_abstracts, FetchSection]).stream("go"))
    assert sum(1 for c in chunks if isinstance(c, AIMessageChunk) and c.tool_call_chunks) > len(calls)
    total = streamed(chunks)
    assert [(c["name"], c["args"], c["id"]) for c in total.tool_calls] == [
        ("search_abstracts", {"query": "mixture of experts", "limit": 3}, "call_1"),
        ("FetchSection", {"doc_id": "p9", "section": "Results"}, "call_2"),
    ]


def test_streaming_usage_when_requested() -> None:
    with ScriptedOpenAIServer([Text("Counted.")]) as server:
        total = streamed(list(chat(server, stream_usage=True).stream("hi")))
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert total.content == "Counted."
    assert total.usage_metadata is not None
    assert total.usage_metadata["output_tokens"] > 0


def test_second_turn_sends_tool_results_and_dynamic_reply_reads_them() -> None:
    def answer_from_tool_result(request: dict[str, Any]) -> Reply:
        result = json.loads(request["messages"][-1]["content"])
        return ToolCalls([("FetchSection", {"doc_id": result["best"], "section": "Abstract"})])

    script: list[Reply] = [
        ToolCalls([("search_abstracts", {"query": "rope"})]),
        answer_from_tool_result,
        Text("Paper p7 explains it."),
    ]
    with ScriptedOpenAIServer(script) as server:
        llm = chat(server).bind_tools([search_abstracts, FetchSection])
        history: list[BaseMessage] = [HumanMessage("what is rope?")]
        first = llm.invoke(history)
        assert isinstance(first, AIMessage)
        history += [first, ToolMessage(json.dumps({"best": "p7"}), tool_call_id=first.tool_calls[0]["id"])]
        second = llm.invoke(history)
        assert isinstance(second, AIMessage)
        history += [second, ToolMessage("Abstract: ...", tool_call_id=second.tool_calls[0]["id"])]
        final = llm.invoke(history)

    assert final.content == "Paper p7 explains it."
    assert second.tool_calls[0]["args"] == {"doc_id": "p7", "section": "Abstract"}
    assert server.tool_calls_made == [
        ("search_abstracts", {"query": "rope"}),
        ("FetchSection", {"doc_id": "p7", "section": "Abstract"}),
    ]
    sent = server.messages(1)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["function"] == {"name": "search_abstracts", "arguments": '{"query": "rope"}'}
    assert sent[2] == {"role": "tool", "content": '{"best": "p7"}', "tool_call_id": "call_1"}
    assert [m["role"] for m in server.messages(2)] == ["user", "assistant", "tool", "assistant", "tool"]
    assert all(len(r["tools"]) == 2 for r in server.requests)


def test_structured_output_both_methods() -> None:
    script: list[Reply] = [
        ToolCalls([("FetchSection", {"doc_id": "p2", "section": "Intro"})]),
        Text('{"doc_id": "p3", "section": "Method"}'),
    ]
    with ScriptedOpenAIServer(script) as server:
        by_tool = chat(server).with_structured_output(FetchSection, method="function_calling").invoke("x")
        by_schema = chat(server).with_structured_output(FetchSection).invoke("y")
    assert by_tool == FetchSection(doc_id="p2", section="Intro")
    assert by_schema == FetchSection(doc_id="p3", section="Method")
    assert server.requests[1]["response_format"]["type"] == "json_schema"


def test_http_error_reply_raises() -> None:
    with ScriptedOpenAIServer([HTTPError(429, "slow down"), Text("after")]) as server:
        llm = chat(server)
        with pytest.raises(openai.RateLimitError, match="slow down"):
            llm.invoke("hi")
        assert llm.invoke("again").content == "after"
    assert server.errors == []


def test_script_exhausted_is_an_error() -> None:
    with ScriptedOpenAIServer([Text("only one")]) as server:
        llm = chat(server)
        llm.invoke("first")
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            llm.invoke("second")
    assert server.errors == ["script exhausted at request 1"]
    assert len(server.requests) == 2


def test_failing_dynamic_reply_is_recorded() -> None:
    def broken(request: dict[str, Any]) -> Reply:
        raise KeyError("nope")

    with ScriptedOpenAIServer([broken]) as server, pytest.raises(openai.InternalServerError):
        chat(server).invoke("hi")
    assert len(server.errors) == 1
    assert "KeyError" in server.errors[0]


def test_async_invoke_and_stream() -> None:
    async def run(server: ScriptedOpenAIServer) -> tuple[BaseMessage, Sequence[BaseMessage]]:
        llm = chat(server).bind_tools([search_abstracts])
        reply = await llm.ainvoke("hi")
        chunks = [chunk async for chunk in llm.astream("again")]
        return reply, chunks

    script: list[Reply] = [ToolCalls([("search_abstracts", {"query": "async"})]), Text("async streaming")]
    with ScriptedOpenAIServer(script) as server:
        reply, chunks = asyncio.run(run(server))
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["args"] == {"query": "async"}
    assert len([c for c in chunks if c.content]) > 1
    assert streamed(chunks).content == "async streaming"


def test_models_endpoint_and_unknown_paths() -> None:
    with ScriptedOpenAIServer([], model="tiny") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        assert [m.id for m in client.models.list()] == ["tiny"]
        assert httpx.post(f"{server.base_url}/responses", json={}).status_code == 404
        assert httpx.get(f"{server.base_url}/nothing").status_code == 404
    assert server.requests == []
    with pytest.raises(RuntimeError):
        _ = server.base_url


# --- replies that behave like real local models and broken endpoints ------------------------------------------


def test_text_calls_and_copied_schemas_arrive_as_plain_content() -> None:
    script: list[Reply] = [hermes_call("search_abstracts", {"query": "kv"}), copy_schemas]
    with ScriptedOpenAIServer(script) as server:
        llm = chat(server).bind_tools([search_abstracts])
        call = llm.invoke("go")
        copied = llm.invoke("go")
    assert isinstance(call, AIMessage) and call.tool_calls == []
    assert call.content == '<tool_call>\n{"name": "search_abstracts", "arguments": {"query": "kv"}}\n</tool_call>'
    assert isinstance(copied, AIMessage) and copied.tool_calls == []
    assert json.loads(str(copied.content).splitlines()[1]) == server.requests[1]["tools"][0]


def test_ramble_honours_max_tokens_and_says_length() -> None:
    with ScriptedOpenAIServer([Ramble("word ")]) as server:
        reply = chat(server, max_tokens=5).invoke("go")
    assert reply.content == "word " * 5 and reply.response_metadata["finish_reason"] == "length"


def test_endless_streams_until_the_client_leaves() -> None:
    with ScriptedOpenAIServer([Endless(interval=0.001)]) as server:
        stream = chat(server).stream("go")
        pieces = [next(stream).content for _ in range(50)]
        stream.close()
    assert "".join(str(p) for p in pieces).count("more") >= 45


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Hang(), openai.APITimeoutError),
        (Slow(5, Text("late")), openai.APITimeoutError),
        (Drop(), openai.APIConnectionError),
    ],
    ids=["hang", "slow", "drop"],
)
def test_hanging_slow_and_dropped_replies_fail_the_raw_client(reply: Reply, error: type[Exception]) -> None:
    with ScriptedOpenAIServer([reply]) as server:
        with pytest.raises(error):
            chat(server, timeout=0.3).invoke("hi")
        assert len(server.requests) == 1


def test_empty_and_garbage_bodies_are_not_completions() -> None:
    # What the raw client makes of them: a TypeError about "choices", a JSON decode error (BoundedChatOpenAI
    # turns both into one LLMError, see tests/agent/test_llm.py).
    with ScriptedOpenAIServer([EmptyBody(), Garbage(b"not json at all", "application/json")]) as server:
        with pytest.raises(TypeError, match="null value for 'choices'"):
            chat(server).invoke("hi")
        with pytest.raises(json.JSONDecodeError):
            chat(server).invoke("hi")
