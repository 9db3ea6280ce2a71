"""End to end: the real langchain-openai client against a scripted OpenAI-compatible server on 127.0.0.1,
the agent over the sample corpus in Milvus Lite, through `paperscope ask --json` and `AgenticSearcher.run`."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from paperscope.agent.searcher import AgenticSearcher
from paperscope.cli import app
from paperscope.rag.store import PaperStore
from paperscope.settings_layers import load_settings
from tests.openai_server import Reply, ScriptedOpenAIServer, Text, ToolCalls
from tests.scripted_model import DESIGN_TOOLS

CITE = re.compile(r"\[(P\d+:\d+)\]")  # the short citation ids the model reads
DOC = re.compile(r"^(P\d+) \|", re.M)  # a paper line of search_abstracts
LISTED = re.compile(r"^- (P\d+): (.+?)(?: \(|$)", re.M)


def label_of(request: dict[str, Any], title_start: str) -> str:
    """The label the system prompt of `request` gives the paper whose title starts with `title_start`."""
    [label] = [lab for lab, title in LISTED.findall(request["messages"][0]["content"]) if title.startswith(title_start)]
    return label


def last_tool_result(request: dict[str, Any]) -> str:
    return str([m for m in request["messages"] if m["role"] == "tool"][-1]["content"])


def track_a_script(question_paper: str) -> list[Reply]:
    """abstracts -> scoped METHOD search in the top paper -> window around the first hit -> finish."""

    def scoped(request: dict[str, Any]) -> Reply:
        doc = DOC.findall(last_tool_result(request))[0]
        return ToolCalls([("search_by_section", {"query": "queries labelled", "doc_id": doc, "category": "METHOD"})])

    def window(request: dict[str, Any]) -> Reply:
        doc, index = CITE.findall(last_tool_result(request))[0].split(":")
        return ToolCalls([("get_context_window", {"doc_id": doc, "chunk_index": int(index), "window": 1})])

    def finish(request: dict[str, Any]) -> Reply:
        ids = CITE.findall(last_tool_result(request))[:2]
        answer = f"{question_paper} labels 1.2 million queries [{ids[0]}], from MS MARCO and doc2query [{ids[1]}]."
        return ToolCalls([("finish", {"answer": answer, "sources": ids})])

    return [
        ToolCalls([("search_abstracts", {"query": f"{question_paper} listwise reranking"})]),
        scoped,
        window,
        finish,
    ]


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore) -> ScriptedOpenAIServer:
    server = ScriptedOpenAIServer(track_a_script("FlashRank"))
    server.start()
    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", "scripted-model")
    yield server  # type: ignore[misc]
    server.stop()


def assert_track_a_run(server: ScriptedOpenAIServer, answer: dict[str, Any], flashrank: str) -> None:
    assert [name for name, _ in server.tool_calls_made] == [
        "search_abstracts",
        "search_by_section",
        "get_context_window",
        "finish",
    ]
    assert server.errors == [] and server.remaining == 0
    # What reached the store: the scoped search returned only FlashRank's METHOD chunks.
    scoped = str([m for m in server.messages(2) if m["role"] == "tool"][-1]["content"])
    label = label_of(server.requests[0], "FlashRank")
    assert CITE.findall(scoped) and all(c.startswith(f"{label}:") for c in CITE.findall(scoped))
    assert flashrank not in json.dumps(server.requests[-1]["messages"])  # the model never reads a doc_id
    assert "(METHOD)" in scoped
    # The real client declared the five tools.
    declared = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert declared == DESIGN_TOOLS
    assert answer["track"] == "A" and answer["supported"] is True
    assert [s["n"] for s in answer["sources"]] == [1, 2]
    assert all(s["doc_id"] == flashrank for s in answer["sources"])
    assert answer["answer"].startswith("FlashRank labels 1.2 million queries [1], from MS MARCO and doc2query [2].")
    assert [t["tool"] for t in answer["trace"]] == ["search_abstracts", "search_by_section", "get_context_window"]
    assert all(t["args"].get("doc_id") in (None, flashrank) for t in answer["trace"])
    assert all(s["citation"].startswith(f"{flashrank}:") for s in answer["sources"])
    assert answer["mode"] == "agent" and answer["turns"] == 4 and answer["llm_error"] is None
    assert answer["usage"]["total_tokens"] > 0
    assert answer["models"]["llm_model"] == "scripted-model"


def test_ask_json_runs_the_agent_through_the_real_client(
    llm_env: ScriptedOpenAIServer, sample_doc_ids: dict[str, str]
) -> None:
    result = CliRunner().invoke(app, ["ask", "How many queries was FlashRank trained on?", "--json"])
    assert result.exit_code == 0, result.stderr
    assert_track_a_run(llm_env, json.loads(result.stdout), sample_doc_ids["flashrank"])


def test_agentic_searcher_run_through_the_real_client(
    llm_env: ScriptedOpenAIServer, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    settings = load_settings()
    searcher = AgenticSearcher(sample_kb, settings=settings)
    assert searcher.agentic and searcher.chat_model is not None
    answer = searcher.run("How many queries was FlashRank trained on?")
    assert_track_a_run(llm_env, answer.model_dump(mode="json"), sample_doc_ids["flashrank"])
    # Every tool result the model received cites short ids; the finished sources are among them.
    seen = {c for i in range(len(llm_env.requests)) for m in llm_env.messages(i) for c in CITE.findall(str(m))}
    label = label_of(llm_env.requests[0], "FlashRank")
    assert {s.citation.replace(s.doc_id, label) for s in answer.sources} <= seen


def test_no_agent_uses_the_model_once_for_a_single_shot_answer(
    monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    route = ToolCalls(
        [
            (
                "route_query",
                {
                    "intent": "SPECIFIC_PAPER",
                    "target_paper_keywords": ["QuantKV"],
                    "target_section_category": ["EVALUATION"],
                },
            )
        ]
    )
    with ScriptedOpenAIServer([route, Text("QuantKV saves 3.7x memory [1].")]) as server:
        monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", "scripted-model")
        result = CliRunner().invoke(app, ["ask", "How much memory does QuantKV save?", "--json", "--no-agent"])
        assert result.exit_code == 0, result.stderr
        answer = json.loads(result.stdout)
        assert answer["route"]["source"] == "llm" and answer["track"] == "A"
        assert answer["answer"] == "QuantKV saves 3.7x memory [1]." and [s["n"] for s in answer["sources"]] == [1]
        assert answer["sources"][0]["doc_id"] == sample_doc_ids["quantkv"]
        prompt = server.messages(1)[-1]["content"]
        assert "Evidence [1]" in prompt and "[Paper: QuantKV" in prompt


def test_the_agent_streams_its_final_answer_with_renumbered_citations(
    llm_env: ScriptedOpenAIServer, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    searcher = AgenticSearcher(sample_kb, settings=load_settings())
    pieces: list[str] = []
    answer = searcher.run("How many queries was FlashRank trained on?", on_token=pieces.append)
    assert len(pieces) > 3  # it arrived in pieces, as the server streamed the finish arguments
    assert "".join(pieces).strip() == answer.answer
    shown = "".join(pieces)
    assert "[1]" in answer.answer and not CITE.search(shown) and sample_doc_ids["flashrank"] not in shown
    assert all(r.get("stream") is True for r in llm_env.requests)


def half_invented_script() -> list[Reply]:
    """The Track A run, finishing with one sentence the cited chunk holds and one with figures nobody wrote."""

    def finish(request: dict[str, Any]) -> Reply:
        read = "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "tool")
        cite = CITE.findall(read[: read.index("1,200,000 queries")])[-1]  # the chunk that says it
        answer = (
            f"FlashRank labels 1.2 million queries [{cite}]. "
            f"Its teacher has 3.5 billion parameters and was trained in 1999 [{cite}]."
        )
        return ToolCalls([("finish", {"answer": answer, "sources": [cite]})])

    return [*track_a_script("FlashRank")[:-1], finish]


def test_each_sentence_of_a_models_answer_gets_its_verdict_in_json_and_in_the_terminal(
    monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", "scripted-model")
    question = "How many queries was FlashRank trained on?"
    with ScriptedOpenAIServer(half_invented_script() * 2) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        as_json = CliRunner().invoke(app, ["ask", question, "--json"])
        in_terminal = CliRunner().invoke(app, ["ask", question])
        assert server.errors == [] and server.remaining == 0
    assert as_json.exit_code == 0 and in_terminal.exit_code == 0, as_json.stderr + in_terminal.stderr
    claims = json.loads(as_json.stdout)["claims"]
    held, invented = claims[:2]
    assert held["verdict"] == "supported" and held["role"] == "answer" and held["n"] == 1
    assert held["citation"].startswith(sample_doc_ids["flashrank"]) and "1,200,000 queries" in held["quote"]
    assert invented["verdict"] == "unsupported" and {"3.5 billion", "1999"} <= set(invented["missing"])
    # The terminal marks each sentence: the held one ✓, the invented one ✗, and says what the marks mean.
    shown = " ".join(in_terminal.stdout.replace("│", " ").split())  # the panel's borders out of the way
    assert re.search(r"1\.2 million queries \[1\]\. ✓", shown), shown
    assert re.search(r"trained in 1999 \[1\]\. ✗ \(not in the sources: 3\.5 billion, 1999\)", shown), shown
    assert "✓ supported · ◐ partly supported · ✗ not supported" in shown
