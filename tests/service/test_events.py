"""Streamed answers of the agent through a real server: the model is tests/openai_server.py's scripted
OpenAI-compatible server (the serve process calls it over 127.0.0.1 with the real client); the tool calls arrive
as they run, the answer text as the model writes it, the Answer last, over POST /v1/chat and through the `openai`
client's stream of /v1/chat/completions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from paperscope.rag.embeddings import CachedEmbedder
from tests.openai_server import Reply, ScriptedOpenAIServer, ToolCalls
from tests.served import PRELOADED, Served, make_home, serve, sse_events
from tests.test_e2e_agent import CITE, last_tool_result, track_a_script

QUESTION = "How many queries was FlashRank trained on?"
TOOLS = ["search_abstracts", "search_by_section", "get_context_window"]


def fabricated_script() -> list[Reply]:
    """The Track A run, with a finish whose figure no source holds (the paper says 1.2 million)."""

    def finish(request: dict[str, Any]) -> Reply:
        ids = CITE.findall(last_tool_result(request))[:1]
        return ToolCalls([("finish", {"answer": f"FlashRank labels 3.5 million queries [{ids[0]}].", "sources": ids})])

    return [*track_a_script("FlashRank")[:-1], finish]


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(track_a_script("FlashRank") * 2 + fabricated_script()) as scripted:
        yield scripted


@pytest.fixture(scope="module")
def agent_server(
    model: ScriptedOpenAIServer,
    tmp_path_factory: pytest.TempPathFactory,
    sample_pdfs: dict[str, Path],
    local_embedder: CachedEmbedder,
) -> Iterator[Served]:
    home = make_home(tmp_path_factory.mktemp("agent-home"), [sample_pdfs[n] for n in PRELOADED], local_embedder)
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test", "PAPERSCOPE_LLM_MODEL": "scripted-model"}
    with serve(home, tmp_path_factory.mktemp("agent-log") / "stderr.txt", env) as served:
        yield served


def test_the_agent_streams_tool_calls_then_its_answer(
    agent_server: Served, model: ScriptedOpenAIServer, sample_pdf_ids: dict[str, str]
) -> None:
    with (
        agent_server.client() as http,
        http.stream("POST", "/v1/chat", json={"query": QUESTION, "stream": True}) as response,
    ):
        assert response.status_code == 200
        events = sse_events(response)
    assert events[-1] == "[DONE]" and events[-2]["type"] == "answer"
    body = events[:-1]
    tools = [e for e in body if e["type"] == "tool"]
    assert [e["tool"] for e in tools] == TOOLS
    assert all(e["error"] is False and e["seconds"] >= 0 for e in tools)
    assert tools[1]["args"]["doc_id"] == sample_pdf_ids["flashrank"]  # doc_ids, never the model's labels
    assert tools[1]["results"] and all(r.startswith(sample_pdf_ids["flashrank"]) for r in tools[1]["results"])
    tokens = [e["text"] for e in body if e["type"] == "token"]
    assert len(tokens) > 3  # as the model wrote the finish call
    first_token = next(i for i, e in enumerate(body) if e["type"] == "token")
    assert all(e["type"] != "tool" for e in body[first_token:])  # the tools ran before the answer was written
    answer = events[-2]["answer"]
    assert answer["mode"] == "agent" and answer["track"] == "A"
    assert "".join(tokens).strip() == answer["answer"]
    assert answer["answer"].startswith("FlashRank labels 1.2 million queries [1]")
    assert not CITE.search("".join(tokens))  # citations renumbered as they streamed
    assert [t["tool"] for t in answer["trace"]] == TOOLS
    assert answer["models"]["llm_model"] == "scripted-model"


def test_an_openai_client_streams_the_agents_answer(agent_server: Served, model: ScriptedOpenAIServer) -> None:
    client = openai.OpenAI(base_url=f"{agent_server.url}/v1", api_key="unused", max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="paperscope", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
    )
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 3
    text = "".join(pieces)
    assert (
        text.lstrip().startswith("FlashRank labels 1.2 million queries [1]") and "\n\nSources:\n[1] FlashRank" in text
    )
    answer = (chunks[-1].model_extra or {})["paperscope"]
    assert answer["mode"] == "agent" and [t["tool"] for t in answer["trace"]] == TOOLS
    assert model.errors == [] and model.remaining == len(fabricated_script())


def test_a_streamed_answer_carries_the_marks_of_its_unsupported_figures(
    agent_server: Served, model: ScriptedOpenAIServer
) -> None:
    with (
        agent_server.client() as http,
        http.stream("POST", "/v1/chat", json={"query": QUESTION, "stream": True}) as response,
    ):
        events = sse_events(response)
    answer = events[-2]["answer"]
    assert "3.5 million queries [1]. (not in the sources: 3.5 million)" in answer["answer"]
    streamed = "".join(e["text"] for e in events[:-2] if e["type"] == "token")
    # Written before the check, the text could not carry the mark inline: it follows, naming its sentence.
    assert "(not in the sources: 3.5 million; in: “FlashRank labels 3.5 million queries [1].”)" in streamed
    assert model.errors == [] and model.remaining == 0
