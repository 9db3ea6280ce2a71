"""Query transforms through the real OpenAI client against the scripted server, on the sample corpus in Milvus
Lite: what each transform generates is searched and reported; a model that returns junk, an empty list, the
question itself or another language, or that fails or hangs, costs a note, never the answer."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from paperscope.errors import ConfigError
from paperscope.llm.client import make_chat_model, question_scope
from paperscope.rag.engine import Engine
from paperscope.rag.filters import SearchFilter
from paperscope.rag.registry import choices, get
from paperscope.rag.retrieval import Retrieval
from paperscope.rag.store import PaperStore
from paperscope.rag.transforms import parse_queries
from paperscope.settings_layers import load_settings
from tests.openai_server import Hang, HTTPError, Reply, ScriptedOpenAIServer, Text

QUESTION = "How many queries was FlashRank trained on?"
Start = Callable[..., tuple[ScriptedOpenAIServer, Engine]]


def prompt_of(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def by_prompt(**replies: str) -> Callable[[dict[str, Any]], Reply]:
    """A reply chosen by which transform's prompt the request carries (they run concurrently, in any order)."""
    marks = {
        "rewrite": "You turn a researcher's question into search queries",
        "multi_query": "different search queries",
        "hyde": "Write a short passage",
        "self_query": "the filters the question states",
    }

    def reply(request: dict[str, Any]) -> Reply:
        text = prompt_of(request)
        for name, mark in marks.items():
            if mark in text and name in replies:
                return Text(replies[name])
        return HTTPError(500, f"unexpected prompt: {text[:80]}")

    return reply


@pytest.fixture
def engine_with(monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore) -> Iterator[Start]:
    """start(script, transforms, **settings): an engine with the transforms, its model on a scripted server."""
    servers: list[ScriptedOpenAIServer] = []

    def start(script: list[Reply], transforms: str, **retrieval: Any) -> tuple[ScriptedOpenAIServer, Engine]:
        server = ScriptedOpenAIServer(script).start()
        servers.append(server)
        monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        # A model name of its own: the generation cache (by model, prompt and input) is not shared between tests.
        monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", f"scripted-{uuid.uuid4().hex[:8]}")
        monkeypatch.setenv("PAPERSCOPE_LLM__TIMEOUT", str(retrieval.pop("timeout", 2)))
        monkeypatch.setenv("PAPERSCOPE_LLM__BACKOFF", "0.01")
        settings = load_settings(retrieval={"transforms": transforms, **retrieval})
        return server, Engine(sample_kb, settings, make_chat_model(settings.llm))

    yield start
    for server in servers:
        server.stop()


def retrieve(engine: Engine, query: str = QUESTION, **kwargs: Any) -> Retrieval:
    with question_scope(engine.chat_model):
        return engine.retrieve(query, **kwargs)


def ran(found: Retrieval, kind: str, name: str) -> list[dict[str, Any]]:
    return [o.detail for o in found.operators if o.kind == kind and o.name == name]


# --- the registry and the settings ----------------------------------------------------------------------


def test_every_query_transform_is_registered_and_needs_the_model() -> None:
    assert choices("transform") == ["hyde", "multi-query", "rewrite", "self-query"]  # glossary, focus: always on
    for name in choices("transform"):
        assert get("transform", name).needs == ("llm",)


def test_transforms_without_a_chat_model_are_refused_before_any_search(sample_kb: PaperStore) -> None:
    settings = sample_kb.settings.with_overrides(retrieval={"transforms": ["hyde"]})
    with pytest.raises(ConfigError, match="query transform hyde needs a chat model"):
        Engine(sample_kb, settings)


@pytest.mark.parametrize(
    ("reply", "queries"),
    [
        ('["flashrank training queries", "listwise reranker training data"]', 2),
        ('```json\n[{"query": "a"}, {"query": "b"}, {"query": "c"}]\n```', 3),  # what Qwen2.5-Coder-1.5B wrote
        ("Here are some queries:\n1. flashrank training\n2. reranker data", 3),  # numbered lines, chatter kept
        ("[]", 0),
    ],
)
def test_replies_are_read_as_lists_whatever_their_wrapping(reply: str, queries: int) -> None:
    assert len(parse_queries(reply)) == queries


# --- each transform, end to end -------------------------------------------------------------------------


def test_multi_query_searches_each_query_and_fuses_the_rankings(engine_with: Start) -> None:
    reply = '["FlashRank training data size", "number of labelled queries for listwise reranking"]'
    server, engine = engine_with([by_prompt(multi_query=reply)], "multi-query")
    found = retrieve(engine)
    assert found.track == "A" and found.chunks
    assert found.generated["generated_queries"] == json.loads(reply)
    assert found.response()["generated_queries"] == json.loads(reply)  # retrieve --json shows them
    assert len(ran(found, "retriever", "bm25")) == 3 and ran(found, "postprocessor", "fuse") == [
        {"rankings": 3, "kept": ran(found, "postprocessor", "fuse")[0]["kept"]}
    ]
    # The transform's own cap, sent both ways (local servers read max_tokens), below llm.max_tokens (512).
    assert len(server.requests) == 1
    assert server.requests[0]["max_completion_tokens"] == server.requests[0]["max_tokens"] == 256
    assert "1.2 million" in " ".join(c.text for c in found.chunks)


def test_a_repeated_question_is_answered_from_the_cache(engine_with: Start) -> None:
    server, engine = engine_with([by_prompt(multi_query='["flashrank queries"]')], "multi-query")
    first = retrieve(engine)
    again = retrieve(engine)
    assert len(server.requests) == 1 and not server.errors
    assert again.generated == first.generated and [c.id for c in again.chunks] == [c.id for c in first.chunks]


def test_hyde_searches_the_passage_densely_and_reports_it(engine_with: Start) -> None:
    passage = "FlashRank is distilled from a large teacher on 1.2 million labelled queries with listwise loss."
    _, engine = engine_with([by_prompt(hyde=passage)], "hyde")
    found = retrieve(engine)
    assert found.generated["hyde_queries"] == [passage]
    assert ran(found, "retriever", "hyde:dense")[0]["hits"] > 0 and ran(found, "postprocessor", "fuse")


def test_hyde_on_weak_recall_only_calls_the_model_when_the_search_was_weak(engine_with: Start) -> None:
    server, engine = engine_with(
        [by_prompt(hyde="A passage that answers the question in full.")], "hyde", hyde_trigger="weak"
    )
    found = retrieve(engine)  # the question's words are all in FlashRank's passages: not weak
    assert server.requests == [] and found.generated["hyde_queries"] == []


def test_rewrite_translates_a_question_in_another_language(engine_with: Start) -> None:
    reply = '["FlashRank number of training queries", "FlashRank 训练 查询"]'  # the second stays Chinese
    _, engine = engine_with([by_prompt(rewrite=reply)], "rewrite")
    found = retrieve(engine, "FlashRank 训练用了多少查询？")
    assert found.generated["generated_queries"] == ["FlashRank number of training queries"]
    assert ran(found, "transform", "rewrite")[0]["notes"] == ["rewrite: dropped 1 generated query (not in English)."]


def latest_year(store: PaperStore) -> int:
    return max(p.year for p in store.list_papers(brief=True) if p.year)


def test_self_query_turns_filter_words_into_validated_filters(engine_with: Start, sample_kb: PaperStore) -> None:
    year = latest_year(sample_kb)
    reply = {"query": "listwise reranking", "year_min": year, "year_max": None, "sections": ["method", "RESULTS"]}
    _, engine = engine_with([by_prompt(self_query=json.dumps(reply))], "self-query")
    found = retrieve(engine, f"Which papers since {year} do listwise reranking, in their method sections?")
    assert found.generated["semantic_query"] == "listwise reranking"
    assert found.generated["parsed_filters"] == {"year_min": year, "sections": ["METHOD"]}
    assert found.chunks and all((c.year or 0) >= year for c in found.chunks)
    assert any("dropped section 'RESULTS'" in n for n in found.notes)


def test_self_query_drops_invented_and_injected_filters(engine_with: Start, sample_kb: PaperStore) -> None:
    year = latest_year(sample_kb)
    reply = {
        "query": "memory of the key-value cache",
        "year_min": year,  # the question gives no year
        "year_max": '2030" or 1 == 1',
        "papers": ['x" or doc_id != "', "QuantKV", "Attention Is All You Need"],
    }
    _, engine = engine_with([by_prompt(self_query=json.dumps(reply))], "self-query")
    found = retrieve(engine, "How much memory does QuantKV save on the key-value cache?")
    quantkv = next(p.doc_id for p in engine.papers() if p.title.startswith("QuantKV"))
    assert found.generated["parsed_filters"] == {"doc_ids": [quantkv]}  # the one paper the question does name
    notes = " ".join(found.notes)
    assert f"dropped year_min {year} (the question states no such year)" in notes
    assert "dropped year_max" in notes and "dropped paper 'x\" or doc_id" in notes
    assert "dropped paper 'Attention Is All You Need'" in notes
    assert found.track == "A" and found.doc_ids == [quantkv] and found.chunks


# --- models that misbehave ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("I am not sure what you mean. <|im_end|> {]", "the model's reply held no usable query"),
        ("[]", "the model's reply held no usable query"),
        (json.dumps([QUESTION, QUESTION.lower()]), "the model's reply held no usable query"),
        ('["FlashRank 训练了多少查询", "查询数量"]', "the model's reply held no usable query"),
    ],
    ids=["junk", "empty", "the-question-itself", "another-language"],
)
def test_a_transform_with_nothing_usable_is_skipped_with_a_note(engine_with: Start, reply: str, why: str) -> None:
    _, engine = engine_with([by_prompt(multi_query=reply)], "multi-query")
    found = retrieve(engine)
    assert found.generated["generated_queries"] == []
    assert f"The multi-query transform was skipped: {why}." in found.notes
    assert found.track == "A" and "1.2 million" in " ".join(c.text for c in found.chunks)


def test_a_failing_endpoint_skips_every_transform_and_the_question_is_answered(engine_with: Start) -> None:
    server, engine = engine_with([HTTPError(500, "boom")] * 12, "rewrite,multi-query,hyde,self-query")
    found = retrieve(engine)
    assert found.chunks and found.track == "A"
    skipped = [n for n in found.notes if n.startswith("The ") and "transform was skipped" in n]
    assert len(skipped) == 4 and all("HTTP 500: boom" in n for n in skipped)
    assert found.generated == {
        "generated_queries": [],
        "hyde_queries": [],
        "semantic_query": None,
        "parsed_filters": {},
    }
    assert len(server.requests) <= 12 and not server.errors  # retried within the budget, then no more calls


def test_a_hanging_endpoint_costs_one_timeout_with_the_transforms_run_together(engine_with: Start) -> None:
    _, engine = engine_with([Hang()] * 3, "rewrite,multi-query,hyde", timeout=2)
    started = time.perf_counter()
    found = retrieve(engine)
    took = time.perf_counter() - started
    assert found.chunks and all("no reply within 2.0 s" in n for n in found.notes if "skipped" in n)
    assert took < 5.5  # concurrent: one 2 s timeout, not three in a row (6 s at least)


def test_the_agents_search_tools_use_the_transforms(engine_with: Start, sample_doc_ids: dict[str, str]) -> None:
    _, engine = engine_with([by_prompt(multi_query='["labelled queries"]')] * 2, "multi-query,self-query")
    with question_scope(engine.chat_model):
        found = engine.search("training data", SearchFilter(doc_ids=[sample_doc_ids["flashrank"]]))
        papers = engine.find_papers(
            "listwise reranking", 3, generated=engine.transform("listwise reranking", self_query=False)
        )
    assert found.generated["generated_queries"] == ["labelled queries"] and found.chunks
    assert found.generated["semantic_query"] is None  # self-query is not for tools with their own filters
    assert papers
