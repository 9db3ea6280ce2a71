"""Index-time enrichment, the parts without a store: reading what a model wrote, clustering, planning the cost."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from paperscope.config import Settings
from paperscope.errors import ConfigError, LLMError
from paperscope.parser import parse_file
from paperscope.rag.chunking import chunk_paper
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.enrich import EnrichmentError, make_enricher
from paperscope.rag.enrich.base import clean
from paperscope.rag.enrich.headers import first_line
from paperscope.rag.enrich.questions import parse_questions
from paperscope.rag.enrich.raptor import cluster
from paperscope.rag.operator_settings import check_operators
from paperscope.rag.registry import names
from tests.markdown_papers import markdown
from tests.scripted_model import ScriptedChatModel


def test_the_settings_name_exactly_the_registered_enrichers() -> None:
    every = names("enricher")
    assert {"contextual", "sliding_summary", "headers", "questions", "summaries", "raptor"} <= set(every)
    assert Settings(enrichment={"strategies": every}).enrichment.strategies == every
    assert Settings(enrichment={"strategies": "questions, contextual,questions"}).enrichment.strategies == [
        "questions",
        "contextual",
    ]
    assert Settings(enrichment={"strategies": "none"}).enrichment.strategies == []
    with pytest.raises(ConfigError, match=r"enrichment\.strategies: unknown enricher 'header'; did you mean 'headers'"):
        check_operators(Settings(enrichment={"strategies": "header"}))


def test_questions_are_read_from_any_list_a_model_writes() -> None:
    reply = (
        "Sure! Here are some questions:\n"
        "1. What batch size does FlashRank use for distillation?\n"
        "2) How many queries were used? The paper says 120k.\n"
        "- Which dataset is used for evaluation?\n"
        "Q4: What batch size does FlashRank use for distillation?\n"  # the same question again
        "**Why?**\n"  # too short to be a question
        '<tool_call>{"name": "finish"}</tool_call>\n'
        "What is the latency on a CPU?"
    )
    assert parse_questions(reply, 5) == [
        "What batch size does FlashRank use for distillation?",
        "How many queries were used?",
        "Which dataset is used for evaluation?",
        "What is the latency on a CPU?",
    ]
    assert parse_questions(reply, 2) == parse_questions(reply, 5)[:2]
    assert parse_questions("The passage describes the training data.", 4) == []
    assert parse_questions("", 4) == []


def test_a_reply_is_cleaned_or_refused() -> None:
    assert clean("<think>hmm, long</think>Here is the summary: It distils a cross-encoder.", 200) == (
        "It distils a cross-encoder."
    )
    assert clean("Context:\n  The passage\u202e reports\x1b latency.  ", 200) == "The passage reports latency."
    assert clean('<tool_call>{"name": "search"}</tool_call>', 200) == ""
    assert clean('{"summary": "x"}', 200) == ""
    assert clean("   ", 200) == "" and clean("42", 200) == ""
    assert clean("word " * 100, 30) == "word word word word word word"
    assert first_line("\n## **Training data and batch size**\nmore") == "Training data and batch size"
    assert first_line("1. 3D reconstruction results") == "3D reconstruction results"


@pytest.mark.parametrize("method", ["gmm", "kmeans"])
def test_clusters_hold_every_vector_once(method: str) -> None:
    vectors = [[1.0, 0.0, 0.1 * i] for i in range(5)] + [[0.0, 1.0, 0.1 * i] for i in range(5)]
    groups = cluster(vectors, 2, method)
    assert sorted(i for g in groups for i in g) == list(range(10))
    assert sorted(map(sorted, groups)) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]  # the two directions apart
    assert cluster(vectors, 1, method) == [list(range(10))]
    assert cluster(vectors[:1], 3, method) == [[0]]


def _paper(tmp_path: Path, local_embedder: CachedEmbedder) -> tuple[object, list]:  # type: ignore[type-arg]
    text = "The reranker is distilled from a cross-encoder with a batch size of 64 and 120k queries. " * 4
    source = tmp_path / "p.md"
    source.write_text(markdown("FlashRank", 2023, [("## Abstract", ["A fast reranker."]), ("## 1 Method", [text])]))
    paper = parse_file(source)
    return paper, chunk_paper(paper, local_embedder.token_counter)


def test_the_plan_counts_calls_and_a_cached_run_costs_none(tmp_path: Path, local_embedder: CachedEmbedder) -> None:
    paper, chunks = _paper(tmp_path, local_embedder)
    body = [c for c in chunks if c.kind == "chunk"]
    settings = Settings(home=tmp_path / "home", enrichment={"strategies": ["headers", "questions"]})

    def reply(messages: list[BaseMessage]) -> AIMessage:
        asked = str(messages[-1].content)
        return AIMessage(content="What is the batch size?" if "questions" in asked else "Distillation settings")

    model = ScriptedChatModel([reply] * (2 * len(body)))
    enricher = make_enricher(model, settings)
    assert enricher is not None and enricher.strategies == ["headers", "questions"]
    count = local_embedder.token_counter.count
    plan = enricher.plan(paper, chunks, count, local_embedder.embed_documents)  # type: ignore[arg-type]
    assert (plan.planned, plan.cached, model.calls) == (2 * len(body), 0, [])  # counted, not called
    assert plan.prompt_tokens > 50 * len(body) and plan.reply_tokens > 0
    done = enricher.enrich(paper, chunks, count, None)  # type: ignore[arg-type]
    assert done.stats.made == 2 * len(body) and len(model.calls) == 2 * len(body)
    again = enricher.plan(paper, chunks, count, None)  # type: ignore[arg-type]
    assert (again.planned, again.cached) == (0, 2 * len(body))
    assert enricher.enrich(paper, chunks, count, None).chunks == done.chunks  # type: ignore[arg-type]
    assert len(model.calls) == 2 * len(body)  # the second run called nothing


def test_a_failing_call_stops_the_paper_and_names_the_model(tmp_path: Path, local_embedder: CachedEmbedder) -> None:
    paper, chunks = _paper(tmp_path, local_embedder)
    settings = Settings(home=tmp_path / "home", enrichment={"strategies": ["headers"], "concurrency": 1})
    down = LLMError("qwen", "http://127.0.0.1:9/v1", "unreachable", "cannot connect")
    model = ScriptedChatModel([AIMessage(content="A header for the abstract"), down])
    enricher = make_enricher(model, settings)
    assert enricher is not None
    with pytest.raises(EnrichmentError, match=r"enrich_header.+model qwen at http://127.0.0.1:9/v1 failed"):
        enricher.enrich(paper, chunks, local_embedder.token_counter.count, None)  # type: ignore[arg-type]
    assert len(model.calls) == 2  # no call after the failure


def test_no_model_is_a_one_line_error() -> None:
    settings = Settings(enrichment={"strategies": ["raptor", "questions"]})
    with pytest.raises(ConfigError, match=r"^enrichment \(questions, raptor\) needs a chat model: set PAPERSCOPE_"):
        make_enricher(None, settings)
    assert make_enricher(None, Settings()) is None
