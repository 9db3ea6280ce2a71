"""Query transforms, the grounding check and the reflection loop end to end: the real langchain-openai client
against the scripted server on 127.0.0.1, the sample corpus in Milvus Lite, through AgenticSearcher and the CLI
(`ask`, `retrieve`, `chat` on stdin). Each test asserts what the user gets."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from paperscope.agent.searcher import AgenticSearcher
from paperscope.agent.writer import BESIDE
from paperscope.cli import app
from paperscope.rag.store import PaperStore
from paperscope.settings_layers import load_settings
from tests.openai_server import Hang, Reply, ScriptedOpenAIServer, Text, ToolCalls
from tests.rag.test_transforms import by_prompt

QUESTION = "How many queries was FlashRank trained on?"
SHORT = re.compile(r"\[(P\d+:\d+)\]")
Start = Callable[..., ScriptedOpenAIServer]


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore) -> Iterator[Start]:
    """start(script, **llm_settings): a scripted endpoint the environment points at; rules routing, short timeouts,
    a model name of its own (the generation cache is not shared between tests)."""
    started: list[ScriptedOpenAIServer] = []

    def start(script: list[Reply], **llm: object) -> ScriptedOpenAIServer:
        server = ScriptedOpenAIServer(script).start()
        started.append(server)
        monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", f"scripted-{uuid.uuid4().hex[:8]}")
        for key, value in {"timeout": 2, "backoff": 0.01, "use_for_routing": "false", **llm}.items():
            monkeypatch.setenv(f"PAPERSCOPE_LLM__{key.upper()}", str(value))
        return server

    yield start
    for server in started:
        server.stop()


def no_model(monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PAPERSCOPE_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PAPERSCOPE_HOME", home)


def answer_prompt(request: dict[str, Any]) -> bool:
    return "Excerpts:" in str(request["messages"][-1]["content"]) and "Score the answer" not in str(
        request["messages"][-1]["content"]
    )


# --- the grounding check -----------------------------------------------------------------------------------


def test_a_figure_in_no_source_is_marked_and_the_extracted_answer_given_beside(
    endpoint: Start, sample_kb: PaperStore
) -> None:
    endpoint([Text("FlashRank was trained on 3.5 million queries [1].")])
    answer = AgenticSearcher(sample_kb, settings=load_settings(), enable_agentic_rag=False).run(QUESTION)
    assert answer.mode == "single-shot" and not answer.extractive and not answer.supported
    assert answer.answer.startswith(
        "FlashRank was trained on 3.5 million queries [1]. (not in the sources: 3.5 million)"
    )
    model_part, beside = answer.answer.split(f"\n\n{BESIDE}\n")
    assert "1.2 million" in beside and "1.2 million" not in model_part
    assert answer.grounding is not None and answer.grounding.missing == ["3.5 million"]
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    assert cited == {s.n for s in answer.sources}  # the beside sentences cite listed sources, numbered on
    assert any("3.5 million" in n and "not supported" in n for n in answer.notes)


def test_the_streamed_answer_ends_with_the_check(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint([Text("FlashRank was trained on 3.5 million queries [1].")])
    pieces: list[str] = []
    answer = AgenticSearcher(sample_kb, settings=load_settings(), enable_agentic_rag=False).run(
        QUESTION, on_token=pieces.append
    )
    streamed = "".join(pieces)
    assert streamed.startswith("FlashRank was trained on 3.5 million queries [1].\n\n(1 sentence of the model's")
    assert streamed.endswith(answer.answer.split("\n\n", 1)[1])  # the extracted sentences, numbered as listed


def test_a_supported_figure_passes_untouched(endpoint: Start, sample_kb: PaperStore) -> None:
    endpoint([Text("FlashRank was trained on 1.2M labelled queries [1].")])
    answer = AgenticSearcher(sample_kb, settings=load_settings(), enable_agentic_rag=False).run(QUESTION)
    assert answer.answer == "FlashRank was trained on 1.2M labelled queries [1]." and answer.supported
    assert answer.grounding is not None and answer.grounding.found == answer.grounding.figures == 1


def test_the_agents_answer_is_checked_against_the_passages_it_read(
    endpoint: Start, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    def finish(request: dict[str, Any]) -> Reply:
        ids = SHORT.findall([m for m in request["messages"] if m["role"] == "tool"][-1]["content"])[:1]
        answer = f"FlashRank was trained on 128 thousand queries [{ids[0]}]."
        return ToolCalls([("finish", {"answer": answer, "sources": ids})])

    doc = sample_doc_ids["flashrank"]
    endpoint([ToolCalls([("search_by_section", {"query": "training queries", "doc_id": doc})]), finish])
    answer = AgenticSearcher(sample_kb, settings=load_settings()).run(QUESTION)
    assert answer.mode == "agent" and not answer.supported
    assert "(not in the sources: 128 thousand)" in answer.answer and BESIDE in answer.answer
    assert {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)} == {s.n for s in answer.sources}


# --- transforms from the command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["ask", QUESTION, "--transform", "hyde"],
        ["retrieve", QUESTION, "--transform", "multi-query"],
        ["ask", QUESTION, "--reflect"],
    ],
)
def test_a_transform_or_reflection_without_a_model_is_one_line_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, args: list[str]
) -> None:
    no_model(monkeypatch, str(tmp_path / "no-such-home"))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "need" in result.stderr and "a chat model: set PAPERSCOPE_LLM_MODEL" in result.stderr
    assert not (tmp_path / "no-such-home").exists()  # nothing was opened


def test_an_unknown_transform_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    no_model(monkeypatch, str(tmp_path))
    result = CliRunner().invoke(app, ["ask", QUESTION, "--transform", "hide"])
    assert result.exit_code == 1 and "unknown transform 'hide'; did you mean 'hyde'?" in result.stderr


def test_retrieve_json_shows_what_the_transforms_generated(endpoint: Start) -> None:
    endpoint(
        [
            by_prompt(
                multi_query='["FlashRank labelled training queries"]',
                hyde="FlashRank is trained on many labelled queries.",
            )
        ]
        * 2
    )
    result = CliRunner().invoke(app, ["retrieve", QUESTION, "--transform", "multi-query,hyde", "--json"])
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["generated_queries"] == ["FlashRank labelled training queries"]
    assert (
        found["hyde_queries"] == ["FlashRank is trained on many labelled queries."] and found["semantic_query"] is None
    )
    names = [(o["kind"], o["name"]) for o in found["operators"]]
    assert (
        ("transform", "multi-query") in names and ("transform", "hyde") in names and ("postprocessor", "fuse") in names
    )
    assert found["hits"] and found["track"] == "A"


def test_ask_with_transforms_answers_and_reports_them(endpoint: Start) -> None:
    def reply(request: dict[str, Any]) -> Reply:
        if answer_prompt(request):
            return Text("FlashRank was trained on 1.2 million queries [1].")
        return by_prompt(rewrite='["FlashRank number of training queries"]')(request)

    endpoint([reply] * 2)
    result = CliRunner().invoke(app, ["ask", QUESTION, "--no-agent", "--transform", "rewrite", "--json"])
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["generated_queries"] == ["FlashRank number of training queries"]
    assert answer["answer"] == "FlashRank was trained on 1.2 million queries [1]." and answer["supported"]
    assert answer["models"]["llm_model"].startswith("scripted-") and answer["grounding"]["found"] == 1
    assert any(o["name"] == "rewrite" for o in answer["operators"])


def test_ask_with_transforms_and_a_hanging_endpoint_still_answers(endpoint: Start) -> None:
    endpoint([Hang()] * 4, timeout=0.5)
    result = CliRunner().invoke(app, ["ask", QUESTION, "--no-agent", "--transform", "hyde,multi-query", "--json"])
    assert result.exit_code == 0 and "Traceback" not in result.output
    answer = json.loads(result.stdout)
    assert answer["sources"] and answer["extractive"] and "no reply within 0.5 s" in answer["llm_error"]
    assert any("The hyde transform was skipped" in n for n in answer["notes"])
    assert len(result.stderr.strip().splitlines()) == 1  # the one warning line


def test_chat_trace_shows_what_was_generated(endpoint: Start) -> None:
    def reply(request: dict[str, Any]) -> Reply:
        if answer_prompt(request):
            return Text("FlashRank was trained on 1.2 million queries [1].")
        return by_prompt(multi_query='["labelled queries for FlashRank"]')(request)

    endpoint([reply] * 2)
    result = CliRunner().invoke(
        app, ["chat", "--no-agent", "--transform", "multi-query"], input=f"{QUESTION}\n/trace\n"
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "generated query: labelled queries for FlashRank" in out
    assert "grounding: 1 of 1 figures found in the sources" in out


# --- reflection -------------------------------------------------------------------------------------------


def scores(**given: Any) -> str:
    return json.dumps({"accuracy": 5, "completeness": 5, "relevance": 5, "support": 5, "missing": "", **given})


def test_reflection_retries_a_weak_answer_and_keeps_the_better_one(endpoint: Start) -> None:
    server = endpoint(
        [
            Text("FlashRank is a reranker [1]."),  # the first answer: it misses the number
            Text(scores(completeness=2, missing="the number of training queries")),
            Text("FlashRank labelled training queries count"),  # the rewritten search
            Text("FlashRank was trained on 1.2 million queries [1]."),
            Text(scores(accuracy=9, completeness=9, relevance=9, support=9)),
        ]
    )
    result = CliRunner().invoke(app, ["ask", QUESTION, "--no-agent", "--reflect", "--json"])
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["answer"] == "FlashRank was trained on 1.2 million queries [1]."
    rounds = answer["reflection"]["rounds"]
    assert [r["retry"] for r in rounds] == ["initial", "expand+rewrite"] and answer["reflection"]["kept"] == 2
    assert (
        rounds[0]["score"] < 7 <= rounds[1]["score"]
        and rounds[1]["query"] == "FlashRank labelled training queries count"
    )
    assert rounds[1]["k"] == 10 and rounds[0]["scores"]["grounding"] == 10
    assert answer["reflection"]["stopped"] == "the score reached 7"
    assert not server.errors and server.remaining == 0


def test_reflection_with_junk_scores_leans_on_the_grounding_check(endpoint: Start) -> None:
    endpoint([Text("FlashRank was trained on 1.2 million queries [1]."), Text("Looks great to me!")])
    result = CliRunner().invoke(app, ["ask", QUESTION, "--no-agent", "--reflect", "--json"])
    assert result.exit_code == 0, result.stderr
    reflection = json.loads(result.stdout)["reflection"]
    assert reflection["rounds"][0]["scores"] == {"grounding": 10.0}
    assert reflection["rounds"][0]["note"] == "the model wrote no usable scores"


def test_reflection_stops_at_max_rounds_and_when_the_model_fails(endpoint: Start) -> None:
    low = Text(scores(accuracy=2, completeness=2, relevance=2, support=2))
    endpoint([Text("It is a reranker [1]."), low, Text("It reranks [1]."), low, Hang()], timeout=0.5)
    result = CliRunner().invoke(app, ["ask", QUESTION, "--no-agent", "--reflect", "--json"])
    assert result.exit_code == 0 and "Traceback" not in result.output
    answer = json.loads(result.stdout)
    rounds = answer["reflection"]["rounds"]
    assert [r["retry"] for r in rounds] == ["initial", "expand"]
    assert answer["reflection"]["stopped"].startswith("the model failed")
    assert answer["answer"] in ("It is a reranker [1].", "It reranks [1].")


def test_chat_trace_shows_the_reflection_rounds(endpoint: Start) -> None:
    endpoint(
        [
            Text("FlashRank was trained on 1.2 million queries [1]."),
            Text(scores(accuracy=9, completeness=9, relevance=9, support=9)),
        ]
    )
    result = CliRunner().invoke(app, ["chat", "--no-agent", "--reflect"], input=f"{QUESTION}\n/trace\n")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert (
        "reflection round 1 [initial]: 9.2 (accuracy 9, completeness 9, relevance 9, support 9, grounding 10) (kept)"
        in out
    )
