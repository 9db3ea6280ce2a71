"""Questions over real HTTP, without a language model: retrieve (the `retrieve --json` object), chat (the Answer),
a streamed chat ending with the Answer, history keeping a follow-up on its paper, bad options as 4xx."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.served import Served, sse_events

QUESTION = "How many queries was FlashRank trained on?"


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def test_retrieve_returns_the_retrieve_json(http: httpx.Client, sample_pdf_ids: dict[str, str]) -> None:
    response = http.post("/v1/retrieve", json={"query": QUESTION, "k": 3})
    assert response.status_code == 200
    found = response.json()
    assert found["query"] == QUESTION and found["track"] == "A"
    assert len(found["hits"]) == 3 and all(h["doc_id"] == sample_pdf_ids["flashrank"] for h in found["hits"])
    fields = {"citation", "title", "chunk_index", "section_title", "section_category", "page", "score", "text"}
    assert fields <= set(found["hits"][0])
    assert found["models"]["retriever"] == "bm25"
    assert [o["kind"] for o in found["operators"]][:2] == ["transform", "router"]
    scoped = http.post(
        "/v1/retrieve",
        json={"query": QUESTION, "paper": [sample_pdf_ids["marten"][:8]], "section": ["method"], "k": 2},
    ).json()
    assert {h["doc_id"] for h in scoped["hits"]} == {sample_pdf_ids["marten"]}
    assert {h["section_category"] for h in scoped["hits"]} == {"METHOD"}
    dense = http.post("/v1/retrieve", json={"query": QUESTION, "retriever": "dense", "k": 2}).json()
    assert dense["models"]["retriever"] == "dense"  # a request option over the server's settings


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"query": "?!"}, 422, "query: the question has no words"),
        ({"query": QUESTION, "k": 0}, 422, "k: Input should be greater than or equal to 1"),
        ({"query": QUESTION, "topk": 3}, 422, "unknown option 'topk'"),
        ({"query": QUESTION, "section": ["Methodz"]}, 422, "section:"),
        ({"query": QUESTION, "paper": ["ab"]}, 422, "too short"),
        ({"query": QUESTION, "paper": ["abcd1234"]}, 404, "paper abcd1234 is not a paper in knowledge base"),
        ({"query": QUESTION, "retriever": "nonsense"}, 422, "retriever: unknown retriever 'nonsense'"),
        ({"query": QUESTION, "rerank": "nonsense"}, 422, "rerank: unknown reranker 'nonsense'; use 'cross-encoder:"),
        ({"query": QUESTION, "transform": ["magic"]}, 422, "unknown transform 'magic'"),
        ({"query": QUESTION, "kb": "nosuchkb"}, 404, "knowledge base 'nosuchkb' does not exist"),
        ({}, 422, "query: required"),
    ],
)
def test_bad_questions_are_4xx_naming_the_option(
    http: httpx.Client, body: dict[str, Any], status: int, says: str
) -> None:
    for route in ("/v1/retrieve", "/v1/chat"):
        response = http.post(route, json=body)
        assert response.status_code == status, (route, response.text)
        assert says in response.json()["error"]["message"], route
        assert "Traceback" not in response.text


def test_chat_answers_with_sources(http: httpx.Client, sample_pdf_ids: dict[str, str]) -> None:
    answer = http.post("/v1/chat", json={"query": QUESTION}).json()
    assert answer["track"] == "A" and answer["mode"] == "single-shot" and answer["extractive"] is True
    assert "1.2 million queries" in answer["answer"]
    assert answer["sources"] and all(s["doc_id"] == sample_pdf_ids["flashrank"] for s in answer["sources"])
    assert answer["models"]["embedding_model"] == "all-MiniLM-L6-v2" and answer["models"]["llm_model"] is None


def test_streamed_chat_ends_with_the_answer(http: httpx.Client, sample_pdf_ids: dict[str, str]) -> None:
    with http.stream("POST", "/v1/chat", json={"query": QUESTION, "stream": True}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)
    assert events[-1] == "[DONE]"
    kinds = [e["type"] for e in events[:-1]]
    assert kinds[0] == "progress" and kinds[-1] == "answer" and "token" in kinds
    assert [e["stage"] for e in events[:-1] if e["type"] == "progress"] == ["searching", "writing"]
    answer = events[-2]["answer"]
    tokens = [e for e in events[:-1] if e["type"] == "token"]
    assert tokens == [{"type": "token", "text": answer["answer"], "whole": True}]  # extracted: written at once
    assert "1.2 million queries" in answer["answer"]
    assert answer["sources"][0]["citation"].startswith(sample_pdf_ids["flashrank"])


def test_history_keeps_a_follow_up_on_its_paper(http: httpx.Client, sample_pdf_ids: dict[str, str]) -> None:
    first = http.post("/v1/chat", json={"query": "What does Marten-1B pretrain on?"}).json()
    assert first["track"] == "A" and first["sources"][0]["doc_id"] == sample_pdf_ids["marten"]
    history = [
        {"role": "user", "content": first["query"]},
        {"role": "assistant", "content": first["answer"], "sources": [s["citation"] for s in first["sources"]]},
    ]
    follow = http.post("/v1/chat", json={"query": "What about its ablation?", "history": history}).json()
    assert any("Follow-up: staying on" in n for n in follow["notes"])
    assert {s["doc_id"] for s in follow["sources"]} == {sample_pdf_ids["marten"]}
    alone = http.post("/v1/chat", json={"query": "What about its ablation?"}).json()
    assert not any("Follow-up" in n for n in alone["notes"])  # without the history it is not on Marten
    bad = http.post("/v1/chat", json={"query": "And?", "history": [{"role": "robot", "content": "x"}]})
    assert bad.status_code == 422 and "history.0.role" in bad.json()["error"]["message"]


def test_a_request_cannot_point_the_reranker_anywhere(http: httpx.Client, tmp_path: Path) -> None:
    """Rerank endpoints and model paths come from the server's settings: a request naming one would make the server
    send the question and the passages to any URL, or say whether a path exists."""
    calls: list[str] = []

    class Spy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            calls.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    spy = HTTPServer(("127.0.0.1", 0), Spy)
    threading.Thread(target=spy.serve_forever, daemon=True).start()
    folder = tmp_path / "model"
    folder.mkdir()
    try:
        for rerank in (
            f"http://127.0.0.1:{spy.server_address[1]}/v1/rerank",
            "cross-encoder:/etc/passwd",
            "cross-encoder:/etc",
            f"cross-encoder:{folder}",
            "cross-encoder:/no/such/thing",
        ):
            for path in ("/v1/retrieve", "/v1/chat"):
                refused = http.post(path, json={"query": QUESTION, "rerank": rerank})
                assert refused.status_code == 400, (path, rerank)
                assert refused.json()["error"]["message"] == (
                    "rerank: a request may name 'llm'; rerank endpoints and model paths come from the server's "
                    "settings (retrieval.rerank), never from a request"
                )
        options = {"rerank": f"http://127.0.0.1:{spy.server_address[1]}/v1/rerank"}
        completion = http.post(
            "/v1/chat/completions",
            json={"model": "paperscope", "messages": [{"role": "user", "content": QUESTION}], "paperscope": options},
        )
        assert completion.status_code == 400
    finally:
        spy.shutdown()
    assert calls == []


def test_an_overlong_question_is_named(http: httpx.Client) -> None:
    long = "What is FlashRank? " * 6000  # 114,000 characters
    for response in (
        http.post("/v1/chat", json={"query": long}),
        http.post("/v1/retrieve", json={"query": long}),
        http.post(
            "/v1/chat/completions", json={"model": "paperscope", "messages": [{"role": "user", "content": long}]}
        ),
    ):
        assert response.status_code == 422
        assert response.json()["error"]["message"] == "query: String should have at most 4000 characters"
