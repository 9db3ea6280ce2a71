"""`paperscope doctor` on a real Milvus Lite store, with no model, a scripted endpoint, and a dead one."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.rag.store import PaperStore
from tests.openai_server import KeepAlive, Reply, ScriptedOpenAIServer, Text, ToolCalls

TOOL_CALL = ToolCalls([("lookup_paper", {"query": "Attention Is All You Need"})])


def lines(out: str) -> list[str]:
    return [" ".join(line.split()) for line in out.splitlines()]


@pytest.fixture
def no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PAPERSCOPE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def use_endpoint(monkeypatch: pytest.MonkeyPatch, home: Path, base_url: str) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", "scripted-model")
    monkeypatch.setenv("PAPERSCOPE_LLM__TIMEOUT", "2")
    monkeypatch.setenv("PAPERSCOPE_LLM__BACKOFF", "0.01")


def test_without_a_model_it_says_so_and_checks_the_rest(
    no_llm: None, monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.stdout
    out = lines(result.stdout)
    assert "skip llm no LLM configured (PAPERSCOPE_LLM_MODEL, OPENAI_BASE_URL): answers are extracted sentences" in out
    assert any(line.startswith("ok embedding local:all-MiniLM-L6-v2, 384 dimensions") for line in out)
    assert any(line.startswith("ok milvus Milvus Lite at ") and "milvus.db" in line for line in out)
    assert any(line.startswith("ok knowledge base papers 12 papers, ") for line in out)
    assert out[-1] == "everything needed works"

    report = json.loads(CliRunner().invoke(app, ["doctor", "--json"]).stdout)
    assert report["ok"] is True and report["llm"] is None and report["embedding"]["dim"] == 384
    [kb] = [k for k in report["knowledge_bases"] if k["name"] == "papers"]
    assert (kb["papers"], kb["ready"], kb["embedder"]) == (12, 12, "local:all-MiniLM-L6-v2") and kb["chunks"] > 100


def test_a_working_endpoint_is_probed_once_for_tool_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script: list[Reply] = [Text("OK"), Text("OK"), TOOL_CALL, Text("OK"), Text("OK")]
    with ScriptedOpenAIServer(script, model_info={"meta": {"n_ctx": 8192}}) as server:
        use_endpoint(monkeypatch, tmp_path, server.base_url)
        result = CliRunner().invoke(app, ["doctor"])
        assert result.exit_code == 0, result.stdout
        out = lines(result.stdout)
        assert f"ok llm endpoint {server.base_url} is reachable" in out
        assert "ok llm model scripted-model (listed by the endpoint)" in out
        assert "ok llm streaming yes" in out and "ok llm tool calls structured" in out
        assert "ok llm context 8192 tokens (from the endpoint): the agent uses the compact prompt" in out
        assert any(line.startswith("ok llm reply a short reply in ") for line in out)
        again = json.loads(CliRunner().invoke(app, ["doctor", "--json"]).stdout)
        assert len(server.requests) == 5  # the second run asked no tool question: the answer was cached
    assert again["ok"] and again["llm"]["tool_calls"] == "yes" and again["llm"]["cached"] is True


def test_a_model_that_writes_no_tool_call_is_a_warning_not_a_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with ScriptedOpenAIServer([Text("OK"), Text("OK"), Text("It is a 2017 paper by Vaswani et al.")]) as server:
        use_endpoint(monkeypatch, tmp_path, server.base_url)
        result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0
    assert "warn llm tool calls none: the agent will fall back to single-shot retrieval with this model" in lines(
        result.stdout
    )


def test_a_dead_endpoint_fails_the_doctor_and_the_rest_is_still_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    use_endpoint(monkeypatch, tmp_path, url)
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 1
    out = lines(result.stdout)
    assert f"fail llm endpoint {url}: cannot connect (Connection refused)" in out
    assert any(line.startswith("ok embedding ") for line in out) and any(line.startswith("ok milvus ") for line in out)
    assert out[-1] == "something needed is broken (see fail above)"
    report = json.loads(CliRunner().invoke(app, ["doctor", "--json"]).stdout)
    assert report["ok"] is False and report["llm"]["reachable"] is False


def test_an_endpoint_that_streams_only_keepalives_fails_the_doctor_within_its_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Keep-alive comments reset an inter-byte timeout for ever; the doctor's requests end at their limit."""
    with ScriptedOpenAIServer([KeepAlive(interval=0.05)] * 4) as server:
        use_endpoint(monkeypatch, tmp_path, server.base_url)
        result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 1
    out = lines(result.stdout)
    assert any(line.startswith("fail llm ") and "only keep-alive comments" in line for line in out), out
