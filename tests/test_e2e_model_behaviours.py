"""End to end with models as they really behave, and endpoints as they really break: the real langchain-openai
client against the scripted server on 127.0.0.1, the sample corpus in Milvus Lite, through AgenticSearcher and
the CLI (`ask`, `chat` on stdin, `eval`). Each test asserts what the user gets."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from paperscope.agent.searcher import NO_TOOLS, AgenticSearcher
from paperscope.answer.extractive import HEADER_WITHOUT_MODEL
from paperscope.cli import app
from paperscope.rag.store import PaperStore
from paperscope.settings_layers import load_settings
from tests.openai_server import (
    Drop,
    EmptyBody,
    Endless,
    Garbage,
    Hang,
    HTTPError,
    Huge,
    KeepAlive,
    Ramble,
    Reply,
    ScriptedOpenAIServer,
    Slow,
    Text,
    ToolCalls,
    bare_json_call,
    copy_schemas,
    fenced_json_call,
    function_eq_call,
    function_tag_call,
    hermes_call,
    python_tag_call,
)

QUESTION = "How many queries was FlashRank trained on?"
SHORT = re.compile(r"\[(P\d+:\d+)\]")
PAPER = re.compile(r"^(P\d+) \|", re.M)
Form = Callable[[str, dict[str, Any]], Text]
Start = Callable[..., ScriptedOpenAIServer]


def last_tool_result(request: dict[str, Any]) -> str:
    return str([m for m in request["messages"] if m["role"] == "tool"][-1]["content"])


def flat(text: str) -> str:
    """Terminal output as one line: panel borders gone, whitespace collapsed."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore) -> Iterator[Start]:
    """start(script, **llm_settings): a scripted endpoint the environment points at, with short timeouts."""
    started: list[ScriptedOpenAIServer] = []

    def point_at(base_url: str, **llm: object) -> None:
        monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", "scripted-model")
        for key, value in {"timeout": 1, "backoff": 0.01, **llm}.items():
            monkeypatch.setenv(f"PAPERSCOPE_LLM__{key.upper()}", str(value))

    def start(script: list[Reply] | None, **llm: object) -> ScriptedOpenAIServer:
        if script is None:  # nothing listens: connection refused
            point_at(f"http://127.0.0.1:{closed_port()}/v1", **llm)
            return ScriptedOpenAIServer([])
        server = ScriptedOpenAIServer(script).start()
        started.append(server)
        point_at(server.base_url, **llm)
        return server

    yield start
    for server in started:
        server.stop()


def searcher(store: PaperStore, **kwargs: Any) -> AgenticSearcher:
    return AgenticSearcher(store, settings=load_settings(), **kwargs)


def text_call_script(form: Form) -> list[Reply]:
    """abstracts -> scoped METHOD search in the top paper -> finish, every call written as text in `form`."""

    def scoped(request: dict[str, Any]) -> Reply:
        paper = PAPER.findall(last_tool_result(request))[0]
        return form("search_by_section", {"query": "queries labelled", "doc_id": paper, "category": "METHOD"})

    def finish(request: dict[str, Any]) -> Reply:
        ids = SHORT.findall(last_tool_result(request))[:2]
        answer = f"FlashRank labels 1.2 million queries [{ids[0]}][{ids[1]}]."
        return form("finish", {"answer": answer, "sources": ids})

    return [form("search_abstracts", {"query": "FlashRank listwise reranking"}), scoped, finish]


FORMS = [hermes_call, function_tag_call, function_eq_call, fenced_json_call, bare_json_call, python_tag_call]


# --- tool calls written as text ---------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_tool_calls_written_as_text_run_as_real_calls(
    form: Form, endpoint: Start, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    server = endpoint(text_call_script(form))
    answer = searcher(sample_kb).run(QUESTION)
    assert answer.mode == "agent" and answer.supported and answer.turns == 3
    assert answer.answer == "FlashRank labels 1.2 million queries [1][2]."
    assert {s.doc_id for s in answer.sources} == {sample_doc_ids["flashrank"]} and len(answer.sources) == 2
    assert [(s.tool, s.from_text, s.error) for s in answer.trace] == [
        ("search_abstracts", True, False),
        ("search_by_section", True, False),
    ]
    assert answer.trace[1].args["doc_id"] == sample_doc_ids["flashrank"]  # the label mapped back
    # The endpoint heard back real tool results for its textual calls.
    turn = server.messages(1)
    assistant = next(m for m in turn if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["name"] == "search_abstracts" and not assistant.get("content")
    assert turn[-1]["role"] == "tool" and PAPER.search(turn[-1]["content"])


def test_ask_shows_the_answer_never_the_markup(endpoint: Start, sample_doc_ids: dict[str, str]) -> None:
    endpoint(text_call_script(function_tag_call))
    result = CliRunner().invoke(app, ["ask", QUESTION])
    assert result.exit_code == 0, result.stderr
    assert "FlashRank labels 1.2 million queries [1][2]." in result.stdout and "agent" in result.stdout
    assert "<function" not in result.stdout and "<tools>" not in result.stdout
    assert f"{sample_doc_ids['flashrank']}:" in result.stdout  # sources carry full citation ids
    assert result.stderr == ""


def test_invalid_text_arguments_go_back_to_the_model(endpoint: Start, sample_kb: PaperStore) -> None:
    def fixed(request: dict[str, Any]) -> Reply:
        assert "not valid JSON" in last_tool_result(request)
        return hermes_call("search_abstracts", {"query": "FlashRank"})

    def finish(request: dict[str, Any]) -> Reply:
        [first, *_] = SHORT.findall(last_tool_result(request))
        return hermes_call("finish", {"answer": f"See [{first}].", "sources": [first]})

    endpoint([Text('<tool_call>{"name": "search_abstracts", "arguments": {"query": </tool_call>'), fixed, finish])
    answer = searcher(sample_kb).run(QUESTION)
    assert answer.mode == "agent" and answer.answer == "See [1]." and answer.supported
    assert answer.trace[0].error and answer.trace[0].from_text


def test_a_chain_of_calls_written_ahead_is_cut_after_the_first(endpoint: Start, sample_kb: PaperStore) -> None:
    chain = "\n".join(
        str(hermes_call(name, args).content)
        for name, args in [
            ("search_abstracts", {"query": "FlashRank"}),
            ("search_by_section", {"query": "queries", "doc_id": "P3", "category": "METHOD"}),
            ("finish", {"answer": "FlashRank used 100 million documents [P3:1].", "sources": ["P3:1"]}),
        ]
    )

    def finish(request: dict[str, Any]) -> Reply:
        [first, *_] = SHORT.findall(last_tool_result(request))
        return hermes_call("finish", {"answer": f"Read it [{first}].", "sources": [first]})

    server = endpoint([Text(chain), finish])
    answer = searcher(sample_kb).run(QUESTION)
    # Only the first call ran: the rest guessed at results (the invented finish never became the answer).
    assert [(s.turn, s.tool) for s in answer.trace] == [(1, "search_abstracts")]
    assert answer.mode == "agent" and answer.answer == "Read it [1]." and "100 million" not in answer.answer
    sent = next(m for m in server.messages(1) if m["role"] == "assistant")
    assert [c["function"]["name"] for c in sent["tool_calls"]] == ["search_abstracts"]


def test_a_finish_called_with_other_tools_waits_for_their_results(endpoint: Start, sample_kb: PaperStore) -> None:
    def finish(request: dict[str, Any]) -> Reply:
        [first, *_] = SHORT.findall(last_tool_result(request))
        return ToolCalls([("finish", {"answer": f"Read it [{first}].", "sources": [first]})])

    early = ToolCalls([("search_abstracts", {"query": "FlashRank"}), ("finish", {"answer": "Guess.", "sources": []})])
    endpoint([early, finish])
    answer = searcher(sample_kb).run(QUESTION)
    assert answer.mode == "agent" and answer.answer == "Read it [1]." and answer.turns == 2
    assert [(s.tool, s.error) for s in answer.trace] == [("finish", True), ("search_abstracts", False)]
    assert "finish ignored" in answer.trace[0].observation


# --- no tools, schemas, rambling: never ungrounded text -----------------------------------------------------


def test_copied_schemas_get_one_reprompt_then_the_single_shot_answer(endpoint: Start) -> None:
    server = endpoint([copy_schemas, copy_schemas, Text("FlashRank labels 1,200,000 queries [1].")])
    result = CliRunner().invoke(app, ["ask", QUESTION])
    assert result.exit_code == 0, result.stderr
    assert "FlashRank labels 1,200,000 queries [1]." in result.stdout
    assert "single-shot fallback" in result.stdout and NO_TOOLS in flat(result.stdout)
    assert '"parameters"' not in result.stdout and "<tools>" not in result.stdout
    assert server.messages(1)[-1]["content"].startswith("You have not read any passage yet")
    assert "Excerpts:" in server.messages(2)[-1]["content"] and "tools" not in server.requests[2]
    assert server.remaining == 0


def test_plain_text_before_any_tool_is_never_the_answer(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint(
        [
            Text("FlashRank was trained on a huge private dataset."),
            Text("As I said: a huge private dataset."),
            Text("FlashRank labels 1,200,000 queries [1]."),
        ]
    )
    answer = searcher(sample_kb).run(QUESTION)
    assert answer.mode == "fallback" and answer.notes[0] == NO_TOOLS and answer.turns == 2
    assert answer.answer == "FlashRank labels 1,200,000 queries [1]." and answer.supported and answer.sources
    assert "huge" not in answer.answer and not answer.extractive and answer.llm_error is None


# The figure is in the sources (the grounding check is tested in test_e2e_transforms.py): citations are at stake here.
INVENTED = "The answer is 1.2 million [P9:999] [1] [7] (see doc 1111...:7)"


def test_invented_citations_never_reach_the_user_on_the_fallback(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint([Text("No tools for me."), Text("Still none."), Text(INVENTED)])
    answer = searcher(sample_kb).run(QUESTION)
    assert answer.mode == "fallback" and answer.answer == "The answer is 1.2 million [1]"
    assert [s.n for s in answer.sources] == [1] and answer.supported
    assert any("Removed 3 citations" in n for n in answer.notes)


def test_invented_citations_never_reach_the_user_single_shot(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint([Text("It is 1.2 million [P9:999] [7] (see doc 1111...:7).")], use_for_routing=False)
    pieces: list[str] = []
    answer = searcher(sample_kb, enable_agentic_rag=False).run(QUESTION, on_token=pieces.append)
    assert answer.mode == "single-shot" and not answer.supported and not answer.extractive
    assert answer.answer.startswith("It is 1.2 million.\n\n(None of this answer's citations points at a passage")
    assert "".join(pieces) == answer.answer  # what streamed is what the answer says
    assert "[7]" not in answer.answer and "P9" not in answer.answer and "1111" not in answer.answer


def test_invented_citations_never_reach_the_user_from_the_agent(
    endpoint: Start, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["flashrank"]

    def finish(request: dict[str, Any]) -> Reply:
        real = SHORT.findall(last_tool_result(request))[0]
        text = f"1.2M queries [{real}], as shown in [P9:999] and [P7:1] and [3]."
        return ToolCalls([("finish", {"answer": text, "sources": [real, "P9:999"]})])

    endpoint([ToolCalls([("search_by_section", {"query": "queries", "doc_id": doc})]), finish])
    answer = searcher(sample_kb).run(QUESTION)
    assert answer.mode == "agent" and answer.answer == "1.2M queries [1]." and answer.supported
    assert len(answer.sources) == 1 and any("Removed 3 citations" in n for n in answer.notes)


def test_a_model_that_rambles_to_max_tokens_gives_way_to_extracted_sentences(
    endpoint: Start, sample_kb: PaperStore
) -> None:
    server = endpoint([Ramble(), Ramble(), Ramble()], max_tokens=24)
    answer = searcher(sample_kb).run(QUESTION)
    assert all(r["max_tokens"] == 24 and r["max_completion_tokens"] == 24 for r in server.requests)
    assert answer.mode == "fallback" and answer.extractive and answer.sources and "and and" not in answer.answer
    assert HEADER_WITHOUT_MODEL in answer.answer
    assert "max_tokens citing nothing" in (answer.llm_error or "")


# --- slow and endless replies --------------------------------------------------------------------------


def test_a_slow_first_token_within_the_timeout_is_worth_the_wait(
    endpoint: Start, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    def finish(request: dict[str, Any]) -> Reply:
        ids = SHORT.findall(last_tool_result(request))[:1]
        return ToolCalls([("finish", {"answer": f"1.2 million queries [{ids[0]}].", "sources": ids})])

    doc = sample_doc_ids["flashrank"]
    endpoint([Slow(0.3, ToolCalls([("search_by_section", {"query": "queries", "doc_id": doc})])), finish], timeout=5)
    pieces: list[str] = []
    answer = searcher(sample_kb).run(QUESTION, on_token=pieces.append)
    assert answer.mode == "agent" and "".join(pieces) == answer.answer == "1.2 million queries [1]."


def test_a_first_token_later_than_the_timeout_ends_in_the_extracted_answer(
    endpoint: Start, sample_kb: PaperStore
) -> None:
    endpoint([Slow(5, Text("too late"))], timeout=0.5)
    pieces: list[str] = []
    answer = searcher(sample_kb).run(QUESTION, on_token=pieces.append)
    assert answer.mode == "fallback" and answer.extractive and answer.sources
    assert "no reply within 0.5 s" in (answer.llm_error or "") and "".join(pieces) == answer.answer


def test_an_endless_stream_is_cut_and_never_shown(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint([Endless(interval=0.02)], timeout=0.5)
    pieces: list[str] = []
    answer = searcher(sample_kb).run(QUESTION, on_token=pieces.append)
    assert answer.mode == "fallback" and answer.extractive and "still streaming" in (answer.llm_error or "")
    assert "more" not in "".join(pieces) and "".join(pieces) == answer.answer


def test_a_single_shot_stream_cut_midway_ends_with_the_extracted_answer(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint([Endless(interval=0.02)], timeout=0.5, use_for_routing=False)
    pieces: list[str] = []
    answer = searcher(sample_kb, enable_agentic_rag=False).run(QUESTION, on_token=pieces.append)
    shown = "".join(pieces)
    assert shown.startswith("more ") and shown.rstrip().endswith(answer.answer.splitlines()[-1])
    assert answer.mode == "single-shot" and answer.extractive and "still streaming" in (answer.llm_error or "")


def test_an_endpoint_that_sends_only_keepalives_is_cut_at_the_request_limit(
    endpoint: Start, sample_kb: PaperStore
) -> None:
    """`: keepalive` comments reset an inter-byte timeout for ever; the request's limit is wall-clock."""
    endpoint([KeepAlive(interval=0.05)] * 3, timeout=1)
    pieces: list[str] = []
    answer = searcher(sample_kb).run(QUESTION, on_token=pieces.append)
    assert answer.mode == "fallback" and answer.extractive and answer.sources
    assert "only keep-alive comments" in (answer.llm_error or "") and "".join(pieces) == answer.answer


def test_single_shot_with_an_endpoint_that_sends_only_keepalives_ends(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint([KeepAlive(interval=0.05)] * 3, timeout=1, use_for_routing=False)
    answer = searcher(sample_kb, enable_agentic_rag=False).run(QUESTION)  # not streamed: the body never completes
    assert answer.mode == "single-shot" and answer.extractive and answer.sources
    assert "only keep-alive comments" in (answer.llm_error or "")


def test_keepalives_cannot_outlast_the_questions_budget(endpoint: Start, sample_kb: PaperStore) -> None:
    """Each request is cut at what is left of the budget, so the whole question ends within it."""
    endpoint([KeepAlive(interval=0.05)] * 6, timeout=30, question_budget=1.5, use_for_routing=False)
    answer = searcher(sample_kb).run(QUESTION)
    assert answer.mode == "fallback" and answer.extractive
    assert "keep-alive" in (answer.llm_error or "") or "budget" in (answer.llm_error or "")


def test_a_reply_that_ignores_max_tokens_is_cut_at_the_cap(endpoint: Start, sample_kb: PaperStore) -> None:
    """A 1 MB reply is not printed or stored whole, whatever the server does with max_tokens."""
    endpoint([Huge(chars=1_000_000)], max_tokens=64, use_for_routing=False)
    pieces: list[str] = []
    answer = searcher(sample_kb, enable_agentic_rag=False).run(QUESTION, on_token=pieces.append)
    shown = "".join(pieces)
    assert len(shown) < 5_000 and len(answer.answer) < 5_000
    assert answer.extractive  # cut at the cap and citing nothing: not an answer, the extracted one is given


# --- broken endpoints: one clear line, and the answer anyway -----------------------------------------------

FAULTS: dict[str, tuple[list[Reply] | None, str]] = {
    "refused": (None, "cannot connect (Connection refused)"),
    "http-500": ([HTTPError(500, "CUDA out of memory")] * 3, "HTTP 500: CUDA out of memory"),
    "empty-body": ([EmptyBody()], "the reply is not a chat completion"),
    "garbage-body": ([Garbage()], "the reply is not a chat completion"),
    "hang": ([Hang()], "no reply within 1.0 s"),
    "dropped": ([Drop()] * 3, "cannot connect"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_ask_with_a_broken_endpoint_answers_and_names_it_once(endpoint: Start, fault: str) -> None:
    script, reason = FAULTS[fault]
    endpoint(script)
    result = CliRunner().invoke(app, ["ask", QUESTION])
    assert result.exit_code == 0, result.stderr
    [line] = result.stderr.splitlines()
    named = r"warning: model scripted-model at http://127\.0\.0\.1:\d+/v1 failed: "
    assert re.fullmatch(rf"{named}{re.escape(reason)}.*; answered without it", line)
    out = flat(result.stdout)
    assert HEADER_WITHOUT_MODEL in out and "The model failed (" in out and "single-shot fallback" in out
    assert "Traceback" not in result.stdout + result.stderr


def test_ask_json_with_a_hanging_endpoint(endpoint: Start, sample_doc_ids: dict[str, str]) -> None:
    endpoint([Hang()])
    result = CliRunner().invoke(app, ["ask", QUESTION, "--json"])
    assert result.exit_code == 0
    answer = json.loads(result.stdout)  # stdout stays clean JSON; the warning went to stderr
    assert answer["mode"] == "fallback" and answer["extractive"] and answer["supported"]
    assert answer["llm_error"].endswith("failed: no reply within 1.0 s")
    assert answer["sources"][0]["doc_id"] == sample_doc_ids["flashrank"]
    assert "warning:" in result.stderr


def test_the_llm_router_with_a_failing_endpoint(endpoint: Start) -> None:
    server = endpoint([HTTPError(502, "bad gateway")] * 3)
    result = CliRunner().invoke(app, ["ask", "How much memory does QuantKV save?", "--no-agent", "--json"])
    assert result.exit_code == 0
    answer = json.loads(result.stdout)
    assert answer["route"]["source"] == "rules" and answer["extractive"] and answer["sources"]
    assert "HTTP 502: bad gateway" in answer["llm_error"] and len(result.stderr.splitlines()) == 1
    assert len(server.requests) == 3  # the router's request and its two retries; no answer request after that


def test_chat_on_stdin_with_a_hanging_endpoint(endpoint: Start) -> None:
    endpoint([Hang()])
    result = CliRunner().invoke(app, ["chat"], input=f"{QUESTION}\n/trace\n/quit\n")
    assert result.exit_code == 0
    out = flat(result.stdout)
    assert "warning: model scripted-model at http://127.0.0.1:" in out and "failed: no reply within 1.0 s" in out
    assert HEADER_WITHOUT_MODEL in out and "Traceback" not in out
    why = "The model failed (no reply within 1.0 s)"
    assert f"single-shot fallback after the agent (1 turn, 0 tool calls): {why}" in out


def test_chat_trace_tells_the_agent_and_its_text_calls(endpoint: Start) -> None:
    endpoint(text_call_script(hermes_call))
    result = CliRunner().invoke(app, ["chat"], input=f"{QUESTION}\n/trace\n")
    assert result.exit_code == 0
    out = flat(result.stdout)
    assert "FlashRank labels 1.2 million queries [1][2]." in out and "<tool_call>" not in out
    assert "agent: 3 turns, 2 tool calls, 2 written as text · Track A (one paper), decided by the agent" in out
    assert out.count("(text)") == 2 and "single-shot answer" not in out
    assert re.search(r"timings: tools \d+\.\d\d s · total \d+\.\d\d s", out) and "turns" not in out.split("timings")[1]


def test_eval_stops_calling_a_dead_endpoint_and_says_so_once(endpoint: Start, tmp_path: Path) -> None:
    server = endpoint([Hang(), Hang()])
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps({"id": f"q{i}", "query": q, "expected_track": "A"})
            for i, q in enumerate([QUESTION, "How much memory does QuantKV save?"])
        )
        + "\n"
    )
    result = CliRunner().invoke(app, ["eval", str(queries), "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [r["mode"] for r in report["results"]] == ["fallback", "fallback"]
    assert all(r["sources"] and r["error"] is None for r in report["results"])
    assert len(server.requests) == 1  # the second question did not wait for the dead endpoint again
    [line] = result.stderr.splitlines()
    assert line.startswith("warning: model scripted-model at ")
    assert line.endswith("2 of 2 queries were answered without it")
