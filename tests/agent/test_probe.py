"""Probing an endpoint with a few tiny requests, and the per endpoint + model cache of what it found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperscope.agent.probe import cached, context_length, probe, prompt_choice
from paperscope.config import Settings
from tests.openai_server import HTTPError, Reply, ScriptedOpenAIServer, Text, ToolCalls, hermes_call


def settings_for(home: Path, base_url: str, **agent: str) -> Settings:
    return Settings(
        home=home,
        llm={"model": "scripted-model", "base_url": base_url, "timeout": 2, "backoff": 0.01},  # type: ignore[arg-type]
        agent=agent,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("tool_reply", "support"),
    [
        (ToolCalls([("lookup_paper", {"query": "Attention Is All You Need"})]), "yes"),
        (hermes_call("lookup_paper", {"query": "Attention Is All You Need"}), "as text"),
        (Text("Attention Is All You Need is a 2017 paper."), "no"),
    ],
    ids=["structured", "as-text", "no"],
)
def test_tool_calls_are_probed_once_and_cached(tmp_path: Path, tool_reply: Reply, support: str) -> None:
    script: list[Reply] = [Text("OK"), Text("OK"), tool_reply, Text("OK"), Text("OK")]
    with ScriptedOpenAIServer(script, model_info={"meta": {"n_ctx": 8192, "n_ctx_train": 32768}}) as server:
        settings = settings_for(tmp_path, server.base_url)
        first = probe(settings)
        second = probe(settings)  # reply and stream again, tool calls from the cache
        assert len(server.requests) == 5 and server.remaining == 0
        assert "tools" in server.requests[2] and server.requests[1]["stream"] is True
    assert (first.reachable, first.listed, first.streaming, first.tool_calls, first.cached) == (
        True,
        True,
        True,
        support,
        False,
    )
    assert first.latency is not None and first.context_length == 8192  # llama.cpp's n_ctx, not n_ctx_train
    assert second.tool_calls == support and second.cached
    entry = cached(settings) or {}
    assert (entry["tool_calls"], entry["context_length"]) == (support, 8192)
    # The context length chooses the prompt when agent.prompt is auto; a setting wins over the probe.
    assert context_length(settings) == 8192 and prompt_choice(settings) == "compact"
    full = settings.model_copy(update={"agent": settings.agent.model_copy(update={"prompt": "full"})})
    assert prompt_choice(full) == "full"
    big = settings.model_copy(update={"llm": settings.llm.model_copy(update={"context_length": 32768})})
    assert context_length(big) == 32768 and prompt_choice(big) == "full"


def test_the_cache_is_per_endpoint_and_model(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([Text("OK"), Text("OK"), Text("no tools here")]) as server:
        settings = settings_for(tmp_path, server.base_url)
        probe(settings)
        other = settings.model_copy(update={"llm": settings.llm.model_copy(update={"model": "other-model"})})
        assert cached(settings) is not None and cached(other) is None
        entries = json.loads((tmp_path / "llm_probe.json").read_text())
        assert list(entries) == [f"{server.base_url}|scripted-model"]


def test_an_unreachable_endpoint_is_reported_not_raised(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([HTTPError(500, "model not loaded")] * 3) as server:
        result = probe(settings_for(tmp_path, server.base_url))
    # The listing answered, the chat request did not.
    assert result.reachable and result.latency is None and "HTTP 500: model not loaded" in (result.error or "")
    assert result.tool_calls is None and not (tmp_path / "llm_probe.json").exists()
    nothing = probe(settings_for(tmp_path, "http://127.0.0.1:9/v1"))
    assert not nothing.reachable and "cannot connect" in (nothing.error or "")


def test_a_broken_cache_file_is_probed_again(tmp_path: Path) -> None:
    (tmp_path / "llm_probe.json").write_text("{not json")
    with ScriptedOpenAIServer([Text("OK"), Text("OK"), Text("no")]) as server:
        result = probe(settings_for(tmp_path, server.base_url))
    assert result.tool_calls == "no" and not result.cached
