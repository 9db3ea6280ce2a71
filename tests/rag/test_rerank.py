"""Rerankers: a tiny cross-encoder built here, a scripted HTTP rerank endpoint on 127.0.0.1, the chat model."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from paperscope.errors import ConfigError, LLMError, RerankError
from paperscope.rag.rerank import (
    NEUTRAL_SCORE,
    CrossEncoderReranker,
    HTTPReranker,
    LLMReranker,
    parse_rerank_spec,
    read_score,
    rerank,
)
from tests.scripted_model import ScriptedChatModel, final

PASSAGES = [
    "Cats sleep most of the day.",
    "KV cache quantization to 4 bits cuts memory by 4x.",
    "The paper evaluates retrieval on five benchmarks.",
]

# --- a tiny cross-encoder, built and saved by the test (no download) -------------------------------------------

WORDS = "the a of kv cache memory bits cats sleep day paper"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS.split(" ")]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)
    return folder


def test_cross_encoder_loads_from_a_local_folder_and_scores(tiny_cross_encoder: Path) -> None:
    reranker = parse_rerank_spec(f"cross-encoder:{tiny_cross_encoder}")
    assert isinstance(reranker, CrossEncoderReranker)
    assert (reranker.provider, reranker.model) == ("cross-encoder", str(tiny_cross_encoder.resolve()))
    scores = reranker.score("kv cache memory", PASSAGES)
    assert len(scores) == 3 and all(math.isfinite(s) for s in scores)
    assert len(set(scores)) == 3  # the pairs differ, so do the outputs of a random model
    assert reranker.score("kv cache memory", PASSAGES) == scores  # deterministic on CPU
    ranked = rerank(reranker, "kv cache memory", PASSAGES, str, top_n=2)
    best = sorted(range(3), key=lambda i: -scores[i])[:2]
    assert ranked == [(PASSAGES[i], scores[i]) for i in best]


def test_cross_encoder_missing_folder_is_one_line_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "models" / "no-such-reranker"
    with pytest.raises(ConfigError, match=f"cross-encoder model folder {missing} does not exist") as err:
        parse_rerank_spec(f"cross-encoder:{missing}")
    assert "\n" not in str(err.value)


def test_cross_encoder_folder_without_a_model_fails_without_download(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    reranker = parse_rerank_spec(f"cross-encoder:{tmp_path / 'empty'}")
    with pytest.raises(ConfigError, match=r"cannot load cross-encoder .* from local files") as err:
        reranker.score("q", ["a passage"])
    assert "\n" not in str(err.value)


def test_cross_encoder_hub_name_not_in_cache_fails_without_download() -> None:
    reranker = parse_rerank_spec("cross-encoder:nobody-here/no-such-reranker-xyz")
    with pytest.raises(ConfigError, match="downloads are disabled"):
        reranker.score("q", ["a passage"])


# --- a scripted HTTP rerank endpoint ----------------------------------------------------------------------------

Respond = Callable[[dict[str, Any]], tuple[int, bytes]]


class RerankServer:
    """POST /v1/rerank answered by `respond(request_json) -> (status, body)`; requests recorded."""

    def __init__(self, respond: Respond, delay: float = 0.0) -> None:
        self.respond = respond
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.released = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                if server.delay:
                    server.released.wait(server.delay)
                status, out = server.respond(body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/rerank"

    def __enter__(self) -> RerankServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def by_keyword(request: dict[str, Any]) -> tuple[int, bytes]:
    """Scores documents by how many query words they hold; returns only `top_n` results, best first."""
    words = request["query"].lower().split()
    scores = [sum(w in d.lower() for w in words) / len(words) for d in request["documents"]]
    order = sorted(range(len(scores)), key=lambda i: -scores[i])[: request["top_n"]]
    results = [{"index": i, "relevance_score": scores[i], "document": {"text": "ignored"}} for i in order]
    return 200, json.dumps({"model": "m", "object": "list", "results": results, "usage": {"total_tokens": 9}}).encode()


def fixed(status: int, body: str) -> Respond:
    return lambda request: (status, body.encode())


@pytest.fixture
def keyword_server() -> Iterator[RerankServer]:
    with RerankServer(by_keyword) as server:
        yield server


def test_http_request_shape_order_and_top_n(keyword_server: RerankServer) -> None:
    reranker = parse_rerank_spec(f"{keyword_server.url}#bge-reranker-v2-m3", api_key="secret")
    assert isinstance(reranker, HTTPReranker)
    assert (reranker.provider, reranker.model, reranker.url) == ("http", "bge-reranker-v2-m3", keyword_server.url)
    ranked = rerank(reranker, "kv cache memory", PASSAGES, str, top_n=2)
    assert ranked == [(PASSAGES[1], 1.0), (PASSAGES[0], 0.0)]  # ties keep the input order
    request = keyword_server.requests[0]
    assert request == {
        "path": "/v1/rerank",
        "auth": "Bearer secret",
        "model": "bge-reranker-v2-m3",
        "query": "kv cache memory",
        "documents": PASSAGES,
        "top_n": 3,
    }


def test_http_without_model_sends_none_and_items_keep_their_type(keyword_server: RerankServer) -> None:
    reranker = parse_rerank_spec(keyword_server.url)
    items = [{"id": i, "text": t} for i, t in enumerate(PASSAGES)]
    ranked = rerank(reranker, "paper benchmarks", items, lambda item: item["text"])
    assert [item["id"] for item, _ in ranked] == [2, 0, 1]
    assert "model" not in keyword_server.requests[0] and keyword_server.requests[0]["auth"] is None


def test_http_results_left_out_rank_last_with_a_note() -> None:
    body = json.dumps({"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]})
    with RerankServer(fixed(200, body)) as server:
        reranker = parse_rerank_spec(server.url)
        assert reranker.score("q", PASSAGES) == [0.1, -0.9, 0.9]
        assert reranker.notes == [f"{server.url} scored 2 of 3 passages; the rest rank last"]


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (500, '{"error": "CUDA out of memory"}', r"HTTP 500: \{\"error\": \"CUDA out of memory\"\}"),
        (404, "", r"HTTP 404: \(empty body\)"),
        (200, "<html>gateway</html>", "the reply is not JSON: <html>gateway</html>"),
        (200, '{"data": []}', "unexpected reply, .*results: Field required"),
        (200, '{"results": [{"index": 3, "relevance_score": 0.5}]}', "result index 3 is out of range for 3 documents"),
        (200, '{"results": [{"index": -1, "relevance_score": 0.5}]}', "results.0.index: Input should be greater"),
        (200, '{"results": [{"index": "1", "relevance_score": 0.5}]}', "results.0.index: Input should be a valid int"),
        (200, '{"results": [{"index": 0, "relevance_score": NaN}]}', "relevance_score: Input should be a finite"),
        (200, '{"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 2}]}', "appears twice"),
        (200, '{"results": []}', "no results for 3 documents"),
    ],
)
def test_http_failures_are_one_line_naming_the_url(status: int, body: str, expected: str) -> None:
    with RerankServer(fixed(status, body)) as server:
        reranker = parse_rerank_spec(server.url)
        with pytest.raises(RerankError, match=expected) as err:
            reranker.score("q", PASSAGES)
    message = str(err.value)
    assert message.startswith(f"rerank endpoint {server.url}: ") and "\n" not in message


def test_http_timeout() -> None:
    with RerankServer(by_keyword, delay=5.0) as server:
        reranker = parse_rerank_spec(server.url, timeout=0.3)
        with pytest.raises(RerankError, match=r"rerank endpoint .*/v1/rerank: no reply within 0.3 s"):
            reranker.score("q", PASSAGES)


def test_http_nobody_listening() -> None:
    with RerankServer(by_keyword) as server:
        url = server.url
    with pytest.raises(RerankError, match=f"rerank endpoint {url}: cannot reach it: ConnectError"):
        parse_rerank_spec(url).score("q", PASSAGES)


# --- the chat model as a judge ----------------------------------------------------------------------------------


def judge(replies: dict[str, str]) -> Callable[[list[BaseMessage]], AIMessage]:
    """Answers from the passage in the prompt, whatever order the batch runs in."""

    def reply(messages: list[BaseMessage]) -> AIMessage:
        passage = str(messages[-1].content).split("Passage:", 1)[1]
        return final(next(r for key, r in replies.items() if key in passage))

    return reply


def test_llm_scores_each_passage_and_ranks() -> None:
    replies = {"Cats": "2", "KV cache": "Score: 9/10", "benchmarks": "<think>maybe 10?</think>**4**"}
    model = ScriptedChatModel([judge(replies)] * 3)
    reranker = parse_rerank_spec("llm", model)
    assert isinstance(reranker, LLMReranker) and reranker.provider == "llm"
    ranked = rerank(reranker, "How much memory does 4-bit KV cache quantization save?", PASSAGES, str)
    assert ranked == [(PASSAGES[1], 9.0), (PASSAGES[2], 4.0), (PASSAGES[0], 2.0)]
    assert reranker.notes == [] and len(model.calls) == 3
    prompt = str(model.calls[0][0].content)
    assert "How much memory does 4-bit KV cache quantization save?" in prompt and "0 to 10" in prompt


def test_llm_junk_replies_keep_a_neutral_score_and_a_note() -> None:
    replies = {"Cats": "I cannot rate this.", "KV cache": "8", "benchmarks": "relevance: 42"}
    model = ScriptedChatModel([judge(replies)] * 3)
    reranker = parse_rerank_spec("llm", model)
    assert reranker.score("kv cache", PASSAGES) == [NEUTRAL_SCORE, 8.0, NEUTRAL_SCORE]
    assert len(reranker.notes) == 2
    assert reranker.notes[0].startswith("llm:ScriptedChatModel gave passage 1 no score (reply: 'I cannot rate")


def test_llm_failing_model_is_an_llm_error() -> None:
    model = ScriptedChatModel([RuntimeError("connection refused")] * 3)
    with pytest.raises(LLMError, match="connection refused"):
        parse_rerank_spec("llm", model).score("q", PASSAGES)


@pytest.mark.parametrize(
    ("reply", "score"),
    [("7", 7.0), ("Relevance: 8/10", 8.0), ("2017 paper; score 6", 6.0), ("10", 10.0), ("0.5", 0.5), ("none", None)],
)
def test_read_score(reply: str, score: float | None) -> None:
    assert read_score(reply) == score


# --- specs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["bm25", "cross-encoder:", "ftp://host/rerank", "cohere", ""])
def test_bad_spec_lists_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ConfigError, match=r"unknown reranker .*; use 'cross-encoder:<name-or-path>', 'http\(s\)://"):
        parse_rerank_spec(spec)


def test_http_url_must_name_the_rerank_route() -> None:
    with pytest.raises(ConfigError, match="give the full URL of the rerank route"):
        parse_rerank_spec("http://localhost:8080/v1")


def test_llm_without_a_chat_model() -> None:
    with pytest.raises(ConfigError, match="reranker 'llm' needs a chat model"):
        parse_rerank_spec("llm")


def test_rerank_of_nothing_calls_nobody() -> None:
    model = ScriptedChatModel([])
    assert rerank(LLMReranker(model), "q", [], str) == []
    assert rerank(LLMReranker(model), "q", ["a"], str, top_n=0) == []


class _Broken:
    name, provider, model = "broken", "test", None

    def __init__(self, scores: list[float]) -> None:
        self.scores = scores
        self.notes: list[str] = []

    def score(self, query: str, texts: list[str]) -> list[float]:
        return self.scores


@pytest.mark.parametrize(
    ("scores", "expected"), [([1.0], "1 scores for 2 passages"), ([1.0, math.nan], "not a finite")]
)
def test_rerank_refuses_scores_that_do_not_fit(scores: list[float], expected: str) -> None:
    with pytest.raises(RerankError, match=f"reranker broken: .*{expected}"):
        rerank(_Broken(scores), "q", ["a", "b"], str)
